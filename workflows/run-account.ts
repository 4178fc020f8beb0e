/**
 * A run's account: what it may spend (its composition's prices and its limits), what it spent, and what it holds for
 * children and in-flight calls. Changed only through methods that name what happened; `AgentRunState` builds on it.
 * Deterministic code only.
 */
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import type { ResolveRunResult } from '../src/contract/activities.js';
import type { ModelPrice } from '../src/contract/composition.js';
import type { DelegationSettings } from '../src/contract/delegation.js';
import type { LedgerEntry, ResolvedLimits, Usage } from '../src/contract/run.js';
import { DEPUTY_COST_USD } from '../src/contract/search-attributes.js';
import {
  available,
  budgetOf,
  release,
  reserve,
  shrinkToFit,
  sum,
  ZERO_AMOUNT,
  type Amount,
  type CallBudget,
} from '../src/rules/budget.js';
import { shrunkPlan, type ChildPlan } from '../src/rules/run-start.js';
import { settleReservation } from '../src/rules/child-end.js';
import { billedBy } from '../src/rules/failure-message.js';
import { ModelChain } from '../src/rules/model-retry.js';
import { DEFAULT_PAYLOAD_LIMITS, type PayloadLimits } from '../src/rules/payloads.js';
import { renderPersona } from '../src/rules/persona.js';
import {
  addModelCall,
  addSpend,
  addToolCalls,
  callCostMicroUsd,
  microToUsd,
  ZERO_USAGE,
  type Spend,
} from '../src/rules/usage.js';

/** A booked child whose plan the run may replace (smaller) until it starts. */
export interface Replannable {
  plan: ChildPlan;
}

export class RunAccount {
  #usage = ZERO_USAGE;

  /** Set once at the start (or the resume). */
  #composition: ResolveRunResult | undefined;
  #models: ModelChain | undefined;

  #limits: ResolvedLimits | undefined;

  /** Tokens and cost held for live children and in-flight summaries. */
  #reserved: Amount = ZERO_AMOUNT;

  readonly #ledger: LedgerEntry[] = [];

  /**
   * Children reserved whose limits are not given yet (hooks, a background being written): the reservations a debit
   * past the free budget may shrink (see `absorbOverrun`).
   */
  readonly #preparing = new Map<LedgerEntry, Replannable>();

  /** Every child this run booked, in order. */
  get ledger(): readonly LedgerEntry[] {
    return this.#ledger;
  }

  /** The children booked whose limits are not given yet. */
  get preparing(): ReadonlyMap<LedgerEntry, Replannable> {
    return this.#preparing;
  }

  /** A child booked in the ledger, its limits still open while it is prepared. */
  book(entry: LedgerEntry, child: Replannable): void {
    this.#ledger.push(entry);
    this.#preparing.set(entry, child);
  }

  /** A child's limits are given (it starts) or it ended: no overrun of the parent can shrink them any more. */
  prepared(entry: LedgerEntry): void {
    this.#preparing.delete(entry);
  }

  /** The ledger of the segment this one continues. */
  protected resumeLedger(entries: readonly LedgerEntry[]): void {
    this.#ledger.push(...entries);
  }

  /** The cost `DeputyCostUsd` shows (written with a listed status change). */
  #shownCostMicroUsd = 0;

  get usage(): Usage {
    return this.#usage;
  }

