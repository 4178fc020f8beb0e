/**
 * One run, composed of plain parts: its session (events, appended, segment), its account, its inbox, its children,
 * its own questions to its parent and its approvals, with what it shows to the `state` query and what it carries
 * across continue-as-new (`toResume` / `fromResume`, the one place a segment is written and read).
 * Deterministic code only.
 */
import { RunArtifacts } from '../artifacts.js';
import { RunVersions } from './versions.js';
import type { Priority } from '@temporalio/common';
import { upsertMemo, upsertSearchAttributes, setCurrentDetails } from '@temporalio/workflow';
import type { ResolveRunResult } from '../../src/contract/activities.js';
import type { DelegationSettings } from '../../src/contract/delegation.js';
import type {
  ChildOrigin,
  LiveStatus,
  ParsedRunInput,
  ResolvedLimits,
  RunResult,
  RunResume,
  RunStatus,
} from '../../src/contract/run.js';
import { DEPUTY_STATUS, listedStatus } from '../../src/contract/search-attributes.js';
import { toChatMessages } from '../../src/contract/dialogue.js';
import type { SessionEvent } from '../../src/contract/session.js';
import { overLimits } from '../../src/rules/budget.js';
import { runPriority } from '../../src/rules/fleet.js';
import { ModelChain } from '../../src/rules/model-retry.js';
import { DEFAULT_PAYLOAD_LIMITS, type PayloadLimits } from '../../src/rules/payloads.js';
import { renderPersona } from '../../src/rules/persona.js';
import { openingEvents, type PlanningParent } from '../../src/rules/run-start.js';
import { microToUsd } from '../../src/rules/usage.js';
import { countRunEnded } from '../metrics.js';
import { WorkerDialogue } from '../worker-dialogue.js';
import { McpSessions } from '../mcp-sessions.js';
import { ApprovalBook } from '../approval-book.js';
import { RunAccount } from './account.js';
import { RunChildren } from './children.js';
import { Inbox } from './inbox.js';
import { ParentQuestions } from './questions.js';
import { PendingSends } from './sends.js';
import { RunSession } from './session.js';

export type { ParsedRunInput };

const FINAL: readonly LiveStatus[] = ['completed', 'failed', 'cancelled', 'limit_reached'];

/** The time now, as session events record it. */
export const now = () => new Date(Date.now()).toISOString();

/** The state of one `agentRun`. */
export class Run {
  readonly rootId: string;
  readonly depth: number;
  readonly origin: ChildOrigin | undefined;
  readonly tenant: string | undefined;
  /** Its place in the queues the fleet shares, carried by each of its calls and children's starts. */
  readonly priority: Priority;
  /** Its dialogue: what the model reads, and when each event was appended. */
  readonly session = new RunSession();
  /** What it may spend, spent, and holds for children and in-flight calls. */
  readonly account = new RunAccount(() => this.children.preparing());
  /** What waits for its next turn. */
  readonly inbox = new Inbox();
  /** Every child it booked. */
  readonly children = new RunChildren();
  /** Its own questions to its parent. */
  readonly questions = new ParentQuestions();
  /** Its calls' approval requests, and the open ones its children report of their subtrees. */
  readonly approvals = new ApprovalBook();
  /** What it sends without stopping for it: through before the run ends or continues as new. */
  readonly sends = new PendingSends();
  /** Messages from other runs accepted so far (`<from> <id>`): a repeat of one is refused. */
  readonly seenMessages = new Set<string>();
  readonly artifacts: RunArtifacts;
  /** What the worker of the run's last model call holds of its dialogue. */
  readonly dialogueCache = new WorkerDialogue();
  /** Its sessions with stateful MCP servers, each on the worker that holds it. */
  readonly mcpSessions = new McpSessions();
  /** The versions of its Worker Deployment it ran on. */
  versions = new RunVersions();
  /** The grant of this run's tree, made by a worker for its root: every activity that acts for the run asks for it. */
  treeGrant = '';
  /** What the delegations of the answer being run reserved so far, in micro-USD: the threshold holds for them together. */
  reservedInAnswer = 0;
  #composition: ResolveRunResult | undefined;
  #status: LiveStatus = 'starting';
  #endRequested = false;
  /** Questions asked in this segment (their ids are `q<segment>.<n>`). */
  #questionsAsked = 0;
  /** `wait` calls of the current turn still waiting for detached children. */
  #waitingCalls = 0;
  /**
   * A task run that cannot delegate only ever waits on activities, so its deadline bounds each of
   * them (schedule-to-close) instead of a timer racing a cancellation scope.
   */
  #deadlineOnActivities = false;

