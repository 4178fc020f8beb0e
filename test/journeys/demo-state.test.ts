/**
 * The demo after accidents: one cut short through a pipe, and two started at once on the same state directory.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { probe } from '../../src/client/connect.js';
import { freePort } from '../../src/testing/ports.js';
import { findTemporalCli } from '../../src/testing/temporal-cli.js';
import { finished, npmRun, untilPrinted, type Command } from './support.js';

const stateDir = mkdtempSync(join(tmpdir(), 'deputy-demo-state-'));
const started: Command[] = [];
const track = (command: Command) => (started.push(command), command);
const env = {
  DEPUTY_STATE_DIR: stateDir,
  TEMPORAL_ADDRESS: undefined,
  OPENAI_API_KEY: undefined,
  OPENAI_BASE_URL: undefined,
};
afterAll(() => {
  for (const command of started) command.kill();
  for (const pid of serversOf(join(stateDir, 'temporal.db'))) process.kill(pid, 'SIGKILL');
  rmSync(stateDir, { recursive: true, force: true });
});

/** The processes whose command line `matches`, as `ps` would show them. */
function processes(matches: (args: string[]) => boolean): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        return matches(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0'));
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** Dev servers serving `database`. */
const serversOf = (database: string) => processes((args) => args[args.indexOf('--db-filename') + 1] === database);

/** Node processes running `script` with this test's state directory. */
const processesWith = (script: string) =>
  processes((args) => args.includes(script)).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`DEPUTY_STATE_DIR=${stateDir}`);
    } catch {
      return false;
    }
  });

/**
 * A dev server on `database` started the way an interrupted demo leaves one: its own process, outliving whoever
 * started it. Resolves with its pid once it accepts connections.
 */
async function strayServer(database: string): Promise<number> {
  const port = await freePort();
  const child = spawn(
    findTemporalCli()!,
    ['server', 'start-dev', '--db-filename', database, '--headless', '--port', String(port)],
    { detached: true, stdio: 'ignore' },
  );
  child.unref();
  const deadline = Date.now() + 30_000;
  for (;;) {
    const up = await probe(`127.0.0.1:${port}`).then(
      () => true,
      () => false,
    );
    if (up) return child.pid!;
    if (Date.now() > deadline) throw new Error(`a dev server on ${database} did not listen on ${port} within 30 s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('49 the demo after accidents', () => {
  it('49.4 a demo killed mid-run leaves its run and maybe its dev server; the next demo stops both, says so, and completes', async () => {
    const database = join(stateDir, 'temporal.db');
    const killed = track(npmRun('demo', [], env));
    // The id is printed before the run is started; its first model step proves the run exists on the server.
    await untilPrinted(killed, /^ {2}model → /m, 120_000);
    const interrupted = /^run (demo-\S+)$/m.exec(killed.output())![1]!;
    // Killed outright, as by the OOM killer or a closed terminal: no handler runs, so its dev server outlives it.
    const node = processesWith('src/demo/main.ts');
    expect(node).toHaveLength(1);
    process.kill(node[0]!, 'SIGKILL');
    await finished(killed, 30_000).catch(() => undefined);
    // The dev server writes its log into pipes the killed process read: it lives on until it next logs a line, and
    // then dies of the broken pipe. Where it has died, one is started on the same file, as the luckier kill leaves.
    let orphans = serversOf(database);
    if (orphans.length === 0) {
      console.log('49.4: the killed demo took its dev server with it; starting the server it could have left');
      orphans = [await strayServer(database)];
    }
    expect(orphans).toHaveLength(1);

    const next = track(npmRun('demo', [], env));
    expect(await finished(next, 150_000), next.output()).toBe(0);
    const out = next.output();
    expect(out).toContain(
      `stopping the dev server an interrupted demo left running on ${database} (pid ${orphans[0]})`,
    );
    expect(out).toMatch(
      new RegExp(
        `^found ${interrupted} still running from an interrupted demo: terminated it( and its \\d+ running children)?, so it cannot take this demo's replies$`,
        'm',
      ),
    );
    expect(out).toMatch(/^status: completed$/m);
    expect(out).not.toContain('Activity failed');
    expect(out).not.toContain('out of script');
    expect(serversOf(database)).toEqual([]);
  });

  it('49.5 a second demo while one serves the same state directory waits, then refuses in one line naming the lock', async () => {
    const first = track(npmRun('demo', ['--ui'], env));
    await untilPrinted(first, /^Temporal UI stays up at /m, 150_000);
    expect(first.output()).toMatch(/^status: completed$/m);
    const second = track(npmRun('demo', [], env));
    expect(await finished(second, 60_000), second.output()).toBe(1);
    const database = join(stateDir, 'temporal.db');
    expect(second.output()).toContain(`waiting up to 7 s for ${database}.lock`);
    expect(second.output().trim().split('\n').at(-1)).toBe(
      `demo: ${database} is in use by another npm run demo or npm run ui (lock ${database}.lock); stop that one ` +
        'first, or give this one its own directory: DEPUTY_STATE_DIR=<directory> npm run demo',
    );
    expect(second.output()).not.toMatch(/SQLITE_BUSY|Failed to lock shard|^\s+at /m);
    expect(first.output()).not.toMatch(/SQLITE_BUSY|Failed to lock shard/);

    // Once the first is stopped, the directory is free again at once.
    first.interrupt();
    await finished(first, 30_000);
    const third = track(npmRun('demo', [], env));
    expect(await finished(third, 150_000), third.output()).toBe(0);
    expect(third.output()).not.toContain('waiting up to');
    expect(third.output()).toMatch(/^status: completed$/m);
  });
});
