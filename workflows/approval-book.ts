/**
 * A run's approvals: the requests its own calls made, each a state machine, and the open requests its children last
 * reported of their subtrees. A request opens, is being decided while a proof is checked, and closes once (approved,
 * denied, expired or cancelled); only its own methods move it, each from the states it may leave, so a decision that
 * arrives after the deadline decided is refused rather than written over it. Deterministic code only.
 */
import type { ApprovalRequest, ApprovalsBody, DecideApprovalInput } from '../src/contract/approvals.js';
import { RELAYED_ARGUMENTS_CHARS } from '../src/rules/approvals.js';

/** Requests listed per run: past this, the oldest of a subtree are left out of a report. */
const MAX_REPORTED = 100;

export class ApprovalBook {
  readonly #own = new Map<string, OwnRequest>();
  /** Per child (workflow id): the version and open requests of its last report, paths relative to this run. */
  readonly #below = new Map<string, { version: number; requests: ApprovalRequest[] }>();
  /** Requests below this run its model has been told of (`<run> <requestId>`). */
  readonly #noticed = new Set<string>();
  #requested = 0;
  #reported = 0;
  #lastReport = '[]';

  /** The id of the run's next request: unique over the run's life (`a<segment>.<n>`). */
  nextId(segment: number): string {
    return `a${segment}.${(this.#requested += 1)}`;
  }

  open(request: ApprovalRequest): OwnRequest {
    const own = new OwnRequest(request);
    this.#own.set(request.requestId, own);
    return own;
  }

  own(requestId: string): OwnRequest | undefined {
    return this.#own.get(requestId);
  }

  /** True while a call of this run waits for its decision. */
  waiting(): boolean {
    for (const own of this.#own.values()) if (own.pending) return true;
    return false;
  }

  /** Why `decision` cannot be taken now, or `undefined`. */
  refusal(decision: DecideApprovalInput, nowMs: number, approvers: readonly string[] | undefined): string | undefined {
    const own = this.#own.get(decision.requestId);
    if (!own) {
      const below = this.below().find((r) => r.requestId === decision.requestId);
      if (below)
        return `request ${decision.requestId} waits in run ${below.run}, not this one: send the decision there`;
      const open = this.openRequests().map((r) => r.requestId);
      return `no request ${decision.requestId} in this run (open here: ${open.join(', ') || 'none'})`;
    }
    const closed = own.closedWords();
    if (closed) return closed;
    if (nowMs >= Date.parse(own.request.deadline)) {
      return `request ${decision.requestId} expired at ${own.request.deadline}`;
    }
    if (approvers) {
      if (decision.approver === undefined || decision.proof === undefined) {
        return 'this run takes decisions only with approver and proof (approvals.approvers is configured)';
      }
      if (!approvers.includes(decision.approver)) return `approver "${decision.approver}" is not configured`;
    }
    return undefined;
  }

  /** The run's own open requests, paths relative to it. */
  openRequests(): ApprovalRequest[] {
    return [...this.#own.values()].filter((own) => own.pending).map((own) => own.request);
  }

  /** The open requests children reported of their subtrees, paths relative to this run. */
  below(): ApprovalRequest[] {
    return [...this.#below.values()].flatMap((report) => report.requests);
  }

  /** Every open request of this run's subtree, with paths from `prefix` (the run's own place). */
  listed(prefix: string): ApprovalRequest[] {
    return [...this.openRequests(), ...this.below()].map((r) => ({
      ...r,
      path: r.path ? `${prefix}/${r.path}` : prefix,
    }));
  }

  /**
   * A child's report of its subtree: kept when newer than the last, with paths put under the child's task name. The
   * requests its model has not heard of yet are returned.
   */
  receive(childWorkflowId: string, taskName: string, { version, requests }: ApprovalsBody): ApprovalRequest[] {
    const last = this.#below.get(childWorkflowId);
    if (last && last.version >= version) return [];
    const placed = requests.map((r) => ({ ...r, path: r.path ? `${taskName}/${r.path}` : taskName }));
    this.#below.set(childWorkflowId, { version, requests: placed });
    const fresh = placed.filter((r) => !this.#noticed.has(`${r.run} ${r.requestId}`));
    for (const r of fresh) this.#noticed.add(`${r.run} ${r.requestId}`);
    return fresh;
  }

  /** Whether a child still reports `requestId` of run `runId` open. */
  isOpenBelow(runId: string, requestId: string): boolean {
    return this.below().some((r) => r.run === runId && r.requestId === requestId);
  }

  /** A child ended: nothing of its subtree waits any more. */
  childEnded(childWorkflowId: string): boolean {
    return this.#below.delete(childWorkflowId);
  }

  /** The report for this run's parent when its open requests changed since the last one, else `undefined`. */
  report(): ApprovalsBody | undefined {
    // Arguments travel up cut: the run that waits holds them whole, and the client reads them there.
    const requests = [...this.openRequests(), ...this.below()]
      .slice(-MAX_REPORTED)
      .map((r) => ({ ...r, arguments: r.arguments.slice(0, RELAYED_ARGUMENTS_CHARS) }));
    const text = JSON.stringify(requests);
    if (text === this.#lastReport) return undefined;
    this.#lastReport = text;
    return { version: (this.#reported += 1), requests };
  }
}

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
