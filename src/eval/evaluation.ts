/**
 * The two-arm evaluation of one scenario on a Temporal server: its runs with delegation off and on, each scored from
 * what Temporal recorded of it (its answer, every tool call of its tree, how it ended), the verdict, and a re-run of
 * the delegating arm's first run to show the case is deterministic. The evidence it returns names every run, so
 * activation checks each against the same records (`tenant-evidence.ts`).
 */
import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isAbsolute, relative, resolve } from 'node:path';
import type { Client } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import { builtinTools, createSearchNotesTool } from '../../activities/builtin-tools.js';
import { DeputyClient } from '../client/client.js';
import type { DeputyConfig } from '../config/schema.js';
import { loadScenario, type Scenario } from '../config/scenario.js';
import { Evidence, scoreRun, summariseArm, verdict, type ArmSummary, type RunScore } from '../config/evidence.js';
import { temporalRunRecords, type RunRecords } from '../config/run-records.js';
import { ScriptedModelServer } from '../testing/scripted-model.js';
import { PROJECT_ROOT } from '../testing/temporal-cli.js';
import { createDeputyWorker, type DeputyWorker, type DeputyWorkerOptions } from '../worker/factory.js';
import { scriptRules } from './offline-script.js';

export type Arm = 'single' | 'delegating';
const ARMS: readonly Arm[] = ['single', 'delegating'];

/** What an evaluation runs on. */
export interface EvaluationOptions {
  scenarioPath: string;
  client: Client;
  connection: NativeConnection;
  /** The configuration its workers start from (delegation is set per arm). */
  config: DeputyConfig;
  /** The tenant whose runs these are (absent: the default tenant, runs that name none). */
  tenant?: string | undefined;
  /** Runs per arm, instead of the scenario's. */
  runs?: number | undefined;
  /** A model endpoint; absent, the scenario's offline script on the scripted model. */
  live?: { apiKey: string | undefined; baseURL: string | undefined; model: string } | undefined;
  /** The command that made it, written into the evidence. */
  command?: string;
  /** Passed on to each arm's worker (a prebuilt workflow bundle, a namespace). */
  worker?: Partial<
    Pick<DeputyWorkerOptions, 'workflowBundle' | 'namespace' | 'tracing' | 'messageKeys' | 'workerOptions'>
  >;
  /** Each run as it ends, in a line. */
  say?: (line: string) => void;
}

/** Runs the evaluation and returns its evidence (not written anywhere). */
export async function runEvaluation(options: EvaluationOptions): Promise<Evidence> {
  const { scenarioPath, client, connection, config, tenant, live, say = () => undefined } = options;
  const scenario = { ...loadScenario(scenarioPath), ...(options.runs && { runs: options.runs }) };
  const deputy = new DeputyClient(client);
  const records = temporalRunRecords(client);
  const models: ScriptedModelServer[] = [];
  const workers: DeputyWorker[] = [];
  const queues = {} as Record<Arm, string>;
  try {
    for (const arm of ARMS) {
      // Offline, billing as a provider with Deputy's tokenizer would, so the figures are the runs' real size.
      const model = live
        ? undefined
        : await ScriptedModelServer.start(scriptRules(scenario.offline![arm], arm), {
            quiet: true,
            behaviour: { usage: 'counted' },
          });
      if (model) models.push(model);
      queues[arm] = `eval-${arm}-${randomUUID().slice(0, 8)}`;
      workers.push(
        await createDeputyWorker({
          ...options.worker,
          connection,
          client,
          taskQueue: queues[arm],
          childTaskQueue: `${queues[arm]}-bg`,
          // The evaluation is what makes evidence: its delegating arm needs none.
          config: {
            ...config,
            delegation: { ...config.delegation, enabled: arm === 'delegating', activation: 'unconditional' },
          },
          tools: [...builtinTools().filter((t) => t.name !== 'search_notes'), createSearchNotesTool(scenario.notes)],
          model: model ? { apiKey: 'offline', baseURL: model.url } : { apiKey: live!.apiKey, baseURL: live!.baseURL },
          // Its delegating arm is offered delegation without evidence on purpose (it is how evidence is made): no
          // warning of it among the host's lines.
          report: () => undefined,
        }),
      );
    }
    const running = workers.map((w) => w.run());
    const arms = {} as Record<Arm, ArmSummary>;
    let rerun: { of: RunScore; again: RunScore };
    try {
      const run = (arm: Arm, label: string) =>
        runOnce({ deputy, records, scenario, arm, label, taskQueue: queues[arm], tenant, say });
      for (const arm of ARMS) {
        const runs: RunScore[] = [];
        for (let i = 1; i <= scenario.runs; i++) runs.push(await run(arm, `run ${i}`));
        arms[arm] = summariseArm(runs);
      }
      // The same case must give the same run: the delegating arm's first run is run once more, and activation
      // compares the two as Temporal recorded them. A live model that answers differently leaves the case unproven.
      rerun = { of: arms.delegating.runs[0]!, again: await run('delegating', 're-run of run 1') };
    } finally {
      for (const worker of workers) worker.shutdown();
      await Promise.allSettled(running);
    }
    // Named from the project's root when it is in the project (as activation resolves it), else by its full path.
    const fromRoot = relative(PROJECT_ROOT, resolve(scenarioPath));
    const file = fromRoot.startsWith('..') || isAbsolute(fromRoot) ? resolve(scenarioPath) : fromRoot;
    return Evidence.parse({
      format: 'deputy-evidence/2',
      scenario: {
        id: scenario.id,
        kind: scenario.kind,
        file,
        sha256: createHash('sha256').update(readFileSync(scenarioPath)).digest('hex'),
      },
      tenant: tenant ?? null,
      ...(scenario.admittedFrom && { admittedFrom: scenario.admittedFrom }),
      model: live ? live.model : 'offline scripted model',
      command: options.command ?? `npm run eval -- ${file}${tenant ? ` --tenant ${tenant}` : ''}`,
      createdAt: new Date().toISOString(),
      arms: { single: arms.single, delegating: arms.delegating },
      verdict: verdict(arms.single, arms.delegating),
      determinism: { repeatedArm: 'delegating', of: rerun.of.workflowId, rerun: rerun.again.workflowId },
    } satisfies Evidence);
  } finally {
    for (const model of models) await model.close();
  }
}

