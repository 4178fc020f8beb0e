import { z } from 'zod';
import { defineTool, type ToolDefinition } from '../src/contract/tools.js';

/** A note the `search_notes` tool can find. */
export interface Note {
  title: string;
  text: string;
}

/** Notes shipped for the demo and the tests. */
export const SAMPLE_NOTES: readonly Note[] = [
  { title: 'Sales tax', text: 'The sales tax rate in Springfield is 8% on all goods.' },
  { title: 'Shipping', text: 'Standard shipping costs $4.99 per order and takes 3 to 5 business days.' },
  { title: 'Returns', text: 'Items can be returned within 30 days with the receipt.' },
];

/** Arithmetic on two numbers; scope `tools.calc`. */
export const calculateTool = defineTool({
  name: 'calculate',
  description: 'Apply an arithmetic operation to two numbers and return the exact result.',
  parameters: z.strictObject({
    operation: z.enum(['add', 'subtract', 'multiply', 'divide']),
    a: z.number(),
    b: z.number(),
  }),
  scopes: ['tools.calc'],
  async execute({ operation, a, b }) {
    if (operation === 'divide' && b === 0) return 'error: division by zero';
    const result = { add: a + b, subtract: a - b, multiply: a * b, divide: a / b }[operation];
    return String(Math.round(result * 1e9) / 1e9);
  },
});

/** Builds a tool that searches `notes` by words; scope `tools.notes`. */
export function createSearchNotesTool(notes: readonly Note[] = SAMPLE_NOTES) {
  return defineTool({
    name: 'search_notes',
    description: 'Search the knowledge base notes. Returns the notes whose title or text contain the query words.',
    parameters: z.strictObject({ query: z.string().min(1).describe('words to look for') }),
    scopes: ['tools.notes'],
    async execute({ query }) {
      const words = query.toLowerCase().split(/\W+/).filter(Boolean);
      const hits = notes.filter((note) => words.some((w) => `${note.title} ${note.text}`.toLowerCase().includes(w)));
      return hits.length > 0 ? hits.map((n) => `${n.title}: ${n.text}`).join('\n') : 'no notes match';
    },
  });
}

/** The tools every worker has unless it is given its own list. */
export function builtinTools(): ToolDefinition[] {
  return [calculateTool, createSearchNotesTool()];
}
