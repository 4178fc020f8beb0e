/**
 * R2.13, model-based: fast-check drives one real parent run (real Temporal, the real `openai` client, a scripted model
 * held like a puppet) through random sequences of turns, delegations (none / all / summary context), follow-ups,
 * interjections, child turns and ends, and cancellation, with a model that often reports the largest usage its
 * `max_completion_tokens` allows. After every step, for every run of the tree: used + reserved ≤ max, for tokens and
 * for cost; at the end used ≤ max.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { RunState } from '../src/contract/run.js';
import type { ProviderBehaviour, RecordedRequest } from '../src/testing/script.js';
import { billedMicroUsd } from '../src/testing/script-usage.js';
import { ConfigStore } from '../src/config/store.js';
import { parseConfig } from '../src/config/schema.js';
import { delegationConfig, DELEGATION_TOOLS, PARENT_SCOPES, isSummaryCall } from './support/delegation.js';
import { useHarness } from './support/harness.js';
import { checkTree, childActor, commands, Puppet, settle, type Model, type Real } from './support/budget-model.js';

const base = delegationConfig({
  maxChildrenPerRun: 8,
  childDefaults: { maxTurns: 4, maxTokens: 1500, maxCostUsd: 0.0015, maxToolCalls: 4 },
});
const store = new ConfigStore(base);
const h = useHarness({ config: store, tools: DELEGATION_TOOLS });

const RUNS = Number(process.env.BUDGET_PROPERTY_RUNS ?? 20);
/** Fixed for a run of the suite (`BUDGET_PROPERTY_SEED` replays one): the steps fast-check draws and the provider's choices. */
const SEED = Number(process.env.BUDGET_PROPERTY_SEED ?? Date.now() % 1_000_000);
// A delegating parent's call counts some 3,500 input tokens (its system prompt and seven tools' schemas), whatever
// the model reports: room for several such calls beside its children's reservations.
const PARENT_LIMITS = {
  maxTurns: 12,
  maxTokens: 30_000,
  maxCostUsd: 0.03,
  maxToolCalls: 24,
  synthesisReserve: false as const,
};

/** The providers the property runs against: as the spec's endpoint, one that ignores max_completion_tokens, one silent. */
const PROVIDERS: [label: string, behaviour: ProviderBehaviour, runs: number][] = [
  ['a provider that reads the cap and reports usage', { reads: 'both', reportsUsage: true }, RUNS],
  ['a provider that ignores max_completion_tokens', { reads: 'max_tokens', reportsUsage: true }, RUNS],
  ['a provider that reads no cap and sends no usage', { reads: 'none', reportsUsage: false }, RUNS],
];

describe(`R2.13 model-based: hard budgets hold at every step of random delegation trees (seed ${SEED})`, () => {
  afterEach(() => {
    h.model.behaviour = { reads: 'both', reportsUsage: true, usage: 'fixed' };
  });
  for (const [i, [label, behaviour, runs]] of PROVIDERS.entries()) {
    it(`R2.13 R2.6 ${runs} random trees against ${label}: used + reserved ≤ max after every step, for every run; used ≤ max at the end`, async () => {
      h.model.behaviour = { reads: 'both', reportsUsage: true, usage: 'fixed', ...behaviour };
      await property(runs, { bounded: true, billed: false }, SEED + 10 + i);
    }, 600_000);
  }
});

