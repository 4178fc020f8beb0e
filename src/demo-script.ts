/** The offline demo's scripted model: the answers a good model would give to the demo task. */
import { forTask, type ScriptRule } from './testing/scripted-model.js';

/** The demo's task. */
export const DEMO_TASK =
  'A customer in Springfield buys 3 notebooks at $12.50 each. What do they pay in total, including sales tax and standard shipping? Check the notes for the rates.';

const call = (name: string, args: unknown) => ({ toolCalls: [{ name, arguments: args }] });

/** Script for the demo task: look up the rates, compute step by step, answer. */
export const DEMO_SCRIPT: ScriptRule[] = [
  { when: forTask(DEMO_TASK, 0), reply: call('search_notes', { query: 'sales tax shipping' }) },
  { when: forTask(DEMO_TASK, 1), reply: call('calculate', { operation: 'multiply', a: 3, b: 12.5 }) },
  { when: forTask(DEMO_TASK, 2), reply: call('calculate', { operation: 'multiply', a: 37.5, b: 1.08 }) },
  { when: forTask(DEMO_TASK, 3), reply: call('calculate', { operation: 'add', a: 40.5, b: 4.99 }) },
  {
    when: forTask(DEMO_TASK, 4),
    reply: {
      text: 'The customer pays $45.49: 3 × $12.50 = $37.50, plus 8% Springfield sales tax = $40.50, plus $4.99 standard shipping.',
    },
  },
];