/** One run of an arm, scored from what Temporal recorded of it. */
async function runOnce(options: {
  deputy: DeputyClient;
  records: RunRecords;
  scenario: Scenario;
  arm: Arm;
  label: string;
  taskQueue: string;
  tenant: string | undefined;
  say: (line: string) => void;
}): Promise<RunScore> {
  const { deputy, records, scenario, arm, label, taskQueue, tenant, say } = options;
  const workflowId = `eval-${scenario.id}-${arm}-${randomUUID().slice(0, 8)}`;
  const { limits } = scenario;
  const started = Date.now();
  await deputy.temporal.workflow.start('agentRun', {
    taskQueue,
    workflowId,
    args: [
      {
        task: scenario.task,
        messages: scenario.messages,
        ...(scenario.preset && { preset: scenario.preset }),
        scopes: arm === 'delegating' ? [...scenario.scopes, 'run.delegate'] : scenario.scopes,
        ...(tenant !== undefined && { tenant }),
        limits: {
          ...(limits.maxTurns && { maxTurns: limits.maxTurns }),
          ...(limits.maxCostUsd && { maxCostUsd: limits.maxCostUsd }),
          ...(limits.deadlineSeconds && {
            deadline: new Date(Date.now() + limits.deadlineSeconds * 1000).toISOString(),
          }),
        },
      },
    ],
    staticSummary: `eval ${scenario.id}, ${arm} arm, ${label}`,
  });
  const result = await deputy.result(workflowId);
  const wallMs = Date.now() - started;
  const recorded = await records(workflowId);
  if (!recorded) throw new Error(`${workflowId} ended, yet Temporal's records do not hold it`);
  const score = scoreRun(scenario, {
    workflowId,
    status: recorded.ended,
    output: recorded.output,
    toolCalls: recorded.toolCalls,
    tokens: result.usage.totalTokens,
    costMicroUsd: recorded.costMicroUsd ?? result.usage.costMicroUsd,
    maxCostMicroUsd: recorded.maxCostMicroUsd,
    wallMs,
    children: recorded.children,
  });
  say(
    `  ${arm.padEnd(10)} ${label}: ${score.status.padEnd(13)} score ${(score.score * 100).toFixed(0).padStart(3)}%  ${score.policyFailures.length} policy failure(s)  ${score.children} children  ${(wallMs / 1000).toFixed(1)} s  ${workflowId}`,
  );
  return score;
}
