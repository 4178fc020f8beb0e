/**
 * The first commands a person runs, as they run them: the README's demo, the links and commands it prints at the
 * end, `npm run ui`, and what they see when Temporal is not where a command looks for it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { finished, npmRun, run, untilPrinted, type Command } from './support.js';

const stateDir = mkdtempSync(join(tmpdir(), 'deputy-journey-'));
const started: Command[] = [];
const track = (command: Command) => (started.push(command), command);
afterAll(() => {
  for (const command of started) command.kill();
  rmSync(stateDir, { recursive: true, force: true });
});

/** A port where nothing listens: one just freed by the kernel is not reused at once. */
const DEAD_ADDRESS = '127.0.0.1:9';
const KEY = 'k1:am91cm5leS10ZXN0LW9ubHktbm90LWEta2V5LTMyYiE=';

describe('49 the first commands work as the README and the demo say', () => {
  it('49.1 npm run register-search-attributes registers them on a running server and says so', async () => {
    const command = track(npmRun('register-search-attributes', [], { TEMPORAL_ADDRESS: inject('temporalAddress') }));
    expect(await finished(command, 60_000), command.output()).toBe(0);
    expect(command.output()).toMatch(/^search attributes on 127\.0\.0\.1:\d+\/default: 0 added, all \d+ present$/m);
  });

  it('49.2 49.3 49.8 R5.3 the demo completes, its delegation activated on evidence it recorded on its server; its closing hints work: npm run ui stays up until Ctrl-C and the tree it names is shown', async () => {
    const env = {
      DEPUTY_STATE_DIR: stateDir,
      TEMPORAL_ADDRESS: undefined,
      OPENAI_API_KEY: undefined,
      OPENAI_BASE_URL: undefined,
    };
    const demo = track(npmRun('demo', [], env));
    expect(await finished(demo, 150_000), demo.output()).toBe(0);
    const runId = /^run (demo-\S+)$/m.exec(demo.output())?.[1];
    expect(runId, demo.output()).toBeDefined();
    expect(demo.output()).toContain('`npm run ui` serves these runs again');
    // R5.3 Its delegation is activated on evidence recorded on its own server, checked against its records.
    expect(demo.output()).toContain('delegation: recording evidence on this server first');
    expect(demo.output()).toContain("deputy: delegation: offered to every run: the default tenant's evidence passes");
    expect(demo.output()).not.toContain('WITHOUT evidence');
    // R7.2 R7.4 The demo's delegation waits for approval, and the demo approves it, saying so.
    expect(demo.output()).toContain(
      '  approval a1.1 asked: delegate: this delegation would reserve $0.1500 for its children, above approvals.delegationAboveUsd ($0.1)',
    );
    expect(demo.output()).toContain(`npm run deputy -- approve ${runId} a1.1)\n  approval a1.1: approved by client`);

    const ui = track(npmRun('ui', [], env));
    await untilPrinted(ui, /^look at a run from another terminal: .*npm run deputy -- tree <workflowId>$/m, 60_000);
    const prefix = /^look at a run from another terminal: (TEMPORAL_ADDRESS=(\S+) )?npm run/m.exec(ui.output())!;
    // Still serving well after start: nothing but Ctrl-C ends it.
    await new Promise((r) => setTimeout(r, 5_000));
    let uiExit: number | string | undefined;
    void ui.exited.then((code) => (uiExit = code));
    expect(uiExit, ui.output()).toBeUndefined();

    const tree = track(npmRun('deputy', ['tree', runId!], prefix[2] ? { TEMPORAL_ADDRESS: prefix[2] } : {}));
    expect(await finished(tree, 30_000), tree.output()).toBe(0);
    expect(tree.output()).toContain(runId!);
    expect(tree.output()).toContain('completed');
    // 49.8 The demo's figures and the tree's are one count, labelled alike.
    const usage =
      /^usage: {2}(own \d+ model \+ \d+ tool calls); (tree \d+ tok \$\d+\.\d{6}) debited, billed \d+ tok \$\d+\.\d{6}$/m.exec(
        demo.output(),
      );
    expect(usage, demo.output()).not.toBeNull();
    // The root's line holds the tree's spend, the line under it its own calls: the same figures as the demo's.
    const lines = tree.output().split('\n');
    const at = lines.findIndex((line) => line.startsWith(`${runId!} `));
    expect(lines[at]?.replace(/\s+/g, ' ')).toContain(usage![2]);
    expect(lines[at + 1]).toMatch(new RegExp(`^│ {2}${usage![1]!.replace(/[+$.]/g, '\\$&')} · `));

    // Ctrl-C reaches npm and the UI alike; what the person sees is the UI's own last line.
    ui.interrupt();
    await finished(ui, 20_000);
    expect(ui.output()).toMatch(/^Temporal UI stopped$/m);
  });

  it('49.3 with no Temporal at the address, every command says so in one line naming it and TEMPORAL_ADDRESS, within 5 s', async () => {
    const env = { TEMPORAL_ADDRESS: DEAD_ADDRESS, DEPUTY_MESSAGE_KEYS: KEY };
    // One at a time, as a person runs them: each is timed on its own, not while the others start on the same cores.
    const commands = {
      cli: () => npmRun('deputy', ['tree', 'some-run'], env),
      worker: () => npmRun('worker', [], env),
      client: () =>
        run(
          'node',
          [
            '--import',
            'tsx',
            '-e',
            "import('./src/client/client.ts').then(({ DeputyClient }) => DeputyClient.connect()).catch((e) => { console.error(e.message); process.exit(1); })",
          ],
          env,
        ),
    };
    for (const [name, start] of Object.entries(commands)) {
      const t0 = Date.now();
      const command = start();
      track(command);
      expect(await finished(command, 20_000), `${name}: ${command.output()}`).toBe(1);
      const elapsed = Date.now() - t0;
      const lines = command.output().trim().split('\n');
      expect(lines, name).toHaveLength(1);
      expect(lines[0], name).toContain(`no Temporal server answers at ${DEAD_ADDRESS}`);
      expect(lines[0], name).toContain('TEMPORAL_ADDRESS');
      expect(elapsed, `${name} took ${elapsed} ms`).toBeLessThan(5_000);
    }
  });
});
