/**
 * A Deputy worker as a version of a Temporal Worker Deployment: runs stay on the version they started on, so a new
 * Deputy (its workflow code, its tools, its config) can be deployed while runs of the old one are in flight.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { NativeConnection, WorkerDeploymentOptions, WorkflowBundleOption } from '@temporalio/worker';
import { ConfigError } from '../contract/errors.js';
import { deputyBuildId } from './key-ring.js';

/** The Worker Deployment a worker joins, and its version's build id. */
export interface DeputyDeployment {
  /** The deployment's name: one per service that hosts Deputy (`DEPUTY_DEPLOYMENT`). */
  name: string;
  /**
   * The version's build id (`DEPUTY_BUILD_ID`). @default Deputy's version, a digest of the workflow bundle and the
   * message key's fingerprint: what changes when what the worker does changes.
   */
  buildId?: string | undefined;
}

/** Deputy's own version, from the package it runs from (the repository or an installed `dist/`). */
export const DEPUTY_VERSION: string = (() => {
  const file = ['../../package.json', '../../../package.json']
    .map((path) => fileURLToPath(new URL(path, import.meta.url)))
    .find(
      (path) => existsSync(path) && (JSON.parse(readFileSync(path, 'utf8')) as { name?: string }).name === 'deputy',
    );
  return file ? (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version : 'unknown';
})();

/**
 * What a deployment's name and a build id may hold, said at start rather than by the server: Temporal writes a
 * version as `<deployment>:<build id>`, so a name holds no `:` (nor `.`, its older separator).
 */
const NAME = /^[A-Za-z0-9_-]{1,200}$/;
const BUILD_ID = /^[A-Za-z0-9_+:=.-]{1,200}$/;

/** The deployment the environment names (`DEPUTY_DEPLOYMENT`, `DEPUTY_BUILD_ID`), if it names one. */
export function deploymentFromEnv(env: NodeJS.ProcessEnv = process.env): DeputyDeployment | undefined {
  const name = env.DEPUTY_DEPLOYMENT?.trim();
  const buildId = env.DEPUTY_BUILD_ID?.trim() || undefined;
  if (!name) {
    if (buildId) {
      throw new ConfigError(
        ['DEPUTY_BUILD_ID is set but DEPUTY_DEPLOYMENT is not: name the deployment it belongs to'],
        'environment',
      );
    }
    return undefined;
  }
  const problems = [
    ...(NAME.test(name)
      ? []
      : [`DEPUTY_DEPLOYMENT=${JSON.stringify(name)}: use letters, digits, _ and - (at most 200)`]),
    ...(buildId === undefined || BUILD_ID.test(buildId)
      ? []
      : [`DEPUTY_BUILD_ID=${JSON.stringify(buildId)}: use letters, digits, _ - + : = . (at most 200)`]),
  ];
  if (problems.length > 0) throw new ConfigError(problems, 'environment');
  return { name, buildId };
}

/** The build id a version of `deployment` runs as: the one given, or Deputy's version beside `deputyBuildId`. */
export function deploymentBuildId(
  deployment: DeputyDeployment,
  bundle: WorkflowBundleOption,
  fingerprint: string,
): string {
  return deployment.buildId ?? `${DEPUTY_VERSION}-${deputyBuildId(bundle, fingerprint)}`;
}

/**
 * The worker options that make a worker a version of `deployment`. Runs are pinned to the version they start on:
 * a task run ends on the code it started with, its children and activities with it, and a conversation moves to a
 * new version only by continuing as new at a quiet moment.
 */
export function deploymentOptions(
  deployment: DeputyDeployment,
  bundle: WorkflowBundleOption,
  fingerprint: string,
): WorkerDeploymentOptions {
  return {
    version: { deploymentName: deployment.name, buildId: deploymentBuildId(deployment, bundle, fingerprint) },
    useWorkerVersioning: true,
    defaultVersioningBehavior: 'PINNED',
  };
}

/**
 * The first version of a deployment makes itself current, so a first deploy (the compose stack's, a new service's)
 * runs without an operator's step; every later version is made current by the operator (docs/versioning.md).
 */
export async function currentIfNone(
  connection: NativeConnection,
  namespace: string,
  version: { deploymentName: string; buildId: string },
  identity: string,
): Promise<void> {
  const { deploymentName, buildId } = version;
  for (let tries = 0; tries < 50; tries++) {
    const described = await connection.workflowService
      .describeWorkerDeployment({ namespace, deploymentName })
      .catch(() => undefined);
    // Known once its pollers have been seen; until then, Temporal answers that there is no such deployment.
    if (described) {
      if (described.workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId) return;
      await connection.workflowService.setWorkerDeploymentCurrentVersion({
        namespace,
        deploymentName,
        buildId,
        identity,
        conflictToken: described.conflictToken,
      });
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
