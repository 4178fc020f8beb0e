/**
 * R6.8 `deputy mcp`, driven by the MCP SDK's own client as another agent would: over stdio (the command started as a
 * subprocess) a run is started, its child's question answered, its result read, and another run cancelled; over
 * Streamable HTTP a caller without the token is refused; without a token of its own the server does not start.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { defaultPayloadConverter } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { lastMessage, userSays, type RecordedRequest } from '../src/testing/script.js';
import { narrowLimits } from '../src/cli/mcp-server.js';
import { freePort } from '../src/testing/ports.js';
import { delegateReply, DELEGATION_TOOLS, delegationConfig } from './support/delegation.js';
import { useHarness } from './support/harness.js';
import { parseConfig } from '../src/config/schema.js';

const config = delegationConfig({
  childDefaults: { maxTurns: 6, maxTokens: 40_000, maxCostUsd: 0.05, maxToolCalls: 5 },
});
const withDelegation = parseConfig({
  ...config,
  defaultScopes: ['tools.calc', 'tools.notes', 'run.delegate'],
  // One search waits for approval: the one the approvals test makes.
  approvals: {
    tools: {
      search_notes: { when: { type: 'object', properties: { query: { const: 'mcp approval' } }, required: ['query'] } },
    },
  },
});
const h = useHarness({ config: withDelegation, tools: DELEGATION_TOOLS });

const dir = mkdtempSync(join(tmpdir(), 'deputy-mcp-server-'));
const configPath = join(dir, 'deputy.json');
writeFileSync(configPath, JSON.stringify(withDelegation));
const TOKEN = 'mcp-test-token-9a8b7c';

const serverEnv = (extra: Record<string, string> = {}) => ({
  ...(process.env as Record<string, string>),
  TEMPORAL_ADDRESS: inject('temporalAddress'),
  DEPUTY_TASK_QUEUE: h.taskQueue,
  DEPUTY_CONFIG: configPath,
  DEPUTY_MCP_TOKEN: TOKEN,
  ...extra,
});
const CLI = ['--import', 'tsx', 'src/cli/main.ts', 'mcp'];

type Answer = { structuredContent?: Record<string, unknown>; isError?: boolean };
let mcp: Client;
const call = async (name: string, args: Record<string, unknown>) =>
  (await mcp.callTool({ name, arguments: args })) as Answer;

beforeAll(async () => {
  mcp = new Client({ name: 'test-agent', version: '1' });
  await mcp.connect(
    new StdioClientTransport({ command: process.execPath, args: CLI, env: serverEnv(), stderr: 'pipe' }),
  );
}, 60_000);

afterAll(async () => {
  await mcp?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A request whose dialogue ends with a message starting with `prefix`. */
const endsWith = (task: string, prefix: string) => (r: RecordedRequest) =>
  userSays(task)(r) && lastMessage(r).startsWith(prefix);

