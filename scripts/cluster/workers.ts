/**
 * The cluster suite's workers: `npm run worker` processes on the cluster with one key ring, and the config they read
 * (the demo's, with room for long runs).
 */
import { randomBytes } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import type { ScriptedModelServer } from '../../src/testing/scripted-model.js';
import { PROJECT_ROOT } from '../../src/testing/temporal-cli.js';
import type { Cluster } from './harness.js';

/** The message keys of the cluster's workers. */
const CLUSTER_MESSAGE_KEYS = `k1:${randomBytes(32).toString('base64')}`;

/** Starts `npm run worker` number `n` on the cluster; settles once it says its task queues. */
export function workerStarter(
  cluster: Cluster,
  model: ScriptedModelServer,
  queue: string,
  configPath: string,
  workers: ChildProcess[],
): (n: number) => Promise<void> {
  const env = {
    ...process.env,
    TEMPORAL_ADDRESS: cluster.address,
    DEPUTY_TASK_QUEUE: queue,
    DEPUTY_BACKGROUND_TASK_QUEUE: `${queue}-bg`,
    DEPUTY_CONFIG: configPath,
    AGENT_DELEGATION_ENABLED: 'true',
    OPENAI_BASE_URL: model.url,
    OPENAI_API_KEY: 'cluster-test',
    // One key ring for both workers, as a deployment gives them: `npm run worker` makes no key of its own.
    DEPUTY_MESSAGE_KEYS: process.env.DEPUTY_MESSAGE_KEYS ?? CLUSTER_MESSAGE_KEYS,
  };
  return (n: number) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/worker/main.ts'], {
      cwd: PROJECT_ROOT,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    workers[n] = child;
    return new Promise<void>((resolve, reject) => {
      const timer = setInterval(() => {
        if (out.includes('deputy worker: task queues')) resolve(void clearInterval(timer));
        if (child.exitCode !== null) reject(new Error(`worker ${n} exited: ${out}`));
      }, 100);
    });
  };
}

/**
 * The demo's configuration, with runs continuing as new after 150 events (so a long run here does), and room for the
 * 35 turns that run asks for (the config's limits are the most a run may ask).
 */
export function writeClusterConfig(
  dir: string,
  evidence: string[],
  modelCalls?: { taskQueue: string; requestsPerSecond: number },
): string {
  const configPath = join(dir, modelCalls ? 'fleet.config.yaml' : 'deputy.config.yaml');
  const config = parse(readFileSync(join(PROJECT_ROOT, 'deputy.config.yaml'), 'utf8')) as {
    compaction: Record<string, unknown>;
    limits: Record<string, unknown>;
    delegation: Record<string, unknown>;
  };
  config.compaction.continueAsNewAfterEvents = 150;
  config.limits.maxTurns = 40;
  // Delegation on evidence the cluster's own records back, as a deployment's would be.
  config.delegation.evidence = evidence;
  writeFileSync(configPath, stringify(modelCalls ? { ...config, modelCalls } : config));
  return configPath;
}
