/**
 * Attacks with data a workflow reads (docs/security.md rows 46 and 54): a model that steers a child's answer into a
 * schema pattern that backtracks for seconds, and a client that completes a model call by hand with a usage no call
 * can have. Neither may stall a workflow task, take the worker down or wedge the run.
 */
import { describe, expect, it } from 'vitest';
import { lastMessage, toolMessages, userSays } from '../../src/testing/script.js';
import { delegateReply, delegationConfig, DELEGATION_TOOLS, PARENT_SCOPES } from '../support/delegation.js';
import { WORKFLOW_TASK_BOUND_MS, workflowTaskTimes } from '../support/history.js';
import { useHarness } from '../support/harness.js';
import { completeModelCallByHand } from './support.js';

const h = useHarness({ config: delegationConfig(), tools: DELEGATION_TOOLS });

describe('attacks with data a workflow reads', () => {
  it('R1.16 R1.7 attack 49: a return_shape pattern ^(a+)+$ and a child answering 30 a’s and "!" end as a tool error; no workflow task stalls or fails', async () => {
    const task = 'attack 49: catastrophic pattern';
    const shape = {
      type: 'object',
      properties: { v: { type: 'string', pattern: '^(a+)+$' } },
      required: ['v'],
    };
    h.model.add(
      {
        name: `${task}:delegate`,
        when: (r) => lastMessage(r) === task,
        reply: delegateReply({ briefs: [{ task_name: 'evil', message: 'attack 49 child' }], return_shape: shape }),
      },
      {
        name: `${task}:child`,
        when: userSays('attack 49 child'),
        reply: { text: JSON.stringify({ v: `${'a'.repeat(30)}!` }) },
      },
      {
        name: `${task}:join`,
        when: (r) => userSays(task)(r) && r.body.messages.at(-1)?.role === 'tool',
        reply: { text: 'checked' },
      },
    );
    const parent = h.id('atk-pattern');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: parent });
    expect(await h.deputy.result(parent)).toMatchObject({ status: 'completed', output: 'checked' });
    const [join] = h.model.requests.filter((r) => r.rule === `${task}:join`);
    expect(toolMessages(join!).at(-1)).toContain('the output does not match return_shape: v: does not match ^(a+)+$');
    const times = await workflowTaskTimes(h.client, parent);
    expect(times.failures).toEqual([]);
    expect(times.slowestMs).toBeLessThan(WORKFLOW_TASK_BOUND_MS);

    // A pattern RE2 cannot read is refused at the delegation: nothing is spawned, the model reads why.
    const refused = 'attack 49: lookbehind pattern';
    h.model.add(
      {
        name: `${refused}:delegate`,
        when: (r) => lastMessage(r) === refused,
        reply: delegateReply({
          briefs: [{ task_name: 'x', message: 'never' }],
          return_shape: { type: 'string', pattern: '(?<=a)b' },
        }),
      },
      {
        name: `${refused}:join`,
        when: (r) => userSays(refused)(r) && r.body.messages.at(-1)?.role === 'tool',
        reply: { text: 'refused' },
      },
    );
    const second = h.id('atk-lookbehind');
    await h.deputy.startRun({ task: refused, scopes: PARENT_SCOPES }, { workflowId: second });
    expect(await h.deputy.result(second)).toMatchObject({ status: 'completed', output: 'refused' });
    const [after] = h.model.requests.filter((r) => r.rule === `${refused}:join`);
    expect(toolMessages(after!).at(-1)).toMatch(
      /^return_shape cannot be checked in bounded time: #\/pattern: "\(\?<=a\)b" is not a pattern Deputy can match in linear time/,
    );
    expect(h.model.requests.some((r) => userSays('never')(r))).toBe(false);
  });

  it('R1.16 R1.3 attack 57: a model call completed by hand with -100,000,000 input tokens fails the run saying why; no workflow task fails', async () => {
    const task = 'attack 57: negative usage';
    h.model.add({ name: task, when: userSays(task), reply: { hang: true } });
    const handle = await h.deputy.startRun({ task });
    await completeModelCallByHand(h.client, handle.workflowId, [], { inputTokens: -100_000_000, outputTokens: 0.5 });
    const result = await h.deputy.result(handle.workflowId);
    expect(result.status).toBe('failed');
    expect(result.error).toContain('reports usage no call can have (inputTokens -100000000, outputTokens 0.5)');
    const state = await h.deputy.getState(handle.workflowId);
    expect(state.usage).toMatchObject({ inputTokens: 0, outputTokens: 0, costMicroUsd: 0 });
    expect((await workflowTaskTimes(h.client, handle.workflowId)).failures).toEqual([]);
  });
});
