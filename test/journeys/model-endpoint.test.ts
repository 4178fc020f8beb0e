/**
 * A model endpoint that is down, fails, serves a web page or limits the rate, as a person meets it: a worker started
 * with `npm run worker` against it, a run started and followed with `deputy run`, its status read while it waits.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DeputyClient } from '../../src/client/client.js';
import { ScriptedModelServer } from '../../src/testing/scripted-model.js';
import { testKeyRing } from '../support/worker-process.js';
import { finished, npmRun, untilPrinted, type Command } from './support.js';

const scratch = mkdtempSync(join(tmpdir(), 'deputy-endpoint-'));
const started: Command[] = [];
const track = (command: Command) => (started.push(command), command);
const DEAD = 'http://127.0.0.1:9/v1';
const WEB_PAGE = '<!DOCTYPE html>\n<html><head><title>Welcome</title></head>\n<body><h1>It works!</h1></body></html>';

let model: ScriptedModelServer;
let connection: Connection;
let deputy: DeputyClient;
let live: Command;
let dead: Command;
const queues = { live: `endpoint-live-${randomUUID()}`, dead: `endpoint-dead-${randomUUID()}` };

const byModel = (name: string) => (r: { body: { model?: string } }) => r.body.model === name;

/** The environment of a person's worker and CLI on `queue`, the worker's endpoint at `baseUrl`. */
function environment(queue: string, baseUrl: string): NodeJS.ProcessEnv {
  return {
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    DEPUTY_TASK_QUEUE: queue,
    DEPUTY_BACKGROUND_TASK_QUEUE: `${queue}-children`,
    DEPUTY_CONFIG: join(scratch, 'deputy.config.yaml'),
    OPENAI_BASE_URL: baseUrl,
    OPENAI_API_KEY: 'sk-journey-test-key',
    ...testKeyRing(),
  };
}

beforeAll(async () => {
  model = await ScriptedModelServer.start(
    [
      { name: 'broken', when: byModel('broken'), times: Infinity, reply: { status: 500, message: 'upstream broke' } },
      {
        name: 'web page',
        when: byModel('web-page'),
        times: Infinity,
        reply: { raw: WEB_PAGE, contentType: 'text/html; charset=utf-8' },
      },
      {
        name: 'limited',
        when: byModel('limited'),
        times: Infinity,
        reply: { status: 429, message: 'slow down', headers: { 'retry-after': '1' } },
      },
    ],
    { quiet: true },
  );
  const price = '{ inputPerMTokUsd: 1, outputPerMTokUsd: 1 }';
  writeFileSync(
    join(scratch, 'deputy.config.yaml'),
    [
      'model: broken',
      `prices: { broken: ${price}, web-page: ${price}, limited: ${price} }`,
      'modelRetry: { attempts: 3, maxIntervalSeconds: 2, rateLimitedSeconds: 5 }',
      '',
    ].join('\n'),
  );
  live = track(npmRun('worker', [], environment(queues.live, model.url)));
  dead = track(npmRun('worker', [], environment(queues.dead, DEAD)));
  await Promise.all([
    untilPrinted(live, /^deputy worker: task queues /m, 120_000),
    untilPrinted(dead, /^deputy worker: task queues /m, 120_000),
  ]);
  connection = await Connection.connect({ address: inject('temporalAddress') });
}, 150_000);

afterAll(async () => {
  for (const command of started) command.kill();
  await connection?.close();
  await model?.close();
  rmSync(scratch, { recursive: true, force: true });
});

/** `deputy run <task> --model <name>` on `queue`; the run's status details read while it runs, and its last line. */
async function runAndWatch(queue: 'live' | 'dead', name: string) {
  const env = environment(queues[queue], queue === 'live' ? model.url : DEAD);
  deputy = new DeputyClient(new Client({ connection }), { taskQueue: queues[queue] });
  const cli = track(npmRun('deputy', ['run', `journey through ${name}`, '--model', name], env));
  await untilPrinted(cli, /^started \S+$/m, 60_000);
  const workflowId = /^started (\S+)$/m.exec(cli.output())![1]!;
  const details = new Set<string>();
  let over = false;
  const exit = finished(cli, 90_000).finally(() => (over = true));
  while (!over) {
    const state = await deputy.getState(workflowId).catch(() => null);
    if (state) details.add(state.details);
    await new Promise((r) => setTimeout(r, 100));
  }
  const code = await exit;
  return { code, out: cli.output(), last: cli.output().trim().split('\n').at(-1)!, details: [...details] };
}

