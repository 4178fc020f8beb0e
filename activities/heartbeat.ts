import { Context } from '@temporalio/activity';

/**
 * Runs `work` with the activity's cancellation signal, heartbeating every `everyMs` so Temporal can deliver a
 * cancellation (cancellation reaches an activity only through a heartbeat's reply). `work` may heartbeat itself with
 * progress details; the timer repeats the last ones, so a later beat does not erase them from what Temporal shows.
 */
export async function withHeartbeat<T>(
  work: (signal: AbortSignal, heartbeat: (details?: unknown) => void) => Promise<T>,
  everyMs = 1000,
): Promise<T> {
  const context = Context.current();
  let details: unknown;
  const heartbeat = (next?: unknown) => {
    if (next !== undefined) details = next;
    context.heartbeat(details);
  };
  // No heartbeat at the start: a call that ends within `everyMs` costs the server no heartbeat round trip.
  const timer = setInterval(heartbeat, everyMs);
  try {
    return await work(context.cancellationSignal, heartbeat);
  } finally {
    clearInterval(timer);
  }
}
