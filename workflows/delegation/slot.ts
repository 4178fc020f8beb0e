/**
 * A parent's side of tenant admission: before a child starts, ask the tenant's admission workflow for a slot
 * and wait for it (no worker slot is held while waiting: the parent's workflow is suspended), at most until the
 * child's own deadline; give the slot back once the child has ended, or when the parent stops waiting. Deterministic.
 */
import { CancellationScope, condition, isCancellation, proxyActivities, setCurrentDetails } from '@temporalio/workflow';
import type { DeputyActivities } from '../../activities/index.js';
import { admissionReleaseSignal } from '../../src/contract/messages.js';
import { admissionWorkflowId } from '../../src/rules/children.js';
import type { DelegationSettings } from '../../src/contract/delegation.js';
import { LOOKUP_OPTIONS } from '../activity-options.js';
import { sendSigned } from '../signed-messages.js';
import type { Run } from '../run/run.js';
import type { Child } from './child.js';

const { requestAdmission } = proxyActivities<DeputyActivities>(LOOKUP_OPTIONS);

type Admission = NonNullable<DelegationSettings['admission']>;

/** Waits for a slot; `ok: false` with the reason when none came before `deadlineMs` (the slot request is withdrawn). */
export async function admit(
  run: Run,
  child: Child,
  admission: Admission,
  deadlineMs: number | null,
): Promise<{ ok: true } | { ok: false; reason: string }> {
  const { tenant, maxLiveChildren: cap, sweepSeconds } = admission;
  const { id: childWorkflowId, taskName } = child;
  await requestAdmission.executeWithOptions({ summary: `requestAdmission ${tenant} ${taskName}` }, [
    { tenant, cap, sweepSeconds, childWorkflowId, grant: run.treeGrant },
  ]);
  setCurrentDetails(`waiting for one of tenant ${tenant}'s ${cap} live-child slots for ${taskName}`);
  try {
    const admitted = () => child.admitted;
    let inTime = true;
    if (deadlineMs === null) await condition(admitted);
    else inTime = await condition(admitted, Math.max(1, deadlineMs - Date.now()));
    if (inTime) return { ok: true };
  } catch (err) {
    if (isCancellation(err)) await release(run, tenant, childWorkflowId);
    throw err;
  }
  await release(run, tenant, childWorkflowId);
  return {
    ok: false,
    reason: `tenant ${tenant} had all ${cap} of its live-child slots taken until this child's deadline; it was not started`,
  };
}

/** Gives a slot (or a place in the queue) back; sent even while the parent is being cancelled. */
export function release(run: Run, tenant: string, childWorkflowId: string): Promise<void> {
  return CancellationScope.nonCancellable(
    () =>
      sendSigned(admissionReleaseSignal, {
        to: admissionWorkflowId(tenant),
        id: `release:${childWorkflowId}`,
        body: { childWorkflowId },
        grant: run.treeGrant,
      }).catch(() => undefined), // no admission workflow: nothing is held
  );
}
