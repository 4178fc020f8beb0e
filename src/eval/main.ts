#!/usr/bin/env node
/**
 * `npm run eval -- <scenario.yaml> [--runs N] [--tenant id] [--out file | --update]`: the two-arm evaluation. Runs the
 * scenario N times with delegation off and N times with it on, on a real Temporal server (TEMPORAL_ADDRESS, else an
 * embedded dev server), against the configured model (OPENAI_*; else the scenario's offline script on the scripted
 * model), scores every run, checks the policy, and writes an evidence file with a verdict. Prints a table and a chart.
 * A capability scenario comes from `npm run deputy -- eval admit <exported-session.json>` (admit.ts).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { loadConfig, readEnv } from '../config/load.js';
import { ConfigError, DeputyError } from '../contract/errors.js';
import { startDevServer, type DevServer } from '../testing/dev-server.js';
import { PROJECT_ROOT } from '../testing/temporal-cli.js';
import { loadScenario } from '../config/scenario.js';
import type { ArmSummary, Evidence } from '../config/evidence.js';
import { runEvaluation } from './evaluation.js';

/** The two arms side by side, and a bar per arm for score and cost. */
function report(evidence: Evidence): string {
  const { single, delegating } = evidence.arms;
  const row = (name: string, a: ArmSummary) =>
    `| ${name.padEnd(12)} | ${`${(a.meanScore * 100).toFixed(0)}%`.padStart(5)} | ${String(a.policyFailures).padStart(6)} | ${a.meanTokens.toFixed(0).padStart(7)} | ${`$${(a.meanCostMicroUsd / 1e6).toFixed(6)}`.padStart(10)} | ${`${(a.meanWallMs / 1000).toFixed(1)} s`.padStart(7)} |`;
  const maxCost = Math.max(single.meanCostMicroUsd, delegating.meanCostMicroUsd, 1);
  const bar = (fraction: number) => '█'.repeat(Math.round(fraction * 30)).padEnd(30, '·');
  return [
    '| arm          | score | policy |  tokens |       cost |    wall |',
    '| ------------ | ----- | ------ | ------- | ---------- | ------- |',
    row('single', single),
    row('delegating', delegating),
    '',
    `score  single      ${bar(single.meanScore)} ${(single.meanScore * 100).toFixed(0)}%`,
    `       delegating  ${bar(delegating.meanScore)} ${(delegating.meanScore * 100).toFixed(0)}%`,
    `cost   single      ${bar(single.meanCostMicroUsd / maxCost)} $${(single.meanCostMicroUsd / 1e6).toFixed(6)}`,
    `       delegating  ${bar(delegating.meanCostMicroUsd / maxCost)} $${(delegating.meanCostMicroUsd / 1e6).toFixed(6)}`,
    '',
    `verdict: ${evidence.verdict.summary}`,
    `rule:    ${evidence.verdict.rule}`,
  ].join('\n');
}

async function evaluate(
  path: string,
  options: { runs?: number; out?: string; tenant?: string; update?: boolean },
): Promise<void> {
  const scenario = loadScenario(path);
  const env = readEnv();
  const live = env.openaiApiKey !== undefined || env.openaiBaseUrl !== undefined;
  if (!live && !scenario.offline) {
    throw new DeputyError(
      `${path}: no offline script, and no model endpoint configured (set OPENAI_API_KEY / OPENAI_BASE_URL)`,
    );
  }
  const config = loadConfig({ ...env, configPath: env.configPath ?? join(PROJECT_ROOT, 'deputy.config.yaml') });
  Runtime.install({ logger: new DefaultLogger('WARN') });
  let server: DevServer | undefined;
  let address = process.env.TEMPORAL_ADDRESS;
  if (!address) {
    server = await startDevServer();
    address = server.address;
  }
  const connection = await NativeConnection.connect({ address });
  const clientConnection = await Connection.connect({ address });
  const client = new Client({ connection: clientConnection, namespace: env.temporalNamespace });
  try {
    console.log(
      `eval ${scenario.id} (${scenario.kind}): ${options.runs ?? scenario.runs} run(s) per arm${options.tenant ? ` as tenant ${options.tenant}` : ''} on ${address}, model ${live ? config.model : 'offline scripted'}`,
    );
    const file = relative(PROJECT_ROOT, path);
    const evidence = await runEvaluation({
      scenarioPath: path,
      client,
      connection,
      config,
      tenant: options.tenant,
      runs: options.runs,
      live: live ? { apiKey: env.openaiApiKey, baseURL: env.openaiBaseUrl, model: config.model } : undefined,
      command: `npm run eval -- ${file}${options.runs ? ` --runs ${options.runs}` : ''}${options.tenant ? ` --tenant ${options.tenant}` : ''}`,
      worker: { namespace: env.temporalNamespace },
      say: (line) => console.log(line),
    });
    // The committed examples change only when asked (--update): a trial run writes under .deputy/.
    const out =
      options.out ??
      join(PROJECT_ROOT, options.update ? 'evidence' : join('.deputy', 'evidence'), `${scenario.id}.json`);
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, `${JSON.stringify(evidence, null, 2)}\n`);
    console.log(`\n${report(evidence)}\n\nevidence: ${relative(process.cwd(), out)}`);
    if (server) {
      console.log(
        `the runs it names are in the embedded dev server's records, gone when it stops: activation checks every run an evidence file names in Temporal, so record evidence against the namespace the workers use (TEMPORAL_ADDRESS)`,
      );
    }
  } finally {
    await clientConnection.close();
    await connection.close();
    await server?.env.teardown();
  }
}

async function main(argv: string[]): Promise<number> {
  const flag = (name: string) => {
    const at = argv.indexOf(name);
    if (at < 0) return undefined;
    const value = argv[at + 1];
    argv.splice(at, 2);
    return value;
  };
  const update = argv.includes('--update');
  if (update) argv.splice(argv.indexOf('--update'), 1);
  const out = flag('--out');
  const runs = flag('--runs');
  const tenant = flag('--tenant');
  const [first] = argv;
  if (!first || argv.length !== 1 || (runs !== undefined && !/^\d+$/.test(runs))) {
    console.error(
      'usage: npm run eval -- <scenario.yaml> [--runs N] [--tenant id] [--out file | --update] | admit <exported-session.json> [--out file]\n  writes .deputy/evidence/<id>.json; --update writes the committed evidence/<id>.json instead',
    );
    return 2;
  }
  await evaluate(first, {
    ...(runs && { runs: Number(runs) }),
    ...(out && { out }),
    ...(tenant && { tenant }),
    update,
  });
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err instanceof DeputyError || err instanceof ConfigError ? `eval: ${err.message}` : err);
    process.exit(1);
  },
);
