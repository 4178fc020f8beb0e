/**
 * The agent loop: ask `nextStep` what to do (an explicit union, as in the OpenAI Agents SDK's runner) and do it,
 * with user messages joining between turns and continue-as-new when Temporal suggests it. Deterministic code
 * only.
 */
import { allHandlersFinished, condition, continueAsNew, setCurrentDetails, workflowInfo } from '@temporalio/workflow';
import type { LimitName, RunInput, RunStatus } from '../src/contract/run.js';
import { bestOutput } from '../src/contract/dialogue.js';
import { nextStep } from '../src/rules/agent-loop.js';
import { compact, compactionPlan, modelTurn } from './model-turn.js';
import { now, type Run } from './run/run.js';
import { toolTurn } from './tool-turn.js';
import { awaitDetached } from './delegation/detached.js';

const DEFAULT_IDLE_TIMEOUT_SECONDS = 3600;

/** How the loop ended, before it becomes a `RunResult`. */
export interface Outcome {
  status: Extract<RunStatus, 'completed' | 'limit_reached'>;
  output: string | null;
  limit?: LimitName | undefined;
}

/**
 * User messages, interjections, detached children's results and children's questions join the dialogue only between
 * turns, never between a call and its result.
 */
function drainInbox(run: Run): void {
  for (const item of run.inbox.takeAll()) {
    const at = now();
    switch (item.type) {
      case 'user':
        run.append({ type: 'message/user', at, content: item.content });
        break;
      case 'interjection':
        run.append({ type: 'interjection', at, from: item.from, content: item.content });
        break;
      case 'child-result': {
        const { taskName, childWorkflowId } = item.child;
        run.append({ type: 'subagent/result', at, taskName, childWorkflowId, content: item.content });
        run.children.byId(childWorkflowId)?.reported();
        break;
      }
      case 'question': {
        const { taskName, childWorkflowId, questionId, answered } = item.question;
        const common = { at, taskName, childWorkflowId, questionId };
        run.append(
          answered
            ? { type: 'subagent/answered', ...common, answer: item.content }
            : { type: 'subagent/question', ...common, content: item.content },
        );
        break;
      }
      case 'approval': {
        const { taskName, childWorkflowId, requestId } = item.approval;
        // News of a request decided before the model could read it is no news.
        if (run.approvals.isOpenBelow(item.approval.run, requestId)) {
          run.append({ type: 'subagent/approval', at, taskName, childWorkflowId, requestId, content: item.content });
        }
        break;
      }
    }
  }
}

/** Temporal suggests continuing as new (or history grows long), and nothing is in flight. */
function continueAsNewDue(run: Run): boolean {
  const { compaction } = run.composition;
  const info = workflowInfo();
  if (!info.continueAsNewSuggested && info.historyLength <= compaction.continueAsNewAfterEvents) return false;
  return !run.children.hasLive();
}

/** Continues as new once every handler has finished, with the grant of its tree: the next run is in its chain. */
async function continueAsNewNow(run: Run): Promise<void> {
  await run.sends.allThrough();
  await condition(allHandlersFinished);
  await continueAsNew<(input: RunInput) => Promise<unknown>>({
    ...run.input,
    resume: run.toResume(),
    grant: run.treeGrant,
  });
}

/** Loops model calls and tool calls until an answer, a limit, or (in a conversation) the end of the talk. */
export async function agentLoop(run: Run): Promise<Outcome> {
  const mode = run.input.mode ?? 'task';
  for (;;) {
    const step = nextStep({
      events: run.events,
      limits: run.account.limits,
      usage: run.account.usage,
      nowMs: Date.now(),
      mode,
    });
    if (step.type !== 'run_tools' && run.inbox.size > 0) {
      drainInbox(run);
      continue;
    }
    switch (step.type) {
      case 'call_model': {
        if (continueAsNewDue(run)) await continueAsNewNow(run);
        const plan = compactionPlan(run);
        if (plan) await compact(run, plan);
        const stopped = await modelTurn(run, step.synthesisFor, step.offerTools);
        // A call whose worst case no longer fits is not made; the run ends with its best output so far.
        if (stopped) return { status: 'limit_reached', output: bestOutput(run.events), limit: stopped };
        break;
      }
      case 'run_tools':
        await toolTurn(run, step.calls, step.refused);
        break;
      case 'wait_for_user': {
        run.setStatus('waiting_for_user');
        setCurrentDetails('waiting for the next message (sendMessage update)');
        const woke = await condition(
          () => run.inbox.size > 0 || run.endRequested,
          `${run.input.idleTimeoutSeconds ?? DEFAULT_IDLE_TIMEOUT_SECONDS} seconds`,
        );
        if (!woke || run.endRequested) return { status: 'completed', output: bestOutput(run.events) };
        run.setStatus('running');
        break;
      }
      case 'final': {
        // A task run does not end while detached children are live: it waits, then reads their results.
        if (mode === 'task' && run.children.hasLiveDetached()) {
          await awaitDetached(run);
          break;
        }
        const last = run.events.findLast((e) => e.type === 'message/assistant');
        return { status: 'completed', output: step.output, limit: last?.synthesisFor };
      }
      case 'limit_reached':
        return { status: 'limit_reached', output: step.output, limit: step.limit };
    }
  }
}
