/**
 * The `deputy` command as a person learns and uses it: from its own help, starting a run and following it, reading
 * a run no worker answers for, exporting into a file, redacting an export and admitting it.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { lastMessage } from '../../src/testing/script.js';
import { PROJECT_ROOT } from '../../src/testing/temporal-cli.js';
import { createHarness, type Harness } from '../support/harness.js';
import { testKeyRing } from '../support/worker-process.js';
import { finished, npmRun, type Command } from './support.js';

const scratch = mkdtempSync(join(tmpdir(), 'deputy-cli-'));
const started: Command[] = [];
let harness: Harness;

beforeAll(async () => {
  harness = await createHarness([
    { name: 'arithmetic', when: (r) => lastMessage(r).includes('17 * 23'), reply: { text: '391' }, times: 10 },
  ]);
  await harness.startWorker();
});
afterAll(async () => {
  for (const command of started) command.kill();
  await harness?.close();
  rmSync(scratch, { recursive: true, force: true });
});

/** `npm run --silent deputy -- <args>` against the suite's server, on `taskQueue` (the harness worker's by default). */
async function deputy(args: string[], taskQueue = harness.taskQueue, timeoutMs = 60_000) {
  const command = npmRun('deputy', args, {
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    DEPUTY_TASK_QUEUE: taskQueue,
    ...testKeyRing(),
  });
  started.push(command);
  const code = await finished(command, timeoutMs);
  return { code, out: command.output(), lines: command.output().trim().split('\n') };
}

describe('49.7 the CLI teaches itself, starts runs, and reads runs without leaving half a file', () => {
  it('49.7 help lists every command with what it does and the environment; <command> --help is help, not an id', async () => {
    const help = await deputy(['help']);
    expect(help.code).toBe(0);
    for (const command of ['run', 'tree', 'watch', 'state', 'sessions', 'export', 'import', 'fork', 'followup'])
      expect(help.out).toMatch(new RegExp(`^ {2}deputy ${command}\\b.*\\S {2,}\\S`, 'm'));
    expect(help.out).toMatch(/^ {2}TEMPORAL_ADDRESS +the Temporal server/m);
    expect((await deputy(['--help'])).out).toBe(help.out);

    const tree = await deputy(['tree', '--help']);
    expect(tree.code).toBe(0);
    expect(tree.out).toMatch(/^usage: deputy tree <workflowId>$/m);
    expect(tree.out).not.toContain('not found');
    const run = await deputy(['run', '--help']);
    expect(run.out).toMatch(/^ {2}--max-cost <usd> /m);
    expect(run.out).toMatch(/^ {2}--detach /m);
  });

  it('49.7 a mistake in the command line exits 2 with one line saying what to do', async () => {
    for (const args of [['frobnicate'], ['tree'], ['run', 'x', '--max-turns', 'ten'], ['tree', 'x', '--redact']]) {
      const wrong = await deputy(args);
      expect(wrong.code, args.join(' ')).toBe(2);
      expect(wrong.lines, args.join(' ')).toHaveLength(1);
      expect(wrong.out).toMatch(/^deputy: .*(deputy help|deputy \w+ --help|: deputy \w+|takes)/);
    }
  });

  it('49.7 deputy run starts a run, prints its id, follows it and ends with its answer', async () => {
    const run = await deputy(['run', 'What is 17 * 23?', '--max-turns', '4']);
    expect(run.code, run.out).toBe(0);
    expect(run.lines[0]).toMatch(/^started run-[0-9a-f-]{36}$/);
    expect(run.out).toMatch(/^completed: 391$/m);
    const id = run.lines[0]!.slice('started '.length);
    expect((await harness.deputy.result(id)).output).toBe('391');
  });

  it('49.7 with no worker answering, state says what Temporal recorded, export fails in one line and writes no file', async () => {
    const nobody = `nobody-${Date.now()}`;
    const detached = await deputy(['run', 'What is 17 * 23?', '--detach'], nobody);
    expect(detached.code, detached.out).toBe(0);
    const id = detached.lines[0]!.slice('started '.length);
    expect(detached.lines[1]).toBe(`follow it with: deputy watch ${id}`);

    const begun = Date.now();
    const state = await deputy(['state', id], nobody);
    expect(Date.now() - begun).toBeLessThan(25_000);
    expect(state.code, state.out).toBe(0);
    expect(state.out).toContain(`${id}: no worker polls its task queue "${nobody}", so this is what Temporal recorded`);
    const recorded = JSON.parse(state.out.slice(state.out.indexOf('{'))) as Record<string, unknown>;
    expect(recorded).toMatchObject({ workflowId: id, workflowStatus: 'RUNNING', taskQueue: nobody });

    const file = join(scratch, 'never.json');
    const exported = await deputy(['export', id, '--out', file], nobody);
    expect(exported.code).toBe(1);
    expect(exported.lines).toEqual([
      `deputy: ${id}: no worker polls its task queue "${nobody}"; a session is read from its worker: start one on task queue "${nobody}" (DEPUTY_TASK_QUEUE=${nobody} npm run worker) and export again`,
    ]);
    expect(existsSync(file)).toBe(false);
    await harness.client.workflow.getHandle(id).terminate('test over');

    const empty = join(scratch, 'empty.json');
    writeFileSync(empty, '');
    const admit = await deputy(['eval', 'admit', empty]);
    expect(admit.code).toBe(1);
    expect(admit.lines).toEqual([
      `deputy: ${empty} is empty (an export that failed?): export the run again with deputy export <workflowId> --out ${empty}`,
    ]);
  });

  it('49.7 export --redact replaces a secret but keeps the run own ids, and the admitted scenario is named after the run', async () => {
    const secret = 'sk-proj-' + 'Q7x9Lm2Vb8Nc4Rt6Yp1Wz3Ks5';
    const run = await deputy(['run', `What is 17 * 23? (the key is ${secret})`, '--max-turns', '4']);
    expect(run.code, run.out).toBe(0);
    const id = run.lines[0]!.slice('started '.length);
    const file = join(scratch, 'redacted.json');
    const exported = await deputy(['export', id, '--redact', '--out', file]);
    expect(exported.code, exported.out).toBe(0);
    const text = readFileSync(file, 'utf8');
    expect(text).not.toContain(secret);
    expect(text).toMatch(/\(the key is \[api-key-\d+\]\)/);
    expect(JSON.parse(text)).toMatchObject({ sessionId: id });
    expect(text).not.toContain('high-entropy');

    const admit = await deputy(['eval', 'admit', file]);
    expect(admit.code, admit.out).toBe(0);
    const scenario = `scenarios/admitted-${id}.yaml`.slice(0, 'scenarios/'.length + 60);
    try {
      expect(admit.out).toContain(`wrote ${scenario.replace(/\.yaml$/, '')}`);
    } finally {
      rmSync(join(PROJECT_ROOT, admit.out.match(/wrote (\S+\.yaml)/)?.[1] ?? 'scenarios/none'), { force: true });
    }
  });
});
