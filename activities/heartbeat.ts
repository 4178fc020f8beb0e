import { Context } from '@temporalio/activity';

/**
 * Runs `work` with the activity's cancellation signal, heartbeating every `everyMs` so Temporal can deliver a
 * cancellation (cancellation reaches an activity only through a heartbeat's reply).
 */
export async function withHeartbeat<T>(work: (signal: AbortSignal) => Promise<T>, everyMs = 1000): Promise<T> {
  const context = Context.current();
  // No heartbeat at the start: a call that ends within `everyMs` costs the server no heartbeat round trip.
  const timer = setInterval(() => context.heartbeat(), everyMs);
  try {
    return await work(context.cancellationSignal);
  } finally {
    clearInterval(timer);
  }
}