/** A small seeded generator (the provider's choices are not fast-check's: they depend on what the run sends). */
function seeded(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

/**
 * A provider as a ledger sees one: it counts a call's input at 1 to 3 times Deputy's count (its own tokenizer), bills
 * one attempt in seven with a usage report and no answer (Deputy retries it; never more than three of one caller's
 * in a row, as the retries' backoff would then outlast a step's wait), and, when it over-delivers, bills up to 200
 * answer tokens past what it sent (tokens it made and never streamed, reasoning for one).
 */
function billingProvider(overDelivers: boolean): ProviderBehaviour {
  const random = seeded(SEED + (overDelivers ? 1 : 0));
  /** Each caller's attempts billed without an answer since its last answer. */
  const unanswered = new Map<string, number>();
  billedWithoutAnswer = 0;
  return {
    reads: 'both',
    reportsUsage: true,
    bill: (_request, counted) => ({
      prompt_tokens: Math.ceil(counted.prompt_tokens * (1 + 2 * random())),
      completion_tokens: counted.completion_tokens + (overDelivers ? Math.ceil(200 * random()) : 0),
    }),
    billsWithoutAnswer: (request) => {
      const caller = callerOf(request);
      const streak = unanswered.get(caller) ?? 0;
      const noAnswer = random() < 1 / 7 && streak < 3;
      unanswered.set(caller, noAnswer ? streak + 1 : 0);
      if (noAnswer) billedWithoutAnswer += 1;
      return noAnswer;
    },
  };
}
let billedWithoutAnswer = 0;

/** Who sent a request: a property run's actor, or a summary by what it summarises. */
function callerOf(request: RecordedRequest): string {
  if (isSummaryCall(request)) return JSON.stringify(request.body.messages.slice(1));
  for (const puppet of puppets) {
    const actor = puppet.actorOf(request);
    if (actor !== null) return `${puppet.runId}:${actor}`;
  }
  return 'another test';
}

describe(`R2.15 model-based: every billed token is counted (seed ${SEED})`, () => {
  afterEach(() => {
    h.model.behaviour = { reads: 'both', reportsUsage: true, usage: 'fixed' };
    store.set(base);
    billing = false;
  });
  it(`R2.15 R2.13 ${RUNS} random trees against a provider that bills failed attempts and counts input up to 3× Deputy's: each run is charged exactly what it was billed, and used + reserved ≤ max after every step (its input factor declared)`, async () => {
    store.set(parseConfig({ ...base, inputCountFactor: 3 }));
    h.model.behaviour = { reads: 'both', reportsUsage: true, usage: 'fixed', ...billingProvider(false) };
    billing = true;
    await property(RUNS, { bounded: true, billed: true }, SEED + 20);
    expect(billedWithoutAnswer).toBeGreaterThan(0);
  }, 600_000);
  it(`R2.20 R2.15 ${RUNS} random trees against a provider with a prompt cache that bills cached input at a quarter of the price: each run is charged exactly its bill to the micro-dollar, cached input at the cached price, and used + reserved ≤ max after every step`, async () => {
    store.set(
      parseConfig({
        ...base,
        inputCountFactor: 3,
        prices: { 'test-model': { inputPerMTokUsd: 1, cachedInputPerMTokUsd: 0.25, outputPerMTokUsd: 2 } },
      }),
    );
    h.model.behaviour = {
      reads: 'both',
      reportsUsage: true,
      usage: 'fixed',
      ...billingProvider(false),
      promptCache: true,
    };
    billing = true;
    await property(RUNS, { bounded: true, billed: true }, SEED + 23);
    // The cache served part of what the trees sent, and the bills checked priced it.
    const cached = h.model.requests.filter((r) => (r.billed?.prompt_tokens_details?.cached_tokens ?? 0) > 0);
    expect(cached.length).toBeGreaterThan(0);
  }, 600_000);
  it(`R2.15 R1.15 ${RUNS} random trees against a provider that also bills past the cap: each run is charged exactly what it was billed, an answer past the cap sent at the cap (the rest is impossible)`, async () => {
    h.model.behaviour = { reads: 'both', reportsUsage: true, usage: 'fixed', ...billingProvider(true) };
    billing = true;
    await property(RUNS, { bounded: false, billed: true }, SEED + 21);
    expect(billedWithoutAnswer).toBeGreaterThan(0);
  }, 600_000);
});

describe(`R8.3 model-based: a fallback to a dearer model keeps every budget (seed ${SEED})`, () => {
  afterEach(() => {
    h.model.behaviour = { reads: 'both', reportsUsage: true, usage: 'fixed' };
    store.set(base);
    billing = false;
  });
  it(`R8.3 R2.13 R2.15 ${RUNS} random trees whose model is left for a dearer one after a failed attempt: each run is charged exactly what it was billed, each attempt at its own model's price, and used + reserved ≤ max after every step`, async () => {
    store.set(
      parseConfig({
        ...base,
        inputCountFactor: 3,
        prices: { ...base.prices, [DEAR]: { inputPerMTokUsd: 3, outputPerMTokUsd: 9 } },
        fallbackModels: [DEAR],
        modelFallback: { serverError: 1 },
      }),
    );
    h.model.behaviour = { reads: 'both', reportsUsage: true, usage: 'fixed', ...billingProvider(false) };
    billing = true;
    await property(RUNS, { bounded: true, billed: true }, SEED + 22);
    expect(billedWithoutAnswer).toBeGreaterThan(0);
    // Runs went on to the dearer model, and were charged at its price (checked per run against the provider's bills).
    expect(h.model.requests.filter((r) => r.body.model === DEAR).length).toBeGreaterThan(0);
  }, 600_000);
});

/** The fallback model of the R8.3 property, three times the run's own price for input and 4.5 times for answers. */
const DEAR = 'dear-model';

/**
 * What a request cost as the provider billed it, in micro-USD, at its model's price in the config in force: input its
 * cache served at the cached price, the rest at the input price, rounded up once per call.
 */
function billedCost(request: RecordedRequest, answerTokens: number): number {
  const price = store.current.prices[request.body.model];
  if (!price) throw new Error(`no price for ${request.body.model}`);
  return billedMicroUsd({ ...request.billed!, completion_tokens: answerTokens }, price);
}

/** While a billing provider runs: calls with little room are answered briefly, as a provider honouring the cap would. */
let billing = false;

/**
 * The ledger against the provider's bills: every request the provider billed belongs to one run of the tree (a
 * background summary to the parent that paid for it); each run's own calls are charged exactly what they were billed.
 */
async function checkBills(real: Real) {
  const billedTo = new Map<string, number>();
  const costTo = new Map<string, number>();
  for (const request of h.model.requests) {
    if (!request.billed) continue;
    const actor = isSummaryCall(request)
      ? JSON.stringify(request.body.messages).includes(real.puppet.runId)
        ? 'parent'
        : null
      : real.puppet.actorOf(request);
    if (actor === null) continue;
    // No answer can be billed past the cap the request sent: a report beyond it is impossible, debited at the cap.
    const cap = request.body.max_completion_tokens;
    const answer =
      typeof cap === 'number' ? Math.min(request.billed.completion_tokens, cap) : request.billed.completion_tokens;
    const tokens = request.billed.prompt_tokens + answer;
    billedTo.set(actor, (billedTo.get(actor) ?? 0) + tokens);
    costTo.set(actor, (costTo.get(actor) ?? 0) + billedCost(request, answer));
  }
  const parent = RunState.parse(await h.deputy.getState(real.parentId));
  const children = parent.delegations.filter((d) => d.status !== 'reserved' && d.status !== 'rejected');
  const charged = children.reduce((sum, d) => sum + (d.actual?.tokens ?? 0), 0);
  expect(parent.usage.totalTokens - charged, `${real.parentId}: its own calls`).toBe(billedTo.get('parent') ?? 0);
  const chargedCost = children.reduce((sum, d) => sum + (d.actual?.costMicroUsd ?? 0), 0);
  expect(parent.usage.costMicroUsd - chargedCost, `${real.parentId}: its own calls' cost`).toBe(
    costTo.get('parent') ?? 0,
  );
  for (const entry of children) {
    const child = RunState.parse(await h.deputy.getState(entry.childWorkflowId));
    expect(child.usage.totalTokens, entry.childWorkflowId).toBe(billedTo.get(childActor(entry)) ?? 0);
    expect(child.usage.costMicroUsd, `${entry.childWorkflowId}: cost`).toBe(costTo.get(childActor(entry)) ?? 0);
    // Charged what it reported at its end; a child cancelled before it could report is charged its whole
    // reservation, never less than it spent.
    const actual = entry.actual?.tokens ?? 0;
    if (entry.status === 'cancelled')
      expect(actual, entry.childWorkflowId).toBeGreaterThanOrEqual(child.usage.totalTokens);
    else expect(actual, `${entry.childWorkflowId}: charged to its parent`).toBe(child.usage.totalTokens);
  }
}

let rulesAdded = false;
const puppets: Puppet[] = [];

/**
 * Drives `runs` random trees, drawn from `seed`, and checks the invariant after every step (`bounded`), and the bills
 * at the end.
 */
async function property(runs: number, check: { bounded: boolean; billed: boolean }, seed: number): Promise<void> {
  let trees = 0;
  let steps = 0;
  let delegating = 0;
  if (!rulesAdded) {
    rulesAdded = true;
    h.model.add({
      name: 'summary',
      when: isSummaryCall,
      times: Infinity,
      reply: { text: 'Background: add.', usage: 'worst' },
    });
    h.model.add({
      name: 'puppet',
      when: (request) => puppets.some((p) => p.actorOf(request) !== null),
      times: Infinity,
      reply: (request) => puppets.find((p) => p.actorOf(request) !== null)!.hold(request),
    });
  }
  await fc.assert(
    fc.asyncProperty(commands, async (cmds) => {
      const puppet = new Puppet(`t${trees++}x${Math.random().toString(36).slice(2, 8)}`, billing);
      puppets.push(puppet);
      const parentId = h.id('prop');
      await h.deputy.startRun(
        { task: puppet.parentTask, scopes: PARENT_SCOPES, limits: PARENT_LIMITS },
        { workflowId: parentId },
      );
      const real: Real = { h, puppet, parentId, childChecks: 0, steps: 0, bounded: check.bounded };
      const model: Model = { ended: false, parentWaiting: false, live: [], finished: [], next: 1 };
      await settle(model, real);
      await fc.asyncModelRun(() => ({ model, real }), cmds);
      if (!model.ended) {
        await h.deputy.cancel(parentId);
        await h.deputy.result(parentId);
      }
      await settle(model, real);
      // Children cancelled with their parent end on their own schedule: wait until each has a final state.
      const state = RunState.parse(await h.deputy.getState(parentId));
      for (const entry of state.delegations.filter((d) => d.status !== 'reserved' && d.status !== 'rejected')) {
        await h.deputy.result(entry.childWorkflowId);
      }
      await checkTree(real, true);
      if (check.billed) await checkBills(real);
      steps += real.steps;
      if (real.childChecks > 0) delegating += 1;
    }),
    { numRuns: runs, endOnFailure: true, seed },
  );
  const replay = `fast-check seed ${seed}; BUDGET_PROPERTY_SEED=${SEED} draws these trees again`;
  expect(trees, replay).toBe(runs);
  // The draw said something: trees went past their first step, and children's budgets were observed. A working
  // harness clears both by far (over 300 trees a tree took 3.8 steps, one in four took one, and 6 in 10 delegated:
  // 20 trees fail them less than once in 10^8 draws); a harness whose steps stop running does not.
  expect(steps, replay).toBeGreaterThan(runs);
  if (check.bounded) expect(delegating, replay).toBeGreaterThan(0);
}
