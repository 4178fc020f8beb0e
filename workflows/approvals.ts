/**
 * Approvals in a run: a call that needs a decision from outside the models is recorded as a request, not run; the
 * run waits for `decideApproval` (or the request's deadline) on a timer that costs nothing while it waits; its
 * requests and those below it climb to the root, and its parent's model hears of them as untrusted news.
 * Deterministic code only: keys and digests stay in activities.
 */
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type { DeputyActivities } from '../activities/index.js';
import type { ApprovedCall, DecideApprovalInput, DecideApprovalResult } from '../src/contract/approvals.js';
import type { RunToolResult } from '../src/contract/activities.js';
import type { ToolCall } from '../src/contract/session.js';
import { FAILURE } from '../src/contract/failures.js';
import { approvalsQuery, approvalsSignal, decideApprovalUpdate } from '../src/contract/messages.js';
import { CONTRACT } from '../src/contract/checks/contract-checks.js';
import { previewOf, renderApprovalNotice, waitWords } from '../src/rules/approvals.js';
import { bounded } from '../src/rules/children.js';
import { countApproval } from './metrics.js';
import { onSigned, sendSigned } from './signed-messages.js';
import type { OwnRequest } from './approval-book.js';
import type { Run } from './run/run.js';

const { requestApproval, checkApproval } = proxyActivities<DeputyActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 5 },
});

/** A call that may run (with what its worker checks of the approval), or the tool error the model reads instead. */
export type Gate = { ok: true; approval: ApprovedCall } | { ok: false; result: RunToolResult };

/**
 * Asks for a decision on `call` and waits for it: approve lets the call run once, with exactly these arguments; deny,
 * or no decision by the deadline (with `approvals.onTimeout: deny`), is a tool error naming who and why.
 */
export async function awaitApproval(run: Run, call: ToolCall, why: string): Promise<Gate> {
  const policy = run.composition.approvals!;
  const requestId = run.approvals.nextId(run.segment);
  const { deadlineMs } = run.account.limits;
  const requestedAt = Date.now();
  const waitMs = Math.max(1, Math.min(policy.timeoutSeconds * 1000, (deadlineMs ?? Infinity) - requestedAt));
  const deadline = new Date(requestedAt + waitMs).toISOString();
  const recorded = await requestApproval.executeWithOptions({ summary: `request approval of ${call.name}` }, [
    { grant: run.treeGrant, runId: run.workflowId, requestId, call, why, deadline },
  ]);
  // An activity's answer is checked like any outside text: a request carries a digest, or none is recorded.
  if (!/^[0-9a-f]{64}$/.test(recorded.digest)) {
    throw ApplicationFailure.create({
      type: FAILURE.ApprovalRefused,
      message: `requestApproval answered no digest for ${call.name}; nothing was asked and the call did not run`,
      nonRetryable: true,
    });
  }
  const own = run.approvals.open({
    requestId,
    run: run.workflowId,
    firstRunId: workflowInfo().firstExecutionRunId,
    path: '',
    tool: call.name,
    digest: recorded.digest,
    preview: previewOf(recorded.preview),
    // The person decides on exactly what runs: the arguments whole, as the answer recorded them.
    arguments: call.arguments,
    argumentsChars: call.arguments.length,
    why,
    requestedAt: new Date(requestedAt).toISOString(),
    deadline,
  });
  run.setStatus('waiting_for_approval');
  setCurrentDetails(
    `waiting for approval of ${call.name} (${requestId}) until ${own.request.deadline}: ${bounded(why, 120)}`,
  );
  await reportApprovals(run);
  try {
    await waitForDecision(own, requestId, call.name, Math.max(1, Date.parse(deadline) - Date.now()), policy.onTimeout);
  } finally {
    own.cancel();
    countApproval(run, decisionLabel(own), Date.now() - Date.parse(own.request.requestedAt));
    await reportApprovals(run);
    run.setStatus(run.liveStatus());
  }
  if (own.status === 'approved') {
    return {
      ok: true,
      approval: {
        requestId,
        digest: own.request.digest,
        ...(own.proof && { approver: own.proof.approver, proof: own.proof.proof }),
      },
    };
  }
  return { ok: false, result: { content: own.deniedWords(call.name), isError: true } };
}

/**
 * Waits until a decision closes the request, or its deadline does (the request takes `onTimeout`; a decision being
 * checked when the deadline passes is waited for, and the deadline decides if it fails its check).
 */
async function waitForDecision(
  own: OwnRequest,
  requestId: string,
  tool: string,
  waitMs: number,
  onTimeout: 'approve' | 'deny',
): Promise<void> {
  const timer = new CancellationScope();
  const ticking = timer.run(async () => {
    try {
      await sleep(waitMs, { summary: `approval ${requestId} of ${tool}, ${waitWords(waitMs)}` });
      own.deadlinePassed(onTimeout);
    } catch (err) {
      if (!isCancellation(err)) throw err;
    }
  });
  try {
    await condition(() => !own.pending);
  } finally {
    timer.cancel();
    await ticking;
  }
}

