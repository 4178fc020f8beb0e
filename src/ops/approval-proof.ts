/**
 * The digest an approval request records of a call, and the proof an approver's decision carries: an HMAC-SHA256 by
 * the approver's key over what it decides, so a decision is for one run (its workflow id and the first run of its
 * chain), one request, one answer and one set of
 * arguments, and nothing else. Node only (the worker and a decider's own code).
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/** What a proof covers. */
export interface ApprovalDecisionText {
  /** Workflow id of the run that waits. */
  runId: string;
  /** The first run of its chain, as the request lists it: a proof for one run of a workflow id is for no other. */
  firstRunId: string;
  requestId: string;
  decision: 'approve' | 'deny';
  /** The request's `digest` (of the call's tool and arguments). */
  digest: string;
}

/** SHA-256, hex, of a call's tool name and its arguments exactly as the model wrote them. */
export function approvalDigest(call: { name: string; arguments: string }): string {
  return createHash('sha256').update(`${call.name}\n${call.arguments}`).digest('hex');
}

/** The proof of a decision, by an approver's key: what `decideApproval` carries as `proof`. */
export function approvalProof(
  key: string,
  { runId, firstRunId, requestId, decision, digest }: ApprovalDecisionText,
): string {
  return createHmac('sha256', key)
    .update(['deputy-approval-v2', runId, firstRunId, requestId, decision, digest].join('\n'))
    .digest('hex');
}

/** Whether `proof` is that key's proof of the decision (compared in constant time). */
export function proofMatches(key: string, decision: ApprovalDecisionText, proof: string): boolean {
  const expected = Buffer.from(approvalProof(key, decision), 'hex');
  const given = Buffer.from(proof, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}
