/**
 * The docs show what a child given its parent's whole dialogue reads; this holds that example to what the code
 * renders for the same dialogue.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderParentContext, takeSnapshot } from '../../src/rules/context.js';
import { selectContext } from '../../src/rules/run-start.js';
import { renderChildTask } from '../../src/rules/children.js';
import { PROJECT_ROOT } from '../../src/testing/temporal-cli.js';
import { answer, at, result, user } from '../support/events.js';

/** A message as the docs print it: its role, then its text with further lines indented under the first. */
const shown = (role: string, text: string) =>
  `${role}:`.padEnd(6) +
  text
    .split('\n')
    .map((line, i) => (i === 0 || line === '' ? line : `      ${line}`))
    .join('\n');

describe('49.11 the docs example of context "all" is what a child receives', () => {
  it('49.11 docs/context.md shows the parent block and the task exactly as rendered', () => {
    const parent = [
      user('Price this Springfield order: 3 notebooks at $12.50 each and 2 pens at $1.20 each.'),
      {
        type: 'message/assistant' as const,
        at,
        content: null,
        toolCalls: [{ id: 'c1', name: 'search_notes', arguments: '{"query":"tax"}' }],
      },
      result('c1', 'search_notes', 'Sales tax: The sales tax rate in Springfield is 8% on all goods.'),
      answer('Now I split the work.', [['d1', 'delegate']]),
    ];
    const rendered = [
      shown('user', renderParentContext(selectContext(takeSnapshot(parent), 'all'))),
      shown(
        'user',
        renderChildTask(
          { task_name: 'shipping', message: 'Find the cost of standard shipping in the notes.' },
          undefined,
        ),
      ),
    ].join('\n');
    const docs = readFileSync(join(PROJECT_ROOT, 'docs', 'context.md'), 'utf8');
    const example = /With `"all"`[\s\S]*?```text\n([\s\S]*?)\n```/.exec(docs)?.[1];
    expect(example).toBe(rendered);
  });
});
