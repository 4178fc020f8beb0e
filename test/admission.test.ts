/**
 * Tenant admission (R5.4): a tenant's cap on live children holds across all of its runs, enforced by its durable
 * admission workflow: never more children live than the cap, every child eventually runs, a slot comes back however
 * its child ended (a terminated parent included), and a child that gets no slot before its deadline fails its brief
 * with a clear tool error.
 */
import { describe, expect, it } from 'vitest';
import { admissionStateQuery } from '../src/contract/messages.js';
import { RunState } from '../src/contract/run.js';
import { lastMessage, toolMessages, userSays } from '../src/testing/script.js';
import { TWO_ARM } from './support/evidence.js';
import {
  delegateReply,
  delegationConfig,
  DELEGATION_TOOLS,
  isSummaryCall,
  PARENT_SCOPES,
} from './support/delegation.js';
import { useHarness } from './support/harness.js';

const CAP = 2;
const evidence = [TWO_ARM];
const tenant = `adm-${Math.random().toString(36).slice(2, 8)}`;
const h = useHarness({
  config: {
    ...delegationConfig(),
    tenants: { [tenant]: { evidence, maxLiveChildren: CAP, admissionSweepSeconds: 1 } },
  },
  tools: DELEGATION_TOOLS,
});

const admission = () => h.client.workflow.getHandle(`deputy-admission-${tenant}`);
const slots = () => admission().query(admissionStateQuery);

/** The children whose slots a parent gave back, read from the release signals in the admission workflow's history. */
async function releasedSlots(): Promise<string[]> {
  const history = await admission().fetchHistory();
  return (history.events ?? []).flatMap((event) => {
    const signal = event.workflowExecutionSignaledEventAttributes;
    const data = signal?.signalName === 'deputy.admission.release' ? signal.input?.payloads?.[0]?.data : undefined;
    return data
      ? [(JSON.parse(Buffer.from(data).toString('utf8')) as { body: { childWorkflowId: string } }).body.childWorkflowId]
      : [];
  });
}

