/**
 * Every model call the workflow makes (a turn, a compaction, a child's summary) is retried here, one attempt per
 * activity: Temporal does not retry them, so a run cancelled between attempts still knows what each one billed.
 * Deterministic code only.
 */
import { getCurrentDetails, setCurrentDetails, sleep } from '@temporalio/workflow';
import { DEFAULT_MODEL_RETRY, ModelRetries } from '../src/rules/model-retry.js';
import type { AgentRunState } from './run-state.js';

export interface ModelCallRetry {
  /** At most this many attempts, even when the run's policy allows more. */
  maxAttempts?: number;
  /** A failed attempt that will be retried: what it billed is booked here (by default, debited from the run). */
  billed?: (err: unknown) => void;
}

/**
 * Calls `attempt` until it answers or the run's retry policy gives up, then throws the failure that says how often
 * and what to check. Between attempts the run's details say what it waits for, and why.
 */
export async function retryModelCall<T>(
  run: AgentRunState,
  attempt: (attemptNumber: number) => Promise<T>,
  { maxAttempts, billed = (err) => run.debitBilled(err) }: ModelCallRetry = {},
): Promise<T> {
  const policy = run.composition.modelRetry ?? DEFAULT_MODEL_RETRY;
  const attempts = Math.min(policy.attempts, maxAttempts ?? policy.attempts);
  const retries = new ModelRetries({ ...policy, attempts }, Date.now());
  for (;;) {
    try {
      return await attempt(retries.attempts);
    } catch (err) {
      const retry = retries.next(err, Date.now());
      if (retry === null) throw retries.gaveUp(err, Date.now());
      billed(err);
      const doing = getCurrentDetails();
      setCurrentDetails(doing ? `${doing}; ${retry.status}` : retry.status);
      await sleep(retry.delayMs);
      setCurrentDetails(doing);
    }
  }
}
