/**
 * Runs the project's commands the way a person does: `npm run <script>` in the checkout, as its own process group
 * (so Ctrl-C reaches npm, Node and the dev server alike), output collected as it arrives.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { PROJECT_ROOT } from '../../src/testing/temporal-cli.js';

export interface Command {
  readonly child: ChildProcess;
  /** Everything printed so far, stdout and stderr interleaved as they arrived. */
  output(): string;
  /** Resolves with the leader's exit code (or the signal's name) once the group's output has closed. */
  readonly exited: Promise<number | string>;
  /** Ctrl-C: SIGINT to the whole process group. */
  interrupt(): void;
  /** SIGKILL to the whole process group, for clean-up after a failed assertion. */
  kill(): void;
}

export function npmRun(script: string, args: string[] = [], env: NodeJS.ProcessEnv = {}): Command {
  return run('npm', ['run', '--silent', script, ...(args.length > 0 ? ['--', ...args] : [])], env);
}

export function run(command: string, args: string[], env: NodeJS.ProcessEnv = {}): Command {
  // A variable given as undefined is unset, as on a machine where nobody set it.
  const merged: NodeJS.ProcessEnv = { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1', ...env };
  for (const [name, value] of Object.entries(merged)) if (value === undefined) delete merged[name];
  const child = spawn(command, args, {
    cwd: PROJECT_ROOT,
    env: merged,
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let text = '';
  child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (text += chunk.toString()));
  const exited = new Promise<number | string>((resolve) =>
    // 'close' comes once every process writing to its output is done, not only the group's leader.
    child.on('close', (code, signal) => resolve(code ?? signal ?? 'unknown')),
  );
  const signal = (name: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, name);
    } catch {
      // the group has already gone
    }
  };
  return {
    child,
    output: () => text,
    exited,
    interrupt: () => signal('SIGINT'),
    kill: () => signal('SIGKILL'),
  };
}

/** Waits until `command` has printed a line matching `pattern`, failing with what it printed if it exits first. */
export async function untilPrinted(command: Command, pattern: RegExp, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited: number | string | undefined;
  void command.exited.then((code) => (exited = code));
  while (!pattern.test(command.output())) {
    if (exited !== undefined)
      throw new Error(`exited (${exited}) before printing ${pattern}; it printed:\n${command.output()}`);
    if (Date.now() > deadline)
      throw new Error(`did not print ${pattern} within ${timeoutMs} ms; it printed:\n${command.output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Resolves with the exit code, or fails (killing the group) if the command is still running after `timeoutMs`. */
export async function finished(command: Command, timeoutMs: number): Promise<number | string> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      command.kill();
      reject(new Error(`still running after ${timeoutMs} ms; it printed:\n${command.output()}`));
    }, timeoutMs);
  });
  try {
    return await Promise.race([command.exited, late]);
  } finally {
    clearTimeout(timer);
  }
}