  constructor(
    readonly input: ParsedRunInput,
    /** This run's workflow id: its session's id. */
    readonly workflowId: string,
  ) {
    this.origin = input.origin;
    this.rootId = input.origin?.rootId ?? workflowId;
    this.depth = input.origin?.depth ?? 0;
    this.tenant = input.tenant;
    this.priority = runPriority({
      mode: input.mode ?? 'task',
      depth: this.depth,
      tenant: this.tenant,
      rootId: this.rootId,
    });
    this.artifacts = new RunArtifacts(workflowId, input.origin?.artifacts, input.resume?.artifacts);
  }

  /** The session's events as the model reads them (a compaction replaces the oldest). */
  get events(): readonly SessionEvent[] {
    return this.session.events;
  }
  /** Events appended over the run's life (compaction does not lower it). */
  get appended(): number {
    return this.session.appended;
  }
  append(event: SessionEvent): void {
    this.session.append(event);
  }

  /** The composition the run resolved; read only once the run has begun (or resumed). */
  get composition(): ResolveRunResult {
    if (!this.#composition) throw new Error('the run has not resolved its composition yet');
    return this.#composition;
  }
  /** The composition, or `undefined` before the run resolved it (a query or an update may come that early). */
  get resolvedComposition(): ResolveRunResult | undefined {
    return this.#composition;
  }
  /**
   * The delegation settings resolved at the start. A child that inherited a composition it may not delegate with
   * carries none, and is offered no steering tool, so nothing asks.
   */
  get delegationSettings(): DelegationSettings {
    const settings = this.composition.delegation;
    if (!settings) throw new Error('this run was given no delegation settings: it may not delegate');
    return settings;
  }
  /** The system prompt, rendered from the preset definition. */
  get persona(): string {
    return renderPersona(this.composition.presetDefinition);
  }
  /** Size budgets of what the run writes to history; a child that inherited the defaults carries none. */
  get payloads(): PayloadLimits {
    // Updates may arrive before the composition is resolved: the defaults hold until then.
    return this.#composition?.payloads ?? DEFAULT_PAYLOAD_LIMITS;
  }

  /** What planning a child reads of this run: its composition, depth, artifacts and account as they are now. */
  planningView(): PlanningParent {
    const { limits, usage, reserved, synthesisKeep } = this.account;
    const { composition, delegationSettings, depth, artifacts } = this;
    return { composition, delegationSettings, depth, artifacts, limits, usage, reserved, synthesisKeep };
  }

  /** The run resolved its composition and limits: its account opens on them. */
  #resolve(composition: ResolveRunResult, limits: ResolvedLimits, resume?: RunResume): void {
    this.#composition = composition;
    const { model, price, modelTaskQueue, fallback } = composition;
    this.account.open(limits, new ModelChain({ model, price, taskQueue: modelTaskQueue }, fallback), resume?.usage);
  }

  /** Which continue-as-new segment of the run this is, from 1. */
  get segment(): number {
    return this.input.resume?.segment ?? 1;
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
    return `q${this.segment}.${(this.#questionsAsked += 1)}`;
  }

  /** A `wait` call is waiting for children: the live status says so until `endWait`. */
  beginWait(): void {
    this.#waitingCalls += 1;
  }

  endWait(): void {
    this.#waitingCalls -= 1;
  }

