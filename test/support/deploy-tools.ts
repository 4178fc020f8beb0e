/** What the deploy scenario types and reads: the Temporal CLI, `deputy`, and what a run's history says of its tasks. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import proto from '@temporalio/proto';
import type { Client } from '@temporalio/client';
import { findTemporalCli, PROJECT_ROOT } from '../../src/testing/temporal-cli.js';

const run = promisify(execFile);
const { EventType } = proto.temporal.api.enums.v1;

/** Where the commands go. */
export interface Server {
  address: string;
  namespace?: string;
}

/** What an operator types: the Temporal CLI against the world's server. */
export async function temporalCli(world: Server, args: string[]): Promise<string> {
  const cli = findTemporalCli();
  if (!cli) throw new Error('no temporal CLI: run bash scripts/install-temporal-cli.sh');
  const where = ['--address', world.address, '--namespace', world.namespace ?? 'default'];
  const { stdout } = await run(cli, [...args, ...where], { timeout: 30_000 });
  return stdout;
}

/** What an operator types: `deputy …` from this checkout against the world's server; its exit code and output. */
export async function deputyCli(world: Server, args: string[]) {
  try {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, TEMPORAL_ADDRESS: world.address },
      timeout: 120_000,
    });
    return { code: 0, stdout };
  } catch (err) {
    const failed = err as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: `${failed.stdout ?? ''}${failed.stderr ?? ''}` };
  }
}

/**
 * Makes a version current once the server knows it (its workers poll), as an operator does; a first version may
 * already have made itself current.
 */
export async function makeCurrent(world: Server, deployment: string, buildId: string): Promise<void> {
  const version = ['--deployment-name', deployment, '--build-id', buildId];
  for (let tries = 0; ; tries++) {
    try {
      const described = await temporalCli(world, [
        'worker',
        'deployment',
        'describe',
        '--name',
        deployment,
        '-o',
        'json',
      ]);
      const routing = (JSON.parse(described) as { routingConfig?: { currentVersionBuildID?: string } }).routingConfig;
      if (routing?.currentVersionBuildID === buildId) return;
      await temporalCli(world, ['worker', 'deployment', 'set-current-version', ...version, '--yes']);
      return;
    } catch (err) {
      if (tries > 100) throw err;
      await sleep(200);
    }
  }
}

/** The build ids of the workers that completed a run's workflow tasks, and how many of its tasks failed (and why). */
export async function taskRecord(client: Client, workflowId: string, runId?: string) {
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  const buildIds = new Set<string>();
  const failures: string[] = [];
  for (const event of history.events ?? []) {
    if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) {
      buildIds.add(event.workflowTaskCompletedEventAttributes?.deploymentVersion?.buildId ?? '(unversioned)');
    }
    if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED) {
      const attributes = event.workflowTaskFailedEventAttributes;
      failures.push(`${String(attributes?.cause)}: ${attributes?.failure?.message ?? ''}`);
    }
  }
  return { buildIds: [...buildIds], failures };
}
