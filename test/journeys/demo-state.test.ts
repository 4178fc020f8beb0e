/**
 * The demo after accidents: one cut short through a pipe, and two started at once on the same state directory.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { finished, npmRun, run, untilPrinted, type Command } from './support.js';

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

/** Dev servers serving `database`, as `ps` would show them. */
function serversOf(database: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        return args[args.indexOf('--db-filename') + 1] === database;
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe('49 the demo after accidents', () => {
  it('49.4 a demo cut short by | head leaves its run and its server; the next demo stops both, says so, and completes', async () => {
    const database = join(stateDir, 'temporal.db');
    const cut = track(run('bash', ['-c', 'npm run --silent demo | head -12'], env));
    expect(await finished(cut, 120_000), cut.output()).toBe(0);
    const interrupted = /^run (demo-\S+)$/m.exec(cut.output())?.[1];
    expect(interrupted, cut.output()).toBeDefined();
    // What the issue saw: the cut demo's dev server outlives it.
    for (let i = 0; i < 50 && serversOf(database).length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    const orphans = serversOf(database);
    expect(orphans.length).toBeGreaterThan(0);

    const next = track(npmRun('demo', [], env));
    expect(await finished(next, 150_000), next.output()).toBe(0);
    const out = next.output();
    expect(out).toContain(
      `stopping the dev server an interrupted demo left running on ${database} (pid ${orphans[0]})`,
    );
    expect(out).toMatch(
      new RegExp(
        `^found ${interrupted} still running from an interrupted demo: terminated it and its \\d+ running children, so it cannot take this demo's replies$`,
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
