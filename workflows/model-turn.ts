/**
 * One model turn and the compaction before it (R1.1, R1.6, R1.8, R2.13). Deterministic code only: the model call
 * and the summary are activities.
 */
import { ApplicationFailure, proxyActivities, setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';
import type { DeputyActivities } from '../activities/index.js';
import { FAILURE } from '../src/contract/failures.js';
import type { LimitName } from '../src/contract/run.js';
import { DEPUTY_COST_USD } from '../src/contract/search-attributes.js';
import { toChatMessages } from '../src/contract/dialogue.js';
import { applyCompaction, compactionPrompt, planCompaction } from '../src/rules/compaction.js';
import { formatBytes, jsonBytes, jsonFits } from '../src/rules/payloads.js';
import { budgetExceeded } from '../src/rules/failure-message.js';
import { addModelCall, addSpend, callCostMicroUsd, microToUsd } from '../src/rules/usage.js';
import { MODEL_CALL_OPTIONS } from './activity-options.js';
import { now, type AgentRunState } from './run-state.js';

/** Appended to a synthesis call, which offers no tools (R1.4). */
export const SYNTHESIS_INSTRUCTION =
  'Your budget for this run is nearly used up. Do not call any tools. Give your final answer now, using what you already know.';

/** The most a compaction summary may write (the prompt asks for 300 words). */
const COMPACTION_MAX_COMPLETION_TOKENS = 1024;

const { callModel, compactSession } = proxyActivities<DeputyActivities>(MODEL_CALL_OPTIONS);

/** The messages of the next model call: the effective dialogue after the persona, and the synthesis instruction. */
function turnInput(run: AgentRunState, synthesisFor: LimitName | null, offerTools: boolean) {
  const messages = toChatMessages(run.events, run.composition.persona);
  if (synthesisFor) messages.push({ role: 'system', content: SYNTHESIS_INSTRUCTION });
  return { messages, tools: offerTools ? run.composition.tools : [] };
}

/**
 * R1.6: summarises the oldest turns once the effective dialogue passes the threshold (or, `forced`, whenever there
 * are turns to spare, because the next input is too large); their raw form is gone. Returns the limit that stopped
 * a compaction that does not fit the budget, else `null`.
 */
export async function maybeCompact(run: AgentRunState, forced = false): Promise<LimitName | null> {
  const { compaction, model, price } = run.composition;
  if (!compaction) return null;
  const plan = forced
    ? planCompaction(run.events, 0, 1)
    : planCompaction(run.events, compaction.thresholdTokens, compaction.keepRecentTurns);
  if (!plan) return null;
  setCurrentDetails(`compacting ${plan.replaced.length} events`);
  let compacted;
  try {
    compacted = await compactSession.executeWithOptions(
      { summary: `compactSession ${model} (${plan.replacesTurns} turns so far)` },
      [
        {
          model,
          messages: compactionPrompt(plan.replaced, run.payloads.maxInputBytes),
          budget: run.callBudget(COMPACTION_MAX_COMPLETION_TOKENS),
        },
      ],
    );
  } catch (err) {
    const limit = budgetExceeded(err);
    if (limit) return limit;
    throw err;
  }
  run.usage = addSpend(run.usage, { ...compacted, costMicroUsd: callCostMicroUsd(compacted, price) });
  run.events = applyCompaction(plan, compacted.summary, now());
  return null;
}

/**
 * One model call. R1.8: an input past the payload budget forces a compaction first, and fails the run (typed,
 * non-retryable) if that cannot help. R2.13: a call that does not fit the budget becomes a synthesis call when
 * tools were offered; returns the limit when not even that fits, else `null`.
 */
export async function modelTurn(
  run: AgentRunState,
  synthesisFor: LimitName | null,
  offerTools: boolean,
): Promise<LimitName | null> {
  const { model, effort, price } = run.composition;
  const turn = run.usage.modelCalls + 1;
  let input = turnInput(run, synthesisFor, offerTools);
  const { maxInputBytes } = run.payloads;
  if (!jsonFits(input, maxInputBytes)) {
    const stopped = await maybeCompact(run, true);
    if (stopped) return stopped;
    input = turnInput(run, synthesisFor, offerTools);
    const size = jsonBytes(input);
    if (size > maxInputBytes) {
      throw ApplicationFailure.create({
        type: FAILURE.PayloadTooLarge,
        message: `the next model call's input is ${formatBytes(size)} even after compaction, past the payload budget of ${formatBytes(maxInputBytes)} (payloads.maxInputBytes); shorten the task or the messages given to this run`,
        nonRetryable: true,
      });
    }
  }
  setCurrentDetails(`turn ${turn}: calling ${model}${synthesisFor ? ` (synthesis: ${synthesisFor})` : ''}`);
  let reply;
  try {
    reply = await callModel.executeWithOptions(
      { summary: `callModel ${model} turn ${turn}${synthesisFor ? ' synthesis' : ''}` },
      [{ model, effort, ...input, budget: run.callBudget() }],
    );
  } catch (err) {
    const limit = budgetExceeded(err);
    if (!limit) throw err;
    // Without tools the input is smaller and the model is asked to answer now: the reserve's purpose (R1.4).
    if (synthesisFor === null && run.limits.synthesis) return modelTurn(run, limit, false);
    return limit;
  }
  run.usage = addModelCall(run.usage, reply, price);
  run.append({
    type: 'message/assistant',
    at: now(),
    content: reply.content,
    toolCalls: reply.toolCalls,
    ...(synthesisFor && { synthesisFor }),
  });
  upsertSearchAttributes([{ key: DEPUTY_COST_USD, value: microToUsd(run.usage.costMicroUsd) }]);
  return null;
}
