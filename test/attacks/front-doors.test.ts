/**
 * Attacks on `deputy mcp`, the front door for callers outside the namespace (items 22 and 23 of the threat model,
 * docs/security.md): a caller of one tenant reaching another's runs by their ids, or a run started in the namespace
 * under an id that looks like the server's; and a caller holding the server's waits until it runs out of them.
 * Driven over Streamable HTTP by the MCP SDK's own client, as another team's agent would.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { defaultPayloadConverter } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { lastMessage } from '../../src/testing/script.js';
import { freePort } from '../../src/testing/ports.js';
import { PROJECT_ROOT } from '../../src/testing/temporal-cli.js';
import { testConfig, useHarness } from '../support/harness.js';

const config = testConfig();
const h = useHarness({ config });
const dir = mkdtempSync(join(tmpdir(), 'deputy-front-doors-'));
const ALICE = 'alice-token-5f1e9d2c7b';
const BOB = 'bob-token-8a3c6e0f4d21';
const MAX_WAITS = 4;
const PER_CALLER = 3;
let server: ChildProcess;
let url: URL;

type Answer = { structuredContent?: Record<string, unknown>; isError?: boolean; content?: { text?: string }[] };

async function caller(token: string) {
  const client = new Client({ name: `caller-${token.slice(0, 5)}`, version: '1' });
  await client.connect(
    new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
  );
  return {
    call: async (name: string, args: Record<string, unknown>) =>
      (await client.callTool({ name, arguments: args }, undefined, { timeout: 700_000 })) as Answer,
    close: () => client.close(),
  };
}

/** The tenant a run was started with, as its start input recorded it. */
async function startedTenant(runId: string): Promise<unknown> {
  const history = await h.client.workflow.getHandle(runId).fetchHistory();
  const [payload] = history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads!;
  return defaultPayloadConverter.fromPayload<{ tenant?: string }>(payload!).tenant;
}

beforeAll(async () => {
  const configPath = join(dir, 'deputy.json');
  writeFileSync(configPath, JSON.stringify(config));
  const port = await freePort();
  url = new URL(`http://127.0.0.1:${port}/mcp`);
  server = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'mcp', '--http', String(port)], {
    cwd: PROJECT_ROOT,
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      DEPUTY_TASK_QUEUE: h.taskQueue,
      DEPUTY_CONFIG: configPath,
      DEPUTY_MCP_TOKEN: '',
      DEPUTY_MCP_TOKENS: `alice=${ALICE},bob=${BOB}`,
      DEPUTY_MCP_MAX_WAITS: String(MAX_WAITS),
      DEPUTY_MCP_MAX_WAITS_PER_CALLER: String(PER_CALLER),
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  await new Promise<void>((ok, fail) => {
    server.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (stderr.includes('listening')) ok();
    });
    server.on('exit', (code) => fail(new Error(`deputy mcp exited ${code}: ${stderr}`)));
  });
}, 60_000);

afterAll(() => {
  server?.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
});

