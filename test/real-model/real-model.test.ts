/**
 * Deputy against a real OpenAI-compatible server no one here wrote (llama-cpp-python serving SmolLM2-135M-Instruct,
 * see llama-server.ts): the hard budget holds whatever the server reads, a conversation answers each message, a real
 * model's real tool calls become tool calls or tool errors, a delegating run ends with every workflow task
 * succeeding, a cancelled run aborts its stream, and live output reaches a watcher before the call ends. The figures
 * are printed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WatchEvent } from '../../src/client/watch-events.js';
import { testConfig, createHarness, type Harness } from '../support/harness.js';
import { failedWorkflowTasks, untilStatus } from '../attacks/support.js';
import { REAL_MODEL, startLlamaServer, startToolForcingProxy, type LlamaServer } from './llama-server.js';
import { DELEGATION_TOOLS, PARENT_SCOPES } from '../support/delegation.js';

let llama: LlamaServer;
let h: Harness;
let forced: Harness;
let proxy: Awaited<ReturnType<typeof startToolForcingProxy>>;

beforeAll(async () => {
  llama = await startLlamaServer();
  h = await createHarness();
  proxy = await startToolForcingProxy(llama.url);
  forced = await createHarness();
  await forced.startWorker({ modelBaseURL: proxy.url, tools: DELEGATION_TOOLS, config: realConfig() });
  await h.startWorker({ modelBaseURL: llama.url, tools: DELEGATION_TOOLS, config: realConfig() });
}, 180_000);

/** The worker's config: the real model, priced, and small child defaults. */
function realConfig() {
  return testConfig({
    model: REAL_MODEL,
    prices: { [REAL_MODEL]: { inputPerMTokUsd: 1, outputPerMTokUsd: 2 } },
    modelTimeoutSeconds: 300,
    presets: [
      {
        id: 'assistant',
        persona: 'You are a helpful assistant. Answer briefly.',
        tools: ['calculate', 'search_notes'],
      },
    ],
    delegation: {
      enabled: true,
      activation: 'unconditional',
      childDefaults: { maxTurns: 2, maxTokens: 3000, maxCostUsd: 0.01, maxToolCalls: 2 },
    },
  });
}

afterAll(async () => {
  await forced?.close();
  await proxy?.stop();
  await h?.close();
  await llama?.stop();
});

const STORY = 'Write a story of 5,000 words about a lighthouse keeper and a storm. Do not stop early.';

