/**
 * The agent loop: ask `nextStep` what to do (an explicit union, as in the OpenAI Agents SDK's runner) and do it,
 * with user messages joining between turns and continue-as-new when Temporal suggests it. Deterministic code
 * only.
 */
import {
  allHandlersFinished,
  condition,
  makeContinueAsNewFunc,
  setCurrentDetails,
  workflowInfo,
} from '@temporalio/workflow';
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

/**
 * Temporal names a newer version of the run's deployment as its target, and the run is at a quiet moment: waiting
 * for its person with nothing to read, no child live and no call in flight. A run never moves mid-turn.
 */
function versionMoveDue(run: Run): boolean {
  return run.versions.targetChanged && run.inbox.size === 0 && !run.children.hasLive();
}

/**
 * Continues as new once every handler has finished, with the grant of its tree: the next run is in its chain. Moving
 * to a newer version, the next run starts on the version Temporal names as the target.
 */
async function continueAsNewNow(run: Run, { moving = false } = {}): Promise<void> {
  await run.sends.allThrough();
  await condition(allHandlersFinished);
  const next = makeContinueAsNewFunc<(input: RunInput) => Promise<unknown>>(
    moving ? { initialVersioningBehavior: 'AUTO_UPGRADE' } : {},
  );
  await next({ ...run.input, resume: run.toResume(), grant: run.treeGrant });
}

/** What Temporal UI says of a conversation waiting for its person: and the version it moved from, if it moved. */
function waitingDetails(run: Run): string {
  const moved = run.versions.movedFrom;
  const waiting = 'waiting for the next message (sendMessage update)';
  return moved ? `${waiting}; moved from ${moved} to ${run.versions.current}` : waiting;
}

/** Loops model calls and tool calls until an answer, a limit, or (in a conversation) the end of the talk. */
export async function agentLoop(run: Run): Promise<Outcome> {
  const mode = run.input.mode ?? 'task';
  /** When a conversation waiting for its person ends for want of a message. */
  let idleUntil: number | undefined;
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
        if (versionMoveDue(run)) await continueAsNewNow(run, { moving: true });
        run.setStatus('waiting_for_user');
        setCurrentDetails(waitingDetails(run));
        idleUntil ??= Date.now() + (run.input.idleTimeoutSeconds ?? DEFAULT_IDLE_TIMEOUT_SECONDS) * 1000;
        const woke = await condition(
          () => run.inbox.size > 0 || run.endRequested || run.versions.checkAsked,
          Math.max(1, idleUntil - Date.now()),
        );
        if (!woke || run.endRequested) return { status: 'completed', output: bestOutput(run.events) };
        run.versions.checkAsked = false;
        // Woken only to look at its version: it waits again for the time it had left.
        if (run.inbox.size === 0) break;
        idleUntil = undefined;
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
