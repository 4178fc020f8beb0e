/**
 * R7.2 R7.4 under a crash: the worker process (`npm run worker`) is SIGKILLed while a call waits for approval, and
 * again right after the decision. A fresh worker lists the same request, takes the decision, and the call is scheduled
 * once: one `runTool`, one artifact, one decision in history.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventType } from '../../src/client/watch-events.js';
import { lastMessage, userSays } from '../../src/testing/script.js';
import { createHarness, type Harness } from '../support/harness.js';
import type { WorkerProcess } from '../support/worker-process.js';
import { until } from '../support/approvals.js';
import { FAULT_CONFIG, startFaultWorker, writeConfig } from './support.js';

const TASK = 'approval kill: save the memo';
const configPath = writeConfig({
  ...FAULT_CONFIG,
  presets: [{ id: 'assistant', persona: 'You save memos.', tools: ['calculate', 'save_artifact'] }],
  grantableScopes: ['tools.calc', 'artifacts.write'],
  approvals: { tools: { save_artifact: 'always' } },
});

let h: Harness;
let worker: WorkerProcess | undefined;
beforeAll(async () => {
  h = await createHarness();
  h.model.add(
    {
      when: (r) => lastMessage(r) === TASK,
      reply: { toolCalls: [{ name: 'save_artifact', arguments: { name: 'memo.txt', content: 'the memo' } }] },
    },
    { when: (r) => userSays(TASK)(r) && r.body.messages.at(-1)?.role === 'tool', reply: { text: 'memo saved' } },
  );
});
afterAll(async () => {
  worker?.kill();
  await h?.close();
});

const kill = async () => {
  worker!.kill('SIGKILL');
  await worker!.exited;
};

describe('R7.2 R7.4 approvals survive a worker SIGKILL', () => {
  it('R7.2 R7.4 R1.1 killed while the request waits and right after the decision: the request survives, the call is scheduled once', async () => {
    worker = await startFaultWorker(h, configPath);
    const id = h.id('approval-kill');
    await h.deputy.startRun({ task: TASK, scopes: ['tools.calc', 'artifacts.write'] }, { workflowId: id });
    const [before] = await until(
      () => h.deputy.approvals(id),
      (list) => list.length === 1,
      'the request',
    );

    await kill();
    worker = await startFaultWorker(h, configPath);
    const [after] = await until(
      () => h.deputy.approvals(id),
      (list) => list.length === 1,
      'the request again',
    );
    expect(after).toEqual(before);

    await h.deputy.decideApproval(id, after!.requestId, 'approve');
    await kill();
    worker = await startFaultWorker(h, configPath);

    const result = await h.deputy.result(id);
    expect(result).toMatchObject({ status: 'completed', output: 'memo saved' });
    expect(result.artifacts?.map((a) => a.name)).toEqual(['memo.txt']);
    const events = (await h.client.workflow.getHandle(id).fetchHistory()).events ?? [];
    const tools = events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'runTool');
    expect(tools).toHaveLength(1);
    const decisions = events.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED);
    expect(decisions).toHaveLength(1);
    expect(events.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED)).toEqual([]);
  });
});
