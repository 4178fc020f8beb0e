/**
 * Promises that need a worker configured apart: delegation off with the scope held (R2.1), a child whose compaction
 * absorbs its background (R3.5), model-call inputs past the payload budget (R1.8), and a follow-up whose look-up fails
 * inside the worker (R2.4).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { builtinTools } from '../activities/builtin-tools.js';
import { defineTool } from '../src/contract/tools.js';
import { COMPACTION_SYSTEM_PROMPT } from '../src/rules/compaction.js';
import { RunState } from '../src/contract/run.js';
import { forTask, offeredTools, toolMessages, userSays, type RecordedRequest } from '../src/testing/script.js';
import { delegateReply, PARENT_SCOPES } from './support/delegation.js';
import { failureOf } from './support/failures.js';
import { createHarness, testConfig, type Harness } from './support/harness.js';

const isCompaction = (r: RecordedRequest) => r.body.messages[0]?.content === COMPACTION_SYSTEM_PROMPT;

/** Delegation off; the runs still hold `run.delegate`. */
let off: Harness;
/** Delegation on, compaction after ~300 tokens keeping one turn. */
let compacting: Harness;
/** Delegation on, model-call inputs capped at 16 KB, and no Temporal client in the worker. */
let small: Harness;
/** Texts in history capped at 4 KB, and a tool whose result is past that but short of the model's 20,000 characters. */
let cutting: Harness;

const longReport = defineTool({
  name: 'long_report',
  description: 'A long report.',
  parameters: z.strictObject({}),
  scopes: ['tools.notes'],
  async execute() {
    return `REPORT-START ${'a line of the report '.repeat(500)}REPORT-END`; // ~10 KB
  },
});

beforeAll(async () => {
  [off, compacting, small, cutting] = await Promise.all([
    createHarness(),
    createHarness(),
    createHarness(),
    createHarness(),
  ]);
  await Promise.all([
    off.startWorker({ config: testConfig({ delegation: { enabled: false } }) }),
    compacting.startWorker({
      config: testConfig({
        delegation: {
          enabled: true,
          activation: 'unconditional',
          childDefaults: { maxTurns: 6, maxTokens: 20_000, maxCostUsd: 0.05 },
        },
        compaction: { thresholdTokens: 300, keepRecentTurns: 1, continueAsNewAfterEvents: 8000 },
      }),
    }),
    small.startWorker({
      config: testConfig({
        delegation: {
          enabled: true,
          activation: 'unconditional',
          childDefaults: { maxTurns: 4, maxTokens: 20_000, maxCostUsd: 0.05 },
        },
        payloads: { maxTextBytes: 4096, maxInputBytes: 16_384 },
      }),
      withClient: false,
    }),
    cutting.startWorker({
      config: testConfig({
        presets: [{ id: 'assistant', persona: 'You read reports.', tools: ['long_report'] }],
        payloads: { maxTextBytes: 4096, maxInputBytes: 1_048_576 },
      }),
      tools: [...builtinTools(), longReport],
    }),
  ]);
});
afterAll(async () => {
  await Promise.all([off?.close(), compacting?.close(), small?.close(), cutting?.close()]);
});

describe('R2.1 R5.1 the flag is the master switch', () => {
  it('R2.1 with delegation off, a run holding run.delegate is offered no delegate, interject or followup', async () => {
    const task = 'r2.1 flag off';
    off.model.add({ name: task, when: forTask(task), reply: { text: 'ok' } });
    const handle = await off.deputy.startRun({ task, scopes: PARENT_SCOPES });
    expect((await off.deputy.result(handle.workflowId)).status).toBe('completed');
    expect(offeredTools(off.model.requests.find((r) => r.rule === task)!)).toEqual(['calculate', 'search_notes']);
  });
});

describe("R3.5 a child's compaction may absorb its background", () => {
  it('R3.5 the background is summarised with the oldest turns and is gone from the child session', async () => {
    const task = `r3.5 absorb: ${'the parent explains the order at length. '.repeat(20)}BACKGROUND-MARK`;
    let childTurn = 0;
    const fromChild = (r: RecordedRequest) => JSON.stringify(r.body.messages).includes('add numbers for me');
    compacting.model.add(
      {
        name: 'compaction',
        when: isCompaction,
        times: Infinity,
        reply: (r) => ({ text: fromChild(r) ? 'Compacted child: CHILD-GOES-ON adding.' : 'Compacted parent.' }),
      },
      {
        name: 'absorbing child',
        when: (r) => !isCompaction(r) && (userSays('add numbers for me')(r) || userSays('CHILD-GOES-ON')(r)),
        times: Infinity,
        reply: () =>
          ++childTurn <= 3
            ? { toolCalls: [{ name: 'calculate', arguments: { operation: 'add', a: childTurn, b: 1 } }] }
            : { text: 'added' },
      },
      {
        when: (r) => !isCompaction(r) && forTask(task, 0)(r),
        reply: delegateReply({ briefs: [{ task_name: 'adder', message: 'add numbers for me', context: 'all' }] }),
      },
      {
        when: (r) =>
          !isCompaction(r) && r.body.messages.some((m) => (m.content ?? '').startsWith('EXTERNAL_UNTRUSTED')),
        reply: { text: 'done' },
      },
    );
    const parentId = compacting.id('absorb');
    await compacting.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: parentId });
    expect((await compacting.deputy.result(parentId)).status).toBe('completed');
    const child = RunState.parse(await compacting.deputy.getState(`${parentId}/adder-1`));
    expect(child.session.some((e) => e.type === 'context/background')).toBe(false);
    expect(child.session.filter((e) => e.type === 'compaction/summary')).toHaveLength(1);
    // The child's first call had the background; a compaction call took it in.
    const childRequests = compacting.model.requests.filter((r) => r.rule === 'absorbing child');
    expect(JSON.stringify(childRequests[0]!.body.messages)).toContain('BACKGROUND-MARK');
    expect(JSON.stringify(childRequests.at(-1)!.body.messages)).not.toContain('BACKGROUND-MARK');
    const absorbed = compacting.model.requests.filter(
      (r) => isCompaction(r) && JSON.stringify(r.body.messages).includes('add numbers for me'),
    );
    expect(absorbed.some((r) => JSON.stringify(r.body.messages).includes('BACKGROUND-MARK'))).toBe(true);
  });
});

