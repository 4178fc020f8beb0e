/**
 * The worker's side of approvals: a request records a digest of exactly the call a model made in this run, and a
 * decision's proof is checked with the approvers' keys, which only workers hold.
 */
import { ApplicationFailure } from '@temporalio/common';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type {
  ApproverKey,
  CheckApprovalInput,
  CheckApprovalResult,
  RequestApprovalInput,
  RequestApprovalResult,
} from '../src/contract/approvals.js';
import type { ToolCall } from '../src/contract/session.js';
import type { ConfigStore } from '../src/config/store.js';
import { FAILURE } from '../src/contract/failures.js';
import { approvalDigest, proofMatches } from '../src/ops/approval-proof.js';
import { previewOf } from '../src/rules/approvals.js';
import { approvalCheckSpan, approvalRequestSpan } from './telemetry.js';
import { callerChain, knownCallerChain, type Chain } from './caller-chain.js';

export function createApprovalActivities(config: ConfigStore, madeByModel: (call: ToolCall) => boolean) {
  /** What a request records of a call a model made in this run: its digest and preview. */
  const recordRequest = (call: RequestApprovalInput['call']): RequestApprovalResult => {
    if (!madeByModel(call)) {
      throw ApplicationFailure.create({
        type: FAILURE.ToolUnknown,
        message: `no approval asked: this call of "${call.name}" carries no proof that a model made it in this run`,
        nonRetryable: true,
      });
    }
    return { digest: approvalDigest(call), preview: previewOf(call.arguments) };
  };
  return {
    /** Records what a request is for: refused for a call no model made in this run (an answer completed by hand). */
    async requestApproval({ call, requestId }: RequestApprovalInput): Promise<RequestApprovalResult> {
      return approvalRequestSpan(call.name, requestId, async () => recordRequest(call));
    },
    /** Whether a decision carries a proof by the key of the approver it names, over this run, request and call. */
    async checkApproval(input: CheckApprovalInput): Promise<CheckApprovalResult> {
      // The run as Temporal reports it, never as the input says: its workflow id and its chain's first run.
      const chain = knownCallerChain() ?? (await callerChain());
      if (!chain) return { ok: false, reason: 'checkApproval checks decisions only for a run that waits' };
      return approvalCheckSpan(input.requestId, input.decision, async () =>
        checkProof(config.current.approvals?.approvers, chain, input),
      );
    },
  };
}

/** A decision's proof checked against the configured approvers' keys, bound to the run that waits. */
export function checkProof(
  approvers: readonly { id: string; key: ApproverKey }[] | undefined,
  { workflowId: runId, firstRunId }: Chain,
  { requestId, decision, digest, approver, proof }: Omit<CheckApprovalInput, 'grant' | 'runId'>,
): CheckApprovalResult {
  if (!approvers) return { ok: true };
  if (approver === undefined || proof === undefined)
    return { ok: false, reason: 'a decision needs approver and proof' };
  const found = approvers.find((a) => a.id === approver);
  if (!found) return { ok: false, reason: `approver "${approver}" is not configured on this worker` };
  const key = keyOf(found);
  if (!key.ok) return key;
  if (!proofMatches(key.key, { runId, firstRunId, requestId, decision, digest }, proof)) {
    return {
      ok: false,
      reason: `the proof is not ${approver}'s for ${decision} of request ${requestId} of run ${runId} (first run ${firstRunId}) with these arguments`,
    };
  }
  return { ok: true };
}

/** The approver's key as the worker reads it now, or why it cannot (never the key itself). */
function keyOf({
  id,
  key,
}: {
  id: string;
  key: ApproverKey;
}): { ok: true; key: string } | { ok: false; reason: string } {
  let value: string | undefined;
  let where = 'the config';
  if (typeof key === 'string') value = key;
  else if ('env' in key) {
    where = key.env;
    value = process.env[key.env];
  } else {
    where = key.file;
    try {
      value = readFileSync(resolve(key.file), 'utf8').trim();
    } catch {
      value = undefined;
    }
  }
  if (value === undefined || value.length < 32) {
    return {
      ok: false,
      reason: `approver "${id}"'s key (${where}) is missing or shorter than 32 characters on this worker; the operator must set it`,
    };
  }
  return { ok: true, key: value };
}