describe('R6.8 Deputy as an MCP server', () => {
  it('R6.8 lists run, status, result, answer, approvals, decide and cancel, and the tree as a resource template', async () => {
    const { tools } = await mcp.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'answer',
      'approvals',
      'cancel',
      'decide',
      'result',
      'run',
      'status',
    ]);
    const run = tools.find((t) => t.name === 'run')!;
    // The caller chooses a preset the config defines, and limits; it cannot name scopes or tools.
    expect(Object.keys(run.inputSchema.properties ?? {}).sort()).toEqual(['limits', 'preset', 'task', 'wait_seconds']);
    const { resourceTemplates } = await mcp.listResourceTemplates();
    expect(resourceTemplates.map((t) => t.uriTemplate)).toEqual(['deputy://runs/{runId}/tree']);
  });

  it("R6.8 a run started, its child's question answered, its result read; the tree read as a resource", async () => {
    const task = 'r6.8 mcp: convert the prices';
    h.model.add(
      {
        name: 'mcp dispatch',
        when: (r) => lastMessage(r) === task,
        reply: delegateReply({ briefs: [{ task_name: 'conv', message: 'r6.8 mcp child: convert' }] }),
      },
      {
        name: 'mcp child asks',
        when: (r) => lastMessage(r).endsWith('r6.8 mcp child: convert'),
        reply: { toolCalls: [{ name: 'ask_parent', arguments: { question: 'Which currency?' } }] },
      },
      {
        name: 'mcp parent waits',
        when: endsWith(task, '[question from child conv]'),
        reply: { toolCalls: [{ name: 'wait', arguments: {} }] },
      },
      {
        name: 'mcp child done',
        when: (r) => userSays('r6.8 mcp child: convert')(r) && lastMessage(r).includes('EUR'),
        reply: { text: 'converted to EUR' },
      },
      { name: 'mcp parent done', when: endsWith(task, '[the question'), reply: { text: 'all converted to EUR' } },
    );
    const started = await call('run', { task, wait_seconds: 0, limits: { maxCostUsd: 0.5 } });
    expect(started.isError).toBeFalsy();
    const runId = started.structuredContent!.runId as string;
    expect(runId).toMatch(/^mcp-[0-9a-f-]{36}$/);
    let status: Answer = {};
    for (let i = 0; i < 150; i++) {
      status = await call('status', { run_id: runId });
      const { openQuestions, status: now } = status.structuredContent as { openQuestions: unknown[]; status: string };
      if (openQuestions.length > 0 && now === 'waiting_for_children') break;
      await new Promise((ok) => setTimeout(ok, 100));
    }
    expect(status.structuredContent).toMatchObject({
      runId,
      status: 'waiting_for_children',
      openQuestions: [{ child: 'conv', question: 'Which currency?' }],
    });
    const answered = await call('answer', { run_id: runId, answer: 'EUR' });
    expect(answered.structuredContent).toMatchObject({ runId, child: 'conv' });
    const result = await call('result', { run_id: runId, wait_seconds: 30 });
    expect(result.structuredContent).toMatchObject({ runId, status: 'completed', output: 'all converted to EUR' });
    // 49.10: asked again with the default wait (none), the ended run's result is all there.
    const again = await call('result', { run_id: runId });
    expect(again.structuredContent).toMatchObject({ runId, status: 'completed', output: 'all converted to EUR' });
    expect((again.structuredContent!.usage as { modelCalls: number }).modelCalls).toBeGreaterThan(0);
    // The caller's limit narrowed the config's.
    const started0 = (await h.client.workflow.getHandle(runId).fetchHistory()).events![0]!;
    const input = defaultPayloadConverter.fromPayload<{ limits: Record<string, unknown>; scopes?: string[] }>(
      started0.workflowExecutionStartedEventAttributes!.input!.payloads![0]!,
    );
    expect(input.limits).toMatchObject({ maxCostUsd: 0.5, maxTurns: withDelegation.limits.maxTurns });
    expect(input.scopes).toBeUndefined();
    const tree = await mcp.readResource({ uri: `deputy://runs/${runId}/tree` });
    expect((tree.contents[0] as { text: string }).text).toContain('conv');
  });

  it('R6.8 R7.3 R7.4 a call waiting for approval shows in status and approvals; decide approves it and the run finishes; a decision for no request is refused', async () => {
    const task = 'r7 mcp: look it up';
    h.model.add(
      {
        name: 'mcp search',
        when: (r) => lastMessage(r) === task,
        reply: { toolCalls: [{ name: 'search_notes', arguments: { query: 'mcp approval' } }] },
      },
      {
        name: 'mcp searched',
        when: (r) => userSays(task)(r) && r.body.messages.at(-1)?.role === 'tool',
        reply: { text: 'looked it up' },
      },
    );
    const runId = (await call('run', { task, wait_seconds: 0 })).structuredContent!.runId as string;
    let status: Answer = {};
    for (let i = 0; i < 150 && status.structuredContent?.status !== 'waiting_for_approval'; i++) {
      status = await call('status', { run_id: runId });
      await new Promise((ok) => setTimeout(ok, 100));
    }
    expect(status.structuredContent).toMatchObject({
      runId,
      status: 'waiting_for_approval',
      openApprovals: [{ requestId: 'a1.1', run: runId, tool: 'search_notes', preview: '{"query":"mcp approval"}' }],
    });
    const listed = await call('approvals', { run_id: runId });
    // Each waiting call with its arguments whole: what the caller decides on.
    expect(listed.structuredContent).toMatchObject({
      runId,
      approvals: [{ requestId: 'a1.1', path: runId, arguments: '{"query":"mcp approval"}', argumentsChars: 24 }],
    });
    const none = await call('decide', { run_id: runId, request_id: 'a4.4', decision: 'approve' });
    expect(none.isError).toBe(true);
    expect(none.structuredContent).toEqual({ error: 'decideApproval: no request a4.4 in this run (open here: a1.1)' });
    const decided = await call('decide', { run_id: runId, request_id: 'a1.1', decision: 'approve', reason: 'fine' });
    expect(decided.structuredContent).toEqual({ runId, requestId: 'a1.1', decision: 'approve', by: 'client' });
    const result = await call('result', { run_id: runId, wait_seconds: 30 });
    expect(result.structuredContent).toMatchObject({ runId, status: 'completed', output: 'looked it up' });
    expect((await call('approvals', { run_id: 'run-someone-else' })).isError).toBe(true);
  });

  it('R6.8 another run cancelled through the server ends cancelled', async () => {
    const task = 'r6.8 mcp: hang';
    h.model.add({ name: 'mcp hang', when: (r) => lastMessage(r) === task, reply: { hang: true } });
    const started = await call('run', { task, wait_seconds: 0 });
    const runId = started.structuredContent!.runId as string;
    await h.model.waitFor((rs) => rs.some((r) => r.rule === 'mcp hang'));
    expect((await call('cancel', { run_id: runId })).structuredContent).toEqual({ runId, cancelled: true });
    expect((await call('result', { run_id: runId, wait_seconds: 30 })).structuredContent).toMatchObject({
      runId,
      status: 'cancelled',
    });
  });

  it('R6.8 a caller reaches only runs it started here, names no scope, and its limits only narrow', async () => {
    const other = await call('status', { run_id: 'run-someone-else' });
    expect(other.isError).toBe(true);
    const scoped = await call('run', { task: 'x', scopes: ['admin'] });
    expect(scoped.isError).toBe(true);
    const unknownPreset = await call('run', { task: 'x', preset: 'root-access' });
    expect(unknownPreset.isError).toBe(true);
    const narrowed = narrowLimits(withDelegation, {
      maxTurns: 1_000,
      maxCostUsd: 0.01,
      maxDurationSeconds: 10_000_000,
    });
    expect(narrowed).toMatchObject({ maxTurns: withDelegation.limits.maxTurns, maxCostUsd: 0.01 });
    expect(Date.parse(narrowed.deadline)).toBeLessThanOrEqual(
      Date.now() + withDelegation.limits.maxDurationSeconds * 1000,
    );
  });

  it('R6.8 over Streamable HTTP a caller without the token is refused; with it, served', async () => {
    // A port the system has free now: a random one can be a connection's own (the ephemeral range starts at 32768).
    const port = await freePort();
    const server = spawn(process.execPath, [...CLI, '--http', String(port)], {
      env: serverEnv(),
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    try {
      await new Promise<void>((ok, fail) => {
        server.stderr.on('data', (chunk: Buffer) => chunk.toString().includes('listening') && ok());
        server.on('exit', (code) => fail(new Error(`deputy mcp exited ${code}`)));
      });
      const url = new URL(`http://127.0.0.1:${port}/mcp`);
      const refused = await fetch(url, { method: 'POST', body: '{}', headers: { authorization: 'Bearer wrong' } });
      expect(refused.status).toBe(401);
      const stranger = new Client({ name: 'stranger', version: '1' });
      await expect(stranger.connect(new StreamableHTTPClientTransport(url))).rejects.toThrow();
      const caller = new Client({ name: 'caller', version: '1' });
      await caller.connect(
        new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } }),
      );
      expect((await caller.listTools()).tools).toHaveLength(7);
      await caller.close();
    } finally {
      server.kill('SIGTERM');
    }
  });

  it('R6.8 without a token of its own (or with a short one) the server refuses to start', () => {
    const run = spawnSync(process.execPath, CLI, { env: serverEnv({ DEPUTY_MCP_TOKEN: '' }), encoding: 'utf8' });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('DEPUTY_MCP_TOKEN is not set');
    const short = spawnSync(process.execPath, CLI, { env: serverEnv({ DEPUTY_MCP_TOKEN: 'short' }), encoding: 'utf8' });
    expect(short.status).toBe(2);
    expect(short.stderr).toContain('DEPUTY_MCP_TOKEN is too short');
  });
});
