/**
 * R8.1 R8.3 a provider besides the default endpoint: the calls to its models go to its base URL with its key (read
 * from the worker's environment, never in history), on its own task queue at its own rate; a run whose own endpoint
 * rate-limits and then goes down falls back onto it; and a worker can make its calls apart from the workers that run
 * runs.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import proto from '@temporalio/proto';
import { afterAll, describe, expect, it } from 'vitest';
import { ScriptedModelServer } from '../src/testing/scripted-model.js';
import { forTask, type RecordedRequest } from '../src/testing/script.js';
import { providerEndpoints } from '../src/worker/endpoints.js';
import { modelQueues } from '../src/worker/model-queue.js';
import { parseConfig } from '../src/config/schema.js';
import { readEnv } from '../src/config/load.js';
import { TEST_API_KEY, testConfig, useHarness } from './support/harness.js';
import { startFaultWorker, writeConfig } from './faults/support.js';

/** The backup provider's key: in the worker's environment only. */
const BACKUP_KEY = `sk-backup-${randomUUID()}`;
const KEY_ENV = 'DEPUTY_TEST_BACKUP_KEY';
process.env[KEY_ENV] = BACKUP_KEY;

const backupQueue = `backup-calls-${randomUUID()}`;
let backup: ScriptedModelServer;
const configOf = (baseUrl: string) =>
  testConfig({
    prices: {
      'test-model': { inputPerMTokUsd: 1, outputPerMTokUsd: 2 },
      'backup-model': { inputPerMTokUsd: 2, outputPerMTokUsd: 4 },
    },
    fallbackModels: ['backup-model'],
    modelFallback: { rateLimited: 2, unreachable: 1 },
    providers: {
      backup: { baseUrl, apiKeyEnv: KEY_ENV, models: ['backup-model'], taskQueue: backupQueue, requestsPerSecond: 10 },
    },
  });
const h = useHarness(async () => {
  backup = await ScriptedModelServer.start([], { quiet: true });
  return { config: configOf(backup.url) };
});
afterAll(async () => backup?.close());

const ACTIVITY = proto.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY;
const NORMAL = proto.temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL;
const describeQueue = (name: string, reportConfig = false) =>
  h.connection.workflowService.describeTaskQueue({
    namespace: 'default',
    taskQueue: { name, kind: NORMAL },
    taskQueueType: ACTIVITY,
    reportConfig,
  });

