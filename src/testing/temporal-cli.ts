/**
 * Finds the `temporal` CLI (which carries the dev server). Order: `TEMPORAL_CLI_PATH`, `PATH`, the project's
 * `.deputy/bin/temporal` (written by `scripts/install-temporal-cli.sh`); otherwise the SDK downloads one, which works
 * only where the internet is reachable.
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { EphemeralServerExecutable } from '@temporalio/testing';
import { TemporalCliNotFoundError } from '../contract/errors.js';

/** Root of this project (the folder holding `package.json`). */
export const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The path of the `temporal` binary, or `undefined` when none is installed. */
export function findTemporalCli(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.TEMPORAL_CLI_PATH) {
    if (!isExecutable(env.TEMPORAL_CLI_PATH)) {
      throw new TemporalCliNotFoundError(
        `TEMPORAL_CLI_PATH is "${env.TEMPORAL_CLI_PATH}", which is not an executable file; fix it or unset it`,
      );
    }
    return env.TEMPORAL_CLI_PATH;
  }
  const candidates = [
    ...(env.PATH ?? '')
      .split(delimiter)
      .filter(Boolean)
      .map((dir) => join(dir, 'temporal')),
    join(PROJECT_ROOT, '.deputy', 'bin', 'temporal'),
  ];
  return candidates.find(isExecutable);
}

/** The dev server executable for `TestWorkflowEnvironment.createLocal`: the installed CLI, else the SDK's download. */
export function devServerExecutable(env: NodeJS.ProcessEnv = process.env): EphemeralServerExecutable {
  const path = findTemporalCli(env);
  return path ? { type: 'existing-path', path } : { type: 'cached-download' };
}
