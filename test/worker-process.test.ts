import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { forTask } from '../src/testing/script.js';
import { countedInput } from '../src/testing/script-usage.js';
import { createHarness, TEST_API_KEY, type Harness } from './support/harness.js';
import { spawnWorker, waitUntilReady, type WorkerProcess } from './support/worker-process.js';

let h: Harness;
const spawned: WorkerProcess[] = [];
const dir = mkdtempSync(join(tmpdir(), 'deputy-worker-test-'));

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => {
  for (const worker of spawned) worker.kill();
  await h?.close();
});

function workerEnv(config: unknown): Record<string, string> {
  const configPath = join(dir, `config-${spawned.length}.json`);
  writeFileSync(configPath, JSON.stringify(config));
  return {
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    DEPUTY_TASK_QUEUE: h.taskQueue,
    DEPUTY_CONFIG: configPath,
    OPENAI_BASE_URL: h.model.url,
    OPENAI_API_KEY: TEST_API_KEY,
  };
}

const CONFIG = { model: 'test-model', prices: { 'test-model': { inputPerMTokUsd: 1, outputPerMTokUsd: 2 } } };

describe('npm run worker', () => {
  it('§6 invalid configuration stops the worker at start with one line per problem', async () => {
    const worker = spawnWorker(
      workerEnv({
        model: 'nope',
        limits: { maxTurns: 0 },
        presets: [{ id: 'Bad Id', tools: ['teleport'] }],
        colour: 'red',
      }),
    );
    spawned.push(worker);
    expect(await worker.exited).toBe(1);
    const lines = worker.output().split('\n');
    expect(lines[0]).toMatch(/^deputy worker: invalid configuration \(.*config-0\.json\):$/);
    expect(lines).toContain('  - (root): Unrecognized key: "colour"');
    expect(lines.some((l) => l.startsWith('  - limits.maxTurns: '))).toBe(true);
    expect(lines.some((l) => l.startsWith('  - presets.0.id: use lowercase letters'))).toBe(true);
  });

  it('§6 a preset naming a tool the worker does not have stops the worker', async () => {
    const worker = spawnWorker(
      workerEnv({ ...CONFIG, presets: [{ id: 'assistant', tools: ['calculate', 'teleport'] }] }),
    );
    spawned.push(worker);
    expect(await worker.exited).toBe(1);
    expect(worker.output()).toContain(
      '  - presets.0.tools: unknown tool "teleport"; the worker has: calculate, search_notes',
    );
  });

  it('R1.1 a worker killed mid-run is replaced and the run finishes without repeating completed model calls', async () => {
    const task = 'survive a crash';
    h.model.add(
      {
        name: 'first',
        when: forTask(task, 0),
        reply: { toolCalls: [{ name: 'calculate', arguments: { operation: 'multiply', a: 6, b: 7 } }] },
      },
      { name: 'in-flight', when: forTask(task, 1), reply: { hang: true } },
    );
    const first = spawnWorker(workerEnv(CONFIG));
    spawned.push(first);
    await waitUntilReady(first);
    const workflowId = h.id('crash');
    await h.deputy.startRun({ task }, { workflowId });
    await h.model.waitFor((rs) => rs.some((r) => r.rule === 'in-flight'), 30_000);
    first.kill('SIGKILL');
    await first.exited;

    h.model.add({ name: 'retried', when: forTask(task, 1), reply: { text: 'the answer is 42' } });
    const second = spawnWorker(workerEnv(CONFIG));
    spawned.push(second);
    await waitUntilReady(second);
    const result = await h.deputy.result(workflowId);
    expect(result).toMatchObject({ status: 'completed', output: 'the answer is 42' });
    expect(result.usage).toMatchObject({ modelCalls: 2, toolCalls: 1 });
    // The completed call ran once; only the call in flight at the kill was made again.
    expect(h.model.requests.filter(forTask(task)).map((r) => r.rule)).toEqual(['first', 'in-flight', 'retried']);
    second.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });

  it('R2.15 R1.1 a worker killed mid-answer: the dead attempt is debited as its last heartbeat had it, and the call is made again on the next worker', async () => {
    const task = 'killed while it streams';
    const text = Array.from({ length: 400 }, (_, i) => `word${i} is here`).join(' ');
    h.model.add({ name: 'streaming', when: forTask(task, 0), reply: { text, chunkDelayMs: 100 } });
    const first = spawnWorker(workerEnv(CONFIG));
    spawned.push(first);
    await waitUntilReady(first);
    const workflowId = h.id('killed-streaming');
    await h.deputy.startRun({ task }, { workflowId });
    // The first heartbeat (half a second in) carries the accepted input; then the worker dies mid-answer.
    await h.model.waitFor((rs) => rs.some((r) => r.rule === 'streaming'), 30_000);
    await expect
      .poll(() => h.model.requests.find((r) => r.rule === 'streaming')?.sentChars ?? 0, { timeout: 30_000 })
      .toBeGreaterThan(160);
    first.kill('SIGKILL');
    await first.exited;

    h.model.add({
      name: 'after the kill',
      when: forTask(task, 0),
      reply: { text: 'the whole answer', usage: { prompt_tokens: 5000, completion_tokens: 20 } },
    });
    const second = spawnWorker(workerEnv(CONFIG));
    spawned.push(second);
    await waitUntilReady(second);
    const result = await h.deputy.result(workflowId);
    expect(result).toMatchObject({ status: 'completed', output: 'the whole answer' });
    expect(h.model.requests.filter(forTask(task)).map((r) => r.rule)).toEqual(['streaming', 'after the kill']);
    // The retry's 5,000 and 20, and the dead attempt's input as Deputy counted it (the endpoint never reported it).
    const dead = h.model.requests.find((r) => r.rule === 'streaming')!;
    expect(result.usage.inputTokens - 5000).toBe(countedInput(dead));
    expect(result.usage.outputTokens).toBeGreaterThanOrEqual(20);
    expect(result.usage.modelCalls).toBe(1);
    // Each attempt is an activity of its own: the dead one timed out on its heartbeat.
    const events = (await h.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
    expect(events.filter((e) => e.activityTaskTimedOutEventAttributes)).toHaveLength(1);
    second.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  }, 90_000);

  it('R4.1 the worker reloads its config on a file change and on SIGHUP, and keeps the old one when the new one is invalid', async () => {
    const env = workerEnv(CONFIG);
    const worker = spawnWorker(env);
    spawned.push(worker);
    await waitUntilReady(worker);
    const presets = [
      { id: 'assistant', tools: ['calculate'] },
      { id: 'writer', tools: [] },
    ];
    writeFileSync(env.DEPUTY_CONFIG!, JSON.stringify({ ...CONFIG, presets }));
    await expect
      .poll(() => worker.output(), { timeout: 10_000 })
      .toMatch(/configuration reloaded \(.*changed\); presets: assistant, writer/);
    worker.child.kill('SIGHUP');
    await expect.poll(() => worker.output(), { timeout: 10_000 }).toMatch(/configuration reloaded \(SIGHUP\)/);
    writeFileSync(env.DEPUTY_CONFIG!, JSON.stringify({ ...CONFIG, presets: [{ id: 'Bad Id' }] }));
    await expect
      .poll(() => worker.output(), { timeout: 10_000 })
      .toMatch(/refused, keeping the configuration in force: invalid configuration/);
    expect(worker.child.exitCode).toBeNull();
    worker.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
  });
});
