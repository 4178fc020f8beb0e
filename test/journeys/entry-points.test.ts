/**
 * The helper scripts as a person first meets them: `--help` and a wrong flag answered before anything starts, a
 * Temporal that is not there said in one line within seconds, every problem of the environment at once, an encrypted
 * run read without its keys, and a demo whose model endpoint fails: what it prints, and what it does not.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AesGcmCodec } from '../../src/codec/aes-gcm.js';
import { TemporalUnreachableError } from '../../src/contract/errors.js';
import { oneLineLogger } from '../../src/worker/log.js';
import { forTask } from '../../src/testing/script.js';
import { ScriptedModelServer } from '../../src/testing/scripted-model.js';
import { PROJECT_ROOT } from '../../src/testing/temporal-cli.js';
import { createHarness, type Harness } from '../support/harness.js';
import { testKeyRing } from '../support/worker-process.js';
import { finished, npmRun, untilPrinted, type Command } from './support.js';
import { Client, Connection } from '@temporalio/client';
import { DeputyClient } from '../../src/client/client.js';

const started: Command[] = [];
const scratch = mkdtempSync(join(tmpdir(), 'deputy-entry-'));
afterAll(() => {
  for (const command of started) command.kill();
});

async function npm(script: string, args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 60_000) {
  const command = npmRun(script, args, env);
  started.push(command);
  const begun = Date.now();
  const code = await finished(command, timeoutMs);
  return { code, out: command.output(), ms: Date.now() - begun, lines: command.output().trimEnd().split('\n') };
}

/** Nothing listens on port 1 here: a connection is refused at once. */
const NOWHERE = '127.0.0.1:1';

describe('74.4 entry points that fail fast and clearly', () => {
  it('74.4 every helper script answers --help and refuses an unknown flag before starting anything', async () => {
    for (const script of ['demo', 'ui', 'worker', 'web', 'register-search-attributes']) {
      const help = await npm(script, ['--help'], { TEMPORAL_ADDRESS: NOWHERE });
      expect(help.code, `${script}: ${help.out}`).toBe(0);
      expect(help.lines[0], script).toMatch(new RegExp(`^usage: npm run ${script}\\b`));
      expect(help.out, script).toMatch(/^environment:$/m);
      const bogus = await npm(script, ['--bogus'], { TEMPORAL_ADDRESS: NOWHERE });
      expect(bogus.code, `${script}: ${bogus.out}`).toBe(2);
      expect(bogus.lines, script).toEqual([
        `npm run ${script}: Unknown option '--bogus'; npm run ${script} -- --help lists its options`,
      ]);
    }
  });

  it('74.4 the demo and register-search-attributes say in one line within 10 s that Temporal does not answer', async () => {
    for (const script of ['demo', 'register-search-attributes']) {
      const run = await npm(script, [], { TEMPORAL_ADDRESS: NOWHERE, AGENT_DELEGATION_ENABLED: 'false' });
      expect(run.code, `${script}: ${run.out}`).toBe(1);
      expect(run.ms, script).toBeLessThan(10_000);
      const failure = run.lines.filter((l) => l.includes('no Temporal server answers'));
      expect(failure, `${script}: ${run.out}`).toHaveLength(1);
      expect(failure[0]).toMatch(
        new RegExp(`^(demo|register-search-attributes): no Temporal server answers at ${NOWHERE} \\(ECONNREFUSED\\)`),
      );
      expect(run.out, script).not.toMatch(/TransportError|^\s+at /m);
    }
  });

  it('74.4 the worker reports every problem of its environment and config at once, the YAML line quoted', async () => {
    const config = join(scratch, 'bad.yaml');
    writeFileSync(config, 'model: gpt-4.1-mini\npresets:\n  a: b: c\n');
    const run = await npm('worker', [], {
      TEMPORAL_ADDRESS: NOWHERE,
      DEPUTY_CONFIG: config,
      DEPUTY_MESSAGE_KEYS: '',
      DEPUTY_MESSAGE_KEYS_FILE: undefined,
    });
    expect(run.code).toBe(1);
    expect(run.lines[0]).toBe(`deputy worker: invalid configuration (${config} and environment):`);
    expect(run.out).toContain('(the line reads "a: b: c")');
    expect(run.out).toMatch(/^ {2}- DEPUTY_MESSAGE_KEYS: not set/m);
  });
});