describe('R1.8 a model-call input past the payload budget', () => {
  it('R1.8 forces a compaction first; the run goes on', async () => {
    const task = 'r1.8 big seed: go on';
    const page = (n: number) => `PAGE ${n} ${'words of an old turn '.repeat(300)}`; // ~6 KB each
    small.model.add(
      { name: 'forced compaction', when: isCompaction, reply: { text: 'Compacted: four long pages were read.' } },
      { name: task, when: (r) => !isCompaction(r) && forTask(task)(r), reply: { text: 'went on' } },
    );
    const handle = await small.deputy.startRun({
      task,
      messages: [
        { role: 'user', content: page(1) },
        { role: 'assistant', content: page(2) },
        { role: 'user', content: page(3) },
        { role: 'assistant', content: page(4) },
      ],
    });
    expect(await small.deputy.result(handle.workflowId)).toMatchObject({ status: 'completed', output: 'went on' });
    const sent = small.model.requests.find((r) => r.rule === task)!;
    expect(Buffer.byteLength(JSON.stringify(sent.body.messages))).toBeLessThan(16_384);
    const state = RunState.parse(await small.deputy.getState(handle.workflowId));
    expect(state.session.filter((e) => e.type === 'compaction/summary')).toHaveLength(1);
  });

  it('R1.8 fails typed and non-retryable, naming the size, when compaction cannot help', async () => {
    const task = `r1.8 huge task ${'x '.repeat(10_000)}`;
    const handle = await small.deputy.startRun({ task });
    const failure = await failureOf(small.client, handle.workflowId);
    expect(failure.type).toBe('Payload.TooLarge');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toMatch(
      /the next model call's input is 20 KB even after compaction, past the payload budget of 16 KB/,
    );
    expect(small.model.requests.filter(forTask(task))).toHaveLength(0);
  });
});

describe('R1.8 a tool result past the text budget', () => {
  it('R1.8 a result under the model-view cut but past maxTextBytes is cut to the budget, with the marker', async () => {
    const task = 'r1.8 read the long report';
    cutting.model.add(
      { when: forTask(task, 0), reply: { toolCalls: [{ name: 'long_report', arguments: {} }] } },
      { name: 'read it', when: forTask(task, 1), reply: { text: 'read' } },
    );
    const handle = await cutting.deputy.startRun({ task, scopes: ['tools.notes'] });
    expect((await cutting.deputy.result(handle.workflowId)).status).toBe('completed');
    const [seen] = toolMessages(cutting.model.requests.find((r) => r.rule === 'read it')!);
    expect(seen!.startsWith('REPORT-START a line of the report')).toBe(true);
    expect(seen).not.toContain('REPORT-END');
    expect(seen).toMatch(/\n\[truncated: 10 KB → 4 KB\]$/);
    const state = RunState.parse(await cutting.deputy.getState(handle.workflowId));
    const result = state.session.find((e) => e.type === 'tool/result');
    expect(result?.type === 'tool/result' && Buffer.byteLength(result.content)).toBeLessThanOrEqual(4096);
  });
});

describe('R2.4 an infrastructure error on a delegation path is a tool error', () => {
  it('R2.4 a follow-up whose session cannot be loaded: the model reads why, the parent goes on', async () => {
    const task = 'r2.4 followup infra';
    small.model.add(
      { name: 'first child', when: userSays('first child'), reply: { text: 'first' } },
      { when: forTask(task, 0), reply: delegateReply({ briefs: [{ task_name: 'a', message: 'first child' }] }) },
      {
        when: forTask(task, 1),
        reply: { toolCalls: [{ name: 'followup', arguments: { task_name: 'a', message: 'and again' } }] },
      },
      { name: `${task}:end`, when: forTask(task, 2), reply: { text: 'went on' } },
    );
    const handle = await small.deputy.startRun({ task, scopes: PARENT_SCOPES });
    expect(await small.deputy.result(handle.workflowId)).toMatchObject({ status: 'completed', output: 'went on' });
    const messages = toolMessages(small.model.requests.find((r) => r.rule === `${task}:end`)!);
    expect(messages.at(-1)).toMatch(/^"followup" failed: follow-ups and attaching to children need a Temporal client/);
  });
});
