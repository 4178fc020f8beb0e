/**
 * Runs `src/worker/main.ts` (what `npm run worker` runs) as a real child process, so tests can SIGKILL it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { PROJECT_ROOT } from '../../src/testing/temporal-cli.js';
import { MessageKeys } from '../../src/ops/message-keys.js';

/** A worker process started by a test. */
export interface WorkerProcess {
  child: ChildProcess;
  output(): string;
  /** Resolves with the exit code once the process has exited. */
  exited: Promise<number | null>;
  kill(signal?: NodeJS.Signals): void;
}

/** Starts the worker entry point with `env` added to this process's environment (and `nodeFlags` given to node). */
export function spawnWorker(env: Record<string, string>, nodeFlags: string[] = []): WorkerProcess {
  const child = spawn(process.execPath, [...nodeFlags, '--import', 'tsx', 'src/worker/main.ts'], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, ...testKeyRing(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (text += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    output: () => text,
    exited,
    kill: (signal = 'SIGKILL') => void child.kill(signal),
  };
}

/**
 * The key ring of the workers the tests run in process (their key file, made on first use), so a worker process
 * signs as they do: `npm run worker` makes no key of its own.
 */
export function testKeyRing(): Record<string, string> {
  if (process.env.DEPUTY_MESSAGE_KEYS || process.env.DEPUTY_MESSAGE_KEYS_FILE) return {};
  MessageKeys.fromEnv();
  return { DEPUTY_MESSAGE_KEYS_FILE: resolve(process.env.DEPUTY_STATE_DIR ?? '.deputy', 'message-keys') };
}

/** Waits until the worker prints its ready line; fails with its output if it exits first. */
export async function waitUntilReady(worker: WorkerProcess, timeoutMs = 60_000): Promise<void> {
  const started = Date.now();
  while (!/^deputy worker: (task queues|model calls only)/m.test(worker.output())) {
    if (worker.child.exitCode !== null) throw new Error(`worker exited early:\n${worker.output()}`);
    if (Date.now() - started > timeoutMs)
      throw new Error(`worker not ready after ${timeoutMs} ms:\n${worker.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
