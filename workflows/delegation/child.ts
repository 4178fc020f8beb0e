/**
 * One child of a run, in one value: its plan, its phase (preparing → ready → running → settled), its slot, and,
 * once it lives, its scope, its life and how it ended. Its ledger entry is a view of it, written only here.
 * Deterministic code only.
 */
import type { CancellationScope } from '@temporalio/workflow';
import type { LedgerEntry } from '../../src/contract/run.js';
import type { Amount } from '../../src/rules/budget.js';
import { bounded, MAX_CHILD_SUMMARY_CHARS, type ChildOutcome } from '../../src/rules/children.js';
import { shrunkPlan, type ChildPlan } from '../../src/rules/run-start.js';
import type { Spend } from '../../src/rules/usage.js';
import type { Shrinkable } from '../run/account.js';

/**
 * `preparing`: reserved, its hooks and parent context under way: the only phase in which its reservation (and its
 * limits with it) can be cut. `ready`: its input is made, its limits given. `running`: started (or attached to).
 * `settled`: its reservation released and its spend debited, once.
 */
export type ChildPhase = 'preparing' | 'ready' | 'running' | 'settled';

type Question = NonNullable<LedgerEntry['questions']>[number];

/** How a settled child ended, as the ledger records it. */
export interface Settlement {
  status: Exclude<LedgerEntry['status'], 'reserved' | 'running'>;
  charge: Spend;
  overrun: Amount | null;
  summary: string;
}

/** One child of a `delegate` call (or a follow-up), from its booking to its end. */
export class Child implements Shrinkable {
  #plan: ChildPlan;
  readonly #entry: LedgerEntry;
  #phase: ChildPhase = 'preparing';
  #admitted = false;
  /** Once it lives: the scope it runs in, and its life, which resolves (never rejects) once it ended. */
  #lives: { scope: CancellationScope; life: Promise<void> } | undefined;
  /** How its life ended, once it has: its outcome, or the failure that ended it (a cancellation with its parent). */
  #ended: { outcome: ChildOutcome } | { failure: unknown } | undefined;
  /** Followed detached: its end goes to the parent's inbox (`reported` once the model read it, or nobody will). */
  #detached: { settled: Promise<void>; reported: boolean } | undefined;

  constructor(plan: ChildPlan, entry: LedgerEntry) {
    this.#plan = plan;
    this.#entry = entry;
  }

  get id(): string {
    return this.#entry.childWorkflowId;
  }
  get taskName(): string {
    return this.#entry.taskName;
  }
  /** Its plan: cut only while it is prepared, then fixed. */
  get plan(): ChildPlan {
    return this.#plan;
  }
  get reservation(): Amount {
    return this.#plan.reservation;
  }
  get phase(): ChildPhase {
    return this.#phase;
  }
  /** The child as its parent's ledger shows it. */
  get entry(): Readonly<LedgerEntry> {
    return this.#entry;
  }