  /** A new segment of a run that continued as new: everything goes on as it was. */
  static fromResume(input: ParsedRunInput, workflowId: string, resume: RunResume): Run {
    const run = new Run(input, workflowId);
    run.#resolve(resume.composition, resume.limits, resume);
    run.session.resume(resume.session, resume.appended);
    run.children.resume(resume);
    run.inbox.resume(resume.inbox);
    for (const key of resume.seenMessages ?? []) run.seenMessages.add(key);
    run.versions = new RunVersions(resume.versions);
    // What the previous segment's last call sent is the start of this session's dialogue (checked when carried).
    if (resume.context) run.dialogueCache.resume(resume.context, toChatMessages(run.events, run.persona));
    return run;
  }

  /** What the next segment starts from. */
  toResume(): RunResume {
    const context = this.dialogueCache.carry(toChatMessages(this.events, this.persona));
    const { delegations, snapshotMarks } = this.children.toResume();
    const versions = this.versions.toResume();
    return {
      segment: this.segment + 1,
      session: [...this.events],
      usage: this.account.usage,
      limits: this.account.limits,
      composition: this.composition,
      delegations,
      inbox: this.inbox.toResume(),
      appended: this.appended,
      snapshotMarks,
      ...(this.seenMessages.size > 0 && { seenMessages: [...this.seenMessages] }),
      ...this.artifacts.toResume(),
      ...(context && { context }),
      ...(versions.length > 0 && { versions }),
    };
  }

  /** Starts the session of a new run: header, selection and descriptor, seeds, background, the task. */
  begin(composition: ResolveRunResult, limits: ResolvedLimits): void {
    this.#resolve(composition, limits);
    const opening = openingEvents(this.input, { sessionId: this.workflowId, depth: this.depth, composition }, now());
    for (const event of opening) this.append(event);
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
      upsertSearchAttributes([{ key: DEPUTY_STATUS, value: listedStatus(next) }, ...this.account.costShown()]);
    }
    if (next !== 'waiting_for_children') return;
    const waited = this.children.liveWaited();
    if (waited.length > 0) setCurrentDetails(`waiting for ${waited.map((child) => child.id).join(', ')}`);
  }

  isEnded(): boolean {
    return FINAL.includes(this.status);
  }

  /**
   * The live status from what the run waits on now, never from the tool that just finished: a decision on one of its
   * calls, its own question to its parent, a child a tool call of this turn waits for, else running.
   */
  liveStatus(): 'waiting_for_approval' | 'waiting_for_answer' | 'waiting_for_children' | 'running' {
    if (this.approvals.waiting()) return 'waiting_for_approval';
    if (this.questions.anyOpen) return 'waiting_for_answer';
    if (this.#waitingCalls > 0 || this.children.liveWaited().length > 0) return 'waiting_for_children';
    return 'running';
  }

  /** The run's result with its usage. */
  result(outcome: Omit<RunResult, 'usage' | 'sessionId'>): RunResult {
    countRunEnded(this, outcome.status, outcome.limit);
    return { ...outcome, usage: this.account.usage, sessionId: this.workflowId, ...this.artifacts.listed() };
  }

  /**
   * Records the end: `run/ended`, status, cost, the details line, and the usage memo (readable without a worker) when
   * the run's result will not carry its usage: a run that returns a `RunResult` leaves it there.
   */
  end(final: RunStatus, output: string | null, why?: string): void {
    this.append({ type: 'run/ended', at: now(), status: final, output });
    this.#status = final;
    const { usage, resolvedLimits } = this.account;
    upsertSearchAttributes([{ key: DEPUTY_STATUS, value: final }, this.account.costAttribute()]);
    if (final === 'failed' || final === 'cancelled') upsertMemo({ deputyUsage: usage });
    // Spend past the limits (an endpoint billed past the cap) is shown, never hidden: readable without a worker.
    const overrun = resolvedLimits && overLimits(usage, resolvedLimits);
    if (overrun) upsertMemo({ deputyOverrun: overrun });
    // A failure's reason leads: it is what a person opening the run looks for first.
    const reason = why ? ` (${why.replace(/\s+/g, ' ').slice(0, 300)})` : '';
    setCurrentDetails(
      `${final}${reason}; ${usage.modelCalls} model calls, $${microToUsd(usage.costMicroUsd).toFixed(6)}`,
    );
  }
}
