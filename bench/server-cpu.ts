/**
 * The CPU time the embedded dev server has used, read from Linux's `/proc`: the throughput scenario reports what each
 * side costs the server a run, since the dev server persists everything through one SQLite connection and a side
 * whose runs ask more of it waits on it, whatever its worker does.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks a second of `/proc/<pid>/stat`'s times (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** The dev server serving on `address`'s port, or `undefined` off Linux or when no such process is found. */
export function devServerPid(address: string): number | undefined {
  const port = address.split(':').at(-1);
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return undefined;
  }
  for (const pid of pids) {
    let args: string[];
    try {
      args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    const at = args.indexOf('--port');
    if (args.includes('start-dev') && at >= 0 && args[at + 1] === port) return Number(pid);
  }
  return undefined;
}

/** Milliseconds of CPU (user + system) process `pid` has used, or NaN when it cannot be read. */
export function cpuMs(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start at the closing parenthesis: utime is the 14th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return NaN;
  }
}
