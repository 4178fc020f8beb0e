/**
 * One process at a time on the demos' persisted dev server. Two servers on one SQLite file fail each other's writes
 * (`SQLITE_BUSY`, `Failed to lock shard`), and a server an interrupted demo left behind keeps the file and the UI's
 * port. The lock is proper-lockfile's: a directory whose time its holder refreshes, so a holder killed outright
 * leaves a lock that goes stale within seconds instead of one that blocks forever.
 */
import { StateInUseError } from '../contract/errors.js';
import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { lock } from 'proper-lockfile';

/** How long a holder's silence makes its lock stale: a killed demo's lock is taken over after this. */
const STALE_MS = 5_000;

/** Seconds to wait for a held lock: longer than a killed holder's lock takes to go stale. */
const WAIT_S = 7;

const locked = (err: unknown) => (err as { code?: string } | undefined)?.code === 'ELOCKED';

/**
 * Takes the lock on `database` (waiting long enough for a killed holder's lock to go stale), then stops any dev
 * server still serving that file, which only a demo that died without stopping it can have left. Returns the release.
 */
export async function holdDatabase(database: string, say: (line: string) => void): Promise<() => Promise<void>> {
  const options = {
    realpath: false,
    stale: STALE_MS,
    update: STALE_MS / 4,
    onCompromised: (err: Error) => say(`warning: the lock on ${database} was lost (${err.message})`),
  };
  let release: () => Promise<void>;
  try {
    release = await lock(database, options).catch(async (err: unknown) => {
      if (!locked(err)) throw err;
      say(`waiting up to ${WAIT_S} s for ${database}.lock (another demo's, or one a killed demo left to go stale)`);
      return lock(database, {
        ...options,
        retries: { retries: WAIT_S, factor: 1, minTimeout: 1_000, maxTimeout: 1_000 },
      });
    });
  } catch (err) {
    if (!locked(err)) throw err;
    throw new StateInUseError(
      `${database} is in use by another npm run demo or npm run ui (lock ${database}.lock); stop that one first, ` +
        'or give this one its own directory: DEPUTY_STATE_DIR=<directory> npm run demo',
      { cause: err },
    );
  }
  for (const pid of serversOf(database)) {
    say(`stopping the dev server an interrupted demo left running on ${database} (pid ${pid})`);
    await stop(pid);
  }
  return release;
}

/** The processes serving `database` as a Temporal dev server, read from /proc (none where there is no /proc). */
function serversOf(database: string): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return [];
  }
  const found: number[] = [];
  for (const entry of entries) {
    let args: string[];
    try {
      args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
    } catch {
      continue; // gone already, or not ours to read
    }
    const at = args.indexOf('--db-filename');
    if (at >= 0 && args[at + 1] === database) found.push(Number(entry));
    else if (args.includes(`--db-filename=${database}`)) found.push(Number(entry));
  }
  return found.filter((pid) => pid !== process.pid);
}

/** SIGTERM, then SIGKILL if it is still there after five seconds. */
async function stop(pid: number): Promise<void> {
  const alive = () => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  for (let waited = 0; waited < 5_000 && alive(); waited += 100) await sleep(100);
  if (alive()) process.kill(pid, 'SIGKILL');
  for (let waited = 0; waited < 2_000 && alive(); waited += 100) await sleep(100);
}
