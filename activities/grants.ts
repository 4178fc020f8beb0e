/**
 * Grants: what a run holds, signed by a worker, so no record a client of the namespace writes can stand in for it.
 *
 * Temporal lets any client of the namespace start `agentRun` as the child of a workflow of its own, continue a
 * workflow of its own as new into `agentRun`, or run an activity from a workflow of its own that it names `agentRun`.
 * What such a client cannot do is run code on Deputy's workers: a local activity runs in the worker that runs the
 * calling workflow's code, so only Deputy's own workflow code calls one. Grants are made and opened there:
 *
 * - a parent seals the input of each child it starts (the child's origin, composition and limits with it), bound to
 *   the parent's execution and the child's id; a run continuing as new seals the input it continues with (its resume),
 *   bound to the run it continues from;
 * - a run opens its input at its start: an origin or a resume is honoured only with a seal a worker made for exactly
 *   this input, from the parent or the earlier run Temporal records; the run is then granted its run, a signature bound
 *   to its chain of runs (`caller-chain.ts`), which every activity that acts for it (a model call, a tool, a hook)
 *   asks for.
 */
import { activityInfo } from '@temporalio/activity';
import type { RunInput } from '../src/contract/run.js';
import type { MessageKeys } from '../src/ops/message-keys.js';
import type { MessageToSign } from '../src/contract/signals.js';
import type { MadeByModelInput, OpenRunInput, OpenRunResult, SealRunInputInput } from '../src/contract/activities.js';
import { callerChain, type Chain } from './caller-chain.js';
import { toolCallSeals } from './tool-call-seal.js';

/** The input as it was sealed: everything but the seal itself. */
function sealedPart(input: RunInput): Omit<RunInput, 'grant'> {
  const { grant: _grant, ...rest } = input;
  return rest;
}

/** A child's input, sealed by the parent execution that starts it. */
function originMessage(parent: { workflowId: string; runId: string }, child: string, input: RunInput): MessageToSign {
  return { signal: 'grant/origin', from: parent.workflowId, to: parent.runId, id: child, body: sealedPart(input) };
}

/** A resume, sealed by the execution that continues as new with it. */
function resumeMessage(workflowId: string, continuedFrom: string, input: RunInput): MessageToSign {
  return { signal: 'grant/resume', from: workflowId, to: continuedFrom, id: workflowId, body: sealedPart(input) };
}

/** The grant of a run: its chain of executions (a reset or a continue-as-new keeps it). */
function runMessage(chain: Chain): MessageToSign {
  return { signal: 'grant/run', from: chain.workflowId, to: chain.firstRunId, id: 'run', body: null };
}

/** The execution Temporal reports as the caller of the activity in progress. */
function caller(): { workflowId: string; runId: string } | undefined {
  return activityInfo().workflowExecution;
}

export function runGrants(keys: MessageKeys) {
  const seals = toolCallSeals(keys);
  return {
    /** The seal of a child's input (`childWorkflowId` given) or of the input a run continues as new with. */
    sealRunInput: async ({ input, childWorkflowId }: SealRunInputInput): Promise<string> => {
      const execution = caller()!;
      return keys.sign(
        childWorkflowId === undefined
          ? resumeMessage(execution.workflowId, execution.runId, input)
          : originMessage(execution, childWorkflowId, input),
      );
    },

    /**
     * Opens a run's input: a resume or an origin only with its seal, for the execution Temporal records before this
     * one (the calling workflow code passes what Temporal told it); then the run's grant.
     */
    openRun: async ({ input, parent, continuedFrom, firstRunId }: OpenRunInput): Promise<OpenRunResult> => {
      const execution = caller()!;
      const refused = (reason: string): OpenRunResult => ({ ok: false, reason });
      if (input.resume) {
        if (continuedFrom === undefined) return refused('resume: this run did not continue from an earlier run');
        if (
          input.grant === undefined ||
          !keys.verify(resumeMessage(execution.workflowId, continuedFrom, input), input.grant).ok
        ) {
          return refused(
            `resume: no worker sealed it for this run: the run it continues from (${continuedFrom}) is not a Deputy run of ${JSON.stringify(execution.workflowId)}, or the resume was changed; start the run without resume`,
          );
        }
      } else if (input.origin) {
        if (parent === undefined) return refused('origin: this run has no parent');
        if (
          input.grant === undefined ||
          !keys.verify(originMessage(parent, execution.workflowId, input), input.grant).ok
        ) {
          return refused(
            `origin: no worker sealed it for this run: its parent ${JSON.stringify(parent.workflowId)} is not a Deputy run that started it with this input; origin is set only by a parent run on the children it starts`,
          );
        }
      }
      return { ok: true, grant: keys.sign(runMessage({ workflowId: execution.workflowId, firstRunId })) };
    },

    /** Whether `grant` is the grant of the run Temporal reports as the caller (read from the server once a run). */
    holds: async (grant: unknown): Promise<boolean> => {
      if (typeof grant !== 'string') return false;
      const chain = await callerChain();
      return chain !== undefined && keys.verify(runMessage(chain), grant).ok;
    },

    /** Whether a steering call (run in workflow code) came from a model answer in this run. */
    madeByModel: async ({ call, firstRunId }: MadeByModelInput): Promise<boolean> =>
      seals.verify(call, { workflowId: caller()!.workflowId, firstRunId }),
  };
}
