/**
 * One model turn and the compaction before it. Deterministic code only: the model call
 * and the summary are activities.
 */
import { ApplicationFailure, proxyActivities, setCurrentDetails } from '@temporalio/workflow';
import type { DeputyActivities } from '../activities/index.js';
import { FAILURE } from '../src/contract/failures.js';
import type { LimitName } from '../src/contract/run.js';
import { toChatMessages, type ChatMessage } from '../src/contract/dialogue.js';
import {
  applyCompaction,
  messagesAfterCompaction,
  planCompaction,
  type CompactionPlan,
} from '../src/rules/compaction.js';
import { formatBytes, jsonBytes, jsonFits } from '../src/rules/payloads.js';
import { budgetExceeded, findFailure } from '../src/rules/failure-message.js';
import type { CallModelResult, SummarizeContextResult } from '../src/contract/activities.js';
import { callSpend } from '../src/rules/usage.js';
import { countModelCall } from './metrics.js';
import { ANSWER_CHILD_TOOL, ASK_PARENT_TOOL } from '../src/rules/children.js';
import type { RunTool } from '../src/contract/tools.js';
import { attempted, MODEL_CALL_OPTIONS, modelCallOptions } from './activity-options.js';
import { fellBack, retryModelCall, type Answered } from './retry-model-call.js';
import type { ChainModel } from '../src/rules/model-retry.js';
import { now, type Run } from './run/run.js';

/** Appended to a synthesis call, which offers no tools. */
export const SYNTHESIS_INSTRUCTION =
  'Your budget for this run is nearly used up. Do not call any tools. Give your final answer now, using what you already know.';

/** The most a compaction summary may write (the prompt asks for 300 words). */
const COMPACTION_MAX_COMPLETION_TOKENS = 1024;

const { callModel, compactSession } = proxyActivities<DeputyActivities>(MODEL_CALL_OPTIONS);

/**
 * The messages of the next model call: the effective dialogue after the persona, and the synthesis instruction. Tools
 * go by name where the composition has no spec (the worker knows them).
 */
function turnInput(run: Run, synthesisFor: LimitName | null, offerTools: boolean) {
  const messages = toChatMessages(run.events, run.persona);
  if (synthesisFor) messages.push({ role: 'system', content: SYNTHESIS_INSTRUCTION });
  const tools: (string | RunTool)[] = [];
  if (offerTools) {
    // `answer_child` only while a child's question is open (its spec costs every call); every child may ask.
    const answering = run.children.hasOpenQuestions();
    for (const tool of run.composition.tools) {
      if (tool.name !== ANSWER_CHILD_TOOL || answering) tools.push(tool.parameters ? tool : tool.name);
    }
    if (run.origin) tools.push(ASK_PARENT_TOOL);
  }
  return { messages, tools };
}

/**
 * Makes `call` with `messages` sent as what is new since the run's last call (the worker that made it holds the rest),
 * and again with them whole if that worker does not (`ModelCall.ContextUnknown`); then records what that worker now
 * holds (`held`). History grows by roughly what each turn produced, not by the whole dialogue every turn. A failed
 * attempt is retried by `retryModelCall`.
 */
function sendingWhatIsNew<T>(
  run: Run,
  messages: ChatMessage[],
  call: (sent: ReturnType<Run['dialogueCache']['next']>, attempt: number, on: ChainModel) => Promise<T>,
  held: (result: T) => ChatMessage[],
): Promise<Answered<T>> {
  // Once the worker was found not to hold the dialogue, every later attempt sends it whole.
  let whole = false;
  return retryModelCall(run, async (attempt, on) => {
    let sent = run.dialogueCache.next(messages, whole);
    let result: T;
    try {
      result = await call(sent, attempt, on);
    } catch (err) {
      if (whole || !findFailure(err, FAILURE.ContextUnknown)) throw err;
      whole = true;
      sent = run.dialogueCache.next(messages, whole);
      result = await call(sent, attempt, on);
    }
    run.dialogueCache.held(sent.context.seq, held(result));
    return result;
  });
}

/**
 * Summarises the oldest turns once the effective dialogue passes the threshold (or, `forced`, whenever there
 * are turns to spare, because the next input is too large); their raw form is gone. Returns the limit that stopped
 * a compaction that does not fit the budget, else `null`.
 */
async function maybeCompact(run: Run, forced = false): Promise<LimitName | null> {
  const plan = compactionPlan(run, forced);
  return plan ? compact(run, plan) : null;
}

/** What a compaction would replace now (`forced`: whatever can be), or `null` when none is due. */
export function compactionPlan(run: Run, forced = false): CompactionPlan | null {
  const { compaction } = run.composition;
  return forced
    ? planCompaction(run.events, 0, 1)
    : planCompaction(run.events, compaction.thresholdTokens, compaction.keepRecentTurns);
}

