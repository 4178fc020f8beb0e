/**
 * What a person sees from the CLI: a run read without a worker, why a run failed in every view, cancelling from the
 * terminal, retries counted where they happen, and output that fits an 80-column terminal (a tmux pane, drawn into
 * `.deputy/screenshots/cli-tree-80.png`). Every command is the real `npm run deputy`, its output read literally.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { forTask, lastMessage, userSays } from '../../src/testing/script.js';
import { createHarness, type Harness } from '../support/harness.js';
import { delegateReply, delegationConfig, DELEGATION_TOOLS, PARENT_SCOPES } from '../support/delegation.js';
import { testKeyRing } from '../support/worker-process.js';
import { launchChromium, SCREENSHOTS } from '../support/browser.js';
import { finished, npmRun, untilPrinted, type Command } from './support.js';

const started: Command[] = [];
let harness: Harness;
let hold!: () => void;
const held = new Promise<void>((resolve) => (hold = resolve));

beforeAll(async () => {
  harness = await createHarness([
    {
      when: (r) => lastMessage(r).includes('make this follow-up fail'),
      reply: { raw: '<html>Sign in</html>', status: 400, contentType: 'text/html' },
      times: 5,
    },
    { when: forTask('What is 17 * 23?'), reply: { text: '391' }, times: 20 },
    // An endpoint that answers a web page: what a wrong OPENAI_BASE_URL gets.
    {
      when: forTask('a task the endpoint fails'),
      reply: { raw: '<html><body>Sign in</body></html>', status: 400, contentType: 'text/html' },
      times: 5,
    },
    { when: forTask('a task retried'), reply: { status: 500, message: 'upstream overloaded' }, times: 3 },
    { when: forTask('a task retried'), reply: { text: 'recovered' } },
    {
      when: forTask('a task that waits'),
      reply: async () => {
        await held;
        return { text: 'late' };
      },
      times: 5,
    },
    { when: forTask('price the order (cli)', 0), reply: delegateReply({ briefs: briefs() }) },
    { when: forTask('price the order (cli)', 1), reply: { text: 'The order costs $48.08.' } },
    { when: (r) => /look up (the|a) .* \(cli\)/.test(lastMessage(r)), reply: { text: 'found it' }, times: 10 },
    { when: userSays('never matched by anything'), reply: { text: '-' } },
  ]);
  await harness.startWorker({
    config: delegationConfig(),
    tools: DELEGATION_TOOLS,
  });
});
afterAll(async () => {
  hold();
  for (const command of started) command.kill();
  await harness?.close();
});

const briefs = () => [
  { task_name: 'tax-rate-for-the-customer-in-springfield', message: 'look up the tax rate (cli)' },
  { task_name: 'subtotal', message: 'look up a subtotal (cli)' },
];

/** `npm run --silent deputy -- <args>` against the suite's server, on `taskQueue` (the harness worker's by default). */
async function deputy(args: string[], taskQueue = harness.taskQueue, env: NodeJS.ProcessEnv = {}) {
  const command = npmRun('deputy', args, {
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    DEPUTY_TASK_QUEUE: taskQueue,
    ...testKeyRing(),
    ...env,
  });
  started.push(command);
  const begun = Date.now();
  const code = await finished(command, 90_000);
  const out = command.output();
  return { code, out, ms: Date.now() - begun, lines: out.trimEnd().split('\n') };
}

