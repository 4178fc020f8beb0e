/**
 * A run's account: what it may spend (its limits, at its models' prices), what it spent, and what it holds for
 * children and in-flight calls. Changed only through methods that name what happened; one part of a `Run`.
 * Deterministic code only.
 */
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import type { ModelPrice } from '../../src/contract/composition.js';
import type { ResolvedLimits, Usage } from '../../src/contract/run.js';
import { DEPUTY_COST_USD } from '../../src/contract/search-attributes.js';
import {
  available,
  budgetOf,
  release,
  reserve,
  settleReservation,
  shrinkToFit,
  sum,
  ZERO_AMOUNT,
  type Amount,
} from '../../src/rules/budget.js';
import { type CallBudget } from '../../src/rules/call-budget.js';
import { billedBy } from '../../src/rules/failure-message.js';
import type { ModelChain } from '../../src/rules/model-retry.js';
import {
  addModelCall,
  addSpend,
  addToolCalls,
  callCostMicroUsd,
  microToUsd,
  ZERO_USAGE,
  type Spend,
} from '../../src/rules/usage.js';

/** A child reserved but not started: the only holder of its reservation, which may be cut while it is prepared. */
export interface Shrinkable {
  readonly reservation: Amount;
  /** Gives back `cut` of the reservation: its limits shrink with it. */
  shrink(cut: Amount): void;
}

/** The account of one run. */
export class RunAccount {
  #usage = ZERO_USAGE;
  #limits: ResolvedLimits | undefined;
  #models: ModelChain | undefined;
  /** Tokens and cost held for live children and in-flight summaries. */
  #reserved: Amount = ZERO_AMOUNT;
  /** The cost `DeputyCostUsd` shows (written with a listed status change). */
  #shownCostMicroUsd = 0;

  /** @param preparing the children whose reservations a debit past the free budget may cut (see `absorbOverrun`) */
  constructor(private readonly preparing: () => readonly Shrinkable[]) {}

  /** Opens the account at the run's start, or (with the usage so far) at a new segment's. */
  open(limits: ResolvedLimits, models: ModelChain, usage: Usage = ZERO_USAGE): void {
    this.#limits = limits;
    this.#models = models;
    this.#usage = usage;
  }

  get usage(): Usage {
    return this.#usage;
  }

  /** Tokens and cost held for live children and in-flight summaries. */
  get reserved(): Amount {
    return this.#reserved;
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

  /** The models the run's calls go to: its own, then its fallbacks. */
  get models(): ModelChain {
    if (!this.#models) throw new Error('the run has not resolved its models yet');
    return this.#models;
  }

  /** Books a model call's usage; an endpoint that counted more than Deputy's estimate may have billed past what was free. */
  recordModelCall(spend: Spend): void {
    this.#usage = addModelCall(this.#usage, spend);
    this.#absorbOverrun();
  }

  recordToolCalls(count: number): void {
    this.#usage = addToolCalls(this.#usage, count);
  }

  /** Reserves every child's whole cost, all or nothing, keeping the run's synthesis reserve. */
  reserveChildren(reservations: Amount[]): ReturnType<typeof reserve> {
    const result = reserve(this.#budget(), reservations, this.synthesisKeep);
    if (result.ok) this.#reserved = result.budget.reserved;
    return result;
  }

  /** Holds `amount` for an in-flight call (a summary of the parent's background for a child) until `releaseHold`. */
  hold(amount: Amount): void {
    this.#reserved = sum(this.#reserved, amount);
  }

  releaseHold(amount: Amount): void {
    this.#reserved = release(this.#budget(), amount).reserved;
  }

  /** Releases a child's reservation and debits what it spent (all of it when it did not say). */
  settleChild(
    reservation: Amount,
    spent: Spend | null,
  ): { charge: Spend; overrun: ReturnType<typeof settleReservation>['overrun'] } {
    const settled = settleReservation(this.#budget(), reservation, spent);
    this.#reserved = settled.reserved;
    this.debit(settled.charge);
    return { charge: settled.charge, overrun: settled.overrun };
  }

  /** Adds spend (a compaction, a summary, a child's charge) to the run's usage: not one of the run's turns. */
  debit(spend: Spend): void {
    this.#usage = addSpend(this.#usage, spend);
    this.#absorbOverrun();
  }

  /**
   * A debit larger than its hold (an endpoint that counts more than Deputy's estimate) is taken back from the
   * reservations of children not yet started, each through the child, so used + reserved ≤ max holds; their limits
   * shrink with them. What nothing absorbs stops the run at its limit, and shows as its overrun.
   */
  #absorbOverrun(): void {
    const pending = this.preparing();
    if (!this.#limits || pending.length === 0) return;
    const { cuts } = shrinkToFit(
      this.#budget(),
      pending.map((child) => child.reservation),
    );
    pending.forEach((child, i) => {
      const cut = cuts[i]!;
      if (cut.tokens === 0 && cut.costMicroUsd === 0) return;
      child.shrink(cut);
      this.#reserved = release(this.#budget(), cut).reserved;
    });
  }

  /** What this run keeps for its own final answer (its synthesis reserve): never lent to its children. */
  get synthesisKeep(): Amount {
    return this.#limits?.synthesis
      ? { tokens: this.#limits.reserveTokens, costMicroUsd: this.#limits.reserveCostMicroUsd }
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

  /** The cost attribute when the cost moved since it was last shown, which it then shows. */
  costShown(): SearchAttributeUpdatePair[] {
    if (this.#usage.costMicroUsd === this.#shownCostMicroUsd) return [];
    this.#shownCostMicroUsd = this.#usage.costMicroUsd;
    return [this.costAttribute()];
  }

  costAttribute(): SearchAttributeUpdatePair {
    return { key: DEPUTY_COST_USD, value: microToUsd(this.#usage.costMicroUsd) };
  }

  /** What one model call may spend now: what is free after reservations; none when the run has no caps. */
  callBudget(maxCompletionTokens?: number): CallBudget | undefined {
    const free = available(this.#budget());
    if (free.tokens === null && free.costMicroUsd === null && maxCompletionTokens === undefined) return undefined;
    return { ...free, price: this.models.dearest, maxCompletionTokens };
  }

  #budget() {
    return budgetOf(this.limits, this.#usage, this.#reserved);
  }
}
