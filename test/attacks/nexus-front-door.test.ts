/**
 * R6.9 the Nexus front door, driven as another team drives it: a workflow in a namespace of its own, on a worker of
 * its own, that knows only an endpoint's name (made with the commands docs/security.md shows) and Deputy's service
 * contract. It starts a run, answers its child's question, cancels it; and it cannot widen what its endpoint's tenant
 * is granted, nor reach another tenant's runs (item 33 of the threat model).
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastMessage, userSays, type RecordedRequest } from '../../src/testing/script.js';
import { PROJECT_ROOT } from '../../src/testing/temporal-cli.js';
import type {
  approveThroughDeputy,
  askDeputyRaw,
  askDeputyThenCancel,
  readDeputyState,
  startDeputyRuns,
} from '../support/nexus-caller-workflows.js';
import { delegateReply } from '../support/delegation.js';
import { testConfig, useHarness } from '../support/harness.js';
import { temporalCli } from './support.js';

const suffix = randomUUID().slice(0, 8);
// The names docs/security.md gives (this suite's dev server is its own, so they are free).
const DOORS = { alice: 'deputy-door-alice', bob: 'deputy-door-bob', aliceX: 'deputy-door-alice-x' };
const ENDPOINTS = { alice: 'deputy-alice', bob: 'deputy-bob', aliceX: 'deputy-alice-x' };
const CALLERS = 'deputy-callers';

/** The commands of docs/security.md's front door setup, each as the CLI's arguments. */
function setupCommands(): string[][] {
  const doc = readFileSync(join(PROJECT_ROOT, 'docs/security.md'), 'utf8');
  const from = doc.indexOf('### Setting up a Nexus front door');
  if (from < 0) throw new Error('docs/security.md has no "### Setting up a Nexus front door"');
  const block = /```sh\n([\s\S]*?)```/.exec(doc.slice(from))![1]!;
  return block
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .filter((line) => line.startsWith('.deputy/bin/temporal '))
    .map((line) => line.split(/\s+/).slice(1));
}
const config = testConfig({
  defaultScopes: ['tools.calc', 'tools.notes', 'run.delegate'],
  delegation: {
    enabled: true,
    activation: 'unconditional',
    childDefaults: { maxTurns: 4, maxTokens: 20_000, maxCostUsd: 0.05, maxToolCalls: 4 },
  },
  frontDoors: [
    { tenant: 'alice', taskQueue: DOORS.alice },
    { tenant: 'bob', taskQueue: DOORS.bob },
    // A tenant whose name is another's with a suffix: its keys must not make the other's ids.
    { tenant: 'alice-x', taskQueue: DOORS.aliceX },
  ],
  // One search waits for approval: the one the decide test makes.
  approvals: {
    tools: {
      search_notes: {
        when: { type: 'object', properties: { query: { const: 'nexus approval' } }, required: ['query'] },
      },
    },
  },
});
const h = useHarness({ config });

let callers: Client;
let callerWorker: Worker;
let running: Promise<void>;
const callerQueue = `callers-${suffix}`;

beforeAll(async () => {
  // The commands of docs/security.md: a namespace for the callers, an endpoint per tenant.
  const commands = setupCommands();
  expect(commands.map((args) => args.slice(0, 3).join(' '))).toEqual([
    'operator namespace create',
    'operator nexus endpoint',
    'operator nexus endpoint',
  ]);
  for (const args of commands) {
    const { status, output } = await temporalCli(...args);
    expect(status, `temporal ${args.join(' ')}: ${output}`).toBe(0);
  }
  const third = await temporalCli(
    ...['operator', 'nexus', 'endpoint', 'create', '--name', ENDPOINTS.aliceX, '--target-namespace', 'default'],
    ...['--target-task-queue', DOORS.aliceX],
  );
  expect(third.status, third.output).toBe(0);
  callers = new Client({ connection: h.client.connection, namespace: CALLERS });
  // A new namespace reaches the frontend's cache within seconds: the caller's worker starts once it has.
  for (let tries = 0; ; tries += 1) {
    try {
      callerWorker = await Worker.create({
        connection: h.connection,
        namespace: CALLERS,
        taskQueue: callerQueue,
        workflowsPath: fileURLToPath(new URL('../support/nexus-caller-workflows.ts', import.meta.url)),
      });
      break;
    } catch (err) {
      if (tries === 30) throw err;
      await new Promise((ok) => setTimeout(ok, 1000));
    }
  }
  running = callerWorker.run();
}, 120_000);