describe('attacks on the front doors', () => {
  it("R6.9 attack 22: a caller reaches only the runs its own token started — not another tenant's, not one whose id merely looks like the server's", async () => {
    const task = 'attack 22: alice hangs';
    h.model.add({ name: task, when: (r) => lastMessage(r) === task, reply: { hang: true }, times: 2 });
    const alice = await caller(ALICE);
    const bob = await caller(BOB);
    try {
      const started = await alice.call('run', { task, wait_seconds: 0 });
      const runId = started.structuredContent!.runId as string;
      expect(await startedTenant(runId)).toBe('alice');
      // A run started in the namespace under an id of the server's shape: no caller started it here.
      const planted = `mcp-${randomUUID()}`;
      await h.client.workflow.start('agentRun', {
        taskQueue: h.taskQueue,
        workflowId: planted,
        args: [{ task, tenant: 'alice' }],
      });
      for (const [who, id] of [
        [bob, runId],
        [alice, planted],
      ] as const) {
        for (const [tool, args] of [
          ['status', {}],
          ['result', { wait_seconds: 0 }],
          ['answer', { answer: 'forged' }],
          ['cancel', {}],
        ] as const) {
          const answer = await who.call(tool, { run_id: id, ...args });
          expect(answer.isError, `${tool} ${id}`).toBe(true);
          expect(answer.structuredContent).toEqual({ error: `no run ${id} was started by this caller` });
        }
      }
      await expect(bob.call('status', { run_id: runId })).resolves.toMatchObject({ isError: true });
      expect((await h.client.workflow.getHandle(runId).describe()).status.name).toBe('RUNNING');
      expect((await h.client.workflow.getHandle(planted).describe()).status.name).toBe('RUNNING');
      // Its own run it reaches.
      expect((await alice.call('status', { run_id: runId })).structuredContent).toMatchObject({ runId });
      expect((await alice.call('cancel', { run_id: runId })).structuredContent).toEqual({ runId, cancelled: true });
      await h.client.workflow.getHandle(planted).cancel();
    } finally {
      await alice.close();
      await bob.close();
    }
  });

  it(`R6.9 attack 23: waits of 600 s at once hold ${PER_CALLER} places of a caller and ${MAX_WAITS} of the server's; the rest answer at once, and the places come back`, async () => {
    const task = 'attack 23: a run to wait on';
    h.model.add({ name: task, when: (r) => lastMessage(r) === task, reply: { hang: true }, times: 3 });
    const alice = await caller(ALICE);
    const bob = await caller(BOB);
    try {
      const runId = (await alice.call('run', { task, wait_seconds: 0 })).structuredContent!.runId as string;
      const waits = Array.from({ length: 10 }, () => alice.call('result', { run_id: runId, wait_seconds: 600 }));
      const answered: Answer[] = [];
      for (const wait of waits) void wait.then((answer) => answered.push(answer));
      await expect.poll(() => answered.length, { timeout: 20_000 }).toBe(10 - PER_CALLER);
      for (const answer of answered) {
        expect(answer.structuredContent).toMatchObject({
          runId,
          waited: false,
          note: `this caller already holds ${PER_CALLER} waits, its most; ask again with result later`,
        });
      }
      // Another caller takes what is left of the server's places, and no more.
      const bobs = (await bob.call('run', { task, wait_seconds: 0 })).structuredContent!.runId as string;
      const bobWaits = Array.from({ length: 2 }, () => bob.call('result', { run_id: bobs, wait_seconds: 600 }));
      const bobAnswered: Answer[] = [];
      for (const wait of bobWaits) void wait.then((answer) => bobAnswered.push(answer));
      await expect.poll(() => bobAnswered.length, { timeout: 20_000 }).toBe(1);
      expect(bobAnswered[0]!.structuredContent).toMatchObject({
        runId: bobs,
        waited: false,
        note: `this server already holds ${MAX_WAITS} waits; ask again with result later`,
      });
      await alice.call('cancel', { run_id: runId });
      await bob.call('cancel', { run_id: bobs });
      const all = await Promise.all(waits);
      expect(all.filter((answer) => answer.structuredContent!.status === 'cancelled')).toHaveLength(PER_CALLER);
      await Promise.all(bobWaits);
      // The places were given back: a wait on another run is held again until its time is up.
      const next = (await alice.call('run', { task, wait_seconds: 0 })).structuredContent!.runId as string;
      const held = (await alice.call('result', { run_id: next, wait_seconds: 2 })).structuredContent!;
      expect(held).toMatchObject({ runId: next, status: 'running' });
      expect(held).not.toHaveProperty('waited');
      await alice.call('cancel', { run_id: next });
    } finally {
      await alice.close();
      await bob.close();
    }
  });

  it(`R6.9 attack 56: a caller that opens ${PER_CALLER} waits of 600 s and disconnects gives them back at once`, async () => {
    const task = 'attack 56: a run to wait on';
    h.model.add({ name: task, when: (r) => lastMessage(r) === task, reply: { hang: true } });
    const first = await caller(ALICE);
    const runId = (await first.call('run', { task, wait_seconds: 0 })).structuredContent!.runId as string;
    const waits = Array.from({ length: PER_CALLER }, () =>
      first.call('result', { run_id: runId, wait_seconds: 600 }).catch(() => null),
    );
    // Once every place of the caller is held (each wait first reads the run), one more answers at once.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const over = await first.call('result', { run_id: runId, wait_seconds: 1 });
    expect(over.structuredContent).toMatchObject({ waited: false });
    await first.close();
    await Promise.all(waits);
    // The same caller, connected again: its places are free, so a wait is held until its time is up.
    const again = await caller(ALICE);
    try {
      await expect
        .poll(async () => (await again.call('result', { run_id: runId, wait_seconds: 1 })).structuredContent, {
          timeout: 10_000,
        })
        .not.toHaveProperty('waited');
      const held = await Promise.all(
        Array.from({ length: PER_CALLER }, () => again.call('result', { run_id: runId, wait_seconds: 2 })),
      );
      for (const answer of held) expect(answer.structuredContent).toMatchObject({ runId, status: 'running' });
      for (const answer of held) expect(answer.structuredContent).not.toHaveProperty('waited');
      await again.call('cancel', { run_id: runId });
    } finally {
      await again.close();
    }
  });
});
