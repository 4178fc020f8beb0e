/**
 * One run's state in one object: its session, inbox, usage, limits, reservations, delegations ledger and status,
 * with what it shows to the `state` query (`toQuery`) and carries across continue-as-new (`toResume` /
 * `fromResume`). Deterministic code only.
 */
import { RunArtifacts } from './artifacts.js';
import type { Priority } from '@temporalio/common';
import { upsertMemo, upsertSearchAttributes, setCurrentDetails } from '@temporalio/workflow';
import type { ResolveRunResult } from '../src/contract/activities.js';
import type {
  ChildOrigin,
  LedgerEntry,
  LiveStatus,
  ParsedRunInput,
  ResolvedLimits,
  RunResult,
  RunResume,
  RunStatus,
} from '../src/contract/run.js';
import { DEPUTY_STATUS, listedStatus } from '../src/contract/search-attributes.js';
import { toChatMessages } from '../src/contract/dialogue.js';
import type { SessionEvent } from '../src/contract/session.js';
import { overLimits } from '../src/rules/budget.js';
import { runPriority } from '../src/rules/fleet.js';
import { openingEvents } from '../src/rules/run-start.js';
import { microToUsd } from '../src/rules/usage.js';
import { countRunEnded } from './metrics.js';
import { WorkerDialogue } from './worker-dialogue.js';
import { RunWaits } from './run-waits.js';
import { ApprovalBook } from './approval-book.js';

export type { ParsedRunInput };
import type { DetachedChild, InboxItem } from './run-waits.js';

const FINAL: readonly LiveStatus[] = ['completed', 'failed', 'cancelled', 'limit_reached'];

const isLive = (entry: LedgerEntry) => entry.status === 'reserved' || entry.status === 'running';

/** The time now, as session events record it. */
export const now = () => new Date(Date.now()).toISOString();

/** The state of one `agentRun`. */
export class AgentRunState extends RunWaits {
  readonly rootId: string;
  readonly depth: number;
  readonly origin: ChildOrigin | undefined;
  readonly tenant: string | undefined;
  /** Its place in the queues the fleet shares, carried by each of its calls and children's starts. */
  readonly priority: Priority;
  #events: SessionEvent[] = [];
  readonly #inbox: InboxItem[] = [];
  /** Per child: `appended` when its context was last sent. */
  readonly #snapshotMarks = new Map<string, number>();
  /** Events appended over the run's life (compaction does not lower it). */
  #appended = 0;
  /**
   * When each event of the dialogue was appended (the value of `appended` after it): what a child saw is what came
   * before its mark, wherever a compaction has since moved the event.
   */
  readonly #appendedAt = new WeakMap<SessionEvent, number>();
  #segment = 1;
  #status: LiveStatus = 'starting';
  /** Children dispatched in the background, by workflow id; a segment carries none (no live child at a CAN). */
  readonly #detached = new Map<string, DetachedChild>();
  #endRequested = false;
  /** Messages from other runs accepted so far (`<from> <id>`): a repeat of one is refused. */
  readonly seenMessages = new Set<string>();
  readonly artifacts: RunArtifacts;
  /** Questions asked in this segment (their ids are `q<segment>.<n>`). */
  #questionsAsked = 0;
  /**
   * A task run that cannot delegate only ever waits on activities, so its deadline bounds each of
   * them (schedule-to-close) instead of a timer racing a cancellation scope.
   */
  #deadlineOnActivities = false;
  /** The grant of this run's tree, made by a worker for its root: every activity that acts for the run asks for it. */
  grant = '';
  /** What the worker of the run's last model call holds of its dialogue. */
  readonly workerDialogue = new WorkerDialogue();
  /** Its calls' approval requests, and the open ones its children report of their subtrees. */
  readonly approvals = new ApprovalBook();
  /** What the delegations of the answer being run reserved so far, in micro-USD: the threshold holds for them together. */
  reservedInAnswer = 0;

  constructor(
    readonly input: ParsedRunInput,
    readonly sessionId: string,
  ) {
    super();
    this.origin = input.origin;
    this.rootId = input.origin?.rootId ?? sessionId;
    this.depth = input.origin?.depth ?? 0;
    this.tenant = input.tenant;
    this.priority = runPriority({
      mode: input.mode ?? 'task',
      depth: this.depth,
      tenant: this.tenant,
      rootId: this.rootId,
    });
    this.artifacts = new RunArtifacts(sessionId, input.origin?.artifacts, input.resume?.artifacts);
  }

