/**
 * The demo's delegation, activated as the design asks: on evidence that passes against this server's records, never
 * on the flag alone. At its first start on a server the demo records it, offline and in a few seconds, as an
 * operator would with `npm run eval`: the two-arm case of `scenarios/quick-lookups.yaml` (its single-agent run reaches
 * its turn limit: a real failed trajectory), then a capability case admitted from that failed run. Later demos on the
 * same persisted server check the files against its records and reuse them; a server that no longer holds their runs
 * gets them recorded again.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import type { Client } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import type { DeputyConfig } from '../config/schema.js';
import type { Evidence } from '../config/evidence.js';
import { checkEvidence, temporalRunRecords } from '../config/tenant-evidence.js';
import { runEvaluation, type EvaluationOptions } from '../eval/evaluation.js';
import { asCapability } from '../eval/admit.js';
import { PROJECT_ROOT } from '../testing/temporal-cli.js';
import { demoStateDir } from './ui.js';

const TWO_ARM_SCENARIO = join(PROJECT_ROOT, 'scenarios', 'quick-lookups.yaml');

/** The demo's evidence files on this server, recorded now if they do not pass against its records (the cluster check records its own the same way). */
export async function demoEvidence(options: {
  client: Client;
  connection: NativeConnection;
  config: DeputyConfig;
  worker: EvaluationOptions['worker'];
  say: (line: string) => void;
  /** Where the evidence and its scenario are kept. @default the demo's state directory */
  dir?: string;
}): Promise<string[]> {
  const { client, connection, config, worker, say } = options;
  const dir = options.dir ?? demoStateDir();
  const files = [join(dir, 'evidence', 'capability.json'), join(dir, 'evidence', 'quick-lookups.json')];
  const shown = files.map((file) => relative(process.cwd(), file)).join(', ');
  const records = temporalRunRecords(client);
  const checks = await Promise.all(
    files.map(async (file) =>
      existsSync(file) ? await checkEvidence(file, PROJECT_ROOT, { tenant: undefined, records }) : null,
    ),
  );
  if (checks.every((check) => check?.passes)) {
    say(`delegation: on evidence recorded earlier on this server, checked against its records (${shown})`);
    return files;
  }
  say('delegation: recording evidence on this server first (offline, a few seconds; docs/activation.md) …');
  const evaluate = (scenarioPath: string) =>
    runEvaluation({ scenarioPath, client, connection, config, worker, command: 'npm run demo' });
  const twoArm = await evaluate(TWO_ARM_SCENARIO);
  const failed = twoArm.arms.single.runs.find((run) => run.status !== 'completed');
  if (!failed)
    throw new Error(`${TWO_ARM_SCENARIO}: its single-agent run did not fail, so no capability case comes of it`);
  const capability = await evaluate(admittedFrom(dir, failed.workflowId, failed.status));
  write(files[0]!, capability);
  write(files[1]!, twoArm);
  say(`delegation: ${twoArm.verdict.summary}; capability case admitted from ${failed.workflowId} (${failed.status})`);
  say(`delegation: on this evidence (${shown}); npm run deputy -- tenants checks it`);
  return files;
}

/** The two-arm case as a capability case admitted from the failed run `sessionId`, written into `dir`; its path. */
function admittedFrom(dir: string, sessionId: string, status: string): string {
  const file = join(dir, 'scenarios', `admitted-${sessionId}.yaml`);
  mkdirSync(dirname(file), { recursive: true });
  const origin = { sessionId, status, exportedAt: new Date().toISOString() };
  const description = `Admitted from ${sessionId}, a single-agent run that ended ${status}.`;
  writeFileSync(
    file,
    asCapability(readFileSync(TWO_ARM_SCENARIO, 'utf8'), origin, { id: 'admitted-quick-lookups', description }),
  );
  return file;
}

function write(file: string, evidence: Evidence): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(evidence, null, 2)}\n`);
}
