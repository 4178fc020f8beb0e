/**
 * Metrics: the Temporal runtime's Prometheus endpoint, which carries both the SDK's own metrics
 * (`temporal_*`: task latencies, slots, polls) and Deputy's (`deputy_*`, recorded in `workflows/metrics.ts`).
 * `DEPUTY_METRICS_ADDRESS` (for example `0.0.0.0:9464`) turns it on; it is read once, when the runtime is installed.
 */
import type { TelemetryOptions } from '@temporalio/worker';

/** The runtime's telemetry options for `env`, or `undefined` when no metrics endpoint is asked for. */
export function runtimeTelemetry(env: NodeJS.ProcessEnv = process.env): TelemetryOptions | undefined {
  const bindAddress = env.DEPUTY_METRICS_ADDRESS;
  if (!bindAddress) return undefined;
  return { metrics: { prometheus: { bindAddress, countersTotalSuffix: true } } };
}
