/**
 * Shared pieces of the fault-injection suite: a delegating run whose output depends on every step's data, the
 * config its workers run with, and the checks that a run came through a fault intact.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { expect, inject } from 'vitest';
import { TEST_API_KEY, type Harness } from '../support/harness.js';
import { spawnWorker, waitUntilReady, type WorkerProcess } from '../support/worker-process.js';
import type { RunResult, RunState } from '../../src/contract/run.js';
import { lastMessage, toolResultCount, type RecordedRequest, type ScriptRule } from '../../src/testing/script.js';

/** Config of the suite's workers: delegation on, two levels of budget, a model timeout short enough to test. */
export const FAULT_CONFIG = {
  model: 'test-model',
  prices: { 'test-model': { inputPerMTokUsd: 1, outputPerMTokUsd: 2 } },
  modelTimeoutSeconds: 3,
  presets: [{ id: 'assistant', persona: 'You coordinate.', tools: ['calculate'] }],
  grantableScopes: ['tools.calc', 'tools.notes', 'run.delegate'],
  limits: {
    maxTurns: 10,
    maxTokens: 100_000,
    maxCostUsd: 1,
    maxToolCalls: 10,
    maxDurationSeconds: 900,
    synthesisReserve: false,
  },
  delegation: {
    enabled: true,
    activation: 'unconditional',
    childDefaults: { maxTurns: 5, maxTokens: 5_000, maxCostUsd: 0.05, maxToolCalls: 5 },
  },
};

/** Starts the worker process (`npm run worker`) on the harness's queues with `configPath`, and waits until it is ready. */
export async function startFaultWorker(
  h: Harness,
  configPath: string,
  env: Record<string, string> = {},
): Promise<WorkerProcess> {
  const started = spawnWorker({
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    DEPUTY_TASK_QUEUE: h.taskQueue,
    DEPUTY_BACKGROUND_TASK_QUEUE: `${h.taskQueue}-bg`,
    DEPUTY_CONFIG: configPath,
    OPENAI_BASE_URL: h.model.url,
    OPENAI_API_KEY: TEST_API_KEY,
    ...env,
  });
  await waitUntilReady(started);
  return started;
}

/** Scopes of a delegating run. */
export const TREE_SCOPES = ['tools.calc', 'run.delegate'];

/** Writes `config` to a fresh file and returns its path. */
export function writeConfig(config: unknown): string {
  const path = join(mkdtempSync(join(tmpdir(), 'deputy-faults-')), 'config.json');
  writeFileSync(path, JSON.stringify(config));
  return path;
}

const FACTORS = { a: 2, b: 3 } as const;

/** The task of tree run `n` (`prefix` keeps suites apart on one model server). */
export function treeTask(prefix: string, n: number): string {
  return `${prefix} tree ${n}`;
}

/** What tree run `n` answers when nothing is lost: it depends on both children's tool results. */
export function treeOutput(n: number): string {
  return `final kid-a=${n * FACTORS.a} kid-b=${n * FACTORS.b}`;
}

/**
 * What the tree's calls report: more than Deputy counts for them (a parent's call a few thousand tokens with the
 * delegation tools' schemas, a kid's a few hundred), so each is debited as reported and a tree's usage does not shift
 * by a token or two with its random id.
 */
const PARENT_USAGE = { prompt_tokens: 5000, completion_tokens: 100 };
const KID_USAGE = { prompt_tokens: 500, completion_tokens: 20 };

/**
 * Rules for tree runs: the parent delegates two children (context none); each child multiplies `n` with the
 * `calculate` tool and reports the result; the parent's final answer quotes what its children reported.
 */
export function treeRules(prefix: string, delayMs?: () => number): ScriptRule[] {
  const kid = new RegExp(`^${prefix} kid ([ab]) (\\d+)$`);
  const parent = new RegExp(`^${prefix} tree (\\d+)$`);
  const userMatch = (request: RecordedRequest, pattern: RegExp) =>
    request.body.messages
      .filter((m) => m.role === 'user')
      .flatMap((m) => (m.content ?? '').split('\n'))
      .map((line) => pattern.exec(line))
      .find(Boolean);
  return [
    {
      name: `${prefix}-kid`,
      times: Infinity,
      ...(delayMs && { delayMs }),
      when: (request) => Boolean(userMatch(request, kid)),
      reply: (request) => {
        const [, which, n] = userMatch(request, kid)!;
        if (toolResultCount(request) === 0) {
          const b = FACTORS[which as 'a' | 'b'];
          return {
            toolCalls: [{ name: 'calculate', arguments: { operation: 'multiply', a: Number(n), b } }],
            usage: KID_USAGE,
          };
        }
        return { text: `kid-${which}=${lastMessage(request)}`, usage: KID_USAGE };
      },
    },
    {
      name: `${prefix}-parent`,
      times: Infinity,
      ...(delayMs && { delayMs }),
      when: (request) => Boolean(userMatch(request, parent)),
      reply: (request) => {
        const [, n] = userMatch(request, parent)!;
        if (toolResultCount(request) === 0) {
          const briefs = (['a', 'b'] as const).map((which) => ({
            task_name: `kid-${which}`,
            message: `${prefix} kid ${which} ${n}`,
            context: 'none',
          }));
          return { toolCalls: [{ name: 'delegate', arguments: { briefs } }], usage: PARENT_USAGE };
        }
        const reported = [...new Set([...lastMessage(request).matchAll(/kid-[ab]=\d+/g)].map((m) => m[0]))].sort();
        return { text: `final ${reported.join(' ')}`, usage: PARENT_USAGE };
      },
    },
  ];
}