describe('74.1 every view reads Temporal’s records when no worker answers, at once, saying so', () => {
  it('74.1 state, approvals, export and tree of a run nobody serves answer within 5 s, each naming the worker to start', async () => {
    const nobody = `nobody-${Date.now()}`;
    const detached = await deputy(['run', 'What is 17 * 23?', '--detach'], nobody);
    const id = detached.lines[0]!.slice('started '.length);
    const line = `deputy: ${id}: no worker polls its task queue "${nobody}", so this is what Temporal recorded; for live answers start a worker on task queue "${nobody}" (DEPUTY_TASK_QUEUE=${nobody} npm run worker)`;
    try {
      const state = await deputy(['state', id], nobody);
      expect(state.ms, state.out).toBeLessThan(5000);
      expect(state.code).toBe(0);
      expect(state.lines[0]).toBe(line);
      expect(JSON.parse(state.out.slice(state.out.indexOf('{')))).toMatchObject({
        workflowId: id,
        workflowStatus: 'RUNNING',
        error: null,
      });
      const approvals = await deputy(['approvals', id], nobody);
      expect(approvals.ms, approvals.out).toBeLessThan(5000);
      expect(approvals.code).toBe(0);
      expect(approvals.out).toContain(line);
      expect(approvals.out).toContain(
        `${id} is running in Temporal's records; its open requests are held by its worker`,
      );
      const exported = await deputy(['export', id], nobody);
      expect(exported.ms, exported.out).toBeLessThan(5000);
      expect(exported.code).toBe(1);
      expect(exported.lines).toEqual([
        `deputy: ${id}: no worker polls its task queue "${nobody}"; a session is read from its worker: start one on task queue "${nobody}" (DEPUTY_TASK_QUEUE=${nobody} npm run worker) and export again`,
      ]);
      const tree = await deputy(['tree', id], nobody);
      expect(tree.ms, tree.out).toBeLessThan(5000);
      expect(tree.out).toContain('as recorded (no worker answered)');
      expect(tree.out).toContain("1 of the tree's runs did not answer (no worker for them)");
    } finally {
      await harness.client.workflow.getHandle(id).terminate('test over');
    }
  });
});

describe('74.2 a failed run says why in every view', () => {
  it('74.2 state has an error field, tree a why line, watch the failure whole, the web transcript the reason', async () => {
    const run = await deputy(['run', 'a task the endpoint fails', '--max-turns', '3']);
    expect(run.code).toBe(1);
    const id = run.lines[0]!.slice('started '.length);
    const reason = (await harness.deputy.result(id)).error!;
    expect(reason).toMatch(/web page|HTML|html/);

    const state = await deputy(['state', id]);
    const parsed = JSON.parse(state.out) as { status: string; error: string };
    expect(parsed).toMatchObject({ status: 'failed', error: reason });

    const tree = await deputy(['tree', id]);
    expect(tree.lines[0]).toMatch(new RegExp(`^${id.slice(0, 10)}.*failed`));
    // One short line under the failed run, cut to the terminal's width.
    expect(tree.out).toContain(`\n   why: ${reason.slice(0, 40)}`);

    const watch = await deputy(['watch', id]);
    const failedLine = watch.lines.find((l) => l.includes('failed: '))!;
    // Whole: not cut with an ellipsis.
    expect(failedLine).not.toMatch(/…$/);
    expect(watch.out).toContain('why: ');
    expect(watch.out).toMatch(/^failed: tree of 1 run: 0 model calls, 0 tool calls/m);
  });

  it('74.2 a run refused at its input says why in state instead of a missing-handler error', async () => {
    const id = harness.id('refused');
    await harness.client.workflow.start('agentRun', {
      workflowId: id,
      taskQueue: harness.taskQueue,
      args: [{ tsak: 'a typo in the field name' }],
    });
    await expect(harness.client.workflow.getHandle(id).result()).rejects.toBeInstanceOf(WorkflowFailedError);
    const state = await deputy(['state', id]);
    expect(state.code).toBe(0);
    expect(state.out).not.toContain('did not register a handler');
    expect(state.lines[0]).toContain('it ended before it could answer (its error says why)');
    const recorded = JSON.parse(state.out.slice(state.out.indexOf('{'))) as { error: string };
    expect(recorded.error).toMatch(/task/);
  });
});

describe('74.2 a failed follow-up', () => {
  it('74.2 its end carries no answer of the run it follows', async () => {
    const first = await deputy(['run', 'What is 17 * 23?', '--max-turns', '4']);
    const id = first.lines[0]!.slice('started '.length);
    const followup = await deputy(['followup', id, 'make this follow-up fail']);
    const next = followup.lines[0]!.slice('started '.length);
    expect(followup.lines[1]).toBe(`follow it with: deputy watch ${next}`);
    expect((await harness.deputy.result(next)).status).toBe('failed');
    const exported = JSON.parse((await deputy(['export', next])).out) as {
      events: { type: string; status?: string; output?: string | null }[];
    };
    expect(exported.events.findLast((e) => e.type === 'run/ended')).toMatchObject({ status: 'failed', output: null });
  });
});

