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
  modelCallSendingAttempts,
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
    let kills = 0;
    for (let kill = 0; kill < KILLS; kill++) {
      for (let i = 0; i < 2; i++) {
        const n = runs.length + 2;
        const id = h.id(`kill-${n}`);
        await h.deputy.startRun({ task: treeTask('kill', n), scopes: TREE_SCOPES }, { workflowId: id });
        runs.push({ id, n });
      }
      await sleep(200 + Math.floor(random() * 1800));
      worker.kill('SIGKILL');
      kills += 1;
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

    // No completed model call was made again, by Temporal's own record: a turn's requests came from its attempts that
    // could send one: the one that completed it, and those that timed out because the worker holding them died (in
    // flight: sent, perhaps answered, never reported). A request beyond those is a completed call made again.
    const requestsOf = (key: string) => h.model.requests.filter((request) => callKey(request) === key).length;
    let repeated = 0;
    for (const { id, n } of runs) {
      for (const [workflowId, prefix] of [
        [id, treeTask('kill', n)],
        [`${id}/kid-a-1`, `kill kid a ${n}`],
        [`${id}/kid-b-1`, `kill kid b ${n}`],
      ] as const) {
        const turns = await modelCallSendingAttempts(h.client, workflowId);
        expect(turns, workflowId).toHaveLength(2);
        for (const [turn, sending] of turns.entries()) {
          const key = `${prefix} #${turn}`;
          const requests = requestsOf(key);
          expect(requests, `${key}: requests against attempts that could send one`).toBeGreaterThanOrEqual(1);
          expect(requests, `${key}: requests against attempts that could send one`).toBeLessThanOrEqual(sending);
          repeated += requests - 1;
        }
      }
    }
    // Every request belongs to one of those turns (or to the undisturbed run's): none was made for a call no run
    // recorded.
    const recorded = new Set(
      [1, ...runs.map(({ n }) => n)].flatMap((n) =>
        [treeTask('kill', n), `kill kid a ${n}`, `kill kid b ${n}`].flatMap((prefix) => [
          `${prefix} #0`,
          `${prefix} #1`,
        ]),
      ),
    );
    expect(h.model.requests.map(callKey).filter((key) => !recorded.has(key))).toEqual([]);
    console.log(
      `worker killed: ${kills} kills, ${runs.length} runs, ${h.model.requests.length} model requests, ${repeated} repeated in-flight calls`,
    );
    expect(kills).toBeGreaterThanOrEqual(20);
  });
});