describe('R5.4 tenant admission', () => {
  it(`R5.4 three runs of one tenant, two children each, cap ${CAP}: never more than ${CAP} live (admission state, Temporal's records, visibility), every child runs`, async () => {
    const tasks = [1, 2, 3].map((n) => `admission run ${n}`);
    for (const task of tasks) {
      h.model.add(
        {
          when: (r) => lastMessage(r) === task,
          reply: delegateReply({
            briefs: [
              { task_name: 'a', message: `${task} child a` },
              { task_name: 'b', message: `${task} child b` },
            ],
          }),
        },
        { when: (r) => userSays(task)(r) && r.body.messages.at(-1)?.role === 'tool', reply: { text: `${task} done` } },
      );
    }
    h.model.add({
      when: (r) => /admission run \d child/.test(lastMessage(r)),
      times: 6,
      delayMs: 700,
      reply: { text: 'child done' },
    });
    const ids = tasks.map((_, i) => h.id(`adm-${i + 1}`));
    const children = ids.flatMap((id) => [`${id}/a-1`, `${id}/b-1`]);
    for (const [i, task] of tasks.entries()) {
      await h.deputy.startRun({ task, scopes: PARENT_SCOPES, tenant }, { workflowId: ids[i]! });
    }
    const results = Promise.all(ids.map((id) => h.deputy.result(id)));
    let done = false;
    void results.finally(() => (done = true));
    const most = { state: 0, described: 0, visible: 0, samples: 0 };
    while (!done) {
      const [state, described, visible] = await Promise.all([
        slots().catch(() => null),
        Promise.all(
          children.map((id) =>
            h.client.workflow
              .getHandle(id)
              .describe()
              .then((d) => d.status.name === 'RUNNING')
              .catch(() => false),
          ),
        ),
        (async () => {
          let n = 0;
          const query = `DeputyTenant = '${tenant}' AND DeputyDepth = 1 AND ExecutionStatus = 'Running'`;
          for await (const _ of h.client.workflow.list({ query })) n += 1;
          return n;
        })(),
      ]);
      most.state = Math.max(most.state, state?.holders.length ?? 0);
      most.described = Math.max(most.described, described.filter(Boolean).length);
      most.visible = Math.max(most.visible, visible);
      most.samples += 1;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect((await results).map((r) => [r.status, r.output])).toEqual(tasks.map((t) => ['completed', `${t} done`]));
    // Three runs asked for six children at once: the cap was reached, and never passed.
    expect(most).toMatchObject({ state: CAP, described: CAP });
    expect(most.visible).toBeLessThanOrEqual(CAP);
    expect(most.samples).toBeGreaterThan(10);
    for (const id of ids) {
      const state = RunState.parse(await h.deputy.getState(id));
      expect(state.delegations.map((d) => d.status)).toEqual(['completed', 'completed']);
    }
    // Children under admission start at a lower priority than interactive runs.
    const started = (await h.client.workflow.getHandle(children[0]!).fetchHistory()).events![0]!;
    expect(started.workflowExecutionStartedEventAttributes?.priority?.priorityKey).toBe(4);
    // Every slot came back, each given back by its parent when its child ended (not left to the sweep).
    await expect.poll(async () => (await slots()).holders).toEqual([]);
    expect((await releasedSlots()).sort()).toEqual([...children].sort());
    expect((await slots()).waiting).toEqual([]);
  });

  it('R5.4 a child with no slot before its deadline fails its brief clearly, its summary never written or paid for; a terminated parent leaks no slot', async () => {
    h.model.add(
      {
        when: (r) => lastMessage(r) === 'admission hog',
        reply: delegateReply({
          briefs: [
            { task_name: 'h1', message: 'hog child h1' },
            { task_name: 'h2', message: 'hog child h2' },
          ],
        }),
      },
      { name: 'hog', when: userSays('hog child'), times: 2, reply: { hang: true } },
      {
        when: (r) => lastMessage(r) === 'admission late',
        reply: delegateReply({
          briefs: [
            {
              task_name: 'late',
              message: 'late child',
              // The slot is asked for before the background is written: a child with none costs no summary.
              context: 'summary',
              limits: { deadline: new Date(Date.now() + 8_000).toISOString() },
            },
          ],
        }),
      },
      {
        name: 'late summary',
        when: isSummaryCall,
        reply: { text: 'a background nobody should pay for' },
      },
      {
        name: 'late join',
        when: (r) => userSays('admission late')(r) && r.body.messages.at(-1)?.role === 'tool',
        reply: { text: 'went on without it' },
      },
    );
    const hog = h.id('adm-hog');
    await h.deputy.startRun({ task: 'admission hog', scopes: PARENT_SCOPES, tenant }, { workflowId: hog });
    await expect.poll(async () => (await slots().catch(() => null))?.holders.length, { timeout: 15_000 }).toBe(CAP);
    await expect.poll(() => h.model.requests.filter((r) => r.rule === 'hog').length).toBe(2);

    const late = h.id('adm-late');
    await h.deputy.startRun({ task: 'admission late', scopes: PARENT_SCOPES, tenant }, { workflowId: late });
    await expect.poll(async () => (await slots()).waiting, { timeout: 15_000 }).toEqual([`${late}/late-1`]);
    expect((await h.deputy.getState(late)).delegations[0]!.status).toBe('reserved');
    expect(await h.deputy.result(late)).toMatchObject({ status: 'completed', output: 'went on without it' });
    const [joined] = toolMessages(h.model.requests.find((r) => r.rule === 'late join')!);
    expect(joined).toContain(
      `tenant ${tenant} had all ${CAP} of its live-child slots taken until this child's deadline; it was not started`,
    );
    await expect(h.client.workflow.getHandle(`${late}/late-1`).describe()).rejects.toThrow(/not found/i);
    expect((await slots()).waiting).toEqual([]);
    expect(h.model.requests.filter((r) => r.rule === 'late summary')).toEqual([]);
    expect((await h.deputy.getState(late)).usage.modelCalls).toBe(2);

    // The hog is terminated: it never gives its slots back, its children are cancelled, and the sweep reclaims them.
    await h.client.workflow.getHandle(hog).terminate('test: a parent that never releases');
    await expect.poll(async () => (await slots()).holders, { timeout: 15_000 }).toEqual([]);
  }, 60_000);

  it('R5.4 R2.10 a cancelled parent settles its children cancelled, releases their reservations and gives their slots back itself, not left to the sweep', async () => {
    h.model.add(
      {
        when: (r) => lastMessage(r) === 'admission cancelled',
        reply: delegateReply({
          briefs: [
            { task_name: 'c1', message: 'cancelled child c1' },
            { task_name: 'c2', message: 'cancelled child c2' },
          ],
        }),
      },
      { name: 'cancelled hang', when: userSays('cancelled child'), times: 2, reply: { hang: true } },
    );
    const parent = h.id('adm-cancel');
    await h.deputy.startRun({ task: 'admission cancelled', scopes: PARENT_SCOPES, tenant }, { workflowId: parent });
    await expect
      .poll(() => h.model.requests.filter((r) => r.rule === 'cancelled hang').length, { timeout: 15_000 })
      .toBe(2);
    expect(RunState.parse(await h.deputy.getState(parent)).reserved.tokens).toBeGreaterThan(0);

    await h.deputy.cancel(parent);
    expect((await h.deputy.result(parent)).status).toBe('cancelled');
    const state = RunState.parse(await h.deputy.getState(parent));
    expect(state.delegations.map((d) => [d.taskName, d.status])).toEqual([
      ['c1', 'cancelled'],
      ['c2', 'cancelled'],
    ]);
    expect(state.reserved).toEqual({ tokens: 0, costMicroUsd: 0 });
    const children = [`${parent}/c1-1`, `${parent}/c2-1`];
    await expect
      .poll(async () => (await releasedSlots()).filter((id) => children.includes(id)).sort())
      .toEqual(children);
    await expect.poll(async () => (await slots()).holders.filter((holder) => children.includes(holder))).toEqual([]);
  }, 60_000);
});
