import { describe, expect, it } from 'vitest';
import { PARENT_CONTEXT_HEADING } from '../src/rules/context.js';
import { forTask, offeredTools, userSays } from '../src/testing/script.js';
import {
  delegateReply,
  delegationConfig,
  DELEGATION_TOOLS,
  listChildren,
  PARENT_SCOPES,
} from './support/delegation.js';
import { useHarness } from './support/harness.js';

// A child that may delegate carries the steering tools' specs in each call: room for them.
const h = useHarness({
  config: delegationConfig({
    maxDepth: 2,
    childDefaults: { maxTurns: 5, maxTokens: 4000, maxCostUsd: 0.003, maxToolCalls: 5 },
  }),
  tools: DELEGATION_TOOLS,
});

describe('R3.8 deeper trees', () => {
  it('R3.8 a child that delegates with context passes its inherited context plus its own dialogue', async () => {
    const task = 'root question: plan the trip';
    h.model.add(
      {
        when: forTask(task, 0),
        reply: delegateReply({
          briefs: [{ task_name: 'middle', message: 'middle child: plan the budget', context: 'all' }],
        }),
      },
      { when: forTask(task, 1), reply: { text: 'root done' } },
      {
        when: userSays('middle child: plan the budget', 0),
        reply: {
          text: 'I will ask a helper.',
          toolCalls: [
            {
              name: 'delegate',
              arguments: { briefs: [{ task_name: 'leaf', message: 'leaf child: price the hotel', context: 'all' }] },
            },
          ],
        },
      },
      { when: userSays('middle child: plan the budget', 1), reply: { text: 'middle done' } },
      { name: 'leaf', when: userSays('leaf child: price the hotel'), reply: { text: 'leaf done' } },
    );
    const rootId = h.id('root');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: rootId });
    expect((await h.deputy.result(rootId)).status).toBe('completed');

    const leaf = h.model.requests.find((r) => r.rule === 'leaf')!;
    expect(offeredTools(leaf)).toEqual(['calculate', 'search_notes', 'ask_parent']); // depth 2 = maxDepth: no delegate, no interject
    const [block, own] = leaf.body.messages.filter((m) => m.role === 'user').map((m) => m.content ?? '');
    expect(block!.startsWith(PARENT_CONTEXT_HEADING)).toBe(true);
    // The chain is visible: what the middle child inherited from the root, then the middle child's own dialogue.
    const inherited = block!.indexOf('context the parent received:\n    ### Parent Chat Context');
    const rootLine = block!.indexOf(`outer_user: ${task}`);
    const middleTask = block!.indexOf('outer_user: ## Your task\n    middle child: plan the budget');
    const middleText = block!.indexOf('outer_assistant: I will ask a helper.');
    expect(inherited).toBeGreaterThan(0);
    expect(rootLine).toBeGreaterThan(inherited);
    expect(middleTask).toBeGreaterThan(rootLine);
    expect(middleText).toBeGreaterThan(middleTask);
    expect(own).toBe('## Your task\nleaf child: price the hotel');

    const middleId = `${rootId}/middle-1`;
    expect(
      (await listChildren(h.client, middleId)).map((c) => [
        c.workflowId,
        c.searchAttributes.DeputyDepth,
        c.searchAttributes.DeputyRootId,
      ]),
    ).toEqual([[`${middleId}/leaf-1`, [2], [rootId]]]);
  });
});