  /** The session's events as the model reads them (a compaction replaces the oldest). */
  get events(): readonly SessionEvent[] {
    return this.#events;
  }
  /** Events appended over the run's life (compaction does not lower it). */
  get appended(): number {
    return this.#appended;
  }
  /** Which continue-as-new segment of the run this is, from 1. */
  get segment(): number {
    return this.#segment;
  }
  get status(): LiveStatus {
    return this.#status;
  }
  /** A person (or its caller) asked a conversation to end. */
  get endRequested(): boolean {
    return this.#endRequested;
  }
  /**
   * A task run that cannot delegate only ever waits on activities, so its deadline bounds each of them
   * (schedule-to-close) instead of a timer racing a cancellation scope.
   */
  get deadlineOnActivities(): boolean {
    return this.#deadlineOnActivities;
  }

  requestEnd(): void {
    this.#endRequested = true;
  }

  /** The run is running: its start's upsert says so (the caller writes the attributes with it). */
  markRunning(): void {
    this.#status = 'running';
  }

  boundDeadlineByActivities(bound: boolean): void {
    this.#deadlineOnActivities = bound;
  }

  /** The id of this run's next question to its parent: unique over the run's life (`q<segment>.<n>`). */
  nextQuestionId(): string {
    return `q${this.#segment}.${(this.#questionsAsked += 1)}`;
  }

  /** A `wait` call is waiting for children: the live status says so until `endWait`. */
  beginWait(): void {
    this.#waitingCalls += 1;
  }

  endWait(): void {
    this.#waitingCalls -= 1;
  }

  /** What waits for the run's next turn: messages, interjections, children's results and questions. */
  get inbox(): readonly InboxItem[] {
    return this.#inbox;
  }

  /** A message for the run's next turn. */
  receive(item: InboxItem): void {
    this.#inbox.push(item);
  }

  /** Everything waiting, taken for the turn that reads it. */
  takeInbox(): InboxItem[] {
    return this.#inbox.splice(0);
  }

  /** A waiting item taken back before any turn read it (a background child's result a `wait` returned instead). */
  withdraw(item: InboxItem): void {
    const at = this.#inbox.indexOf(item);
    if (at >= 0) this.#inbox.splice(at, 1);
  }

  /** Where each child's view of this run's session ends (`appended` when its context was last sent). */
  get snapshotMarks(): ReadonlyMap<string, number> {
    return this.#snapshotMarks;
  }

  /** A child has been sent this run's session up to `mark`. */
  markSnapshot(childWorkflowId: string, mark: number): void {
    this.#snapshotMarks.set(childWorkflowId, mark);
  }

  /** Children dispatched in the background, by workflow id. */
  get detached(): ReadonlyMap<string, DetachedChild> {
    return this.#detached;
  }

  /** A child that runs in the background while the run goes on. */
  dispatch(childWorkflowId: string, child: DetachedChild): void {
    this.#detached.set(childWorkflowId, child);
  }

  /** A new segment of a run that continued as new: everything goes on as it was. */
  static fromResume(input: ParsedRunInput, sessionId: string, resume: RunResume): AgentRunState {
    const run = new AgentRunState(input, sessionId);
    run.resumeAccount(resume.composition, resume.limits, resume.usage);
    run.#events.push(...resume.session);
    run.resumeLedger(resume.delegations);
    run.#inbox.push(
      ...resume.inbox.map((item): InboxItem => {
        if (item.subagent) return { from: item.from, content: item.content, subagent: item.subagent };
        if (item.question) return { from: item.from, content: item.content, question: item.question };
        if (item.approval) return { from: item.from, content: item.content, approval: item.approval };
        return item.interjection
          ? { from: item.from, content: item.content, interjection: true }
          : { from: 'user', content: item.content };
      }),
    );
    run.#appended = resume.appended;
    // A segment starts with no live child, so no mark of this one is older than the events it carries; counted back
    // from the end, as they were appended.
    run.events.forEach((event, i) => run.#appendedAt.set(event, run.appended - (run.events.length - 1 - i)));
    for (const [child, mark] of Object.entries(resume.snapshotMarks)) run.#snapshotMarks.set(child, mark);
    run.#segment = resume.segment;
    for (const key of resume.seenMessages ?? []) run.seenMessages.add(key);
    // What the previous segment's last call sent is the start of this session's dialogue (checked when carried).
    if (resume.context) run.workerDialogue.resume(resume.context, toChatMessages(run.events, run.persona));
    return run;
  }