/** The logical model call a request is (which run, which step): repeats of one call share a key. */
export function callKey(request: RecordedRequest): string {
  // A child's task arrives under a "## Your task" heading: its last line is the brief's message.
  const user =
    request.body.messages
      .find((m) => m.role === 'user')
      ?.content?.trim()
      .split('\n')
      .at(-1) ?? '';
  return `${user} #${toolResultCount(request)}`;
}

/**
 * The `callModel` attempts of one workflow history that could have sent a request, one count a turn in order: the
 * attempt that completed the turn and those that timed out (their worker died holding them). A run makes one model
 * call at a time and the workflow itself retries a call (each attempt its own activity), so a turn is every attempt
 * scheduled after the previous turn's completion, up to and including its own. An attempt that failed otherwise than
 * as a cold worker's (which sends nothing: it does not hold the run's dialogue) fails the check: this suite's model
 * never fails a call.
 */
export async function modelCallSendingAttempts(client: Client, workflowId: string): Promise<number[]> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const modelCalls = new Set<string>();
  const isModelCall = (scheduledEventId: unknown) => modelCalls.has(String(scheduledEventId));
  const turns: number[] = [];
  let sending = 0;
  for (const event of history.events ?? []) {
    if (event.activityTaskScheduledEventAttributes?.activityType?.name === 'callModel') {
      modelCalls.add(String(event.eventId));
    }
    const done = event.activityTaskCompletedEventAttributes;
    if (done && isModelCall(done.scheduledEventId)) {
      turns.push(sending + 1);
      sending = 0;
    }
    const timedOut = event.activityTaskTimedOutEventAttributes;
    if (timedOut && isModelCall(timedOut.scheduledEventId)) sending += 1;
    const failed = event.activityTaskFailedEventAttributes;
    if (failed && isModelCall(failed.scheduledEventId)) {
      const type = failed.failure?.applicationFailureInfo?.type;
      expect(type, `${workflowId}: a model call failed as ${type}`).toBe('ModelCall.ContextUnknown');
    }
  }
  return turns;
}

/**
 * A finished tree run's ledger adds up: nothing still reserved, every child completed with its spend recorded,
 * and the parent's usage is its own completed calls (as its history records their results, at $1 in / $2 out per
 * million tokens) plus its children's spend.
 */
export async function expectLedgerAddsUp(
  client: Client,
  workflowId: string,
  state: RunState,
  result: RunResult,
): Promise<void> {
  expect(state.reserved).toEqual({ tokens: 0, costMicroUsd: 0 });
  expect(state.delegations.map((entry) => entry.status)).toEqual(['completed', 'completed']);
  const childCost = state.delegations.reduce((sum, entry) => sum + (entry.actual?.costMicroUsd ?? NaN), 0);
  const childTokens = state.delegations.reduce((sum, entry) => sum + (entry.actual?.tokens ?? NaN), 0);
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const scheduled = new Map<string, string>();
  const own = { inputTokens: 0, outputTokens: 0, calls: 0 };
  for (const event of history.events ?? []) {
    const kind = event.activityTaskScheduledEventAttributes;
    if (kind) scheduled.set(String(event.eventId), kind.activityType?.name ?? '');
    const done = event.activityTaskCompletedEventAttributes;
    if (!done || scheduled.get(String(done.scheduledEventId)) !== 'callModel') continue;
    const call = defaultPayloadConverter.fromPayload<{ inputTokens: number; outputTokens: number }>(
      done.result!.payloads![0]!,
    );
    own.inputTokens += call.inputTokens;
    own.outputTokens += call.outputTokens;
    own.calls += 1;
  }
  expect(own.calls).toBe(result.usage.modelCalls);
  expect(result.usage.costMicroUsd).toBe(childCost + own.inputTokens + 2 * own.outputTokens);
  expect(result.usage.totalTokens).toBe(childTokens + own.inputTokens + own.outputTokens);
}

/** Deterministic pseudo-random numbers (mulberry32), so a failing run can be repeated with its seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Waits `ms` milliseconds. */
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
