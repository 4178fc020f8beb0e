/** The offline demo's scripted model: the answers a good model would give to the demo task, children included. */
import { SUMMARY_SYSTEM_PROMPT } from '../rules/context.js';
import { forTask, userSays, type ScriptRule, type ScriptReply } from '../testing/script.js';

/** The demo's task. */
export const DEMO_TASK =
  'Price this Springfield order: 3 notebooks at $12.50 each and 2 pens at $1.20 each, with sales tax and standard shipping. Delegate the two look-ups and the subtotal to child runs working in parallel, then combine their results.';

const call = (name: string, args: unknown): ScriptReply => ({ toolCalls: [{ name, arguments: args }] });

/** How long each scripted child "thinks", so the live tree has something to show. */
const CHILD_DELAY_MS = 900;

const TAX = 'Find the sales tax rate in Springfield in the notes.';
const SHIPPING = 'Find the cost of standard shipping in the notes.';
const SUBTOTAL = 'Compute the subtotal of 3 items at $12.50 and 2 items at $1.20.';

/** Script for the demo: the parent delegates three briefs, each child works, the parent combines. */
export const DEMO_SCRIPT: ScriptRule[] = [
  {
    when: forTask(DEMO_TASK, 0),
    reply: call('delegate', {
      briefs: [
        {
          task_name: 'tax-rate',
          message: TAX,
          role: 'researcher',
          success_condition: 'the rate as a percentage',
          context: 'summary',
        },
        { task_name: 'shipping', message: SHIPPING, role: 'researcher', context: 'all' },
        { task_name: 'subtotal', message: SUBTOTAL, allowed_tools: ['calculate'], limits: { maxTurns: 5 } },
      ],
    }),
  },
  {
    // The background written for the tax-rate child (context "summary"), by the parent's model.
    when: (request) => request.body.messages[0]?.content === SUMMARY_SYSTEM_PROMPT,
    reply: { text: 'The parent is pricing an order in Springfield: 3 notebooks at $12.50 and 2 pens at $1.20.' },
  },
  { when: userSays(TAX, 0), delayMs: CHILD_DELAY_MS, reply: call('search_notes', { query: 'sales tax' }) },
  { when: userSays(TAX, 1), reply: { text: 'The sales tax rate in Springfield is 8%.' } },
  { when: userSays(SHIPPING, 0), delayMs: CHILD_DELAY_MS, reply: call('search_notes', { query: 'shipping' }) },
  { when: userSays(SHIPPING, 1), reply: { text: 'Standard shipping costs $4.99 per order.' } },
  {
    when: userSays(SUBTOTAL, 0),
    delayMs: CHILD_DELAY_MS,
    reply: call('calculate', { operation: 'multiply', a: 3, b: 12.5 }),
  },
  {
    when: userSays(SUBTOTAL, 1),
    delayMs: CHILD_DELAY_MS,
    reply: call('calculate', { operation: 'multiply', a: 2, b: 1.2 }),
  },
  { when: userSays(SUBTOTAL, 2), reply: call('calculate', { operation: 'add', a: 37.5, b: 2.4 }) },
  { when: userSays(SUBTOTAL, 3), reply: { text: 'The subtotal is $39.90.' } },
  { when: forTask(DEMO_TASK, 1), reply: call('calculate', { operation: 'multiply', a: 39.9, b: 1.08 }) },
  { when: forTask(DEMO_TASK, 2), reply: call('calculate', { operation: 'add', a: 43.09, b: 4.99 }) },
  {
    when: forTask(DEMO_TASK, 3),
    reply: {
      text: 'The order costs $48.08: subtotal $39.90 (3 × $12.50 + 2 × $1.20), plus 8% Springfield sales tax = $43.09, plus $4.99 standard shipping.',
    },
  },
];
