/**
 * The model and the steps of the budget properties: a tree's state as the test believes it (`Model`), the real run
 * it mirrors (`Real`: a parent whose model requests a `Puppet` holds until a step answers them), the steps fast-check
 * draws (a parent turn, a delegation, a follow-up, a child's turn or end, an interjection, a cancel), and R2.13's
 * invariant over the whole tree.
 */
import fc from 'fast-check';
import { expect } from 'vitest';
import { RunState } from '../../src/contract/run.js';
import type { RecordedRequest, ScriptReply, ReplyUsage } from '../../src/testing/script.js';
import type { Harness } from './harness.js';

const ENDED = ['completed', 'failed', 'cancelled', 'limit_reached'];
const NORMAL: ReplyUsage = { prompt_tokens: 60, completion_tokens: 10 };

/** Holds every model request of one property run until the test answers it. */
export class Puppet {
  readonly pending = new Map<string, { request: RecordedRequest; answer: (reply: ScriptReply) => void }>();

  /** `brief`: calls with little room are answered briefly, as a provider honouring the cap would. */
  constructor(
    readonly runId: string,
    readonly brief = false,
  ) {}

  /** Which run sent a request: `parent`, a child's actor name, or null when it is not this property run's. */
  actorOf(request: RecordedRequest): string | null {
    let actor: string | null = null;
    for (const message of request.body.messages) {
      if (message.role !== 'user') continue;
      const match = new RegExp(`## Your task\\nCHILD:${this.runId}:([\\w~-]+)`).exec(message.content ?? '');
      if (match) actor = match[1]!;
    }
    if (actor) return actor;
    return request.body.messages.some((m) => m.role === 'user' && m.content === this.parentTask) ? 'parent' : null;
  }

  get parentTask() {
    return `property parent ${this.runId}`;
  }

  hold(request: RecordedRequest): Promise<ScriptReply> {
    return new Promise((resolve) => this.pending.set(this.actorOf(request)!, { request, answer: resolve }));
  }

  /** Actors whose request is still open (the run was not cancelled meanwhile). */
  waiting(actor: string): boolean {
    const held = this.pending.get(actor);
    if (held?.request.aborted) this.pending.delete(actor);
    return this.pending.has(actor);
  }

  answer(actor: string, reply: ScriptReply) {
    const held = this.pending.get(actor)!;
    this.pending.delete(actor);
    // A provider that honours the cap it is sent writes no more: a call with little room gets a short answer.
    const cap = held.request.body.max_completion_tokens;
    held.answer(this.brief && typeof cap === 'number' && cap < 40 ? { text: 'ok' } : reply);
  }
}

export interface Model {
  ended: boolean;
  parentWaiting: boolean;
  /** Children whose model request is held. */
  live: string[];
  /** Children that ended and have not been followed up. */
  finished: string[];
  next: number;
}

export interface Real {
  h: Harness;
  puppet: Puppet;
  parentId: string;
  /** Observations of a child's budget. */
  childChecks: number;
  /** Steps that ran (the model allowed them). */
  steps: number;
  /** Whether used + reserved ≤ max is checked (the provider honours the cap it is sent). */
  bounded: boolean;
}

export const usage = (worst: boolean): ReplyUsage => (worst ? 'worst' : NORMAL);
export const childActor = (entry: RunState['delegations'][number]) =>
  entry.followupOf ? `${entry.taskName}~f` : entry.taskName;

