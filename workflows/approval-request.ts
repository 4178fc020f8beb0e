/**
 * One of a run's own approval requests, as a state machine: it opens, is being decided while a proof is checked,
 * and closes once (approved, denied, expired or cancelled). Only its own methods move it, each from the states it may
 * leave, so a decision that arrives after the deadline decided is refused rather than written over it.
 * Deterministic code only.
 */
import type { ApprovalRequest } from '../src/contract/approvals.js';

/** Where a request stands. */
export type RequestStatus = 'open' | 'deciding' | 'approved' | 'denied' | 'expired' | 'cancelled';

/** How a request closed, and by whom: an approver's id, `client`, or `timeout`. */
type Closing =
  | { status: 'approved'; by: string; reason?: string; proof?: { approver: string; proof: string } }
  | { status: 'denied'; by: string; reason?: string }
  | { status: 'expired' }
  | { status: 'cancelled' };

type State = { status: 'open' } | { status: 'deciding' } | Closing;

export class OwnRequest {
  #state: State = { status: 'open' };
  /** The policy's answer, when the deadline passed while a decision was being checked. */
  #deadlineAnswer: 'approve' | 'deny' | undefined;

  constructor(readonly request: ApprovalRequest) {}

  get status(): RequestStatus {
    return this.#state.status;
  }

  /** Open, or being decided: a call of the run waits for it. */
  get pending(): boolean {
    return this.#state.status === 'open' || this.#state.status === 'deciding';
  }

  /** The approver and proof of an approval, which the tool's worker checks again. */
  get proof(): { approver: string; proof: string } | undefined {
    return this.#state.status === 'approved' ? this.#state.proof : undefined;
  }

  /** A decision was taken up: a second one meanwhile is refused. */
  startDeciding(): void {
    this.#move(['open'], { status: 'deciding' });
  }

  /**
   * The decision being taken failed its check: the request is open again, unless it closed meanwhile; when its
   * deadline passed while the decision was checked, the deadline decides now.
   */
  reopen(): void {
    if (this.#state.status !== 'deciding') return;
    this.#state = this.#deadlineAnswer ? onDeadline(this.#deadlineAnswer) : { status: 'open' };
  }

  /** The decision being taken holds. */
  decide(closing: Extract<Closing, { status: 'approved' | 'denied' }>): void {
    this.#move(['deciding'], closing);
  }

  /**
   * The deadline passed: an open request takes the policy's answer (`onTimeout`); one being decided waits for that
   * decision, and takes the policy's answer only if the decision fails its check.
   */
  deadlinePassed(onTimeout: 'approve' | 'deny'): void {
    if (this.#state.status === 'open') this.#state = onDeadline(onTimeout);
    else if (this.#state.status === 'deciding') this.#deadlineAnswer = onTimeout;
  }

  /** The call stopped waiting (its run was cancelled or ended): a request still pending closes. */
  cancel(): void {
    if (this.pending) this.#state = { status: 'cancelled' };
  }

  /** Why a decision cannot be taken now, or `undefined` while it is open. */
  closedWords(): string | undefined {
    const state = this.#state;
    const id = this.request.requestId;
    switch (state.status) {
      case 'open':
        return undefined;
      case 'deciding':
        return `request ${id} is being decided already`;
      case 'approved':
        return `request ${id} is closed: approved by ${state.by}`;
      case 'denied':
        return `request ${id} is closed: denied by ${state.by}`;
      case 'expired':
        return `request ${id} is closed: expired with no decision (taken as approvals.onTimeout)`;
      case 'cancelled':
        return `request ${id} is closed: its run stopped waiting (cancelled)`;
    }
  }

  /** What the model reads when the call was not approved. */
  deniedWords(tool: string): string {
    const state = this.#state;
    const { requestId, deadline } = this.request;
    if (state.status === 'expired') {
      return `not run: no decision on approval request ${requestId} for ${tool} arrived by ${deadline}; it expired and was denied (approvals.onTimeout)`;
    }
    const by = state.status === 'denied' ? state.by : 'nobody';
    const reason = state.status === 'denied' && state.reason ? `: ${state.reason}` : ' (no reason given)';
    return `not run: ${by} denied approval request ${requestId} for ${tool}${reason}. Do not try the same call again unless asked to.`;
  }

  #move(from: readonly RequestStatus[], to: State): void {
    if (!from.includes(this.#state.status)) {
      throw new Error(`approval request ${this.request.requestId} is ${this.#state.status}, not ${from.join(' or ')}`);
    }
    this.#state = to;
  }
}

/** How a request closes when its deadline decides it. */
const onDeadline = (onTimeout: 'approve' | 'deny'): Closing =>
  onTimeout === 'approve' ? { status: 'approved', by: 'timeout' } : { status: 'expired' };
