/**
 * Approvals from outside: the open requests of a tree, read from its root, and a decision sent to the run that waits
 * (found from the root's listing, which the runs below it report up).
 */
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { DecideApprovalInput, type ApprovalRequest, type DecideApprovalResult } from '../contract/approvals.js';
import { approvalsQuery, decideApprovalUpdate } from '../contract/messages.js';
import { InputError, UpdateRejectedError } from '../contract/errors.js';
import { approvalProof } from '../ops/approval-proof.js';
import { failureMessage } from '../rules/failure-message.js';
import { describeIssues } from '../rules/zod-issues.js';

/** How a decision is sent. */
export interface DecideOptions {
  /** Why, in the decider's words: the model reads it with a denial. */
  reason?: string;
  /** Who decides: one of `approvals.approvers` when the config lists them. */
  approver?: string;
  /** The decision's proof, made by the approver's key (`approvalProof`); or give `key` and it is made here. */
  proof?: string;
  /** The approver's key, to make the proof with here; it is never sent. */
  key?: string;
}

/**
 * The open requests of the run `rootId` and of every run below it, oldest first per run, each with its arguments
 * whole: a request a child reported up with its arguments cut is read whole from the run that waits. One that run no
 * longer lists (decided meanwhile) is left as reported; one it cannot be asked about keeps its cut arguments, which
 * `argumentsChars` shows.
 */
export async function openApprovals(temporal: Client, rootId: string): Promise<ApprovalRequest[]> {
  const listed = await temporal.workflow.getHandle(rootId).query(approvalsQuery);
  const cutRuns = new Set(listed.filter((r) => r.arguments.length < r.argumentsChars).map((r) => r.run));
  const whole = new Map<string, ApprovalRequest>();
  await Promise.all(
    [...cutRuns].map(async (run) => {
      const own = await temporal.workflow
        .getHandle(run)
        .query(approvalsQuery)
        .catch(() => []);
      for (const r of own) if (r.run === run) whole.set(`${run} ${r.requestId} ${r.digest}`, r);
    }),
  );
  return listed.map((r) => {
    const found = whole.get(`${r.run} ${r.requestId} ${r.digest}`);
    return found ? { ...r, arguments: found.arguments } : r;
  });
}

/**
 * Decides request `requestId`, given the run that waits or any run above it (the root, say): the request is looked
 * up in that run's listing and the decision sent where it waits, whose validator refuses an unknown, closed or
 * expired request and a malformed decision.
 */
export async function decideApproval(
  temporal: Client,
  runId: string,
  requestId: string,
  decision: 'approve' | 'deny',
  { key, ...options }: DecideOptions = {},
): Promise<DecideApprovalResult> {
  const listed = (await openApprovals(temporal, runId)).filter((r) => r.requestId === requestId);
  if (listed.length > 1) {
    throw new InputError('decideApproval', [
      `requestId: ${requestId} is open in ${listed.length} runs below ${runId} (${listed.map((r) => r.run).join(', ')}); give the run that waits`,
    ]);
  }
  const target = listed[0]?.run ?? runId;
  let proof = options.proof;
  if (key !== undefined && proof === undefined) {
    if (!options.approver)
      throw new InputError('decideApproval', ['approver: a key makes a proof only for a named approver']);
    if (!listed[0]) throw new InputError('decideApproval', [`requestId: no open request ${requestId} under ${runId}`]);
    const { firstRunId, digest } = listed[0];
    proof = approvalProof(key, { runId: target, firstRunId, requestId, decision, digest });
  }
  const parsed = DecideApprovalInput.safeParse({ requestId, decision, ...options, ...(proof && { proof }) });
  if (!parsed.success) throw new InputError('decideApproval payload', describeIssues(parsed.error));
  try {
    return await temporal.workflow.getHandle(target).executeUpdate(decideApprovalUpdate, { args: [parsed.data] });
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError) {
      throw new UpdateRejectedError(failureMessage(err.cause ?? err), { cause: err });
    }
    // A closed run refuses updates as not found (with no message), or as completed.
    if (err instanceof WorkflowNotFoundError || (err instanceof Error && /already completed/i.test(err.message))) {
      throw new UpdateRejectedError(
        `decideApproval: run ${target} has ended or does not exist; nothing there waits for a decision`,
        { cause: err },
      );
    }
    throw err;
  }
}