/** Waits until every live run of the tree is held in a model call or has ended; then mirrors that into the model. */
export async function settle(model: Model, real: Real) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const state = RunState.parse(await real.h.deputy.getState(real.parentId));
    const ended = ENDED.includes(state.status);
    const running = state.delegations.filter((d) => d.status === 'running');
    const preparing = state.delegations.some((d) => d.status === 'reserved');
    const parentWaiting = real.puppet.waiting('parent');
    const childrenHeld = running.every((d) => real.puppet.waiting(childActor(d)));
    if (ended || parentWaiting || (!preparing && running.length > 0 && childrenHeld)) {
      model.ended = ended;
      model.parentWaiting = parentWaiting && !ended;
      model.live = ended ? [] : running.map(childActor);
      const followedUp = new Set(state.delegations.flatMap((d) => (d.followupOf ? [d.taskName] : [])));
      model.finished = state.delegations
        .filter((d) => ['completed', 'limit_reached', 'failed'].includes(d.status) && !d.followupOf)
        .map((d) => d.taskName)
        .filter((name) => !followedUp.has(name) && !running.some((r) => r.taskName === name));
      return;
    }
    if (Date.now() > deadline) throw new Error(`tree did not settle: ${JSON.stringify(state.delegations)}`);
    await new Promise((resolve) => setTimeout(resolve, 40));
  }
}

/** R2.13's invariant over the whole tree, now. */
export async function checkTree(real: Real, final = false) {
  const parent = RunState.parse(await real.h.deputy.getState(real.parentId));
  const runs = [{ id: real.parentId, state: parent }];
  for (const entry of parent.delegations) {
    if (entry.status === 'reserved' || entry.status === 'rejected') continue;
    runs.push({
      id: entry.childWorkflowId,
      state: RunState.parse(await real.h.deputy.getState(entry.childWorkflowId)),
    });
  }
  for (const { id, state } of runs) {
    if (!state.limits || !real.bounded) continue;
    if (id !== real.parentId) real.childChecks += 1;
    const tokens = state.usage.totalTokens + state.reserved.tokens;
    const cost = state.usage.costMicroUsd + state.reserved.costMicroUsd;
    expect(tokens, `${id}: tokens used + reserved`).toBeLessThanOrEqual(state.limits.maxTokens!);
    expect(cost, `${id}: micro-USD used + reserved`).toBeLessThanOrEqual(state.limits.maxCostMicroUsd!);
    if (final) {
      expect(state.reserved, `${id}: nothing held at the end`).toEqual({ tokens: 0, costMicroUsd: 0 });
      expect(state.usage.totalTokens).toBeLessThanOrEqual(state.limits.maxTokens!);
      expect(state.usage.costMicroUsd).toBeLessThanOrEqual(state.limits.maxCostMicroUsd!);
    }
  }
}

const calc = { name: 'calculate', arguments: { operation: 'add', a: 2, b: 3 } };

class ParentTurn implements fc.AsyncCommand<Model, Real> {
  constructor(readonly worst: boolean) {}
  check = (m: Readonly<Model>) => m.parentWaiting;
  async run(m: Model, r: Real) {
    r.steps += 1;
    r.puppet.answer('parent', { text: 'working', toolCalls: [calc], usage: usage(this.worst) });
    await settle(m, r);
    await checkTree(r);
  }
  toString = () => `ParentTurn(${this.worst ? 'worst' : 'normal'})`;
}

type BriefSpec = { context: 'none' | 'all' | 'summary'; maxCostUsd: number | null };

class Delegate implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly briefs: BriefSpec[],
    readonly worst: boolean,
  ) {}
  check = (m: Readonly<Model>) => m.parentWaiting;
  async run(m: Model, r: Real) {
    r.steps += 1;
    const briefs = this.briefs.map((b) => {
      const name = `c${m.next++}`;
      return {
        task_name: name,
        message: `CHILD:${r.puppet.runId}:${name} add two numbers`,
        context: b.context,
        ...(b.maxCostUsd !== null && { limits: { maxCostUsd: b.maxCostUsd } }),
      };
    });
    r.puppet.answer('parent', {
      toolCalls: [{ name: 'delegate', arguments: { briefs } }],
      usage: usage(this.worst),
    });
    await settle(m, r);
    await checkTree(r);
  }
  toString = () => `Delegate(${JSON.stringify(this.briefs)}, ${this.worst ? 'worst' : 'normal'})`;
}

