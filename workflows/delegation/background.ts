/**
 * A generated background: written by the parent's model for the hook-accepted task, its worst case held as a
 * reservation while it runs. Deterministic code only.
 */
import { attempted, MODEL_CALL_OPTIONS } from '../activity-options.js';
import { DEFAULT_MODEL_RETRY, ModelRetries } from '../../src/rules/model-retry.js';
import type { DeputyActivities } from '../../activities/index.js';
import { isCancellation, proxyActivities, setCurrentDetails, sleep } from '@temporalio/workflow';
import {
  available,
  budgetOf,
  lessBilled,
  upperBoundTokens,
  worstCase,
  type Amount,
  type CallBudget,
} from '../../src/rules/budget.js';
import { cutText } from '../../src/rules/payloads.js';
import type { SessionEvent } from '../../src/contract/session.js';
import { billedBy, budgetExceeded, failureMessage } from '../../src/rules/failure-message.js';
import { BACKGROUND_HEADING, summaryPrompt } from '../../src/rules/context.js';
import { callSpend, NO_TOKENS } from '../../src/rules/usage.js';
import type { AgentRunState } from '../run-state.js';
import type { ChildBackground } from './plan.js';
import { countModelCall } from '../metrics.js';

// Cancelling the parent aborts the generation's HTTP request before the run ends.
const { summarizeContext } = proxyActivities<DeputyActivities>(MODEL_CALL_OPTIONS);

/** Attempts at a background before the child is given up (fewer when the run's policy allows fewer). */
const SUMMARY_ATTEMPTS = 5;

/** The most a background summary may write (the prompt asks for 250 words). */
export const SUMMARY_MAX_COMPLETION_TOKENS = 1024;

/**
 * Asks the parent's model for a task-focused background; a failure means the child never starts. The
 * call's worst case is held as a reservation while it runs (other invocations of the turn reserve meanwhile), capped
 * by what is free; the activity counts the input exactly and asks for no more answer than the hold pays for.
 */
export async function generateBackground(
  task: string,
  taskName: string,
  run: AgentRunState,
  snapshot: readonly SessionEvent[],
): Promise<{ ok: true; background: ChildBackground } | { ok: false; error: string }> {
  const { composition } = run;
  const messages = summaryPrompt(task, snapshot, run.payloads.maxInputBytes);
  const worst = worstCase(upperBoundTokens(messages), SUMMARY_MAX_COMPLETION_TOKENS, composition.price);
  const free = available(budgetOf(run.limits, run.usage, run.reserved));
  const capped = (left: number | null, need: number) => (left === null ? null : Math.min(left, need));
  let budget: CallBudget = {
    tokens: capped(free.tokens, worst.tokens),
    costMicroUsd: capped(free.costMicroUsd, worst.costMicroUsd),
    price: composition.price,
    maxCompletionTokens: SUMMARY_MAX_COMPLETION_TOKENS,
  };
  const held = (left: CallBudget): Amount => ({ tokens: left.tokens ?? 0, costMicroUsd: left.costMicroUsd ?? 0 });
  let hold = held(budget);
  run.hold(hold);
  try {
    let generated: Awaited<ReturnType<typeof summarizeContext>> | undefined;
    const policy = composition.modelRetry ?? DEFAULT_MODEL_RETRY;
    const retries = new ModelRetries({ ...policy, attempts: Math.min(policy.attempts, SUMMARY_ATTEMPTS) }, Date.now());
    while (!generated) {
      try {
        generated = await summarizeContext.executeWithOptions(
          { summary: attempted(`summarizeContext ${composition.model} for ${taskName}`, retries.attempts) },
          [{ model: composition.model, messages, budget, grant: run.grant }],
        );
      } catch (err) {
        const retry = retries.next(err, Date.now());
        if (retry === null) throw retries.gaveUp(err, Date.now());
        // The hold pays for the retries: what a failed attempt was billed moves from the hold to the run's spend.
        run.releaseHold(hold);
        run.debitBilled(err);
        budget = lessBilled(budget, billedBy(err) ?? NO_TOKENS);
        hold = held(budget);
        run.hold(hold);
        setCurrentDetails(`writing ${taskName}'s background: ${retry.status}`);
        await sleep(retry.delayMs);
      }
    }
    run.releaseHold(hold);
    const spend = callSpend(generated, composition.price);
    run.debit(spend);
    countModelCall(run, spend);
    const content = cutText(`${BACKGROUND_HEADING}\n${generated.summary}`, run.payloads.maxTextBytes);
    return { ok: true, background: { source: 'summary', content } };
  } catch (err) {
    run.releaseHold(hold);
    // Attempts that were billed and gave no summary (an empty one, a stream cut short) are paid all the same.
    run.debitBilled(err);
    if (isCancellation(err)) throw err;
    const limit = budgetExceeded(err);
    const why = limit
      ? `not enough of this run's budget is left to write its background (${limit}): ${failureMessage(err)}`
      : `could not prepare the background: ${failureMessage(err)}`;
    return { ok: false, error: `${why}; the child was not started` };
  }
}