afterAll(async () => {
  callerWorker?.shutdown();
  await running;
  for (const tenant of ['alice', 'bob', 'aliceX'] as const) {
    await temporalCli('operator', 'nexus', 'endpoint', 'delete', '--name', ENDPOINTS[tenant], '--yes');
  }
});

/** The input a run was started with, as its history records it. */
async function startInput(runId: string) {
  const history = await h.client.workflow.getHandle(runId).fetchHistory();
  return defaultPayloadConverter.fromPayload<{ tenant?: string; scopes?: string[]; limits?: Record<string, unknown> }>(
    history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!,
  );
}

const endsWith = (task: string, prefix: string) => (r: RecordedRequest) =>
  userSays(task)(r) && lastMessage(r).startsWith(prefix);

describe('R6.9 the Nexus front door', () => {
  it("R6.9 a workflow in another namespace starts a run through its endpoint, answers its child's question and cancels it", async () => {
    const task = 'r6.9 nexus: convert the prices';
    const brief = 'r6.9 nexus child: convert';
    h.model.add(
      {
        name: 'nexus dispatch',
        when: (r) => lastMessage(r) === task,
        reply: delegateReply({ briefs: [{ task_name: 'conv', message: brief }] }),
      },
      {
        name: 'nexus child asks',
        when: (r) => lastMessage(r).endsWith(brief),
        reply: { toolCalls: [{ name: 'ask_parent', arguments: { question: 'Which currency?' } }] },
      },
      {
        name: 'nexus parent waits',
        when: endsWith(task, '[question from child conv]'),
        reply: { toolCalls: [{ name: 'wait', arguments: {} }] },
      },
      {
        name: 'nexus child works on',
        when: (r) => userSays(brief)(r) && lastMessage(r).includes('EUR'),
        reply: { hang: true },
      },
    );
    const key = `prices-${suffix}`;
    const report = await callers.workflow.execute<typeof askDeputyThenCancel>('askDeputyThenCancel', {
      taskQueue: callerQueue,
      workflowId: `caller-${key}`,
      args: [{ endpoint: ENDPOINTS.alice, key, task, answer: 'EUR' }],
    });
    expect(report).toMatchObject({ answeredChild: 'conv', ended: 'cancelled' });
    expect(report.questions.map(({ child, question }) => ({ child, question }))).toEqual([
      { child: 'conv', question: 'Which currency?' },
    ]);
    const runId = `nexus:alice:${key}`;
    expect((await h.client.workflow.getHandle(runId).describe()).status.name).toBe('CANCELLED');
    expect((await h.client.workflow.getHandle(`${runId}/conv-1`).describe()).status.name).toBe('CANCELLED');
    expect(await startInput(runId)).toMatchObject({ tenant: 'alice' });
  });

  it('R6.9 R7.3 R7.4 a workflow in another namespace sees a call waiting for approval in state, approves it with decide, and a second decision is refused', async () => {
    const task = 'r6.9 nexus: look it up once approved';
    h.model.add(
      {
        when: (r) => lastMessage(r) === task,
        reply: { toolCalls: [{ name: 'search_notes', arguments: { query: 'nexus approval' } }] },
      },
      {
        when: (r) => userSays(task)(r) && r.body.messages.at(-1)?.role === 'tool',
        reply: { text: 'looked up through the door' },
      },
    );
    const key = `approve-${suffix}`;
    const report = await callers.workflow.execute<typeof approveThroughDeputy>('approveThroughDeputy', {
      taskQueue: callerQueue,
      workflowId: `caller-${key}`,
      args: [{ endpoint: ENDPOINTS.alice, key, task }],
    });
    expect(report.approvals).toMatchObject([
      {
        requestId: 'a1.1',
        path: `nexus:alice:${key}`,
        tool: 'search_notes',
        preview: '{"query":"nexus approval"}',
        // Whole, with what a proof covers.
        arguments: '{"query":"nexus approval"}',
        argumentsChars: 26,
        digest: expect.stringMatching(/^[0-9a-f]{64}$/) as unknown,
        firstRunId: expect.any(String) as unknown,
      },
    ]);
    expect(report.decided).toBe('approve by client');
    expect(report.again).toMatch(/^refused: .*decideApproval: /);
    expect(report.ended).toBe('completed: looked up through the door');
  });

  it('R6.9 R1.14 attack 33: a caller cannot name scopes or a tenant, raise a limit, or read another tenant’s run', async () => {
    const widened = await callers.workflow.execute<typeof askDeputyRaw>('askDeputyRaw', {
      taskQueue: callerQueue,
      workflowId: `caller-widen-${suffix}`,
      args: [
        {
          endpoint: ENDPOINTS.alice,
          request: { key: `widen-${suffix}`, task: 'x', scopes: ['tools.evil', 'run.delegate'], tenant: 'bob' },
        },
      ],
    });
    expect(widened).toContain('Deputy refused the request: input: Unrecognized keys: "scopes", "tenant"');
    expect(h.model.requests.filter((r) => userSays('x')(r) && lastMessage(r) === 'x')).toEqual([]);

    const task = 'r6.9 nexus: spend a fortune';
    h.model.add({ name: task, when: (r) => lastMessage(r) === task, reply: { text: 'spent within the config' } });
    const key = `fortune-${suffix}`;
    const spent = await callers.workflow.execute<typeof askDeputyRaw>('askDeputyRaw', {
      taskQueue: callerQueue,
      workflowId: `caller-fortune-${suffix}`,
      args: [{ endpoint: ENDPOINTS.alice, request: { key, task, limits: { maxCostUsd: 5000, maxTurns: 10_000 } } }],
    });
    expect(spent).toContain('"status":"completed"');
    expect((await startInput(`nexus:alice:${key}`)).limits).toMatchObject({ maxCostUsd: 1, maxTurns: 10 });
    expect((await h.deputy.getState(`nexus:alice:${key}`)).limits).toMatchObject({ maxCostMicroUsd: 1_000_000 });

    const read = await callers.workflow.execute<typeof readDeputyState>('readDeputyState', {
      taskQueue: callerQueue,
      workflowId: `caller-peek-${suffix}`,
      args: [{ endpoint: ENDPOINTS.bob, key }],
    });
    expect(read).toContain(`no run "${key}" was started through this endpoint`);
    const own = await callers.workflow.execute<typeof readDeputyState>('readDeputyState', {
      taskQueue: callerQueue,
      workflowId: `caller-own-${suffix}`,
      args: [{ endpoint: ENDPOINTS.alice, key }],
    });
    expect(own).toBe('read: completed');
  });

  it('R6.9 attack 55: alice’s key x-foo and alice-x’s key foo are two runs; a repeat of a live key finds the first run', async () => {
    const task = 'attack 55: hold on';
    h.model.add({ name: task, when: (r) => lastMessage(r) === task, reply: { hang: true }, times: 4 });
    const start = (endpoint: string, key: string, twice = false) =>
      callers.workflow.execute<typeof startDeputyRuns>('startDeputyRuns', {
        taskQueue: callerQueue,
        workflowId: `caller-55-${endpoint}-${key}`,
        args: [{ endpoint, key, task, twice }],
      });
    expect(await start(ENDPOINTS.alice, `x-${suffix}`)).toEqual(['started']);
    expect(await start(ENDPOINTS.aliceX, suffix)).toEqual(['started']);
    const alices = `nexus:alice:x-${suffix}`;
    const aliceXs = `nexus:alice-x:${suffix}`;
    expect(await startInput(alices)).toMatchObject({ tenant: 'alice' });
    expect(await startInput(aliceXs)).toMatchObject({ tenant: 'alice-x' });

    // The same key again while its run is live: the front door finds that run, it starts no second one.
    const live = `again-${suffix}`;
    expect(await start(ENDPOINTS.alice, live, true)).toEqual(['started', 'started']);
    const runsOfLive = async () => {
      const runs = [];
      for await (const run of h.client.workflow.list({ query: `WorkflowId = 'nexus:alice:${live}'` }))
        runs.push(run.runId);
      return runs;
    };
    await expect.poll(runsOfLive, { timeout: 10_000 }).toHaveLength(1);
    for (const id of [alices, aliceXs, `nexus:alice:${live}`])
      await h.client.workflow.getHandle(id).terminate('test over');
  });
});