  /** Tokens and cost held for live children and in-flight summaries. */
  get reserved(): Amount {
    return this.#reserved;
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

  /** The run's limits; read only once the run has begun (or resumed). */
  get limits(): ResolvedLimits {
    if (!this.#limits) throw new Error('the run has not resolved its limits yet');
    return this.#limits;
  }

  /** The limits, or `undefined` before the run resolved them. */
  get resolvedLimits(): ResolvedLimits | undefined {
    return this.#limits;
  }

  /** Books a model call's usage; an endpoint that counted more than Deputy's estimate may have billed past what was free. */
  recordModelCall(spend: Spend): void {
    this.#usage = addModelCall(this.#usage, spend);
    this.absorbOverrun();
  }

  /** Books a compaction's spend (it is not one of the run's turns). */
  recordCompaction(spend: Spend): void {
    this.#usage = addSpend(this.#usage, spend);
    this.absorbOverrun();
  }

  recordToolCalls(count: number): void {
    this.#usage = addToolCalls(this.#usage, count);
  }

  /** Reserves every child's whole cost, all or nothing, keeping the run's synthesis reserve. */
  reserveChildren(reservations: Amount[]): ReturnType<typeof reserve> {
    const result = reserve(budgetOf(this.limits, this.#usage, this.#reserved), reservations, this.synthesisKeep);
    if (result.ok) this.#reserved = result.budget.reserved;
    return result;
  }

  /** Holds `amount` for an in-flight call (a background summary) until `releaseHold`. */
  hold(amount: Amount): void {
    this.#reserved = sum(this.#reserved, amount);
  }

  releaseHold(amount: Amount): void {
    this.#reserved = release(budgetOf(this.limits, this.#usage, this.#reserved), amount).reserved;
  }

  /** Releases a child's reservation and debits what it spent (all of it when it did not say). */
  settleChild(
    reservation: Amount,
    spent: Spend | null,
  ): { charge: Spend; overrun: ReturnType<typeof settleReservation>['overrun'] } {
    const settled = settleReservation(budgetOf(this.limits, this.#usage, this.#reserved), reservation, spent);
    this.#reserved = settled.reserved;
    this.debit(settled.charge);
    return { charge: settled.charge, overrun: settled.overrun };
  }

  /** Adds spend (a compaction, a summary, a child's charge) to the run's usage. */
  debit(spend: Spend): void {
    this.#usage = addSpend(this.usage, spend);
    this.absorbOverrun();
  }

  /**
   * A debit larger than its hold (an endpoint that counts more than Deputy's estimate) is taken back from the
   * reservations of children not yet started, so used + reserved ≤ max holds; their limits shrink with them. What
   * nothing absorbs stops the run at its limit, and shows as its overrun.
   */
  absorbOverrun(): void {
    if (!this.#limits || this.preparing.size === 0) return;
    const pending = [...this.preparing];
    const { cuts } = shrinkToFit(
      budgetOf(this.limits, this.usage, this.reserved),
      pending.map(([, child]) => child.plan.reservation),
    );
    pending.forEach(([entry, child], i) => {
      const cut = cuts[i]!;
      if (cut.tokens === 0 && cut.costMicroUsd === 0) return;
      child.plan = shrunkPlan(child.plan, cut);
      entry.reserved = child.plan.reservation;
      this.#reserved = release(budgetOf(this.limits, this.usage, this.reserved), cut).reserved;
    });
  }

  /** What this run keeps for its own final answer (its synthesis reserve): never lent to its children. */
  get synthesisKeep(): Amount {
    return this.#limits?.synthesis
      ? { tokens: this.limits.reserveTokens, costMicroUsd: this.limits.reserveCostMicroUsd }
      : ZERO_AMOUNT;
  }

  /**
   * Debits what a model call that failed was billed for (its failed attempts, see `billedBy`), if anything, at the
   * price of the model it went to (by default, the one the run's calls are on).
   */
  debitBilled(err: unknown, price: ModelPrice = this.models.current.price): void {
    const billed = billedBy(err);
    if (billed) this.debit({ ...billed, costMicroUsd: callCostMicroUsd(billed, price) });
  }

  /** The models the run's calls go to: its own, then its fallbacks. */
  get models(): ModelChain {
    const { model, price, modelTaskQueue, fallback } = this.composition;
    this.#models ??= new ModelChain({ model, price, taskQueue: modelTaskQueue }, fallback);
    return this.#models;
  }

  /** The cost attribute when the cost moved since it was last shown, which it then shows. */
  protected costShown(): SearchAttributeUpdatePair[] {
    if (this.usage.costMicroUsd === this.#shownCostMicroUsd) return [];
    this.#shownCostMicroUsd = this.usage.costMicroUsd;
    return [this.costAttribute()];
  }

  protected costAttribute(): SearchAttributeUpdatePair {
    return { key: DEPUTY_COST_USD, value: microToUsd(this.usage.costMicroUsd) };
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

  /** What one model call may spend now: what is free after reservations; none when the run has no caps. */
  callBudget(maxCompletionTokens?: number): CallBudget | undefined {
    const free = available(budgetOf(this.limits, this.usage, this.reserved));
    if (free.tokens === null && free.costMicroUsd === null && maxCompletionTokens === undefined) return undefined;
    return { ...free, price: this.models.dearest, maxCompletionTokens };
  }

  /** The run resolved its composition and limits at its start. */
  protected resolveAccount(composition: ResolveRunResult, limits: ResolvedLimits): void {
    this.#composition = composition;
    this.#limits = limits;
  }

  /** A new segment goes on with its composition, limits and spend as they were. */
  protected resumeAccount(composition: ResolveRunResult, limits: ResolvedLimits, usage: Usage): void {
    this.#composition = composition;
    this.#limits = limits;
    this.#usage = usage;
  }
}
