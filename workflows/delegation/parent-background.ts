/**
 * What a child is given of its parent's context: a copy of the chosen turns, or a summary written by the parent's
 * model for the hook-accepted task (its worst case held as a reservation while it runs). Deterministic code only.
 */
import { attempted, MODEL_CALL_OPTIONS, modelCallOptions } from '../activity-options.js';
import { fellBack, retryModelCall } from '../retry-model-call.js';
import type { DeputyActivities } from '../../activities/index.js';
import { isCancellation, proxyActivities } from '@temporalio/workflow';
import { available, budgetOf, type Amount } from '../../src/rules/budget.js';
import { lessBilled, upperBoundTokens, worstCase, type CallBudget } from '../../src/rules/call-budget.js';
import type { SessionEvent } from '../../src/contract/session.js';
import { billedBy, budgetExceeded, failureMessage } from '../../src/rules/failure-message.js';
import { callSpend, NO_TOKENS } from '../../src/rules/usage.js';
import type { Run } from '../run/run.js';
import type { ContextRendering } from '../../src/contract/preset.js';
import type { ModelPrice } from '../../src/contract/composition.js';
import type { ContextMode } from '../../src/contract/delegation.js';
import type { ChildOrigin } from '../../src/contract/run.js';
import {
  BACKGROUND_HEADING,
  renderParentContext,
  renderParentDialogue,
  summaryPrompt,
} from '../../src/rules/context.js';
import { selectContext } from '../../src/rules/run-start.js';
import { cutText, jsonBytes, type PayloadLimits } from '../../src/rules/payloads.js';
import { countModelCall } from '../metrics.js';

// Cancelling the parent aborts the generation's HTTP request before the run ends.
const { summarizeContext } = proxyActivities<DeputyActivities>(MODEL_CALL_OPTIONS);

/** What a child is given of its parent's context, in its input's origin. */
export type ParentBackground = NonNullable<ChildOrigin['parentBackground']>;

/** The parent context a child gets for its context mode, copied and rendered as its preset asks; none for `none`. */
export function copyParentBackground(
  mode: ContextMode,
  rendering: ContextRendering,
  snapshot: readonly SessionEvent[],
  payloads: PayloadLimits,
): ParentBackground | undefined {
  const selected = selectContext(snapshot, mode);
  if (selected.length === 0) return undefined;
  // The copy goes into the child's input; past the budget it is cut (the block) or its oldest turns dropped.
  const content = cutText(renderParentContext(selected), payloads.maxTextBytes);
  if (rendering !== 'dialogue') return { source: 'parent-chat', content };
  const dialogue = renderParentDialogue(selected).map((m) => ({
    ...m,
    content: cutText(m.content, payloads.maxTextBytes),
  }));
  while (dialogue.length > 1 && jsonBytes(dialogue) > payloads.maxTextBytes) dialogue.shift();
  return { source: 'parent-chat', content, dialogue };
}

/** Attempts at a summary before the child is given up (fewer when the run's policy allows fewer). */
const SUMMARY_ATTEMPTS = 5;

/** The most a parent context summary may write (the prompt asks for 250 words). */
const SUMMARY_MAX_COMPLETION_TOKENS = 1024;

/**
 * Asks the parent's model for a task-focused summary of its context; a failure means the child never starts. The
 * call's worst case is held as a reservation while it runs (other invocations of the turn reserve meanwhile), capped
 * by what is free; the activity counts the input exactly and asks for no more answer than the hold pays for.
 */
export async function summariseParentBackground(
  task: string,
  taskName: string,
  run: Run,
  snapshot: readonly SessionEvent[],
): Promise<{ ok: true; context: ParentBackground } | { ok: false; error: string }> {
  const messages = summaryPrompt(task, snapshot, run.payloads.maxInputBytes);
  // Held at the dearest model the summary may reach, so whichever answers it costs no more than the hold.
  const price = run.account.models.dearest;
  const worst = worstCase(upperBoundTokens(messages), SUMMARY_MAX_COMPLETION_TOKENS, price);
  const free = available(budgetOf(run.account.limits, run.account.usage, run.account.reserved));
  const capped = (left: number | null, need: number) => (left === null ? null : Math.min(left, need));
  const hold = new SummaryHold(run, {
    tokens: capped(free.tokens, worst.tokens),
    costMicroUsd: capped(free.costMicroUsd, worst.costMicroUsd),
    price,
    maxCompletionTokens: SUMMARY_MAX_COMPLETION_TOKENS,
  });
  try {
    const generated = await retryModelCall(
      run,
      (attempt, on) =>
        summarizeContext.executeWithOptions(
          {
            summary: attempted(`summarizeContext ${on.model} for ${taskName}`, attempt),
            ...modelCallOptions(run, on),
          },
          [{ model: on.model, ...fellBack(run), messages, budget: hold.budget, grant: run.treeGrant }],
        ),
      { maxAttempts: SUMMARY_ATTEMPTS, billed: (err, attemptPrice) => hold.billed(err, attemptPrice) },
    );
    hold.release();
    const spend = callSpend(generated.answer, generated.model.price);
    run.account.debit(spend);
    countModelCall(run, spend);
    const content = cutText(`${BACKGROUND_HEADING}\n${generated.answer.summary}`, run.payloads.maxTextBytes);
    return { ok: true, context: { source: 'summary', content } };
  } catch (err) {
    hold.release();
    // Attempts that were billed and gave no summary (an empty one, a stream cut short) are paid all the same.
    run.account.debitBilled(err);
    if (isCancellation(err)) throw err;
    const limit = budgetExceeded(err);
    const why = limit
      ? `not enough of this run's budget is left to summarise its context for the child (${limit}): ${failureMessage(err)}`
      : `could not summarise this run's context for the child: ${failureMessage(err)}`;
    return { ok: false, error: `${why}; the child was not started` };
  }
}

/**
 * What a summary call holds of its run's budget while it is made. The hold pays for the retries: what a failed
 * attempt was billed moves from the hold to the run's spend, and the next attempt may use only what is left of it.
 */
class SummaryHold {
  #budget: CallBudget;
  #held: Amount;

  constructor(
    private readonly run: Run,
    budget: CallBudget,
  ) {
    this.#budget = budget;
    this.#held = heldBy(budget);
    run.account.hold(this.#held);
  }

  /** What the next attempt may use. */
  get budget(): CallBudget {
    return this.#budget;
  }

  billed(err: unknown, price: ModelPrice): void {
    this.run.account.releaseHold(this.#held);
    this.run.account.debitBilled(err, price);
    this.#budget = lessBilled(this.#budget, billedBy(err) ?? NO_TOKENS);
    this.#held = heldBy(this.#budget);
    this.run.account.hold(this.#held);
  }

  release(): void {
    this.run.account.releaseHold(this.#held);
  }
}

const heldBy = (left: CallBudget): Amount => ({ tokens: left.tokens ?? 0, costMicroUsd: left.costMicroUsd ?? 0 });