  /** Gives back `cut` of the reservation while the child is prepared; its token and cost limits shrink with it. */
  shrink(cut: Amount): void {
    if (this.#phase !== 'preparing') throw new Error(`child ${this.id} is ${this.#phase}: its limits are given`);
    this.#plan = shrunkPlan(this.#plan, cut);
    this.#entry.reserved = this.#plan.reservation;
  }

  get admitted(): boolean {
    return this.#admitted;
  }
  /** The tenant's admission workflow gave the child a slot. */
  admit(): void {
    this.#admitted = true;
  }

  /** What the hooks that saw its task said, so far. */
  noteHooks(trail: readonly string[]): void {
    this.#entry.preparation.hookOutcome = trail.join('; ') || null;
  }

  /** Its input is made: its limits are given, with the characters of parent context it was given. */
  ready(backgroundChars: number | null): void {
    this.#entry.preparation.backgroundChars = backgroundChars;
    if (this.#phase === 'preparing') this.#phase = 'ready';
  }

  /** Started (or this invocation's own child from an earlier attempt was found, to attach to). */
  started(): void {
    this.#phase = 'running';
    this.#entry.status = 'running';
    this.#entry.started = true;
  }

  /** What the child handed back, as the run's artifacts name them. */
  handedBack(artifacts: string[]): void {
    this.#entry.artifacts = artifacts;
  }

  /** Its reservation is released and what it spent debited: the ledger says how it ended. Once only. */
  settle({ status, charge, overrun, summary }: Settlement): void {
    if (this.#phase === 'settled') throw new Error(`child ${this.id} is settled already`);
    this.#phase = 'settled';
    this.#entry.status = status;
    this.#entry.actual = { tokens: charge.inputTokens + charge.outputTokens, costMicroUsd: charge.costMicroUsd };
    if (overrun) this.#entry.overrun = overrun;
    this.#entry.summary = bounded(summary, MAX_CHILD_SUMMARY_CHARS);
    // A child that ended leaves none of its questions open.
    for (const question of this.#entry.questions ?? []) if (question.status === 'open') question.status = 'unanswered';
  }

  /** True while it is reserved or running. */
  get live(): boolean {
    return this.#phase !== 'settled';
  }

  /** It lives in `scope`; `life` ends it with `end`, and never rejects. */
  lives(scope: CancellationScope, life: Promise<void>): void {
    this.#lives = { scope, life };
  }
  /** The scope it lives in: cancelling it stops the child. */
  get scope(): CancellationScope | undefined {
    return this.#lives?.scope;
  }
  /** Resolves once its life ended: read how from `outcome` and `failure`. */
  get life(): Promise<void> {
    if (!this.#lives) throw new Error(`child ${this.id} does not live yet`);
    return this.#lives.life;
  }

  /** Its life ended (it settled, or the failure that ended it was caught): what the joins read. */
  end(ended: { outcome: ChildOutcome } | { failure: unknown }): void {
    this.#ended ??= ended;
  }
  get outcome(): ChildOutcome | undefined {
    return this.#ended && 'outcome' in this.#ended ? this.#ended.outcome : undefined;
  }
  get failure(): { reason: unknown } | undefined {
    return this.#ended && 'failure' in this.#ended ? { reason: this.#ended.failure } : undefined;
  }
  /** Its life has ended, one way or the other. */
  get over(): boolean {
    return this.#ended !== undefined;
  }

  /** Followed detached from now on: the parent goes on, and hears of its end in its inbox once `settled`. */
  detach(settled: Promise<void>): void {
    this.#entry.background = true;
    this.#detached = { settled, reported: false };
  }
  get detached(): { readonly settled: Promise<void>; readonly reported: boolean } | undefined {
    return this.#detached;
  }
  /** Its end reached the model (a `subagent/result`, or a `wait` result), or nobody is left to tell. */
  reported(): void {
    if (this.#detached) this.#detached.reported = true;
  }

  /** A question the child asked its parent; `false` when it asked this id before. */
  ask(id: string, question: string, at: string): boolean {
    if (this.#entry.questions?.some((q) => q.id === id)) return false;
    (this.#entry.questions ??= []).push({
      id,
      question,
      status: 'open',
      answer: null,
      answeredBy: null,
      askedAt: at,
      answeredAt: null,
    });
    return true;
  }
  get questions(): readonly Readonly<Question>[] {
    return this.#entry.questions ?? [];
  }
  /** Marks a question answered before the answer is sent, so a second answer meanwhile is refused. */
  answer(id: string, answer: string, by: 'model' | 'client', at: string): void {
    this.#question(id, { status: 'answered', answer, answeredBy: by, answeredAt: at });
  }
  /** The answer could not be sent: open again while the child runs, else unanswered. */
  unanswer(id: string): void {
    const status = this.#entry.status === 'running' ? 'open' : 'unanswered';
    this.#question(id, { status, answer: null, answeredBy: null, answeredAt: null });
  }
  #question(id: string, change: Partial<Question>): void {
    const question = this.#entry.questions?.find((q) => q.id === id);
    if (!question) throw new Error(`child ${this.id} asked no question ${id}`);
    Object.assign(question, change);
  }

  /** The `n`th interjection was delivered. */
  interjected(n: number): void {
    this.#entry.interjections = n;
  }
}
