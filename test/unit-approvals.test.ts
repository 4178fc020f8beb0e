/**
 * The rules of approvals as pure code (R7.1, R7.5): which calls a policy names, what a preset and a parent add, what
 * an MCP server's annotations ask for, and the worker's own check at execution: a call the config names runs only
 * with a decision for exactly its arguments, proven when approvers are configured.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRunTool } from '../activities/run-tool.js';
import { checkProof } from '../activities/approvals.js';
import { ApprovalsConfig } from '../src/contract/approvals.js';
import { defineTool } from '../src/contract/tools.js';
import { approvalDigest, approvalProof } from '../src/ops/approval-proof.js';
import { parseConfig } from '../src/config/schema.js';
import { mergePolicies, resolvePolicy, whyApproval, whyDelegationApproval } from '../src/rules/approvals.js';

const config = (raw: unknown) => ApprovalsConfig.parse(raw);
const AMOUNT_OVER_100 = { type: 'object', properties: { amount: { exclusiveMinimum: 100 } }, required: ['amount'] };

describe('R7.1 which calls a policy names', () => {
  it('R7.1 always, a JSON Schema on the arguments, and nothing for a tool the config does not name', () => {
    const policy = resolvePolicy(config({ tools: { send_email: 'always', pay: { when: AMOUNT_OVER_100 } } }), {}, []);
    expect(whyApproval(policy, 'send_email', '{"to":"a"}')).toBe(
      'the config asks approval of every call of send_email',
    );
    expect(whyApproval(policy, 'pay', '{"amount":50}')).toBeUndefined();
    expect(whyApproval(policy, 'pay', '{"amount":500}')).toMatch(
      /^the config asks approval of pay when its arguments match /,
    );
    expect(whyApproval(policy, 'calculate', '{}')).toBeUndefined();
    // Arguments that are not JSON are checked as the string they are: `always` still holds, a condition decides.
    expect(whyApproval(policy, 'send_email', 'not json')).toBeDefined();
    expect(whyApproval(policy, 'pay', 'not json')).toBeUndefined();
    // A tool named like an inherited key is not a rule.
    expect(whyApproval(policy, 'constructor', '{}')).toBeUndefined();
  });

  it('R7.1 an MCP tool annotated destructive needs approval unless the config says never; a preset adds, never removes', () => {
    const tools = [
      { name: 'files_delete', destructive: true },
      { name: 'files_wipe', destructive: true },
      { name: 'files_read', destructive: false },
    ];
    const policy = resolvePolicy(
      config({ tools: { files_wipe: 'never' } }),
      { approvals: { files_read: 'always' } },
      tools,
    );
    expect(Object.keys(policy!.tools).sort()).toEqual(['files_delete', 'files_read']);
    expect(resolvePolicy(undefined, {}, [{ name: 'files_read' }])).toBeUndefined();
    // A preset cannot say never: its rules are always or a condition.
    expect(() => parseConfig({ presets: [{ id: 'assistant', approvals: { send_email: 'never' } }] })).toThrow();
  });

  it('R7.1 a child needs every approval its parent needs: the merge keeps both sides, the lower threshold, the shorter wait, deny', () => {
    const parent = resolvePolicy(
      config({ tools: { send_email: 'always' }, delegationAboveUsd: 0.5, timeoutSeconds: 600, onTimeout: 'deny' }),
      {},
      [],
    );
    const child = resolvePolicy(
      config({
        tools: { pay: { when: AMOUNT_OVER_100 } },
        delegationAboveUsd: 2,
        timeoutSeconds: 60,
        onTimeout: 'approve',
      }),
      {},
      [],
    );
    const merged = mergePolicies(child, parent)!;
    expect(Object.keys(merged.tools).sort()).toEqual(['pay', 'send_email']);
    expect(merged).toMatchObject({ delegationAboveUsd: 0.5, timeoutSeconds: 60, onTimeout: 'deny' });
    expect(mergePolicies(undefined, parent)).toBe(parent);
    expect(whyDelegationApproval(merged, 0.5)).toBeUndefined();
    expect(whyDelegationApproval(merged, 0.51)).toBe(
      'this delegation would reserve $0.5100 for its children, above approvals.delegationAboveUsd ($0.5)',
    );
  });

  it('R7.5 R7.6 the config refuses onTimeout approve with approvers, and a short approver key', () => {
    expect(() =>
      parseConfig({ approvals: { onTimeout: 'approve', approvers: [{ id: 'ops', key: 'k'.repeat(40) }] } }),
    ).toThrow(/onTimeout: "approve" cannot stand with approvers/);
    expect(() => parseConfig({ approvals: { approvers: [{ id: 'ops', key: 'short' }] } })).toThrow(/at least 32/);
  });
});

describe('R7.4 R7.5 the worker checks a decision again when the call runs', () => {
  const ran: unknown[] = [];
  const sendEmail = defineTool({
    name: 'send_email',
    description: 'Sends an email.',
    parameters: z.object({ to: z.string() }),
    scopes: [],
    async execute(args) {
      ran.push(args);
      return 'sent';
    },
  });
  const KEY = 'ops-key-0123456789abcdef0123456789';
  const approvals = config({ tools: { send_email: 'always' }, approvers: [{ id: 'ops', key: KEY }] });
  const runTool = createRunTool(new Map([['send_email', sendEmail]]), { approvals: () => approvals });
  const call = { id: 'c1', name: 'send_email', arguments: '{"to":"board@example.com"}' };
  const input = { grant: 'g', runId: 'run-1', call, allowedTools: ['send_email'], scopes: [] };
  const digest = approvalDigest(call);
  const proof = approvalProof(KEY, { runId: 'run-1', requestId: 'a1.1', decision: 'approve', digest });

  it('R7.4 a call the config names carries no decision: not run', async () => {
    expect(await runTool(input)).toEqual({
      isError: true,
      content:
        'not run: the config asks approval of every call of send_email, and this call carries no decision; it runs only once approved',
    });
    expect(ran).toEqual([]);
  });

  it('R7.4 arguments other than those approved: not run', async () => {
    const swapped = { ...call, arguments: '{"to":"everyone@example.com"}' };
    expect(
      await runTool({ ...input, call: swapped, approval: { requestId: 'a1.1', digest, approver: 'ops', proof } }),
    ).toEqual({
      isError: true,
      content: 'not run: the arguments of this call of "send_email" are not those approved in request a1.1',
    });
    expect(ran).toEqual([]);
  });

  it('R7.5 a proof by another key, or of a denial, does not run it', async () => {
    const forged = approvalProof('x'.repeat(40), { runId: 'run-1', requestId: 'a1.1', decision: 'approve', digest });
    const denial = approvalProof(KEY, { runId: 'run-1', requestId: 'a1.1', decision: 'deny', digest });
    for (const bad of [forged, denial]) {
      const result = await runTool({ ...input, approval: { requestId: 'a1.1', digest, approver: 'ops', proof: bad } });
      expect(result.content).toBe(
        "not run: the approval of request a1.1 does not check out: the proof is not ops's for approve of request a1.1 of run run-1 with these arguments",
      );
    }
    // (the approver's own proof runs it: test/approvals-authority.test.ts, on a real worker)
    expect(ran).toEqual([]);
  });
});

describe('R7.5 an approver key read from the worker’s environment', () => {
  it('R7.5 a key in { env } checks a proof while it is set; unset or short, the decision is refused naming where the key should be, never the key', () => {
    const approvers = [{ id: 'ops', key: { env: 'DEPUTY_TEST_OPS_KEY' } }];
    const key = 'env-approver-key-0123456789abcdef0123';
    const decision = { requestId: 'a1.1', decision: 'approve' as const, digest: 'd'.repeat(64), approver: 'ops' };
    const proof = approvalProof(key, { runId: 'run-1', ...decision });
    delete process.env.DEPUTY_TEST_OPS_KEY;
    expect(checkProof(approvers, 'run-1', { ...decision, proof })).toEqual({
      ok: false,
      reason:
        'approver "ops"\'s key (DEPUTY_TEST_OPS_KEY) is missing or shorter than 32 characters on this worker; the operator must set it',
    });
    process.env.DEPUTY_TEST_OPS_KEY = key;
    try {
      expect(checkProof(approvers, 'run-1', { ...decision, proof })).toEqual({ ok: true });
      expect(checkProof(approvers, 'run-2', { ...decision, proof }).ok).toBe(false);
    } finally {
      delete process.env.DEPUTY_TEST_OPS_KEY;
    }
  });
});
