/**
 * Every model call the workflow makes (a turn, a compaction, a child's summary) is retried here, one attempt per
 * activity: Temporal does not retry them, so a run cancelled between attempts still knows what each one billed.
 * Deterministic code only.
 */
import { ApplicationFailure, getCurrentDetails, setCurrentDetails, sleep } from '@temporalio/workflow';
import type { ModelPrice } from '../src/contract/composition.js';
import { DEFAULT_MODEL_RETRY, ModelRetries, type ChainModel } from '../src/rules/model-retry.js';
import { impossibleUsage } from '../src/rules/usage.js';
import type { Run } from './run/run.js';

export interface ModelCallRetry {
  /** At most this many attempts on each model, even when the run's policy allows more. */
  maxAttempts?: number;
  /**
   * A failed attempt that will be retried, on its model or the next: what it billed, at that model's `price`, is
   * booked here (by default, debited from the run).
   */
  billed?: (err: unknown, price: ModelPrice) => void;
}

/** An answer, and the model of the run's chain that gave it (priced at its own price). */
export interface Answered<T> {
  answer: T;
  model: ChainModel;
}

/**
 * Calls `attempt` until it answers or the run's retry policy gives up, then throws the failure that says how often
 * and what to check. A model that failed as often as the run's fallback policy allows for a kind of failure is left
 * for the next of the run's models, at once, and with attempts of its own. Between attempts the run's details say
 * what it waits for, and why.
 */
export async function retryModelCall<T>(
  run: Run,
  attempt: (attemptNumber: number, model: ChainModel) => Promise<T>,
  { maxAttempts, billed = (err, price) => run.account.debitBilled(err, price) }: ModelCallRetry = {},
): Promise<Answered<T>> {
  const policy = run.composition.modelRetry ?? DEFAULT_MODEL_RETRY;
  const attempts = Math.min(policy.attempts, maxAttempts ?? policy.attempts);
  const retriesOnAModel = () => new ModelRetries({ ...policy, attempts }, Date.now());
  const { models } = run.account;
  let retries = retriesOnAModel();
  let earlierAttempts = 0;
  for (;;) {
    const model = models.current;
    let answer: T;
    try {
      answer = await attempt(earlierAttempts + retries.attempts, model);
    } catch (err) {
      const movedOn = models.failed(err, model);
      if (movedOn !== null) {
        billed(err, model.price);
        earlierAttempts += retries.attempts;
        retries = retriesOnAModel();
        setCurrentDetails(
          `${getCurrentDetails() || 'calling the model'}; ${movedOn}: moving on to ${models.current.model}`,
        );
        continue;
      }
      const retry = retries.next(err, Date.now());
      if (retry === null) throw retries.gaveUp(err, Date.now());
      billed(err, model.price);
      const doing = getCurrentDetails();
      setCurrentDetails(doing ? `${doing}; ${retry.status}` : retry.status);
      await sleep(retry.delayMs, { summary: retry.status });
      setCurrentDetails(doing);
      continue;
    }
    models.answered();
    const impossible = impossibleUsage(answer);
    if (impossible !== null) {
      throw ApplicationFailure.nonRetryable(
        `the model call's result reports usage no call can have (${impossible}), so it was not written by Deputy's worker (a result completed by hand?); nothing of it was counted`,
        'ImpossibleUsage',
      );
    }
    return { answer, model };
  }
}

/** Why a call goes to another model than the run's own, for the watch to say; nothing while on its own. */
export function fellBack(run: Run): { fallback?: string } {
  const { reason } = run.account.models;
  return reason === null ? {} : { fallback: reason };
}