  /** What the next segment starts from. */
  toResume(): RunResume {
    const context = this.workerDialogue.carry(toChatMessages(this.events, this.persona));
    return {
      segment: this.segment + 1,
      session: this.#events,
      usage: this.usage,
      limits: this.limits,
      composition: this.composition,
      delegations: [...this.ledger],
      inbox: this.#inbox.map((item) => ({ ...item, interjection: 'interjection' in item })),
      appended: this.appended,
      snapshotMarks: Object.fromEntries(this.#snapshotMarks),
      ...(this.seenMessages.size > 0 && { seenMessages: [...this.seenMessages] }),
      ...this.artifacts.toResume(),
      ...(context && { context }),
    };
  }

  /** Starts the session of a new run: header, selection and descriptor, seeds, background, the task. */
  begin(composition: ResolveRunResult, limits: ResolvedLimits): void {
    this.resolveAccount(composition, limits);
    const opening = openingEvents(this.input, { sessionId: this.sessionId, depth: this.depth, composition }, now());
    for (const event of opening) this.append(event);
  }

  append(event: SessionEvent): void {
    this.#appended += 1;
    this.#appendedAt.set(event, this.appended);
    this.#events.push(event);
  }

  /**
   * The dialogue once a compaction has replaced `replaced` by its summary: the summary counts as appended with the
   * newest event it took in, so a child that had not seen that event is sent the summary.
   */
  compacted(events: SessionEvent[], replaced: readonly SessionEvent[]): void {
    const newest = Math.max(0, ...replaced.map((event) => this.#appendedAt.get(event) ?? 0));
    for (const event of events) if (!this.#appendedAt.has(event)) this.#appendedAt.set(event, newest);
    this.#events = events;
  }

  /** True when `event` was appended after `mark` (a value of `appended`). */
  appendedAfter(event: SessionEvent, mark: number): boolean {
    return (this.#appendedAt.get(event) ?? 0) > mark;
  }

  /**
   * The live status is the `state` query's and the current details', which cost the server no write. Visibility is
   * written only where a listing needs it: when the run starts or stops waiting on someone outside it (a person lists
   * those), with the cost when it moved: one upsert each. The end is written by `end`.
   */
  setStatus(next: LiveStatus): void {
    const shown = listedStatus(this.#status);
    this.#status = next;
    if (listedStatus(next) !== shown) {
      upsertSearchAttributes([{ key: DEPUTY_STATUS, value: listedStatus(next) }, ...this.costShown()]);
    }
    if (next !== 'waiting_for_children') return;
    const waited = this.ledger.filter((entry) => isLive(entry) && !entry.background);
    if (waited.length > 0) setCurrentDetails(`waiting for ${waited.map((entry) => entry.childWorkflowId).join(', ')}`);
  }

  isEnded(): boolean {
    return FINAL.includes(this.status);
  }

  /** True while a child is reserved or running. */
  hasLiveChildren(): boolean {
    return this.ledger.some(isLive);
  }

  /** True while a child this run waits for (not one in the background) is reserved or running. */
  hasLiveWaitedChildren(): boolean {
    return this.ledger.some((entry) => isLive(entry) && !entry.background);
  }

  /** `wait` calls of the current turn still waiting for background children. */
  #waitingCalls = 0;

  /**
   * The live status from what the run waits on now, never from the tool that just finished: a decision on one of its
   * calls, its own question to its parent, a child a tool call of this turn waits for, else running.
   */
  liveStatus(): 'waiting_for_approval' | 'waiting_for_answer' | 'waiting_for_children' | 'running' {
    if (this.approvals.waiting()) return 'waiting_for_approval';
    if (this.asksParent()) return 'waiting_for_answer';
    if (this.#waitingCalls > 0 || this.hasLiveWaitedChildren()) return 'waiting_for_children';
    return 'running';
  }

  /** True while a child's question to this run waits for an answer. */
  hasOpenQuestions(): boolean {
    return this.ledger.some((entry) => entry.questions?.some((q) => q.status === 'open'));
  }

  /** True while a child dispatched in the background has not ended. */
  hasLiveDetached(): boolean {
    for (const child of this.detached.values()) if (child.outcome === undefined) return true;
    return false;
  }

  /** The run's result with its usage. */
  result(outcome: Omit<RunResult, 'usage' | 'sessionId'>): RunResult {
    countRunEnded(this, outcome.status, outcome.limit);
    return { ...outcome, usage: this.usage, sessionId: this.sessionId, ...this.artifacts.listed() };
  }

  /**
   * Records the end: `run/ended`, status, cost, the details line, and the usage memo (readable without a worker) when
   * the run's result will not carry its usage: a run that returns a `RunResult` leaves it there.
   */
  end(final: RunStatus, output: string | null): void {
    this.append({ type: 'run/ended', at: now(), status: final, output });
    this.#status = final;
    upsertSearchAttributes([{ key: DEPUTY_STATUS, value: final }, this.costAttribute()]);
    if (final === 'failed' || final === 'cancelled') upsertMemo({ deputyUsage: this.usage });
    // Spend past the limits (an endpoint billed past the cap) is shown, never hidden: readable without a worker.
    const overrun = this.resolvedLimits && overLimits(this.usage, this.resolvedLimits);
    if (overrun) upsertMemo({ deputyOverrun: overrun });
    setCurrentDetails(
      `${final}; ${this.usage.modelCalls} model calls, $${microToUsd(this.usage.costMicroUsd).toFixed(6)}`,
    );
  }
}