describe('R2.13 R6.6 a real OpenAI-compatible server', () => {
  it('R2.13 token and cost caps hold for every maxTokens from 100 to 2,000 while the model is asked for 5,000 words', async () => {
    const figures: string[] = [];
    for (const maxTokens of [100, 300, 600, 1000, 2000]) {
      const id = h.id(`real-cap-${maxTokens}`);
      // A cost cap just as tight: $2 per million output tokens makes maxTokens × 2 micro-USD the most it may spend.
      const maxCostUsd = (maxTokens * 2) / 1_000_000;
      await h.deputy.startRun(
        { task: STORY, limits: { maxTokens, maxCostUsd, maxTurns: 1, synthesisReserve: false } },
        { workflowId: id },
      );
      const result = await h.deputy.result(id);
      expect(['completed', 'limit_reached']).toContain(result.status);
      expect(result.usage.totalTokens, `maxTokens ${maxTokens}`).toBeLessThanOrEqual(maxTokens);
      expect(result.usage.costMicroUsd, `maxCostUsd ${maxCostUsd}`).toBeLessThanOrEqual(maxTokens * 2);
      expect(await failedWorkflowTasks(h.client, id)).toEqual([]);
      figures.push(
        `cap ${String(maxTokens).padStart(4)} tokens: used ${String(result.usage.totalTokens).padStart(4)} (${result.usage.inputTokens} in + ${result.usage.outputTokens} out), ${result.usage.costMicroUsd} µUSD, ${result.status}`,
      );
    }
    console.log(`real model, asked for 5,000 words:\n  ${figures.join('\n  ')}`);
  }, 600_000);

  it('R6.6 live output reaches a watcher before the call ends', async () => {
    const id = h.id('real-live');
    const started = Date.now();
    await h.deputy.startRun(
      { task: STORY, limits: { maxTokens: 1500, maxTurns: 1, synthesisReserve: false } },
      { workflowId: id },
    );
    let firstLive: number | undefined;
    const seen: WatchEvent['type'][] = [];
    for await (const event of h.deputy.watch(id)) {
      seen.push(event.type);
      if (event.type === 'model/progress') firstLive ??= Date.now() - started;
    }
    expect(seen.indexOf('model/progress')).toBeGreaterThan(-1);
    expect(seen.indexOf('model/progress')).toBeLessThan(seen.indexOf('model/finished'));
    console.log(`real model: first live output at the watcher ${firstLive} ms after the run started`);
  }, 300_000);

  it('R2.10 a cancelled run aborts its stream: the run is cancelled soon after, its model call cancelled with it', async () => {
    const id = h.id('real-cancel');
    await h.deputy.startRun({ task: STORY, limits: { maxTurns: 1, synthesisReserve: false } }, { workflowId: id });
    // Wait until the answer is being written (live output in the pending activity's heartbeat).
    const handle = h.client.workflow.getHandle(id);
    await expect
      .poll(
        async () => {
          const described = await handle.describe();
          return described.raw.pendingActivities?.some((a) => (a.heartbeatDetails?.payloads?.length ?? 0) > 0);
        },
        { timeout: 120_000, interval: 200 },
      )
      .toBe(true);
    const cancelledAt = Date.now();
    await handle.cancel();
    await expect
      .poll(async () => (await handle.describe()).status.name, { timeout: 30_000, interval: 50 })
      .toBe('CANCELLED');
    const ms = Date.now() - cancelledAt;
    console.log(`real model: run cancelled ${ms} ms after the cancel request (its HTTP stream aborted first)`);
    // The cancel reaches the call in the reply to its next heartbeat, and the worker sends those at most every 4 s.
    expect(ms).toBeLessThan(4000 + 2000);
  }, 300_000);

  it('R1.7 a conversation answers each message; a run offered tools gets the real model’s tool calls as tool calls or tool errors, and ends', async () => {
    const id = h.id('real-conv');
    await h.deputy.startRun(
      { task: 'Hello! What is 12.5 times 3? Use the calculate tool.', mode: 'conversation', limits: { maxTurns: 12 } },
      { workflowId: id },
    );
    await untilStatus(h.client, id, 'waiting_for_user');
    for (const message of ['Thanks. And what is 7 plus 5?', 'Say goodbye in one word.']) {
      const before = (await h.deputy.getState(id)).session.filter((e) => e.type === 'message/assistant').length;
      await h.deputy.sendMessage(id, message);
      await expect
        .poll(async () => (await h.deputy.getState(id)).session.filter((e) => e.type === 'message/assistant').length, {
          timeout: 120_000,
        })
        .toBeGreaterThan(before);
      await untilStatus(h.client, id, 'waiting_for_user');
    }
    await h.deputy.endConversation(id);
    const result = await h.deputy.result(id);
    expect(['completed', 'limit_reached']).toContain(result.status);
    const state = await h.deputy.getState(id);
    const calls = state.session.flatMap((e) => (e.type === 'message/assistant' ? e.toolCalls : []));
    const results = state.session.filter((e) => e.type === 'tool/result');
    expect(results.length).toBe(calls.length); // every call the model made got a result or a tool error
    expect(await failedWorkflowTasks(h.client, id)).toEqual([]);
    console.log(
      `real model conversation: ${calls.length} tool call(s) (${results.filter((r) => r.type === 'tool/result' && r.isError).length} tool errors), status ${result.status}`,
    );
  }, 600_000);

  it('R1.7 the real model’s real tool calls (forced by a gateway, streamed in this server’s own way) become tool calls or tool errors, and the run ends', async () => {
    const id = forced.id('real-tools');
    await forced.deputy.startRun(
      { task: 'What is 12.5 times 3?', limits: { maxTurns: 3, maxToolCalls: 6, synthesisReserve: false } },
      { workflowId: id },
    );
    const result = await forced.deputy.result(id);
    expect(['completed', 'limit_reached']).toContain(result.status);
    const state = await forced.deputy.getState(id);
    const calls = state.session.flatMap((e) => (e.type === 'message/assistant' ? e.toolCalls : []));
    const results = state.session.flatMap((e) => (e.type === 'tool/result' ? [e] : []));
    expect(calls.length).toBeGreaterThan(0);
    // The server repeats a call's name in every streamed piece: Deputy takes it once.
    expect(new Set(calls.map((c) => c.name))).toEqual(new Set(['calculate']));
    expect(results.map((r) => r.toolCallId).sort()).toEqual(calls.map((c) => c.id).sort());
    expect(await failedWorkflowTasks(forced.client, id)).toEqual([]);
    console.log(
      `real model tool calls: ${calls.map((c) => c.arguments).join(' | ')} → ${results.map((r) => (r.isError ? `error: ${r.content.slice(0, 60)}` : r.content)).join(' | ')}; status ${result.status}`,
    );
  }, 300_000);

  it('R2.4 a delegating run whose real model must call delegate (its briefs as the model wrote them) ends with every workflow task of its tree succeeding', async () => {
    const id = forced.id('real-delegate');
    await forced.deputy.startRun(
      {
        task: 'Hand the task "add 2 and 3" to one child with the delegate tool, then report its answer.',
        scopes: PARENT_SCOPES,
        limits: { maxTurns: 2, maxTokens: 2500, synthesisReserve: false },
      },
      { workflowId: id },
    );
    const result = await forced.deputy.result(id);
    expect(['completed', 'limit_reached']).toContain(result.status);
    const state = await forced.deputy.getState(id);
    const calls = state.session.flatMap((e) => (e.type === 'message/assistant' ? e.toolCalls : []));
    expect(calls.filter((c) => c.name === 'delegate').length).toBeGreaterThan(0);
    for (const run of [id, ...state.delegations.map((d) => d.childWorkflowId)]) {
      expect(await failedWorkflowTasks(forced.client, run), run).toEqual([]);
    }
    const errors = state.session.filter((e) => e.type === 'tool/result' && e.isError).length;
    console.log(
      `real model delegating run: ${calls.length} delegate call(s), ${errors} refused as tool errors, ${state.delegations.length} child(ren) (${state.delegations.map((d) => d.status).join(', ') || 'none'}), status ${result.status}`,
    );
  }, 600_000);
});