describe('74.3 cancelling from the terminal', () => {
  it('74.3 Ctrl-C on deputy run stops following and says the run goes on; deputy cancel ends it', async () => {
    const command = npmRun('deputy', ['run', 'a task that waits'], {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      DEPUTY_TASK_QUEUE: harness.taskQueue,
      ...testKeyRing(),
    });
    started.push(command);
    await untilPrinted(command, /^started (\S+)$/m, 30_000);
    const id = /^started (\S+)$/m.exec(command.output())![1]!;
    await untilPrinted(command, /calling test-model/, 30_000);
    command.interrupt();
    // npm, the group's leader, ends by the signal; the CLI under it exits 130 after saying what it did.
    expect([130, 'SIGINT']).toContain(await finished(command, 15_000));
    expect(command.output()).toContain(
      `deputy: stopped watching; ${id} goes on (running). Watch it again with deputy watch ${id}, or cancel it (and its children) with deputy cancel ${id}`,
    );
    expect((await harness.client.workflow.getHandle(id).describe()).status.name).toBe('RUNNING');

    const cancelled = await deputy(['cancel', id]);
    expect(cancelled.code, cancelled.out).toBe(0);
    expect(cancelled.lines).toEqual([`${id} cancelled, its children with it`]);
    expect((await harness.deputy.result(id)).status).toBe('cancelled');
    const again = await deputy(['cancel', id]);
    expect(again.code).toBe(1);
    expect(again.lines).toEqual([`${id} has already ended (cancelled): nothing to cancel`]);
  });
});

describe('74.5 retries shown where they happen', () => {
  it('74.5 deputy run and watch say which attempt failed, of how many, and when the next is', async () => {
    const run = await deputy(['run', 'a task retried']);
    expect(run.code, run.out).toBe(0);
    expect(run.out).toMatch(/retrying: .*answered 500.*, attempt 1 of 10, next in \d+ s/);
    expect(run.out).toMatch(/attempt 3 of 10, next in \d+ s/);
    expect(run.out).toMatch(/^completed: recovered$/m);
  });
});

describe('74.7 the CLI fits an 80-column terminal', () => {
  it('74.7 tree, watch and sessions fit 80 columns with ids elided; --json gives them whole; help lists exit codes', async () => {
    // Delegation needs a scope the CLI does not grant: the service starts the run, the person reads it.
    const id = harness.id('fits');
    await harness.deputy.startRun({ task: 'price the order (cli)', scopes: PARENT_SCOPES }, { workflowId: id });
    expect((await harness.deputy.result(id)).status).toBe('completed');
    const tree = await deputy(['tree', id]);
    for (const line of tree.lines) expect(line.length, line).toBeLessThanOrEqual(80);
    // One glyph set, in tree and watch alike.
    expect(tree.out).toMatch(/^├─ subtotal/m);
    expect(tree.out).toMatch(/^└─ tax-rate-for-…n-springfield completed/m);
    expect(tree.out).not.toContain(`${id}/tax-rate-for-the-customer-in-springfield-1`);
    const watched = await deputy(['watch', id]);
    const drawn = watched.lines.slice(watched.lines.findIndex((l) => l === '') + 1);
    // All but the resume command, which a person copies whole.
    for (const line of drawn.filter((l) => !l.startsWith('deputy watch ')))
      expect(line.length, line).toBeLessThanOrEqual(80);
    expect(watched.out).toMatch(/^├─ tax-rate-for-…n-springfield completed/m);
    expect(watched.out).toMatch(/^└─ subtotal +completed/m);
    // The resume command: its cursor compressed to one copyable line.
    expect(watched.out).toMatch(new RegExp(`^deputy watch ${id} [\\w-]{20,400}$`, 'm'));
    expect(watched.out).toMatch(/^completed: tree of 3 runs: 4 model calls, 1 tool call, /m);
    const json = JSON.parse((await deputy(['tree', id, '--json'])).out) as { workflowId: string }[];
    expect(json.map((n) => n.workflowId)).toContain(`${id}/tax-rate-for-the-customer-in-springfield-1`);

    const sessions = await deputy(['sessions', `DeputyRootId = '${id}'`]);
    expect(sessions.lines[0]).toMatch(/^SESSION +STATUS +PRESET +PARENT$/);
    const help = await deputy(['help']);
    expect(help.out).toMatch(/^exit codes:$/m);
    expect(help.out).toMatch(/^ {2}130 +interrupted \(Ctrl-C\)/m);
    const unknown = await deputy(['help', 'frobnicate']);
    expect(unknown.code).toBe(2);
    const missing = await deputy(['tree', 'no-such-run']);
    expect(missing.code).toBe(1);
    expect(missing.lines).toEqual([
      `deputy: no run "no-such-run" in namespace "default" at ${inject('temporalAddress')}: check the id (deputy sessions lists the runs there) or TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE`,
    ]);
    const fork = await deputy(['fork', id, 'and in euros?']);
    const forked = fork.lines[0]!.slice('started '.length);
    expect(fork.lines[1]).toBe(`follow it with: deputy watch ${forked}`);
    await harness.client.workflow.getHandle(forked).terminate('test over');

    await screenshotIn80Columns(id);
  });
});

