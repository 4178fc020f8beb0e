/**
 * R5.4 under a crash: three runs of one tenant (cap 2 live children) delegate two children each while the worker
 * process (`npm run worker`) is SIGKILLed mid-way and restarted. Every run completes, the cap held at every sample,
 * and no slot leaked: the tenant's admission workflow ends with nothing held and nobody waiting.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admissionStateQuery } from '../../src/contract/messages.js';
import { lastMessage, userSays } from '../../src/testing/script.js';
import { createHarness, type Harness } from '../support/harness.js';
import { TWO_ARM } from '../support/evidence.js';
import type { WorkerProcess } from '../support/worker-process.js';
import { FAULT_CONFIG, sleep, startFaultWorker, TREE_SCOPES, writeConfig } from './support.js';

const CAP = 2;
const tenant = `kill-${Math.random().toString(36).slice(2, 8)}`;
const configPath = writeConfig({
  ...FAULT_CONFIG,
  tenants: {
    [tenant]: {
      evidence: [TWO_ARM],
      maxLiveChildren: CAP,
      admissionSweepSeconds: 2,
    },
  },
});
const tasks = [1, 2, 3].map((n) => `admission kill run ${n}`);

let h: Harness;
let worker: WorkerProcess | undefined;
beforeAll(async () => {
  h = await createHarness();
  for (const task of tasks) {
    h.model.add(
      {
        when: (r) => lastMessage(r) === task,
        times: 5,
        reply: {
          toolCalls: [
            {
              name: 'delegate',
              arguments: {
                briefs: [
                  { task_name: 'a', message: `${task} child a` },
                  { task_name: 'b', message: `${task} child b` },
                ],
              },
            },
          ],
        },
      },
      {
        when: (r) => userSays(task)(r) && r.body.messages.at(-1)?.role === 'tool',
        times: 5,
        reply: { text: `${task} done` },
      },
    );
  }
  h.model.add({
    when: (r) => /admission kill run \d child/.test(lastMessage(r)),
    times: 30,
    delayMs: 800,
    reply: { text: 'child done' },
  });
});
afterAll(async () => {
  worker?.kill();
  await h?.close();
});

describe('R5.4 admission survives a worker SIGKILL', () => {
  it('R5.4 R1.1 a SIGKILL mid-way: every run completes, the cap holds at every sample, no slot leaks', async () => {
    worker = await startFaultWorker(h, configPath);
    const ids = tasks.map((_, i) => h.id(`adm-kill-${i + 1}`));
    for (const [i, task] of tasks.entries()) {
      await h.deputy.startRun({ task, scopes: TREE_SCOPES, tenant }, { workflowId: ids[i]! });
    }
    const slots = () => h.client.workflow.getHandle(`deputy-admission-${tenant}`).query(admissionStateQuery);
    let most = 0;
    const sample = async () => (most = Math.max(most, (await slots().catch(() => null))?.holders.length ?? 0));
    // Kill once two children hold slots and others wait.
    for (let i = 0; i < 100 && most < CAP; i++) {
      await sample();
      await sleep(50);
    }
    expect(most).toBe(CAP);
    worker.kill('SIGKILL');
    await worker.exited;
    worker = await startFaultWorker(h, configPath);
    const results = Promise.all(ids.map((id) => h.deputy.result(id)));
    let done = false;
    void results.finally(() => (done = true));
    while (!done) {
      await sample();
      await sleep(100);
    }
    expect((await results).map((r) => [r.status, r.output])).toEqual(tasks.map((t) => ['completed', `${t} done`]));
    expect(most).toBe(CAP);
    await expect.poll(slots, { timeout: 20_000 }).toMatchObject({ holders: [], waiting: [] });
  });
});
