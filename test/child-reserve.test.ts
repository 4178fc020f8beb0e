/**
 * R2.17 each child's final-synthesis reserve fits the child. With the run-level reserve on ($0.01 / 2,000 tokens, the
 * config's default), a child given $0.005 used to inherit a reserve larger than its whole limit, so its first call was
 * already its final answer and it never got a tool. Its reserve is now sized to it (a tenth of its limits, never
 * below the floors), and a brief too small for even the floor is refused with a tool error that says so.
 */
import { describe, expect, it } from 'vitest';
import { lastMessage, offeredTools, type RecordedRequest } from '../src/testing/script.js';
import { delegateReply, delegationConfig, DELEGATION_TOOLS, PARENT_SCOPES } from './support/delegation.js';
import { useHarness } from './support/harness.js';

const config = delegationConfig();
const h = useHarness({
  // Reserves on, as a config that says nothing has them.
  config: { ...config, limits: { ...config.limits, synthesisReserve: { tokens: 2000, costUsd: 0.01 } } },
  tools: DELEGATION_TOOLS,
});

describe('R2.17 a child’s synthesis reserve fits the child', () => {
  it('R2.17 a $0.005 child keeps its tools on its first call; a brief below the floor is refused, saying why', async () => {
    const task = 'child reserve: two briefs';
    const smallTask = 'child reserve: the small child looks it up';
    const small = { task_name: 'small', message: smallTask, limits: { maxCostUsd: 0.005 } };
    const tiny = { task_name: 'tiny', message: 'child reserve: too small to start', limits: { maxCostUsd: 0.0004 } };
    const afterTool = (text: string) => (r: RecordedRequest) =>
      r.body.messages.at(-1)?.role === 'tool' && lastMessage(r).includes(text);
    h.model.add(
      { when: (r) => lastMessage(r) === task, reply: delegateReply({ briefs: [small, tiny] }) },
      // Told why, it tries again with the brief that fits.
      { when: afterTool('nothing was spawned'), reply: delegateReply({ briefs: [small] }) },
      { name: 'small child', when: (r) => lastMessage(r).endsWith(smallTask), reply: { text: 'found it' } },
      { when: afterTool('EXTERNAL_UNTRUSTED'), reply: { text: 'done' } },
    );
    const id = h.id('child-reserve');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: id });
    const result = await h.deputy.result(id);
    expect(result.status).toBe('completed');

    // The small child's first call offered it its tools: it did not start in synthesis.
    const first = h.model.requests.find((r) => r.rule === 'small child')!;
    expect(offeredTools(first)).toContain('search_notes');
    const child = await h.deputy.getState(`${id}/small-1`);
    expect(child.limits).toMatchObject({ maxCostMicroUsd: 5000, synthesis: true, reserveCostMicroUsd: 500 });

    // The call with the tiny brief was refused before anything was reserved or started, with the numbers and what to do.
    const state = await h.deputy.getState(id);
    const toolResult = state.session.find((e) => e.type === 'tool/result' && e.name === 'delegate' && e.isError);
    expect(toolResult?.type === 'tool/result' && toolResult.content).toContain(
      'brief "tiny": its limit of $0.000400 cannot cover its final-synthesis reserve of $0.000500, so it would start with no tools: give it more, or lower delegation.childSynthesisReserve in the config',
    );
    expect(state.delegations.map((d) => d.taskName)).toEqual(['small']);
  });
});