describe('74.4 an encrypted run read without its keys', () => {
  let h: Harness;
  const codec = new AesGcmCodec([['journey-key', randomBytes(32)]]);
  beforeAll(async () => {
    h = await createHarness([{ when: forTask('a secret task'), reply: { text: 'a secret answer' } }]);
    await h.startWorker({ workerOptions: { dataConverter: { payloadCodecs: [codec] } } });
  });
  afterAll(async () => h?.close());

  it('74.4 state says which variable to set; tree warns that it shows only what is readable', async () => {
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    const deputy = new DeputyClient(new Client({ connection, dataConverter: { payloadCodecs: [codec] } }), {
      taskQueue: h.taskQueue,
    });
    const id = h.id('encrypted');
    await deputy.startRun({ task: 'a secret task' }, { workflowId: id });
    expect((await deputy.result(id)).output).toBe('a secret answer');
    await connection.close();
    const env = { TEMPORAL_ADDRESS: inject('temporalAddress'), DEPUTY_TASK_QUEUE: h.taskQueue, ...testKeyRing() };
    const words =
      "this run is encrypted and DEPUTY_CODEC_KEYS is not set here: set DEPUTY_CODEC_KEYS to the workers' keys (key-id:base64 entries, as the workers have them) to read it";
    const state = await npm('deputy', ['state', id], env);
    expect(state.code).toBe(1);
    expect(state.lines).toEqual([`deputy: ${words}`]);
    const tree = await npm('deputy', ['tree', id], env);
    expect(tree.out).toContain(`deputy: ${words}; below is what is readable without it`);
  });
});

describe('74.9 noise', () => {
  it('74.9 a demo whose endpoint fails labels the failure, and prints no dial errors nor UI warnings', async () => {
    const model = await ScriptedModelServer.start([], { quiet: true });
    try {
      const demo = await npm(
        'demo',
        [],
        {
          OPENAI_BASE_URL: model.url,
          OPENAI_API_KEY: 'sk-journey',
          AGENT_DELEGATION_ENABLED: 'false',
          TEMPORAL_ADDRESS: undefined,
          DEPUTY_STATE_DIR: mkdtempSync(join(tmpdir(), 'deputy-noise-')),
        },
        150_000,
      );
      expect(demo.code, demo.out).toBe(1);
      expect(demo.out).toMatch(/^status: failed$/m);
      expect(demo.out).toMatch(/^error: {2}\S/m);
      expect(demo.out).not.toMatch(/^answer:/m);
      expect(demo.out).not.toMatch(/network dial error|GetHistory page size/);
    } finally {
      await model.close();
    }
  });

  it('74.9 the worker log says which state a worker is in, and keeps normal fleet traffic out of its warnings', async () => {
    const queue = `noise-${Date.now()}`;
    const worker = npmRun('worker', [], {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      DEPUTY_TASK_QUEUE: queue,
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      ...testKeyRing(),
    });
    started.push(worker);
    await untilPrinted(worker, /Worker state changed \(.*state=RUNNING/, 90_000);
    worker.interrupt();
    await finished(worker, 30_000);
    expect(worker.output()).not.toMatch(/Worker state changed \((taskQueue=\S+)?\)$/m);

    const written: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = (chunk: string) => (written.push(String(chunk)), true);
    try {
      const logger = oneLineLogger('INFO');
      const asked = Object.assign(new Error('this worker does not hold the first 4 messages of call 2'), {
        type: 'ModelCall.ContextUnknown',
      });
      logger.warn('Activity failed', { activityType: 'callModel', attempt: 1, error: asked });
      logger.warn('Activity failed', { activityType: 'callModel', attempt: 1, error: new Error('boom') });
    } finally {
      process.stderr.write = write;
    }
    expect(written).toHaveLength(1);
    expect(written[0]).toMatch(/\[WARN\] Activity failed \(activityType=callModel\) — Error: boom\n$/);
  });

  it('74.9 a packed tarball is ignored by git, and the installed package names no npm script in its hints', () => {
    expect(
      execFileSync('git', ['check-ignore', 'deputy-0.1.0.tgz'], { cwd: PROJECT_ROOT, encoding: 'utf8' }).trim(),
    ).toBe('deputy-0.1.0.tgz');
    const unreachable = new TemporalUnreachableError('db:7233', new Error('ECONNREFUSED'));
    expect(unreachable.message).not.toContain('npm run');
  });
});