/** How a closed request is counted. */
function decisionLabel(own: OwnRequest): string {
  if (own.status === 'approved') return 'approve';
  if (own.status === 'denied') return 'deny';
  return own.status;
}

/**
 * Tells the run's parent the open requests of its subtree when they changed. Best effort, and never cancelled: a
 * parent that has ended drops the subtree itself (its own parent forgets it when it settles the child).
 */
export async function reportApprovals(run: Run): Promise<void> {
  const { origin } = run;
  if (!origin) return;
  const body = run.approvals.report();
  if (!body) return;
  try {
    await CancellationScope.nonCancellable(() =>
      sendSigned(approvalsSignal, { to: origin.parentId, id: `approvals:${body.version}`, body, grant: run.treeGrant }),
    );
  } catch {
    // The parent has ended (or cannot be signalled): nothing to tell.
  }
}

/** A child ended: its subtree's requests leave this run's book, and its parent hears of it. */
export async function forgetChildApprovals(run: Run, childWorkflowId: string): Promise<void> {
  if (run.approvals.childEnded(childWorkflowId)) await reportApprovals(run);
}

/** Registers the `approvals` query, the `decideApproval` update and children's reports of their requests. */
export function registerApprovalHandlers(run: Run): void {
  setHandler(approvalsQuery, () => run.approvals.listed(run.workflowId));
  setHandler(decideApprovalUpdate, (decision) => decide(run, decision), {
    validator: (decision: DecideApprovalInput) => {
      if (run.isEnded()) throw new Error('decideApproval: the run has ended');
      CONTRACT.decideApproval.assert(decision, 'decideApproval payload');
      const refused = run.approvals.refusal(decision, Date.now(), run.resolvedComposition?.approvals?.approvers);
      if (refused) throw new Error(`decideApproval: ${refused}`);
    },
  });
  onSigned(approvalsSignal, CONTRACT.signedApprovals, run.seenMessages, (from, body) => {
    const child = run.children.byId(from);
    if (child?.entry.status !== 'running') return 'not from a running child of this run';
    const { taskName } = child;
    for (const request of run.approvals.receive(from, taskName, body)) {
      run.inbox.receive({
        type: 'approval',
        from,
        content: renderApprovalNotice(request),
        approval: { taskName, childWorkflowId: from, requestId: request.requestId, run: request.run },
      });
    }
    run.sends.track('report approvals', reportApprovals(run));
  });
}

/**
 * Takes a decision: marked at once, so a second one meanwhile is refused; with approvers configured, its proof is
 * checked by a worker first (keys never enter workflow code), and a proof that fails leaves the request open.
 */
async function decide(run: Run, decision: DecideApprovalInput): Promise<DecideApprovalResult> {
  const own = run.approvals.own(decision.requestId)!;
  own.startDeciding();
  const approvers = run.composition.approvals?.approvers;
  if (approvers) {
    const refused = await checkProof(run, own, decision);
    if (refused) {
      own.reopen();
      throw ApplicationFailure.create({ type: FAILURE.ApprovalRefused, message: refused, nonRetryable: true });
    }
    // The run stopped waiting while the proof was checked (cancelled, or the deadline decided): nothing to take.
    if (own.status !== 'deciding') {
      throw ApplicationFailure.create({
        type: FAILURE.ApprovalRefused,
        message: `decideApproval: request ${decision.requestId} closed while its proof was checked: ${own.status}`,
        nonRetryable: true,
      });
    }
  }
  // Without approvers configured a name is whatever the caller wrote: recorded, never taken as checked.
  const by = approvers ? decision.approver! : decision.approver ? `${decision.approver} (unverified)` : 'client';
  const reason = decision.reason === undefined ? {} : { reason: bounded(decision.reason, 2000) };
  if (decision.decision === 'deny') own.decide({ status: 'denied', by, ...reason });
  else {
    const proof = approvers && { proof: { approver: decision.approver!, proof: decision.proof! } };
    own.decide({ status: 'approved', by, ...reason, ...proof });
  }
  return { requestId: decision.requestId, decision: decision.decision, by };
}

/** Has a worker check the decision's proof (keys never enter workflow code); why it fails, or `undefined`. */
async function checkProof(run: Run, own: OwnRequest, decision: DecideApprovalInput): Promise<string | undefined> {
  try {
    const checked = await checkApproval.executeWithOptions({ summary: `check approval ${decision.requestId}` }, [
      {
        grant: run.treeGrant,
        runId: run.workflowId,
        requestId: decision.requestId,
        decision: decision.decision,
        digest: own.request.digest,
        approver: decision.approver,
        proof: decision.proof,
      },
    ]);
    return checked.ok ? undefined : `decideApproval: ${checked.reason}; the request stays open`;
  } catch (err) {
    own.reopen();
    throw err;
  }
}
