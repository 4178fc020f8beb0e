/**
 * Deputy's own metrics, recorded from workflow code through Temporal's workflow metric meter: they leave
 * the sandbox through the SDK's metrics sink, are not recorded again when a history is replayed (a worker that
 * restarts does not count twice), and are exported wherever the worker's runtime exports the SDK's own metrics
 * (`DEPUTY_METRICS_ADDRESS`: a Prometheus `/metrics` endpoint). The SDK tags each with namespace, task queue and
 * workflow type; the names and tags below are the documented contract (README "Operating Deputy").
 */
import type { MetricCounter } from '@temporalio/common';
import { metricMeter, workflowInfo } from '@temporalio/workflow';
import { billedOf, type Spend } from '../src/rules/usage.js';

/** What metrics read of a run: the composition it resolved (none yet at its very start) and its tenant. */
export interface MeteredRun {
  readonly resolvedComposition: { model: string; preset: string; tenantLabel?: string | undefined } | undefined;
  readonly tenant: string | undefined;
}

/**
 * A replayed history's metrics were counted when it first ran, and the SDK's sink drops them on replay: so a replay
 * does not even make their tags.
 */
const replaying = () => workflowInfo().unsafe.isReplaying;

/** A counter of the worker's metrics; each `add` names its run's tags, so it holds no run's values. */
function counter(name: string, unit: string, description: string): MetricCounter {
  return metricMeter.createCounter(name, unit, description);
}

/** Tags every metric of a run carries: its model, preset and tenant (`none` when it has none). */
function runTags(run: MeteredRun): Record<string, string> {
  const composition = run.resolvedComposition;
  return {
    model: composition?.model ?? 'unknown',
    preset: composition?.preset ?? 'none',
    tenant: composition?.tenantLabel ?? (run.tenant === undefined ? 'none' : 'other'),
  };
}

/**
 * A model call booked (a turn, a synthesis or a compaction): its tokens and cost twice, tagged `figure`: `debited`
 * (what the budget took, the larger of report and count) and `billed` (the endpoint's report, or the count).
 */
export function countModelCall(run: MeteredRun, spend: Spend) {
  if (replaying()) return;
  const tags = runTags(run);
  counter('deputy_model_calls', '1', 'Model calls made by runs').add(1, tags);
  const tokenCounter = counter('deputy_model_tokens', 'tokens', 'Tokens of model calls, by direction and figure');
  const costCounter = counter('deputy_cost_microusd', 'microusd', 'Cost of model calls in micro-USD, by figure');
  const figures = { debited: spend, billed: billedOf(spend) };
  for (const [figure, amount] of Object.entries(figures)) {
    tokenCounter.add(amount.inputTokens, { ...tags, direction: 'input', figure });
    tokenCounter.add(amount.outputTokens, { ...tags, direction: 'output', figure });
    costCounter.add(amount.costMicroUsd, { ...tags, figure });
  }
}

/** Why a `delegate` call spawned nothing. */
export type RefusalReason =
  | 'invalid_arguments'
  | 'unknown_preset'
  | 'caps'
  | 'plan'
  | 'not_approved'
  | 'max_children'
  | 'budget'
  | 'start_failed';

/** A `delegate` call (or one of its briefs) refused. */
export function countRefusal(run: MeteredRun, reason: RefusalReason, briefs = 1): void {
  if (replaying()) return;
  counter('deputy_delegations_refused', '1', 'Delegations refused, by reason').add(briefs, {
    ...runTags(run),
    reason,
  });
}

/** Children booked: each one's cost is now reserved out of the parent's budget. */
export function countDelegationsStarted(run: MeteredRun, children: number): void {
  if (replaying()) return;
  const tags = runTags(run);
  counter('deputy_delegations_started', '1', 'Children booked and started').add(children, tags);
  counter('deputy_reservations_opened', '1', 'Reservations made for children').add(children, tags);
}

/** A child settled (its reservation released): by the status it ended with. */
export function countDelegationSettled(
  run: MeteredRun,
  status: string,
  overrun: { tokens: number; costMicroUsd: number } | null = null,
): void {
  if (replaying()) return;
  const tags = runTags(run);
  counter('deputy_reservations_settled', '1', 'Reservations settled').add(1, tags);
  counter('deputy_delegations_ended', '1', 'Children ended, by status').add(1, { ...tags, status });
  if (overrun) {
    counter('deputy_reservation_overruns', '1', 'Children charged past their reservation').add(1, tags);
    counter('deputy_overrun_microusd', 'micro-USD', 'Cost charged past reservations').add(overrun.costMicroUsd, tags);
  }
}

/** A run ended: by status, the limit that ended it (`none`) and whether a synthesis wrote its answer. */
export function countRunEnded(run: MeteredRun, status: string, limit: string | undefined): void {
  if (replaying()) return;
  counter('deputy_runs_ended', '1', 'Runs ended, by status and limit').add(1, {
    ...runTags(run),
    status,
    limit: limit ?? 'none',
    synthesis: String(status === 'completed' && limit !== undefined),
  });
}

/** A signal dropped before it touched state: it did not parse, was not for this run, was a repeat or was not signed. */
export function countSignalDropped(signal: string, reason: string): void {
  if (replaying()) return;
  counter('deputy_signals_dropped', '1', 'Signals dropped unread, by signal and reason').add(1, { signal, reason });
}

/** An approval request closed: by its decision (`approve`, `deny`, `expired`, `cancelled`), and how long it waited. */
export function countApproval(run: MeteredRun, decision: string, waitedMs: number): void {
  if (replaying()) return;
  const tags = { ...runTags(run), decision };
  counter('deputy_approvals', '1', 'Approval requests closed, by decision').add(1, tags);
  counter('deputy_approval_wait_ms', 'ms', 'Time approval requests waited for their decision').add(waitedMs, tags);
}
