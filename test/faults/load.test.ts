/**
 * Load: 200 concurrent runs on one worker process (what `npm run worker` runs) with a model that answers at once.
 * All complete without error, and the worker's memory comes back near where it started once they are done.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { forTask, userSays } from '../../src/testing/script.js';
import { createHarness, TEST_API_KEY, type Harness } from '../support/harness.js';
import { spawnWorker, waitUntilReady, type WorkerProcess } from '../support/worker-process.js';
import { FAULT_CONFIG, sleep, writeConfig } from './support.js';

const RUNS = 200;
/**
 * "Near its starting level": the worker's live heap after a full GC is back within this factor of the level before
 * the load. Resident memory (RSS) is reported too but not asserted: V8 and the allocator keep freed pages mapped.
 */
const SETTLED_FACTOR = 1.25;

let h: Harness;
let worker: WorkerProcess | undefined;

beforeAll(async () => {
  h = await createHarness();
  h.model.add(
    {
      when: (r) => userSays('load run')(r) && forTask(r.body.messages.find((m) => m.role === 'user')!.content!, 0)(r),
      times: Infinity,
      reply: { toolCalls: [{ name: 'calculate', arguments: { operation: 'add', a: 2, b: 3 } }] },
    },
    { when: userSays('load run'), times: Infinity, reply: { text: 'sum is 5' } },
  );
});
afterAll(async () => {
  worker?.kill();
  await h?.close();
});

/** Resident memory of a process, from /proc (Linux). */
function rssMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  return Number(line?.match(/(\d+)/)?.[1] ?? NaN) / 1024;
}

/** Asks the worker for its memory (SIGUSR2; it runs a full GC first) and reads its answer. */
async function memoryReport(process: WorkerProcess): Promise<{ rss: number; heapUsed: number }> {
  const before = process.output().length;
  process.child.kill('SIGUSR2');
  const pattern = /memory rss ([\d.]+) MiB, heap used ([\d.]+) MiB/;
  await expect.poll(() => pattern.test(process.output().slice(before)), { timeout: 10_000 }).toBe(true);
  const [, rss, heapUsed] = pattern.exec(process.output().slice(before))!;
  return { rss: Number(rss), heapUsed: Number(heapUsed) };
}

describe('load', () => {
  it(`${RUNS} concurrent runs on one worker complete without error, and its memory comes back near its start`, async () => {
    worker = spawnWorker(
      {
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        DEPUTY_TASK_QUEUE: h.taskQueue,
        DEPUTY_BACKGROUND_TASK_QUEUE: `${h.taskQueue}-bg`,
        DEPUTY_CONFIG: writeConfig(FAULT_CONFIG),
        OPENAI_BASE_URL: h.model.url,
        OPENAI_API_KEY: TEST_API_KEY,
      },
      ['--expose-gc'],
    );
    await waitUntilReady(worker);
    const pid = worker.child.pid!;

    const batch = async (label: string, count: number) => {
      const ids = Array.from({ length: count }, (_, i) => h.id(`${label}-${i}`));
      await Promise.all(
        ids.map((id, i) =>
          h.deputy.startRun({ task: `load run ${label} ${i}`, scopes: ['tools.calc'] }, { workflowId: id }),
        ),
      );
      return Promise.all(ids.map((id) => h.deputy.result(id)));
    };

    // Warm up (code loaded, caches filled), then take the starting level.
    await batch('warmup', 20);
    await sleep(3000);
    const start = await memoryReport(worker);

    let peak = start.rss;
    let samples = 0;
    const sampler = setInterval(() => {
      if (worker?.child.exitCode !== null) return;
      peak = Math.max(peak, rssMiB(pid));
      samples += 1;
    }, 100);
    void worker.exited.then((code) => {
      if (code !== null) console.error(`worker exited with ${code}:\n${worker?.output().slice(-3000)}`);
    });
    const t0 = Date.now();
    const results = await batch('load', RUNS);
    const seconds = (Date.now() - t0) / 1000;
    clearInterval(sampler);
    for (const result of results) expect(result).toMatchObject({ status: 'completed', output: 'sum is 5' });
    expect(results.every((r) => r.usage.modelCalls === 2 && r.usage.toolCalls === 1)).toBe(true);
    expect(worker.child.exitCode).toBeNull();

    // Memory returns near the start once the runs are done (the worker keeps no per-run state).
    await sleep(3000);
    const after = await memoryReport(worker);
    console.log(
      `load: ${RUNS} runs in ${seconds.toFixed(1)} s; worker heap used ${start.heapUsed} MiB before, ${after.heapUsed} MiB after; RSS ${start.rss} MiB before, ${peak.toFixed(0)} MiB peak, ${after.rss} MiB after`,
    );
    expect(after.heapUsed).toBeLessThanOrEqual(start.heapUsed * SETTLED_FACTOR);
    // The sampler watched the load (the worker's RSS may well not grow past where the warm-up left it).
    expect(samples).toBeGreaterThan(0);
    expect(peak).toBeGreaterThanOrEqual(start.rss);
  });
});
