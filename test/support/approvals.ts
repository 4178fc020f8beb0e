/**
 * What the approval tests share: tools with side effects that count their real runs, a config that asks approval of
 * them, and a tree (root, child, grandchild) whose calls can wait anywhere.
 */
import { z } from 'zod';
import { defineTool, type ToolDefinition } from '../../src/contract/tools.js';
import { builtinTools } from '../../activities/builtin-tools.js';
import type { DeputyConfig } from '../../src/config/schema.js';
import { RunState } from '../../src/contract/run.js';
import { testConfig, useHarness } from './harness.js';
import { PARENT_SCOPES } from './delegation.js';

/** Every run of a side-effecting tool, as it really happened (the worker runs in this process). */
export const effects: { tool: string; args: unknown; runId: string }[] = [];

export const sendEmail = defineTool({
  name: 'send_email',
  description: 'Sends an email.',
  parameters: z.object({ to: z.string(), body: z.string() }),
  scopes: ['tools.calc'],
  async execute(args, { runId }) {
    effects.push({ tool: 'send_email', args, runId });
    return `sent to ${args.to}`;
  },
});

export const payInvoice = defineTool({
  name: 'pay_invoice',
  description: 'Pays an invoice.',
  parameters: z.object({ invoice: z.string(), amount: z.number() }),
  scopes: ['tools.calc'],
  async execute(args, { runId }) {
    effects.push({ tool: 'pay_invoice', args, runId });
    return `paid ${args.amount}`;
  },
});

/** A send that takes 4 s (cut short when its activity is): what a call approved close to the deadline does. */
export const slowSend = defineTool({
  name: 'slow_send',
  description: 'Sends slowly.',
  parameters: z.object({ to: z.string() }),
  scopes: ['tools.calc'],
  async execute(args, { runId, signal }) {
    await new Promise((resolve) => setTimeout(resolve, 4000));
    if (!signal.aborted) effects.push({ tool: 'slow_send', args, runId });
    return `sent slowly to ${args.to}`;
  },
});

export const APPROVAL_TOOLS: ToolDefinition[] = [...builtinTools(), sendEmail, payInvoice, slowSend];

/** Approval of every email, of payments above 100, of delegations reserving more than $0.02. */
export function approvalConfig(approvals: Record<string, unknown> = {}): DeputyConfig {
  return testConfig({
    grantableScopes: PARENT_SCOPES,
    presets: [
      { id: 'assistant', persona: 'You act.', tools: ['calculate', 'send_email', 'pay_invoice', 'slow_send'] },
      { id: 'mailer', persona: 'You write mail.', tools: ['send_email'] },
    ],
    delegation: {
      enabled: true,
      activation: 'unconditional',
      maxDepth: 2,
      childDefaults: { maxTurns: 6, maxTokens: 20_000, maxCostUsd: 0.01, maxToolCalls: 5 },
    },
    approvals: {
      tools: {
        send_email: 'always',
        slow_send: 'always',
        pay_invoice: {
          when: { type: 'object', properties: { amount: { exclusiveMinimum: 100 } }, required: ['amount'] },
        },
      },
      delegationAboveUsd: 0.02,
      ...approvals,
    },
  });
}

/** Starts the worker before the calling file's tests; a run's state, its `DeputyStatus`, waiting until a check holds. */
export function useApprovalHarness(config: DeputyConfig = approvalConfig()) {
  const h = useHarness({ config, tools: APPROVAL_TOOLS });
  const state = async (id: string) => RunState.parse(await h.deputy.getState(id));
  const listedStatus = async (id: string) =>
    (await h.client.workflow.getHandle(id).describe()).searchAttributes.DeputyStatus?.[0] as string | undefined;
  return { h, state, listedStatus };
}

/** Polls `read` until `done` holds (20 s at most), returning the last value read. */
export async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  const end = Date.now() + 20_000;
  for (;;) {
    const value = await read().catch(() => undefined);
    if (value !== undefined && done(value)) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; last read: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
}

/** A scripted reply that calls one tool. */
export const call = (name: string, args: unknown) => ({ toolCalls: [{ name, arguments: args }] });
