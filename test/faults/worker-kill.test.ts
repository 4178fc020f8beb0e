/**
 * Worker killed: SIGKILL the worker process (what `npm run worker` runs) at random points of delegating runs,
 * restart it each time, and check that every run ends as an undisturbed run does.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunState } from '../../src/contract/run.js';
import { createHarness, type Harness } from '../support/harness.js';
import type { WorkerProcess } from '../support/worker-process.js';
import {
  callKey,
  expectLedgerAddsUp,
  FAULT_CONFIG,
  modelCallAttempts,
  seededRandom,
  sleep,
  startFaultWorker,
  TREE_SCOPES,
  treeOutput,
  treeRules,
  treeTask,
  writeConfig,
} from './support.js';

const KILLS = 22;
const SEED = Number(process.env.FAULTS_SEED ?? 20261130);
const random = seededRandom(SEED);

let h: Harness;
let worker: WorkerProcess | undefined;
const configPath = writeConfig(FAULT_CONFIG);

beforeAll(async () => {
  h = await createHarness();
  // Each model answer takes 50–400 ms, so kills land before, during and after calls.
  h.model.add(...treeRules('kill', () => 50 + Math.floor(random() * 350)));
});
afterAll(async () => {
  worker?.kill();
  await h?.close();
});

const startWorker = () => startFaultWorker(h, configPath);

describe(`worker killed (seed ${SEED})`, () => {
  it(`R1.1 ${KILLS} SIGKILLs across delegating runs: same outputs, no completed model call repeated, ledgers add up`, async () => {
    worker = await startWorker();

    // The undisturbed run every disturbed one must match.
    const reference = h.id('kill-ref');
    await h.deputy.startRun({ task: treeTask('kill', 1), scopes: TREE_SCOPES }, { workflowId: reference });
    const expected = await h.deputy.result(reference);
    expect(expected).toMatchObject({ status: 'completed', output: treeOutput(1) });

    const runs: { id: string; n: number }[] = [];
    const kills: number[] = [];
    for (let kill = 0; kill < KILLS; kill++) {
      for (let i = 0; i < 2; i++) {
        const n = runs.length + 2;
        const id = h.id(`kill-${n}`);
        await h.deputy.startRun({ task: treeTask('kill', n), scopes: TREE_SCOPES }, { workflowId: id });
        runs.push({ id, n });
      }
      await sleep(200 + Math.floor(random() * 1800));
      worker.kill('SIGKILL');
      kills.push(Date.now());
      await worker.exited;
      worker = await startWorker();
    }

    const results = await Promise.all(runs.map(({ id }) => h.deputy.result(id)));
    for (const [i, result] of results.entries()) {
      const { id, n } = runs[i]!;
      expect(result, id).toMatchObject({ status: 'completed', output: treeOutput(n) });
      // Same usage as the undisturbed run: no call charged twice, none lost.
      expect(result.usage, id).toEqual(expected.usage);
      await expectLedgerAddsUp(h.client, id, RunState.parse(await h.deputy.getState(id)), result);
    }

    // No completed model call was made again: every call the model answered more than once was in flight (sent,
    // and not yet reported to Temporal) when the worker died.
    const byKey = new Map<string, typeof h.model.requests>();
    for (const request of h.model.requests)
      byKey.set(callKey(request), [...(byKey.get(callKey(request)) ?? []), request]);
    const inFlightAtKill = (request: (typeof h.model.requests)[number]) =>
      kills.some((at) => request.receivedAt <= at && (request.answeredAt ?? Infinity) >= at - 1000);
    let repeated = 0;
    for (const [key, requests] of byKey) {
      for (const earlier of requests.slice(0, -1)) {
        expect(inFlightAtKill(earlier), `${key} was repeated after it completed`).toBe(true);
        repeated += 1;
      }
    }
    // Temporal's histories agree: each run's model calls completed once, and the endpoint saw no more requests
    // than the attempts Temporal recorded.
    for (const { id, n } of runs) {
      for (const [workflowId, prefix] of [
        [id, treeTask('kill', n)],
        [`${id}/kid-a-1`, `kill kid a ${n}`],
        [`${id}/kid-b-1`, `kill kid b ${n}`],
      ] as const) {
        const { completed, attempts } = await modelCallAttempts(h.client, workflowId);
        const keys = [...byKey.keys()].filter((key) => key.startsWith(`${prefix} #`));
        const requests = keys.reduce((sum, key) => sum + byKey.get(key)!.length, 0);
        expect(completed, workflowId).toBe(2);
        expect(keys, workflowId).toHaveLength(2);
        expect(requests, workflowId).toBeLessThanOrEqual(attempts);
      }
    }
    console.log(
      `worker killed: ${kills.length} kills, ${runs.length} runs, ${h.model.requests.length} model requests, ${repeated} repeated in-flight calls`,
    );
    expect(kills.length).toBeGreaterThanOrEqual(20);
  });
});