describe('R8.1 R8.3 a provider of its own', () => {
  it('R8.3 R8.1 the default endpoint rate-limits and then goes down: the run falls back onto the backup provider’s model, sent to its URL with its key on its queue at its rate, and its key is nowhere in history', async () => {
    const task = 'providers: add two and two';
    h.model.add(
      {
        name: 'rate limited',
        when: forTask(task),
        reply: { status: 429, message: 'slow down', headers: { 'retry-after': '1' } },
      },
      { name: 'down', when: forTask(task), times: Infinity, reply: { reset: true } },
    );
    backup.add({ name: 'backup', when: forTask(task), reply: { text: 'four, from the backup' } });
    const workflowId = h.id('providers');
    await h.deputy.startRun({ task }, { workflowId });
    const result = await h.deputy.result(workflowId);
    expect(result).toMatchObject({ status: 'completed', output: 'four, from the backup' });

    // The default endpoint saw its own model only, with its own key; the backup its model, with its key.
    const mine = h.model.requests.filter(forTask(task));
    expect(mine.map((r) => [r.body.model, r.rule])).toEqual([
      ['test-model', 'rate limited'],
      ['test-model', 'down'],
    ]);
    const bearer = (r: RecordedRequest) => r.headers.authorization;
    expect(mine.map(bearer)).toEqual([`Bearer ${TEST_API_KEY}`, `Bearer ${TEST_API_KEY}`]);
    const theirs = backup.requests.filter(forTask(task));
    expect(theirs.map((r) => r.body.model)).toEqual(['backup-model']);
    expect(bearer(theirs[0]!)).toBe(`Bearer ${BACKUP_KEY}`);

    // Its call went to the provider's queue, whose rate each worker set on the server; the run's own calls to its own.
    const history = await h.client.workflow.getHandle(workflowId).fetchHistory();
    const queues = (history.events ?? []).flatMap((e) => {
      const scheduled = e.activityTaskScheduledEventAttributes;
      return scheduled?.activityType?.name === 'callModel' ? [scheduled.taskQueue?.name] : [];
    });
    expect(queues).toEqual([h.taskQueue, h.taskQueue, backupQueue]);
    const { config } = await describeQueue(backupQueue, true);
    expect(config?.queueRateLimit?.rateLimit?.requestsPerSecond).toBe(10);
    // The key stays in the worker: neither the run's history nor its session names it.
    const recorded = JSON.stringify(history, (key, value: unknown) =>
      key === 'data' && typeof value === 'string' ? Buffer.from(value, 'base64').toString('utf8') : value,
    );
    expect(recorded).toContain(task); // the payloads are read as text
    expect(recorded).not.toContain(BACKUP_KEY);
    expect(JSON.stringify(await h.deputy.getState(workflowId))).not.toContain(BACKUP_KEY);
  });

  it('R8.1 a worker of model calls only (DEPUTY_WORKER_POLLS=model-calls) polls the providers’ queues and none of the runs’', async () => {
    // Its own queue name, so only it polls it: the run queues are the harness worker's.
    const queue = `backup-only-${randomUUID()}`;
    const config = configOf(backup.url);
    const worker = await startFaultWorker(
      h,
      writeConfig({ ...config, providers: { backup: { ...config.providers.backup!, taskQueue: queue } } }),
      { DEPUTY_WORKER_POLLS: 'model-calls', [KEY_ENV]: BACKUP_KEY },
    );
    try {
      expect(worker.output()).toMatch(
        /^deputy worker: model calls only, provider backup's calls on backup-only-\S+, 10 requests\/s on /m,
      );
      const polled = async (name: string) => (await describeQueue(name)).pollers ?? [];
      let pollers = await polled(queue);
      for (let i = 0; i < 50 && pollers.length === 0; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        pollers = await polled(queue);
      }
      expect(pollers).toHaveLength(1);
      const identity = pollers[0]!.identity;
      for (const runQueue of [h.taskQueue, `${h.taskQueue}-bg`]) {
        expect((await polled(runQueue)).map((p) => p.identity)).not.toContain(identity);
      }
    } finally {
      worker.kill('SIGTERM');
      await worker.exited;
    }
  });

  it('R8.3 a provider whose key variable is not set stops the worker, saying which; a model two providers claim, a rate without a queue, or an unknown DEPUTY_WORKER_POLLS stops it too', () => {
    expect(() => readEnv({ DEPUTY_WORKER_POLLS: 'models' })).toThrow(
      'DEPUTY_WORKER_POLLS: must be "all" or "model-calls", got "models"',
    );
    const config = parseConfig(configOf('http://127.0.0.1:9/v1'));
    expect(() => providerEndpoints(config, {})).toThrow(
      `providers.backup.apiKeyEnv: ${KEY_ENV} is not set in the worker's environment; set it to the key of http://127.0.0.1:9/v1`,
    );
    expect(providerEndpoints(config, { [KEY_ENV]: 'k' }).get('backup-model')?.openai.baseURL).toBe(
      'http://127.0.0.1:9/v1',
    );
    const twice = {
      ...configOf('http://127.0.0.1:9/v1'),
      providers: {
        a: { baseUrl: 'http://127.0.0.1:9/v1', models: ['backup-model'], requestsPerSecond: 3 },
        b: { baseUrl: 'http://127.0.0.1:8/v1', models: ['backup-model'] },
      },
    };
    expect(() => parseConfig(twice)).toThrow(
      /providers\.a\.taskQueue: a rate needs a task queue of its own to hold it/,
    );
    expect(() => parseConfig(twice)).toThrow(
      /providers\.b\.models\.0: model "backup-model" is served by provider "a" already/,
    );
  });

  it('R8.1 the provider docs/operations.md shows is a valid config: its model goes to its URL, with the key its variable holds', () => {
    const doc = readFileSync('docs/operations.md', 'utf8');
    const section = doc.slice(doc.indexOf('**More than one provider.**'));
    const shown = parseConfig(parse(/```yaml\n([\s\S]*?)```/.exec(section)![1]!));
    const endpoint = providerEndpoints(shown, { BACKUP_API_KEY: 'sk-shown' }).get('gpt-4o-mini');
    expect(endpoint?.openai.baseURL).toBe('https://backup.example.com/v1');
    expect(endpoint?.apiKey).toBe('sk-shown');
    expect(modelQueues(shown)).toEqual([
      {
        field: 'providers.backup',
        taskQueue: 'deputy-model-calls-backup',
        requestsPerSecond: 5,
        perTenantRequestsPerSecond: undefined,
      },
    ]);
  });
});
