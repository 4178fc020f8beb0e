/**
 * A property over everything a client can send a live run: random payloads of every shape (null, arrays, huge
 * strings, wrong types, prototype keys, envelopes with random fields) to every signal and update, interleaved with real
 * messages, against a live conversation and a live delegating parent with a child at work. For every sequence: no
 * workflow task fails, and every real message is answered.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { lastMessage, userSays } from '../../src/testing/script.js';
import { delegateReply, delegationConfig, DELEGATION_TOOLS, PARENT_SCOPES } from '../support/delegation.js';
import { useHarness } from '../support/harness.js';
import { failedWorkflowTasks, untilStatus } from './support.js';

// Room for the 200 turns a conversation asks for: the config's limits are the most a run may ask.
const config = delegationConfig();
const h = useHarness({ config: { ...config, limits: { ...config.limits, maxTurns: 200 } }, tools: DELEGATION_TOOLS });

const SIGNALS = [
  'deputy.interjection',
  'deputy.question',
  'deputy.answer',
  'deputy.admitted',
  'deputy.admission.acquire',
  'deputy.admission.release',
  'deputy.approvals',
  'not.a.deputy.signal',
];
// endConversation is left out: `{}` is a valid payload for it, and ending the run is what it is for.
const UPDATES = ['sendMessage', 'interject', 'answerChild', 'decideApproval'];

/** Payloads of every shape a client can send. */
const payload = (runId: string) =>
  fc.oneof(
    fc.constant(null),
    fc.constant(undefined),
    fc.anything(),
    fc.array(fc.anything(), { maxLength: 5 }),
    fc.string({ maxLength: 200 }),
    fc.integer(),
    fc.constant('x'.repeat(600_000)),
    fc.constant(JSON.parse('{"__proto__": {"polluted": true}, "constructor": {"prototype": {"x": 1}}}') as unknown),
    fc.record(
      {
        from: fc.oneof(fc.string(), fc.constant(runId), fc.integer()),
        to: fc.oneof(fc.string(), fc.constant(runId)),
        id: fc.oneof(fc.string(), fc.constant(null)),
        body: fc.oneof(
          fc.anything(),
          fc.record({ content: fc.oneof(fc.string(), fc.integer()) }),
          fc.record({ questionId: fc.string(), question: fc.string(), answer: fc.string() }),
          fc.record({ childWorkflowId: fc.string() }),
          fc.record({ version: fc.integer(), requests: fc.array(fc.anything(), { maxLength: 3 }) }),
        ),
        sig: fc.oneof(fc.string(), fc.constant('k1.AAAA')),
      },
      { requiredKeys: [] },
    ),
    fc.record({ message: fc.oneof(fc.string({ maxLength: 50 }), fc.integer(), fc.constant(null)) }),
    fc.record({ task_name: fc.string(), message: fc.anything(), answer: fc.anything() }, { requiredKeys: [] }),
    fc.record(
      { requestId: fc.string(), decision: fc.constantFrom('approve', 'deny', 'maybe'), proof: fc.string() },
      { requiredKeys: [] },
    ),
  );

const sending = (runId: string) =>
  fc.array(
    fc.record({
      kind: fc.constantFrom('signal', 'update'),
      signal: fc.constantFrom(...SIGNALS),
      update: fc.constantFrom(...UPDATES),
      payload: payload(runId),
    }),
    { minLength: 1, maxLength: 4 },
  );

/** Sends `batch` to the run; refusals of updates are what they should be, so they are swallowed. */
async function fire(runId: string, batch: { kind: string; signal: string; update: string; payload: unknown }[]) {
  const handle = h.client.workflow.getHandle(runId);
  for (const item of batch) {
    if (item.kind === 'signal') await handle.signal(item.signal, item.payload);
    else await handle.executeUpdate(item.update, { args: [item.payload] }).catch(() => undefined);
  }
}

/** Property: after any batch, a real message gets an answer from the model. */
async function answersThrough(runId: string, task: string, runs: number) {
  let n = 0;
  await fc.assert(
    fc.asyncProperty(sending(runId), async (batch) => {
      await fire(runId, batch);
      const real = `${task} real message ${(n += 1)}`;
      await h.deputy.sendMessage(runId, real);
      await expect
        .poll(() => h.model.requests.some((r) => r.body.messages.some((m) => m.content === real)), {
          timeout: 20_000,
          interval: 50,
        })
        .toBe(true);
      expect(await failedWorkflowTasks(h.client, runId)).toEqual([]);
    }),
    { numRuns: runs, seed: 20261201, endOnFailure: true },
  );
}

describe('R1.11 R1.12 a property over signals and updates', () => {
  it('R1.11 random payloads to every signal and update of a live conversation: no workflow task fails, every real message is answered', async () => {
    const task = 'fuzz conversation';
    h.model.add({ name: 'fuzz conv', when: userSays(task), reply: { text: 'answered' }, times: 1000 });
    const id = h.id('fuzz-conv');
    await h.deputy.startRun(
      { task, mode: 'conversation', idleTimeoutSeconds: 120, limits: { maxTurns: 200 } },
      { workflowId: id },
    );
    await untilStatus(h.client, id, 'waiting_for_user');
    await answersThrough(id, task, 60);
    await h.deputy.endConversation(id);
    expect((await h.deputy.result(id)).status).toBe('completed');
    expect(await failedWorkflowTasks(h.client, id)).toEqual([]);
  }, 300_000);

  it('R1.11 random payloads to a live delegating parent and its child at work: no workflow task fails, every real message is answered', async () => {
    const task = 'fuzz parent';
    const brief = 'fuzz child: take your time';
    h.model.add(
      {
        name: 'fuzz dispatch',
        when: (r) => userSays(task)(r) && lastMessage(r) === task,
        reply: delegateReply({ briefs: [{ task_name: 'worker', message: brief, wait: false }] }),
      },
      { name: 'fuzz child', when: (r) => lastMessage(r).endsWith(brief), reply: { hang: true } },
      { name: 'fuzz parent', when: userSays(task), reply: { text: 'still here' }, times: 1000 },
    );
    const id = h.id('fuzz-parent');
    const child = `${id}/worker-1`;
    await h.deputy.startRun(
      { task, mode: 'conversation', scopes: PARENT_SCOPES, limits: { maxTurns: 200 } },
      { workflowId: id },
    );
    await expect.poll(() => h.model.requests.some((r) => r.rule === 'fuzz child'), { timeout: 15_000 }).toBe(true);
    await fc.assert(
      fc.asyncProperty(sending(child), async (batch) => fire(child, batch)),
      { numRuns: 30, seed: 20261202 },
    );
    await answersThrough(id, task, 30);
    expect((await h.client.workflow.getHandle(child).describe()).status.name).toBe('RUNNING');
    await h.deputy.endConversation(id);
    expect((await h.deputy.result(id)).status).toBe('completed');
    for (const run of [id, child]) expect(await failedWorkflowTasks(h.client, run)).toEqual([]);
  }, 300_000);
});