/**
 * `deputy tree <id>` in an 80-column tmux pane, as a person's terminal shows it (colour on), drawn into a PNG: no
 * line wraps, so every pane line is a line the tree printed.
 */
async function screenshotIn80Columns(id: string): Promise<void> {
  const session = `deputy-${process.pid}`;
  const env = `TEMPORAL_ADDRESS=${inject('temporalAddress')} DEPUTY_TASK_QUEUE=${harness.taskQueue} TERM=xterm-256color`;
  execFileSync('tmux', [
    'new-session',
    '-d',
    '-s',
    session,
    '-x',
    '80',
    '-y',
    '24',
    `${env} npm run --silent deputy -- tree ${id}; sleep 30`,
  ]);
  try {
    let pane = '';
    for (let i = 0; i < 100 && !/└─ tax-rate/.test(pane); i++) {
      await new Promise((r) => setTimeout(r, 100));
      pane = execFileSync('tmux', ['capture-pane', '-p', '-e', '-t', session], { encoding: 'utf8' });
    }
    // eslint-disable-next-line no-control-regex -- the pane's colours are what is checked
    const plain = pane.replace(/\x1b\[[0-9;]*m/g, '');
    // Colour by status on a terminal.
    // eslint-disable-next-line no-control-regex -- the pane's colours are what is checked
    expect(pane).toMatch(/\x1b\[[0-9;]*32m\s*completed/);
    const rows = plain.split('\n').filter((l) => l.trim() !== '');
    expect(rows.some((l) => l.startsWith('└─ tax-rate-for-…n-springfield'))).toBe(true);
    for (const row of rows) expect(row.length).toBeLessThanOrEqual(80);
    const browser = await launchChromium();
    try {
      const page = await browser.newPage({ viewport: { width: 80 * 9 + 32, height: 24 * 18 + 32 } });
      await page.setContent(
        `<pre style="margin:0;padding:16px;background:#1d232a;color:#e6edf3;font:15px/18px monospace">${ansiToHtml(pane)}</pre>`,
      );
      await page.screenshot({ path: join(SCREENSHOTS, 'cli-tree-80.png') });
    } finally {
      await browser.close();
    }
  } finally {
    execFileSync('tmux', ['kill-session', '-t', session]);
  }
}

/** A tmux pane's text with its SGR colours as spans. */
function ansiToHtml(pane: string): string {
  const colours: Record<string, string> = { '31': '#ff7b72', '32': '#3fb950', '33': '#d29922', '36': '#39c5cf' };
  let open = false;
  return (
    pane
      .replace(/[&<>]/g, (c) => `&#${c.charCodeAt(0)};`)
      // eslint-disable-next-line no-control-regex -- SGR sequences are what is converted
      .replace(/\x1b\[([0-9;]*)m/g, (_m, codes: string) => {
        const colour = codes
          .split(';')
          .map((c) => colours[c])
          .find(Boolean);
        const close = open ? '</span>' : '';
        open = colour !== undefined;
        return colour ? `${close}<span style="color:${colour}">` : close;
      })
  );
}
