/**
 * One tenant's burst against a rate-limited provider, as the dev server's tests and the cluster suite both drive it:
 * tenants B and C run 5 runs each on an idle fleet, then again while tenant A's 40 runs fill the model queue. What
 * it measures is what the fleet promises: how long B's and C's runs take beside the burst against alone, and how many
 * requests the provider saw in its busiest second and its busiest five seconds, over the whole scenario.
 */
import type { DeputyClient } from '../client/client.js';
import type { RunResult } from '../contract/run.js';
import { toolResultCount, type RecordedRequest } from './script.js';
import type { ScriptedModelServer } from './scripted-model.js';

/** A burst run's limits: room for its three calls, checked against what each spent. */
export const BURST_LIMITS = { maxTurns: 5, maxTokens: 20_000, maxCostUsd: 0.05, maxToolCalls: 4 };

const TASK = 'fleet burst run ';
const isBurstRun = (r: RecordedRequest) =>
  r.body.messages.some((m) => m.role === 'user' && m.content?.startsWith(TASK));

/** What a burst measured. */
export interface BurstFigures {
  /** B's and C's 10 runs on an idle fleet, from their start to the last one's end. */
  idleMs: number;
  /** The same beside A's 40 runs. */
  loadedMs: number;
  /** Requests the provider saw in its busiest second, any second of the scenario (not only whole ones). */
  busiestSecond: number;
  /** The same over five seconds. */
  busiestFiveSeconds: number;
  /** From the provider's first request to its last. */
  seconds: number;
  results: RunResult[];
}

/** Runs the scenario through `deputy`, its model calls answered by `model` (three calls a run: two sums, then done). */
export async function fleetBurst(
  deputy: DeputyClient,
  model: ScriptedModelServer,
  prefix: string,
): Promise<BurstFigures> {
  model.add({
    name: 'fleet burst',
    when: isBurstRun,
    times: Infinity,
    reply: (r) =>
      toolResultCount(r) < 2
        ? { toolCalls: [{ name: 'calculate', arguments: { operation: 'add', a: toolResultCount(r), b: 1 } }] }
        : { text: 'done' },
  });
  let n = 0;
  const runs = (tenant: string, count: number) =>
    Array.from({ length: count }, async () => {
      const i = n++;
      const workflowId = `${prefix}-${tenant}${i}`;
      await deputy.startRun({ task: `${TASK}${tenant} ${i}`, tenant, limits: BURST_LIMITS }, { workflowId });
      return { result: await deputy.result(workflowId), endedAt: Date.now() };
    });
  const smallTenants = async () => {
    const startedAt = Date.now();
    const ended = await Promise.all([...runs('B', 5), ...runs('C', 5)]);
    return { ms: Math.max(...ended.map((e) => e.endedAt)) - startedAt, results: ended.map((e) => e.result) };
  };

  const idle = await smallTenants();
  const burst = runs('A', 40);
  // A's calls fill the queue before B's and C's arrive.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const loaded = await smallTenants();
  const results = [...idle.results, ...loaded.results, ...(await Promise.all(burst)).map((e) => e.result)];

  const arrivals = model.requests
    .filter(isBurstRun)
    .map((r) => r.receivedAt)
    .sort((a, b) => a - b);
  return {
    idleMs: idle.ms,
    loadedMs: loaded.ms,
    busiestSecond: busiestWindow(arrivals, 1000),
    busiestFiveSeconds: busiestWindow(arrivals, 5000),
    seconds: Math.round((arrivals.at(-1)! - arrivals[0]!) / 1000),
    results,
  };
}

/** The most of the sorted `times` within any `windowMs`. */
function busiestWindow(times: number[], windowMs: number): number {
  let busiest = 0;
  for (let last = 0, first = 0; last < times.length; last++) {
    while (times[last]! - times[first]! >= windowMs) first++;
    busiest = Math.max(busiest, last - first + 1);
  }
  return busiest;
}

/**
 * The most requests the provider may see in `seconds` at `rate` a second. Temporal holds the queue to its rate over
 * time but lets a second's worth (rate + 1) through at once after a quiet second, and a worker whose event loop lags
 * can bunch the tasks of another second before they reach the provider.
 */
export function requestsAllowed(rate: number, seconds: number): number {
  return rate * seconds + (rate + 1) + rate;
}

/** What a burst's figures break of the fleet's promises at `rate` requests a second: one line each, none when kept. */
export function burstProblems(figures: BurstFigures, rate: number): string[] {
  const problems: string[] = [];
  if (figures.busiestFiveSeconds > requestsAllowed(rate, 5)) {
    problems.push(
      `the provider saw ${figures.busiestFiveSeconds} requests in five seconds, held to ${rate} a second (${requestsAllowed(rate, 5)} at most)`,
    );
  }
  if (figures.loadedMs > 2 * figures.idleMs) {
    problems.push(
      `B and C took ${figures.loadedMs} ms beside the burst, more than twice their ${figures.idleMs} ms on an idle fleet`,
    );
  }
  for (const result of figures.results) {
    const { usage } = result;
    if (result.status !== 'completed') problems.push(`a run ended ${result.status}: ${result.error ?? ''}`);
    if (usage.totalTokens > BURST_LIMITS.maxTokens || usage.costMicroUsd > BURST_LIMITS.maxCostUsd * 1e6) {
      problems.push(`a run spent ${usage.totalTokens} tokens, ${usage.costMicroUsd} µUSD, past its limits`);
    }
  }
  return problems;
}

/** The figures as one line. */
export function burstLine(figures: BurstFigures): string {
  return `idle fleet ${figures.idleMs} ms, beside the burst ${figures.loadedMs} ms (${(figures.loadedMs / figures.idleMs).toFixed(2)}×); busiest second ${figures.busiestSecond} requests, busiest five ${figures.busiestFiveSeconds}, over ${figures.seconds} s`;
}