class Followup implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number) {}
  check = (m: Readonly<Model>) => m.parentWaiting && m.finished.length > 0;
  async run(m: Model, r: Real) {
    r.steps += 1;
    const name = m.finished[this.pick % m.finished.length]!;
    r.puppet.answer('parent', {
      toolCalls: [{ name: 'followup', arguments: { task_name: name, message: `CHILD:${r.puppet.runId}:${name}~f` } }],
      usage: 'worst',
    });
    await settle(m, r);
    await checkTree(r);
  }
  toString = () => `Followup(${this.pick})`;
}

class ChildStep implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly pick: number,
    readonly end: boolean,
    readonly worst: boolean,
  ) {}
  check = (m: Readonly<Model>) => m.live.length > 0;
  async run(m: Model, r: Real) {
    r.steps += 1;
    const actor = m.live[this.pick % m.live.length]!;
    if (!r.puppet.waiting(actor)) return settle(m, r);
    r.puppet.answer(
      actor,
      this.end ? { text: `${actor} done`, usage: usage(this.worst) } : { toolCalls: [calc], usage: usage(this.worst) },
    );
    await settle(m, r);
    await checkTree(r);
  }
  toString = () => `Child${this.end ? 'End' : 'Turn'}(${this.pick}, ${this.worst ? 'worst' : 'normal'})`;
}

class Interject implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number) {}
  check = (m: Readonly<Model>) => m.live.length > 0;
  async run(m: Model, r: Real) {
    r.steps += 1;
    const actor = m.live[this.pick % m.live.length]!;
    // A follow-up shares its task name with its source; the update reaches the live one, or is refused.
    await r.h.deputy.interject(r.parentId, actor.replace(/~f$/, ''), 'Use the exact numbers.').catch(() => undefined);
    await settle(m, r);
    await checkTree(r);
  }
  toString = () => `Interject(${this.pick})`;
}

class Cancel implements fc.AsyncCommand<Model, Real> {
  check = (m: Readonly<Model>) => !m.ended;
  async run(m: Model, r: Real) {
    r.steps += 1;
    await r.h.deputy.cancel(r.parentId);
    await r.h.deputy.result(r.parentId);
    await settle(m, r);
    await checkTree(r);
  }
  toString = () => 'Cancel';
}

type Step = fc.AsyncCommand<Model, Real>;

const briefSpec = fc.record({
  context: fc.constantFrom<BriefSpec['context']>('none', 'all', 'summary'),
  maxCostUsd: fc.option(fc.constantFrom(0.0004, 0.0008, 0.0012), { nil: null }),
});

/** A worst-case answer uses everything a call may: a parent gets one in four, so its trees grow before it runs dry. */
const sometimesWorst = fc.constantFrom(false, false, false, true);

/**
 * A random sequence of steps; each runs only when the model allows it (a child step needs a held child, a turn needs
 * the parent held), which `fc.asyncModelRun` checks. Weighted so trees grow before a cancel ends them.
 */
export const commands = fc.array(
  fc.oneof(
    { weight: 3, arbitrary: sometimesWorst.map((worst): Step => new ParentTurn(worst)) },
    {
      weight: 4,
      arbitrary: fc
        .tuple(fc.array(briefSpec, { minLength: 1, maxLength: 3 }), sometimesWorst)
        .map(([briefs, worst]): Step => new Delegate(briefs, worst)),
    },
    { weight: 2, arbitrary: fc.nat(7).map((pick): Step => new Followup(pick)) },
    {
      weight: 6,
      arbitrary: fc
        .tuple(fc.nat(7), fc.boolean(), fc.boolean())
        .map(([pick, end, worst]): Step => new ChildStep(pick, end, worst)),
    },
    { weight: 2, arbitrary: fc.nat(7).map((pick): Step => new Interject(pick)) },
    { weight: 1, arbitrary: fc.constant<Step>(new Cancel()) },
  ),
  { minLength: 8, maxLength: 20 },
);