/** Summarises what `plan` replaces; returns the limit that stopped it when it does not fit the budget, else `null`. */
export async function compact(run: Run, plan: CompactionPlan): Promise<LimitName | null> {
  setCurrentDetails(`compacting ${plan.replaced.length} events`);
  // The worker holds the dialogue; the call names the messages to compact, after the persona and before
  // the recent turns, and sends only what is new since the last call.
  const messages = toChatMessages(run.events, run.persona);
  const from = run.persona ? 1 : 0;
  const range = {
    from,
    to: messages.length - toChatMessages(plan.recent, '').length,
    maxBytes: run.payloads.maxInputBytes,
  };
  let compacted: Answered<SummarizeContextResult>;
  try {
    compacted = await sendingWhatIsNew(
      run,
      messages,
      (sent, attempt, on) => {
        const summary = `compactSession ${on.model} (${plan.replacesTurns} turns so far)`;
        return compactSession.executeWithOptions(
          { summary: attempted(summary, attempt), ...modelCallOptions(run, on) },
          [
            {
              model: on.model,
              ...fellBack(run),
              ...sent,
              compact: range,
              budget: run.account.callBudget(COMPACTION_MAX_COMPLETION_TOKENS),
              grant: run.treeGrant,
            },
          ],
        );
      },
      // What the worker now holds: the dialogue as the session reads once the summary replaces the range.
      (result) => messagesAfterCompaction(messages, range, result.summary),
    );
  } catch (err) {
    run.account.debitBilled(err);
    const limit = budgetExceeded(err);
    if (limit) return limit;
    throw err;
  }
  const spend = callSpend(compacted.answer, compacted.model.price);
  run.account.debit(spend);
  countModelCall(run, spend);
  run.session.compacted(applyCompaction(plan, compacted.answer.summary, now()), plan.replaced);
  return null;
}

/**
 * One model call. An input past the payload budget forces a compaction first, and fails the run (typed,
 * non-retryable) if that cannot help. A call that does not fit the budget becomes a synthesis call when
 * tools were offered; returns the limit when not even that fits, else `null`.
 */
export async function modelTurn(
  run: Run,
  synthesisFor: LimitName | null,
  offerTools: boolean,
): Promise<LimitName | null> {
  const input = turnInput(run, synthesisFor, offerTools);
  if (!jsonFits(input, run.payloads.maxInputBytes)) return compactedTurn(run, synthesisFor, offerTools);
  return callTurn(run, synthesisFor, input);
}

/** A turn whose input is past the payload budget: compacted first, refused if it still does not fit. */
async function compactedTurn(run: Run, synthesisFor: LimitName | null, offerTools: boolean): Promise<LimitName | null> {
  const { maxInputBytes } = run.payloads;
  const stopped = await maybeCompact(run, true);
  if (stopped) return stopped;
  const input = turnInput(run, synthesisFor, offerTools);
  const size = jsonBytes(input);
  if (size > maxInputBytes) {
    throw ApplicationFailure.create({
      type: FAILURE.PayloadTooLarge,
      message: `the next model call's input is ${formatBytes(size)} even after compaction, past the payload budget of ${formatBytes(maxInputBytes)} (payloads.maxInputBytes); shorten the task or the messages given to this run`,
      nonRetryable: true,
    });
  }
  return callTurn(run, synthesisFor, input);
}

/** The model call of a turn and its booking; a call past the budget becomes a synthesis call when it can. */
async function callTurn(
  run: Run,
  synthesisFor: LimitName | null,
  input: ReturnType<typeof turnInput>,
): Promise<LimitName | null> {
  const { effort } = run.composition;
  const turn = run.account.usage.modelCalls + 1;
  const calling = run.account.models.current.model;
  setCurrentDetails(`turn ${turn}: calling ${calling}${synthesisFor ? ` (synthesis: ${synthesisFor})` : ''}`);
  const request = { effort, ...input, budget: run.account.callBudget(), grant: run.treeGrant };
  let answered: Answered<CallModelResult>;
  try {
    answered = await sendingWhatIsNew(
      run,
      input.messages,
      (sent, attempt, on) => {
        const summary = `callModel ${on.model} turn ${turn}${synthesisFor ? ' synthesis' : ''}`;
        return callModel.executeWithOptions({ summary: attempted(summary, attempt), ...modelCallOptions(run, on) }, [
          // A retry is fitted to what is left once the attempts before it were debited.
          {
            ...request,
            model: on.model,
            ...fellBack(run),
            ...(attempt > 1 && { budget: run.account.callBudget() }),
            ...sent,
          },
        ]);
      },
      () => input.messages,
    );
  } catch (err) {
    run.account.debitBilled(err);
    const limit = budgetExceeded(err);
    if (!limit) throw err;
    // Without tools the input is smaller and the model is asked to answer now: the reserve's purpose.
    if (synthesisFor === null && run.account.limits.synthesis) return modelTurn(run, limit, false);
    return limit;
  }
  const { answer: reply, model: answeredBy } = answered;
  const spend = callSpend(reply, answeredBy.price);
  run.account.recordModelCall(spend);
  countModelCall(run, spend);
  const fallback = run.account.models.whyAnswered(answeredBy);
  run.append({
    type: 'message/assistant',
    at: now(),
    content: reply.content,
    toolCalls: reply.toolCalls,
    ...(synthesisFor && { synthesisFor }),
    // An answer from another model than the run's own names it, and why the run's calls moved on to it.
    ...(fallback !== null && { model: answeredBy.model, fallback }),
  });
  return null;
}
