/**
 * R1.8 bounded payloads, attacked with payloads past Temporal's 2 MB limit: a model answer, a tool result, a tool
 * error and a child output of 3 MB. Each run ends within seconds with a status, and no paid call is repeated.
 */
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { builtinTools } from '../activities/builtin-tools.js';
import { RunState } from '../src/contract/run.js';
import { forTask, toolMessages, userSays } from '../src/testing/script.js';
import { defineTool } from '../src/contract/tools.js';
import { delegateReply } from './support/delegation.js';
import { testConfig, useHarness } from './support/harness.js';

const MB3 = 3 * 1024 * 1024;
/** 3 MB of prose-like text (words, not one endless token). */
const threeMegabytes = (seed: string) => `${seed} `.padEnd(MB3, 'lorem ipsum dolor sit amet ');

const hugeResultTool = defineTool({
  name: 'huge_result',
  description: 'Returns 3 MB.',
  parameters: z.strictObject({}),
  scopes: ['tools.calc'],
  async execute() {
    return threeMegabytes('HUGE RESULT');
  },
});

const hugeErrorTool = defineTool({
  name: 'huge_error',
  description: 'Fails with a 3 MB message.',
  parameters: z.strictObject({}),
  scopes: ['tools.calc'],
  async execute() {
    throw ApplicationFailure.create({ type: 'Tool.Broken', message: threeMegabytes('HUGE ERROR'), nonRetryable: true });
  },
});

const h = useHarness({
  config: testConfig({
    presets: [{ id: 'assistant', persona: 'You are the parent.', tools: ['calculate', 'huge_result', 'huge_error'] }],
    grantableScopes: ['tools.calc', 'tools.notes', 'run.delegate'],
    // The config's limits are the most a run may ask for: room for a whole 3 MB answer (about 750,000 tokens).
    limits: {
      maxTurns: 10,
      maxTokens: 2_000_000,
      maxCostUsd: 10,
      maxToolCalls: 20,
      maxDurationSeconds: 600,
      synthesisReserve: false,
    },
    delegation: {
      enabled: true,
      activation: 'unconditional',
      childDefaults: { maxTurns: 4, maxTokens: 40_000, maxCostUsd: 0.2 },
    },
  }),
  tools: [...builtinTools(), hugeResultTool, hugeErrorTool],
});

const SCOPES = ['tools.calc', 'run.delegate'];

/** Fails (instead of hanging) when a run does not end in time: the bug this file attacks never ended. */
async function endsWithin<T>(ms: number, workflowId: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${workflowId} did not end within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
    await h.client.workflow
      .getHandle(workflowId)
      .terminate('test cleanup')
      .catch(() => undefined);
  }
}

describe('R1.8 payloads past the server limit end with a status, each paid call made once', () => {
  it('R1.8 a 3 MB model answer is cut with a marker; the run completes and the model is called once', async () => {
    const task = 'r1.8 huge answer';
    h.model.add({ name: task, when: forTask(task), times: Infinity, reply: { text: threeMegabytes('HUGE ANSWER') } });
    const workflowId = h.id('huge-answer');
    // Budget enough for the whole answer (about 750,000 tokens): below it, Deputy would stop the stream at its cap.
    await h.deputy.startRun({ task, limits: { maxTokens: 2_000_000, maxCostUsd: 10 } }, { workflowId });
    // Counting 750,000 streamed tokens takes about 15 s of one core alone; the bug attacked here never ended at all.
    const result = await endsWithin(45_000, workflowId, h.deputy.result(workflowId));
    expect(result.status).toBe('completed');
    expect(result.output!.startsWith('HUGE ANSWER lorem ipsum')).toBe(true);
    expect(result.output!.endsWith('[truncated: 3.0 MB → 256 KB]')).toBe(true);
    expect(Buffer.byteLength(result.output!)).toBeLessThanOrEqual(256 * 1024);
    expect(h.model.requests.filter((r) => r.rule === task)).toHaveLength(1);
    expect(result.usage.modelCalls).toBe(1);
  });

  it('R1.8 a 3 MB tool result and a tool error of 3 MB: cut, the run goes on, one model call per turn', async () => {
    const task = 'r1.8 huge tool';
    h.model.add(
      {
        name: `${task}:1`,
        when: forTask(task, 0),
        reply: {
          toolCalls: [
            { name: 'huge_result', arguments: {} },
            { name: 'huge_error', arguments: {} },
          ],
        },
      },
      { name: `${task}:2`, when: forTask(task, 2), times: Infinity, reply: { text: 'read both' } },
    );
    const workflowId = h.id('huge-tool');
    await h.deputy.startRun({ task }, { workflowId });
    const result = await endsWithin(20_000, workflowId, h.deputy.result(workflowId));
    expect(result).toMatchObject({ status: 'completed', output: 'read both' });
    const second = h.model.requests.filter((r) => r.rule === `${task}:2`);
    expect(second).toHaveLength(1);
    const [hugeResult, hugeError] = toolMessages(second[0]!);
    expect(hugeResult!.startsWith('HUGE RESULT lorem')).toBe(true);
    expect(hugeResult).toMatch(/\[truncated: 3\.0 MB → 20 KB\]$/);
    expect(hugeError).toMatch(/^tool "huge_error" failed: HUGE ERROR lorem/);
    expect(hugeError).toContain('(tool "huge_error" threw an error of 3.0 MB)');
    expect(Buffer.byteLength(hugeError!)).toBeLessThan(4000);
    expect(h.model.requests.filter((r) => r.rule === `${task}:1`)).toHaveLength(1);
  });

  it("R1.8 R2.9 a child answering 3 MB: its output reaches the parent bounded; the parent completes with its sibling's result", async () => {
    const task = 'r1.8 huge child';
    h.model.add(
      {
        name: 'huge child',
        when: userSays('answer hugely'),
        times: Infinity,
        reply: { text: threeMegabytes('HUGE CHILD') },
      },
      { name: 'small child', when: userSays('answer briefly'), reply: { text: 'small done' } },
      {
        when: forTask(task, 0),
        reply: delegateReply({
          briefs: [
            { task_name: 'huge', message: 'answer hugely' },
            { task_name: 'small', message: 'answer briefly' },
          ],
        }),
      },
      { name: `${task}:join`, when: forTask(task, 1), reply: { text: 'parent done' } },
    );
    const workflowId = h.id('huge-child');
    await h.deputy.startRun({ task, scopes: SCOPES }, { workflowId });
    const result = await endsWithin(30_000, workflowId, h.deputy.result(workflowId));
    expect(result).toMatchObject({ status: 'completed', output: 'parent done' });
    expect(h.model.requests.filter((r) => r.rule === 'huge child')).toHaveLength(1);
    const [joined] = toolMessages(h.model.requests.find((r) => r.rule === `${task}:join`)!);
    expect(joined).toContain('"output": "small done"');
    expect(joined).toContain('"output": "HUGE CHILD lorem');
    expect(Buffer.byteLength(joined!)).toBeLessThan(20_000);
    const state = RunState.parse(await h.deputy.getState(workflowId));
    expect(state.delegations.map((d) => [d.taskName, d.status])).toEqual([
      ['huge', 'completed'],
      ['small', 'completed'],
    ]);
  });
});
