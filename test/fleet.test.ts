/**
 * R8.1 and R8.2 on a real dev server: model calls go to a queue of their own whose rate the server holds for every
 * worker (set by the worker at its start and read back), and every call and child start carries its place: a
 * conversation's turn is served before background children's calls already waiting on that queue, and the tree shows
 * a call waiting there.
 */
import { randomUUID } from 'node:crypto';
import proto from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { RunState } from '../src/contract/run.js';
import { loadTree } from '../src/client/inspect.js';
import { renderTree } from '../src/client/tree.js';
import { fairnessKey, runPriority } from '../src/rules/fleet.js';
import { forTask } from '../src/testing/script.js';
import { delegateReply, DELEGATION_TOOLS, delegationConfig, PARENT_SCOPES } from './support/delegation.js';
import { useHarness } from './support/harness.js';
import { afterTools, childTask, heardFrom, said } from './support/requests.js';

const MODEL_QUEUE = `fleet-model-${randomUUID()}`;
/** The provider's rate: two of three background children's calls wait while the third's is served. */
const RATE = 1;
const config = delegationConfig({ maxChildrenPerRun: 8 });
const h = useHarness({
  config: {
    ...config,
    modelCalls: { taskQueue: MODEL_QUEUE, requestsPerSecond: RATE, perTenantRequestsPerSecond: RATE },
  },
  tools: DELEGATION_TOOLS,
});
const { TaskQueueType, TaskQueueKind } = proto.temporal.api.enums.v1;

/** A run's model calls as its history has them: when each was queued and when a worker took it. */
async function modelCalls(workflowId: string): Promise<{ run: string; queued: number; started: number }[]> {
  const events = (await h.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const queued = new Map<string, number>();
  const calls: { run: string; queued: number; started: number }[] = [];
  const ms = (e: (typeof events)[number]) =>
    Number(e.eventTime!.seconds) * 1000 + Math.floor(e.eventTime!.nanos! / 1e6);
  for (const event of events) {
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled?.activityType?.name === 'callModel') {
      expect(scheduled.taskQueue?.name, `${workflowId}: a model call on the fleet's model queue`).toBe(MODEL_QUEUE);
      queued.set(String(event.eventId), ms(event));
    }
    const started = event.activityTaskStartedEventAttributes;
    const at = started ? queued.get(String(started.scheduledEventId)) : undefined;
    if (at !== undefined) calls.push({ run: workflowId, queued: at, started: ms(event) });
  }
  return calls;
}

