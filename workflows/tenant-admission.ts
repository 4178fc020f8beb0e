/**
 * Tenant admission: one `tenantAdmission` workflow per tenant (id `deputy-admission-<tenant>`) holds the
 * tenant's live-child slots across all of its runs. Parents ask for a slot before starting a child and give it back
 * when the child has ended; slots are granted first come, first served, up to the cap. Durable: its state is its
 * history, so a worker crash loses no slot and grants none twice. A slot whose holder (or a waiter whose parent) has
 * closed without giving it back — a terminated parent — is reclaimed by a periodic sweep. It continues as new when
 * its history grows, and ends once idle. Deterministic code only.
 */
import {
  allHandlersFinished,
  condition,
  makeContinueAsNewFunc,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { DeputyActivities } from '../activities/index.js';
import {
  admissionAcquireSignal,
  admissionReleaseSignal,
  admissionStateQuery,
  admittedSignal,
} from '../src/contract/messages.js';
import { CONTRACT } from '../src/contract/checks/contract-checks.js';
import { LOOKUP_OPTIONS } from './activity-options.js';
import { onSigned, sendSigned } from './signed-messages.js';

// The cap is read by a regular activity, not a local one: a local activity's result is recorded only when its
// workflow task completes, and signals that arrived meanwhile were then replayed in another order than they ran
// (a worker killed mid-way failed the replay: "Timer machine does not handle this event").
const { closedRuns, admissionCap } = proxyActivities<DeputyActivities>(LOOKUP_OPTIONS);

/** Input of `tenantAdmission` (and what it carries across continue-as-new). */
export interface AdmissionInput {
  /** The tenant and cap its first asker knew: shown until a worker reads the configuration, never obeyed. */
  tenant: string;
  cap: number;
  /** How often holders and waiters are checked for runs that closed without releasing. */
  sweepSeconds: number;
  holders?: [child: string, parent: string][];
  waiting?: [child: string, parent: string][];
  /** Messages accepted so far (`<from> <id>`), so a repeat is refused after continue-as-new too. */
  seen?: string[];
}

const IDLE_END = '10 minutes';
const CONTINUE_AS_NEW_AFTER_EVENTS = 2000;

/** The admission workflow of one tenant. */
export async function tenantAdmission(input: AdmissionInput): Promise<void> {
  // Until a worker has read the configuration, no slot is granted: the input's cap is whoever started it's word.
  let cap = 0;
  let tenant = input.tenant;
  const holders = new Map(input.holders ?? []);
  const waiting = new Map(input.waiting ?? []);
  const seen = new Set(input.seen ?? []);
  let changed = false;
  onSigned(admissionAcquireSignal, CONTRACT.signedAdmissionAcquire, seen, (parentId, { childWorkflowId }) => {
    if (!holders.has(childWorkflowId)) waiting.set(childWorkflowId, parentId);
    changed = true;
  });
  onSigned(admissionReleaseSignal, CONTRACT.signedAdmissionRelease, seen, (from, { childWorkflowId }) => {
    const parent = holders.get(childWorkflowId) ?? waiting.get(childWorkflowId);
    if (parent === undefined) return 'no slot held or asked for that child';
    if (parent !== from) return 'only the parent that asked for a slot gives it back';
    holders.delete(childWorkflowId);
    waiting.delete(childWorkflowId);
    changed = true;
  });
  setHandler(admissionStateQuery, () => ({
    tenant,
    cap,
    holders: [...holders.keys()],
    waiting: [...waiting.keys()],
  }));
  for (;;) {
    // The cap is the configuration's, read by a worker before each pass for the tenant this workflow's id names:
    // neither the start input nor a message sets it.
    ({ tenant, cap } = await admissionCap());
    // Grant in arrival order while there is room; a parent that cannot be told has closed: its slot goes back.
    for (const [child, parent] of waiting) {
      if (holders.size >= cap) break;
      waiting.delete(child);
      holders.set(child, parent);
      await sendSigned(admittedSignal, {
        to: parent,
        id: `admitted:${child}`,
        body: { childWorkflowId: child },
        grant: undefined,
      }).catch(() => holders.delete(child));
    }
    setCurrentDetails(`${holders.size} of ${cap} live children, ${waiting.size} waiting`);
    // A newer version of Deputy deployed: the admission moves to it at once (it holds no call open), so the old
    // version's workers can drain.
    const moving = workflowInfo().targetWorkerDeploymentVersionChanged;
    if (moving || workflowInfo().historyLength > CONTINUE_AS_NEW_AFTER_EVENTS) {
      await condition(allHandlersFinished);
      await makeContinueAsNewFunc<typeof tenantAdmission>(moving ? { initialVersioningBehavior: 'AUTO_UPGRADE' } : {})({
        ...input,
        cap,
        holders: [...holders],
        waiting: [...waiting],
        seen: [...seen],
      });
    }
    changed = false;
    const busy = holders.size > 0 || waiting.size > 0;
    const woke = await condition(() => changed, busy ? `${input.sweepSeconds} seconds` : IDLE_END);
    if (woke) continue;
    if (!busy) {
      await condition(allHandlersFinished);
      if (!changed) return; // idle: the next acquire starts it again
      continue;
    }
    // The sweep: a slot whose child closed, or was never started by a parent that closed, is given back; so is the
    // place of a waiter whose parent closed.
    const ids = [...new Set([...holders.keys(), ...holders.values(), ...waiting.values()])];
    const found = await closedRuns({ workflowIds: ids });
    const closed = new Set(found.closed);
    const gone = (id: string) => closed.has(id) || found.missing.includes(id);
    for (const [child, parent] of holders) {
      if (closed.has(child) || (found.missing.includes(child) && gone(parent))) holders.delete(child);
    }
    for (const [child, parent] of waiting) if (gone(parent)) waiting.delete(child);
  }
}
