/**
 * Metrics (issue 15): the Temporal runtime's Prometheus endpoint, which carries both the SDK's own metrics
 * (`temporal_*`: task latencies, slots, polls) and Deputy's (`deputy_*`, recorded in `workflows/metrics.ts`).
 * `DEPUTY_METRICS_ADDRESS` (for example `0.0.0.0:9464`) turns it on; it is read once, when the runtime is installed.
 */
import type { TelemetryOptions } from '@temporalio/worker';

/** Deputy's metrics: name (as Prometheus shows it), type, tags beyond the SDK's, what it counts. */
export const DEPUTY_METRICS = [
  [
    'deputy_model_calls_total',
    'counter',
    'model, preset, tenant',
    'model calls booked (turns, syntheses, compactions, summaries)',
  ],
  [
    'deputy_model_tokens_total',
    'counter',
    'model, preset, tenant, direction',
    'tokens billed, `direction` input or output',
  ],
  ['deputy_cost_microusd_total', 'counter', 'model, preset, tenant', 'cost of model calls in micro-USD'],
  [
    'deputy_delegations_started_total',
    'counter',
    'model, preset, tenant',
    "children booked and started (parent's tags)",
  ],
  [
    'deputy_delegations_refused_total',
    'counter',
    'model, preset, tenant, reason',
    'delegate calls refused: invalid_arguments, unknown_preset, caps, plan, max_children, budget, start_failed',
  ],
  [
    'deputy_delegations_ended_total',
    'counter',
    'model, preset, tenant, status',
    'children ended, by status (failed, limit_reached, completed …)',
  ],
  ['deputy_reservations_opened_total', 'counter', 'model, preset, tenant', 'budget reservations made for children'],
  [
    'deputy_reservations_settled_total',
    'counter',
    'model, preset, tenant',
    'reservations settled; opened − settled = held now',
  ],
  [
    'deputy_runs_ended_total',
    'counter',
    'model, preset, tenant, status, limit, synthesis',
    'runs ended; `synthesis="true"`: a limit ended it with a synthesised answer',
  ],
] as const;

/** The runtime's telemetry options for `env`, or `undefined` when no metrics endpoint is asked for. */
export function runtimeTelemetry(env: NodeJS.ProcessEnv = process.env): TelemetryOptions | undefined {
  const bindAddress = env.DEPUTY_METRICS_ADDRESS;
  if (!bindAddress) return undefined;
  return { metrics: { prometheus: { bindAddress, countersTotalSuffix: true } } };
}
