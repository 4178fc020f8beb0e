/**
 * `deputy versions` and `deputy replay`: what an operator deploying a new Deputy needs. Which versions of the
 * deployment hold open runs (what still drains), a nudge that moves waiting conversations to the current version,
 * and the replay gate that says, before a deploy, which open runs the new code could not replay.
 */
import type { Client } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { DeputyError, UsageError } from '../contract/errors.js';
import { exportedHistories, recentHistories, replayGate } from '../testing/replay-gate.js';
import { print } from './output.js';
import type { Parsed } from './usage.js';

/** Deputy's runs open on a version of a deployment, as visibility lists them (Temporal's own search attributes). */
const openOn = (deployment: string, buildId: string) =>
  `WorkflowType = 'agentRun' AND ExecutionStatus = 'Running' AND TemporalWorkerDeploymentVersion = '${deployment}:${buildId}'`;

/** The deployment's versions, and its current and ramping ones, as the server routes new runs. */
async function routing(client: Client, deploymentName: string) {
  const { workerDeploymentInfo } = await client.workflowService
    .describeWorkerDeployment({ namespace: client.options.namespace, deploymentName })
    .catch((err: unknown) => {
      throw new DeputyError(
        `no Worker Deployment named ${deploymentName} answers (${(err as Error).message}): start a worker with DEPUTY_DEPLOYMENT=${deploymentName}`,
      );
    });
  const config = workerDeploymentInfo?.routingConfig;
  return {
    current: config?.currentDeploymentVersion?.buildId ?? null,
    ramping: config?.rampingDeploymentVersion?.buildId ?? null,
    rampingPercentage: config?.rampingVersionPercentage ?? 0,
    versions: (workerDeploymentInfo?.versionSummaries ?? []).map((summary) => summary.deploymentVersion?.buildId ?? ''),
  };
}

/**
 * `deputy versions [deployment]`: per version of the deployment, the open runs pinned to it and the conversations
 * among them waiting for their person; `--move` asks those on another version than the current one to move now.
 */
export async function versions(client: Client, name: string | undefined, parsed: Parsed): Promise<number> {
  const deployment = name ?? process.env.DEPUTY_DEPLOYMENT;
  if (!deployment)
    throw new UsageError(
      'versions takes a deployment name (or DEPUTY_DEPLOYMENT); usage: deputy versions <deployment>',
    );
  const route = await routing(client, deployment);
  const rows = await Promise.all(
    route.versions.map(async (buildId) => {
      const role =
        buildId === route.current
          ? 'current'
          : buildId === route.ramping
            ? `ramping ${route.rampingPercentage}%`
            : 'draining';
      const open = Number((await client.workflow.count(openOn(deployment, buildId))).count);
      const waiting = `${openOn(deployment, buildId)} AND DeputyStatus = 'waiting_for_user'`;
      return { buildId, role, open, waiting: Number((await client.workflow.count(waiting)).count), query: waiting };
    }),
  );
  const movable: string[] = [];
  if (parsed.move) {
    // A conversation moves only when the server names a newer target and it waits with nothing in flight.
    for (const row of rows.filter((row) => row.role !== 'current' && row.waiting > 0)) {
      for await (const info of client.workflow.list({ query: row.query })) {
        await client.workflow.getHandle(info.workflowId).signal('deputy.checkVersion');
        movable.push(info.workflowId);
      }
    }
  }
  if (parsed.json) {
    const versions = rows.map(({ buildId, role, open, waiting }) => ({ buildId, role, open, waiting }));
    print(JSON.stringify({ deployment, ...route, versions, asked: movable }, null, 2));
    return 0;
  }
  const width = Math.max(8, ...rows.map((row) => row.buildId.length));
  print(
    [
      `deployment ${deployment}: current ${route.current ?? 'none'}${route.ramping ? `, ramping ${route.ramping}` : ''}`,
      `  ${'version'.padEnd(width)}  ${'routing'.padEnd(12)}  open runs  waiting conversations`,
      ...rows.map(
        (row) =>
          `  ${row.buildId.padEnd(width)}  ${row.role.padEnd(12)}  ${String(row.open).padStart(9)}  ${String(row.waiting).padStart(21)}`,
      ),
      ...rows
        .filter((row) => row.role === 'draining')
        .map((row) =>
          row.open === 0
            ? `${row.buildId}: no open run is pinned to it; its workers may stop`
            : `${row.buildId}: ${row.open} open run(s) end there; conversations move at their next quiet moment (deputy versions ${deployment} --move asks them now)`,
        ),
      ...(parsed.move
        ? [`asked ${movable.length} waiting conversation(s) to move to ${route.current ?? 'the current version'}`]
        : []),
    ].join('\n'),
  );
  return 0;
}

/**
 * `deputy replay [query]`: replays recent runs' histories (or `--from` exported ones) against the bundle about to be
 * deployed (`--bundle`, default the Deputy installed here); exit 1 when any would break.
 */
export async function replay(client: Client | undefined, query: string | undefined, parsed: Parsed): Promise<number> {
  const histories = parsed.from
    ? exportedHistories(parsed.from)
    : recentHistories(client!, { query, sinceHours: parsed.sinceHours, limit: parsed.limit });
  // The replayer's worker reports each state it passes through; only its warnings concern the person.
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const report = await replayGate(histories, parsed.bundle ? { codePath: parsed.bundle } : undefined);
  if (parsed.json) {
    print(JSON.stringify(report, null, 2));
  } else {
    print(
      [
        ...report.breaking.map((run) => `would break: ${run.workflowId} (run ${run.runId}): ${run.why}`),
        `replayed ${report.replayed} histories in ${(report.ms / 1000).toFixed(1)} s: ${report.breaking.length} would break${
          report.breaking.length > 0 ? ' (keep them on their version: docs/versioning.md)' : ''
        }`,
      ].join('\n'),
    );
  }
  return report.breaking.length > 0 ? 1 : 0;
}
