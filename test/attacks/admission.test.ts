/**
 * Attacks on tenant admission (item 3 of the threat model, docs/security.md): a client that starts the tenant's
 * admission workflow itself with a cap of its choosing, asks for a slot with an unsigned signal, tells a waiting
 * parent it was admitted, or gives a slot back for a parent it is not.
 */
import { describe, expect, it } from 'vitest';
import { admissionStateQuery } from '../../src/contract/messages.js';
import { RunState } from '../../src/contract/run.js';
import { lastMessage, userSays } from '../../src/testing/script.js';
import { TWO_ARM } from '../support/evidence.js';
import { delegateReply, delegationConfig, DELEGATION_TOOLS, PARENT_SCOPES } from '../support/delegation.js';
import { useHarness } from '../support/harness.js';
import { failedWorkflowTasks, temporalCli } from './support.js';

const evidence = [TWO_ARM];
const tenant = `atk-${Math.random().toString(36).slice(2, 8)}`;
const h = useHarness({
  config: {
    ...delegationConfig(),
    tenants: {
      [tenant]: { evidence, maxLiveChildren: 1, admissionSweepSeconds: 30 },
      [`${tenant}-b`]: { evidence, maxLiveChildren: 1, admissionSweepSeconds: 30 },
    },
  },
  tools: DELEGATION_TOOLS,
});

const admissionId = `deputy-admission-${tenant}`;
const slots = () => h.client.workflow.getHandle(admissionId).query(admissionStateQuery);
const forgedSig = 'k1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';

describe('attacks on tenant admission', () => {
  it('R1.11 R5.4 attack 3: an admission workflow started by a caller keeps the config cap; forged acquire, admitted and release signals change nothing', async () => {
    // The attacker starts the tenant's admission workflow first, with a cap of 100 and an unsigned acquire.
    await h.client.workflow.signalWithStart('tenantAdmission', {
      workflowId: admissionId,
      taskQueue: `${h.taskQueue}-bg`,
      args: [{ tenant, cap: 100, sweepSeconds: 30 }],
      signal: 'deputy.admission.acquire',
      signalArgs: [
        { from: 'mallory', to: admissionId, id: 'acquire:x', body: { childWorkflowId: 'mallory/x-1' }, sig: forgedSig },
      ],
    });
    await expect.poll(async () => (await slots().catch(() => null))?.cap, { timeout: 15_000 }).toBe(1);
    expect((await slots()).waiting).toEqual([]);

    // A real parent takes the one slot with a child that hangs; a second parent waits for it.
    h.model.add(
      {
        when: (r) => lastMessage(r) === 'atk hog',
        reply: delegateReply({ briefs: [{ task_name: 'h1', message: 'atk hog child' }] }),
      },
      { name: 'atk hog child', when: userSays('atk hog child'), reply: { hang: true } },
      {
        when: (r) => lastMessage(r) === 'atk late',
        reply: delegateReply({ briefs: [{ task_name: 'late', message: 'atk late child' }] }),
      },
    );
    const hog = h.id('atk-hog');
    await h.deputy.startRun({ task: 'atk hog', scopes: PARENT_SCOPES, tenant }, { workflowId: hog });
    await expect.poll(async () => (await slots()).holders, { timeout: 15_000 }).toEqual([`${hog}/h1-1`]);
    const late = h.id('atk-late');
    const waiting = `${late}/late-1`;
    await h.deputy.startRun({ task: 'atk late', scopes: PARENT_SCOPES, tenant }, { workflowId: late });
    await expect.poll(async () => (await slots()).waiting, { timeout: 15_000 }).toEqual([waiting]);

    // Forged: "admitted" to the waiting parent, a release of the hog's slot, an acquire with a huge cap.
    await h.client.workflow.getHandle(late).signal('deputy.admitted', {
      from: admissionId,
      to: late,
      id: `admitted:${waiting}`,
      body: { childWorkflowId: waiting },
      sig: forgedSig,
    });
    await h.client.workflow.getHandle(admissionId).signal('deputy.admission.release', {
      from: hog,
      to: admissionId,
      id: `release:${hog}/h1-1`,
      body: { childWorkflowId: `${hog}/h1-1` },
      sig: forgedSig,
    });
    await h.client.workflow.getHandle(admissionId).signal('deputy.admission.acquire', null);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await slots()).toMatchObject({ cap: 1, holders: [`${hog}/h1-1`], waiting: [waiting] });
    expect(RunState.parse(await h.deputy.getState(late)).delegations[0]!.status).toBe('reserved');
    await expect(h.client.workflow.getHandle(waiting).describe()).rejects.toThrow(/not found/i);
    expect(await failedWorkflowTasks(h.client, admissionId)).toEqual([]);

    await h.client.workflow.getHandle(late).terminate('test over');
    await h.client.workflow.getHandle(hog).terminate('test over');
  });

  it('R1.11 R5.4 attack 53: an admission workflow started for another tenant’s id with {"tenant":"ghost","cap":100} keeps the tenant’s cap of 1', async () => {
    const victim = `${tenant}-b`;
    const squatted = `deputy-admission-${victim}`;
    const started = await temporalCli(
      'workflow',
      'start',
      '--type',
      'tenantAdmission',
      '--task-queue',
      `${h.taskQueue}-bg`,
      '--workflow-id',
      squatted,
      '--input',
      JSON.stringify({ tenant: 'ghost', cap: 100, sweepSeconds: 30 }),
    );
    expect(started.status, started.output).toBe(0);
    const state = () => h.client.workflow.getHandle(squatted).query(admissionStateQuery);
    await expect.poll(async () => (await state().catch(() => null))?.tenant, { timeout: 15_000 }).toBe(victim);
    expect((await state()).cap).toBe(1);

    // Three children of the victim's runs at once: one live at a time, whatever the squatter's input said.
    h.model.add(
      {
        when: (r) => lastMessage(r) === 'atk squat',
        reply: delegateReply({ briefs: [{ task_name: 's1', message: 'atk squat child' }] }),
        times: 3,
      },
      { name: 'atk squat child', when: userSays('atk squat child'), reply: { hang: true }, times: 3 },
    );
    const parents = [1, 2, 3].map((n) => h.id(`atk-squat-${n}`));
    for (const id of parents)
      await h.deputy.startRun({ task: 'atk squat', scopes: PARENT_SCOPES, tenant: victim }, { workflowId: id });
    await expect.poll(async () => (await state()).waiting.length, { timeout: 15_000 }).toBe(2);
    expect((await state()).holders).toHaveLength(1);
    expect(await failedWorkflowTasks(h.client, squatted)).toEqual([]);
    for (const id of parents) await h.client.workflow.getHandle(id).terminate('test over');
  });
});
