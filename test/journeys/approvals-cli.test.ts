/**
 * Approvals from the command line (R7.3, R7.4, R7.5): `deputy approvals <root>` lists what waits, `deputy approve`
 * and `deputy deny` decide it from the root, with the proof made from a key in the environment.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { lastMessage, toolMessages, userSays } from '../../src/testing/script.js';
import { createHarness, type Harness } from '../support/harness.js';
import { testKeyRing } from '../support/worker-process.js';
import { APPROVAL_TOOLS, approvalConfig, call, effects, until } from '../support/approvals.js';
import { finished, npmRun, type Command } from './support.js';

const KEY = 'cli-approver-key-0123456789abcdef0123';
const started: Command[] = [];
let harness: Harness;

beforeAll(async () => {
  harness = await createHarness();
  await harness.startWorker({
    config: approvalConfig({ approvers: [{ id: 'ops', key: KEY }] }),
    tools: APPROVAL_TOOLS,
  });
});
afterAll(async () => {
  for (const command of started) command.kill();
  await harness?.close();
});

async function deputy(args: string[], env: NodeJS.ProcessEnv = {}) {
  const command = npmRun('deputy', args, {
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    DEPUTY_TASK_QUEUE: harness.taskQueue,
    ...testKeyRing(),
    ...env,
  });
  started.push(command);
  const code = await finished(command, 60_000);
  return { code, out: command.output().trim() };
}

describe('R7.3 R7.4 deputy approvals, approve and deny', () => {
  it('R7.3 R7.4 R7.5 approvals lists the request; approve without a proof is refused in one line; with --key-env it approves; the call runs once', async () => {
    const task = 'cli-approve: email the auditors';
    harness.model.add(
      { when: (r) => lastMessage(r) === task, reply: call('send_email', { to: 'audit@example.com', body: 'books' }) },
      {
        when: (r) => userSays(task)(r) && r.body.messages.at(-1)?.role === 'tool',
        reply: (r) => ({ text: `done: ${toolMessages(r).at(-1)}` }),
      },
    );
    const id = harness.id('cli-approve');
    await harness.deputy.startRun({ task }, { workflowId: id });
    await until(
      () => harness.deputy.approvals(id),
      (list) => list.length === 1,
      'the request',
    );

    const listed = await deputy(['approvals', id]);
    expect(listed.code, listed.out).toBe(0);
    // A block per request, its arguments whole.
    expect(listed.out.split('\n')).toEqual([
      `1 approval request open under ${id} (decide with deputy approve|deny ${id} <request>):`,
      '',
      expect.stringMatching(new RegExp(`^a1\\.1  send_email  in ${id}  until \\S+$`)),
      `  where: ${id}`,
      '  why: the config asks approval of every call of send_email',
      '  arguments (whole, 41 characters): {"to":"audit@example.com","body":"books"}',
    ]);

    const unproven = await deputy(['approve', id, 'a1.1', '--approver', 'ops']);
    expect(unproven.code).toBe(1);
    expect(unproven.out).toBe(
      'deputy: approve a1.1: decideApproval: this run takes decisions only with approver and proof (approvals.approvers is configured)',
    );
    const noKey = await deputy(['approve', id, 'a1.1', '--approver', 'ops', '--key-env', 'DEPUTY_TEST_NO_SUCH_KEY']);
    expect(noKey.code).toBe(2);
    expect(noKey.out).toBe(
      "deputy: --key-env DEPUTY_TEST_NO_SUCH_KEY: the environment has no DEPUTY_TEST_NO_SUCH_KEY; export the approver's key there",
    );

    const approved = await deputy(['approve', id, 'a1.1', '--approver', 'ops', '--key-env', 'OPS_KEY'], {
      OPS_KEY: KEY,
    });
    expect(approved.code, approved.out).toBe(0);
    expect(approved.out).toBe('a1.1 approved by ops');
    expect((await harness.deputy.result(id)).output).toBe('done: sent to audit@example.com');
    expect(effects.filter((e) => e.runId === id)).toHaveLength(1);
    expect((await deputy(['approvals', id])).out).toBe(`no approval request is open under ${id}`);
    const late = await deputy(['deny', id, 'a1.1', '--approver', 'ops', '--key-env', 'OPS_KEY'], { OPS_KEY: KEY });
    expect(late.code).toBe(1);
    expect(late.out).toBe(`deputy: deny a1.1: invalid decideApproval: requestId: no open request a1.1 under ${id}`);
  });
});