describe('49.6 a model endpoint that is down, fails, serves a web page or limits the rate', () => {
  it('49.6 a worker checks its endpoint when it starts and warns in one line; one that answers gets no warning', () => {
    expect(dead.output()).toMatch(
      /^deputy worker: warning: model endpoint http:\/\/127\.0\.0\.1:9\/v1 is unreachable \(.+\): runs retry each model call \(by default 10 attempts, backing off, before the run fails: the config.s modelRetry\); check that it is up and that OPENAI_BASE_URL points at it$/m,
    );
    expect(live.output()).not.toContain('warning');
  });

  it('49.6 down: the status says what it retries and which attempt; the run fails naming the URL and what to check', async () => {
    const { code, last, details } = await runAndWatch('dead', 'broken');
    expect(details).toContainEqual(
      expect.stringMatching(
        /^turn 1: calling broken; retrying: http:\/\/127\.0\.0\.1:9\/v1 unreachable \(.+\), attempt 1 of 3, next in 1 s$/,
      ),
    );
    expect(code).not.toBe(0);
    expect(last).toMatch(
      /^failed: the model call failed 3 times over \d+ s, and the run gave up: http:\/\/127\.0\.0\.1:9\/v1 unreachable \(.+\) for broken: .+; check that the endpoint is up and that OPENAI_BASE_URL points at it$/,
    );
    expect(last).not.toContain('retrying');
  });

  it('49.6 500: retried as the config says, shown as it waits; the last line names the URL, the status and what to check', async () => {
    const before = model.requests.length;
    const { last, details } = await runAndWatch('live', 'broken');
    const url = model.url.replace(/[.]/g, '\\.');
    expect(details).toContainEqual(
      expect.stringMatching(
        new RegExp(`^turn 1: calling broken; retrying: ${url} answered 500, attempt 2 of 3, next in 2 s$`),
      ),
    );
    expect(model.requests.slice(before).filter(byModel('broken'))).toHaveLength(3);
    expect(last).toMatch(
      new RegExp(
        `^failed: the model call failed 3 times over \\d+ s, and the run gave up: ${url} answered 500 for broken: .*upstream broke.*; the endpoint keeps failing: check its status, or point OPENAI_BASE_URL at another$`,
      ),
    );
  });

  it('49.6 a web page where the API should be: refused at once, as a wrong OPENAI_BASE_URL, not an empty answer', async () => {
    const before = model.requests.length;
    const { last } = await runAndWatch('live', 'web-page');
    expect(model.requests.slice(before).filter(byModel('web-page'))).toHaveLength(1);
    expect(last).toBe(
      `failed: ${model.url} answered web-page's call with a web page (text/html; charset=utf-8), not a model answer: check OPENAI_BASE_URL, the API's base URL (often ending in /v1)`,
    );
  });

  it('49.6 429 with retry-after: waited as asked for as long as the config allows, not given up after the attempts', async () => {
    const before = model.requests.length;
    const { last, details } = await runAndWatch('live', 'limited');
    const url = model.url.replace(/[.]/g, '\\.');
    expect(details).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `^turn 1: calling limited; retrying: ${url} answered 429 \\(rate limited\\), 2 times in \\d+ s of the 5 s it is waited on, next in 1 s$`,
        ),
      ),
    );
    // Waits of 1 s for 5 s: more requests than the 3 attempts a failure gets.
    expect(model.requests.slice(before).filter(byModel('limited')).length).toBeGreaterThanOrEqual(5);
    expect(last).toMatch(
      /^failed: the model call failed \d+ times over \d+ s, and the run gave up: .* answered 429 for limited: .*slow down.*; the endpoint keeps limiting the rate: lower the load or raise the key's limit$/,
    );
  });

  it('49.6 every warning the workers printed about the failed calls is one line, with no stack', () => {
    for (const worker of [live, dead]) {
      const lines = worker.output().split('\n');
      expect(lines.filter((line) => line.includes('Activity failed')).length).toBeGreaterThan(0);
      expect(lines.filter((line) => /^\s+at /.test(line))).toEqual([]);
      for (const line of lines.filter((l) => l.includes('[WARN]'))) {
        expect(line).toMatch(
          /^\S+ \[WARN\] (Activity failed \(activityType=callModel|Workflow failed \(workflowType=agentRun) .*\) — \S/,
        );
      }
    }
  });
});