describe('R8.1 R8.2 the fleet shares its provider', () => {
  it('R8.1 the worker sets the model queue’s rates on the server at its start, the whole queue’s and each fairness key’s, and the server holds them', async () => {
    const { config: held } = await h.client.workflowService.describeTaskQueue({
      namespace: 'default',
      taskQueue: { name: MODEL_QUEUE, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      taskQueueType: TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
      reportConfig: true,
    });
    expect(held?.queueRateLimit?.rateLimit?.requestsPerSecond).toBe(RATE);
    expect(held?.fairnessKeysRateLimitDefault?.rateLimit?.requestsPerSecond).toBe(RATE);
  });

  it('R8.2 R8.1 with the provider saturated by background children, a conversation’s turn is served before the children’s calls already waiting, and the tree shows one waiting', async () => {
    const task = 'fleet conversation: three researchers';
    const briefs = [1, 2, 3].map((n) => ({ task_name: `r${n}`, message: `fleet child ${n} work`, wait: false }));
    h.model.add(
      { name: 'dispatch', when: forTask(task, 0), reply: { text: 'Three researchers.', ...delegateReply({ briefs }) } },
      { name: 'dispatched', when: (r) => afterTools(task)(r) && forTask(task, 1)(r), reply: { text: 'On it.' } },
      { name: 'news', when: said(task, 'Any news?'), reply: { text: 'Not yet.' } },
      { name: 'report', when: heardFrom(task), reply: { text: 'One is done.' }, times: 3 },
      // Each child works through four calls in a row: at any time, one of each child's waits on the queue.
      ...briefs.flatMap(({ message }) => [
        ...[0, 1, 2].map((n) => ({
          name: `${message} ${n}`,
          when: childTask(message, n),
          reply: { toolCalls: [{ name: 'calculate', arguments: { operation: 'add', a: n, b: 1 } }] },
        })),
        { name: `${message} done`, when: childTask(message, 3), reply: { text: `${message}: found it` } },
      ]),
    );
    const id = h.id('fleet');
    await h.deputy.startRun({ task, mode: 'conversation', scopes: PARENT_SCOPES }, { workflowId: id });
    await expect.poll(async () => (await h.deputy.getState(id)).status, { timeout: 20_000 }).toBe('waiting_for_user');
    // The children are calling the provider faster than its rate lets them: some of their calls wait.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    // The tree says so: a child's call waits for the provider's queue.
    const tree = renderTree(await loadTree(h.client, id), { width: 400 });
    expect(tree).toMatch(/[├└]─ r\d .*\n.* · its model call waits in the queue \(\d+ s\)/);
    await h.deputy.sendMessage(id, 'Any news?');
    await expect
      .poll(async () => RunState.parse(await h.deputy.getState(id)).delegations.map((d) => d.status), {
        timeout: 60_000,
      })
      .toEqual(['completed', 'completed', 'completed']);

    const state = RunState.parse(await h.deputy.getState(id));
    const own = await modelCalls(id);
    const children = (await Promise.all(state.delegations.map((d) => modelCalls(d.childWorkflowId)))).flat();
    const turn = own[2]!; // the dispatch, its follow-up, then the person's question
    const waiting = children.filter((call) => call.queued < turn.queued && call.started > turn.queued);
    const figures = `turn queued +0 started +${turn.started - turn.queued} ms; children's calls waiting then: ${waiting
      .map((call) => `queued ${call.queued - turn.queued} started +${call.started - turn.queued}`)
      .join(', ')}`;
    console.log(`R8.2 ${figures}`);
    expect(waiting.length, figures).toBeGreaterThanOrEqual(2);
    for (const call of waiting) expect(call.started, figures).toBeGreaterThanOrEqual(turn.started);
    await h.deputy.cancel(id);
  }, 120_000);

  it('R8.2 a run’s place: a conversation first, a run next, children last, each in its tenant’s share (its tree’s without one)', () => {
    expect(runPriority({ mode: 'conversation', depth: 0, tenant: 'acme', rootId: 'r' })).toEqual({
      priorityKey: 1,
      fairnessKey: 'acme',
    });
    expect(runPriority({ mode: 'task', depth: 0, tenant: undefined, rootId: 'run-1' })).toEqual({
      priorityKey: 2,
      fairnessKey: 'run-1',
    });
    expect(runPriority({ mode: 'conversation', depth: 2, tenant: 'acme', rootId: 'r' }).priorityKey).toBe(4);
    // Temporal takes 64 bytes: a longer key keeps its start and a hash of the whole, so two stay apart.
    const long = (end: string) => `${'é'.repeat(40)}${end}`;
    expect(Buffer.byteLength(fairnessKey(long('a')))).toBeLessThanOrEqual(64);
    expect(fairnessKey(long('a'))).not.toBe(fairnessKey(long('b')));
    expect(fairnessKey(long('a'))).toBe(fairnessKey(long('a')));
  });

  it('R8.2 a starter that claims a conversation’s place, another tenant’s share and a heavy weight moves nothing: the run’s calls carry the place it gives itself', async () => {
    const task = 'fleet: a starter lies about its place';
    h.model.add({ name: 'liar', when: forTask(task), reply: { text: 'done, in my own place' } });
    const workflowId = h.id('liar');
    // A raw client of the namespace, not DeputyClient: Temporal records whatever priority it asks for.
    await h.client.workflow.start('agentRun', {
      taskQueue: h.taskQueue,
      workflowId,
      args: [{ task, tenant: 'acme' }],
      priority: { priorityKey: 1, fairnessKey: 'someone-else', fairnessWeight: 100 },
    });
    expect(await h.deputy.result(workflowId)).toMatchObject({ status: 'completed', output: 'done, in my own place' });
    const events = (await h.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
    expect(events[0]!.workflowExecutionStartedEventAttributes?.priority).toMatchObject({
      priorityKey: 1,
      fairnessKey: 'someone-else',
    });
    const places = events.flatMap((e) => {
      const scheduled = e.activityTaskScheduledEventAttributes;
      if (scheduled?.activityType?.name !== 'callModel') return [];
      const { priorityKey, fairnessKey: key, fairnessWeight } = scheduled.priority ?? {};
      return [{ priorityKey, fairnessKey: key, weighted: (fairnessWeight ?? 0) > 1 }];
    });
    // A run of its own (not a conversation), in its tenant's share, at no weight of the starter's.
    expect(places).toEqual([{ priorityKey: 2, fairnessKey: 'acme', weighted: false }]);
  });
});
