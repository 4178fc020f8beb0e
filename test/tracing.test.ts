/**
 * Tracing: with Deputy's tracing on, one trace follows a delegating run from the client's start call
 * through the parent workflow, its three children and every activity; each model call is a GenAI span with its
 * tokens and cost, each tool call a span with its name and outcome; no span carries prompt or output text unless
 * the operator opts in. Spans are collected in-process by an in-memory exporter.
 */
import { Client, Connection } from '@temporalio/client';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DeputyClient } from '../src/client/client.js';
import { deputyTracing, type DeputyTracing } from '../src/ops/tracing.js';
import { forTask, userSays } from '../src/testing/script.js';
import { bundleDeputyWorkflows } from '../src/worker/bundle.js';
import { delegateReply, delegationConfig, DELEGATION_TOOLS, PARENT_SCOPES } from './support/delegation.js';
import { createHarness, type Harness } from './support/harness.js';
import { parseConfig } from '../src/config/schema.js';
import { lastMessage } from '../src/testing/script.js';

const exporter = new InMemorySpanExporter();
let tracing: DeputyTracing;
let h: Harness;
let deputy: DeputyClient;
let connection: Connection;

beforeAll(async () => {
  tracing = deputyTracing({ spanProcessor: new SimpleSpanProcessor(exporter), serviceName: 'deputy-test' })!;
  h = await createHarness();
  const { code } = await bundleDeputyWorkflows({ tracing });
  // One search of the notes waits for approval: the approval test's.
  const config = parseConfig({ ...delegationConfig(), approvals: { tools: { search_notes: 'always' } } });
  await h.startWorker({ config, tools: DELEGATION_TOOLS, workflowBundle: { code } });
  connection = await Connection.connect({ address: inject('temporalAddress') });
  // The starting service's client: the trace begins at its start call.
  deputy = new DeputyClient(new Client({ connection, plugins: [tracing.plugin] }), { taskQueue: h.taskQueue });
}, 120_000);
afterAll(async () => {
  await h?.close();
  await connection?.close();
  await tracing?.shutdown();
});

const CHILDREN = ['alpha', 'beta', 'gamma'] as const;
/** A parent that delegates to three children; `beta` calls `calculate` first. */
function scriptTree(task: string, secret: string) {
  h.model.add(
    {
      when: forTask(task, 0),
      reply: delegateReply({
        briefs: CHILDREN.map((name) => ({ task_name: name, message: `${name} brief ${secret}` })),
      }),
    },
    { when: forTask(task, 1), reply: { text: `parent answer ${secret}` } },
    {
      when: userSays(`beta brief ${secret}`, 0),
      reply: { toolCalls: [{ name: 'calculate', arguments: { operation: 'multiply', a: 6, b: 7 } }] },
    },
    ...CHILDREN.map((name) => ({
      when: userSays(`${name} brief ${secret}`),
      reply: { text: `${name} answer ${secret}` },
    })),
  );
}

async function tracedRun(secret: string) {
  const task = `traced task ${secret}`;
  scriptTree(task, secret);
  const id = h.id('traced');
  exporter.reset();
  await deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: id });
  expect((await deputy.result(id)).status).toBe('completed');
  // Workflow spans reach the exporter through a sink after each activation: wait for the parent's to end.
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline && !exporter.getFinishedSpans().some((s) => isRunOf(s, id))) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await tracing.provider.forceFlush();
  return { id, spans: exporter.getFinishedSpans() };
}
const isRunOf = (span: ReadableSpan, id: string) =>
  span.name === 'RunWorkflow:agentRun' && span.attributes.workflowId === id;
const everyText = (span: ReadableSpan) =>
  JSON.stringify([span.name, span.attributes, span.events.map((e) => [e.name, e.attributes])]);

describe('R6.1 tracing', () => {
  it('one trace from the client start through three children; model calls carry tokens and cost; no prompt text', async () => {
    const secret = 'SECRET-PROMPT-5b7e';
    const { id, spans } = await tracedRun(secret);

    const start = spans.find((s) => s.name === 'StartWorkflow:agentRun' && s.attributes.temporalWorkflowId === id);
    expect(start).toBeDefined();
    const traceId = start!.spanContext().traceId;
    const inTrace = spans.filter((s) => s.spanContext().traceId === traceId);
    // The parent run and each child's run are workflow spans of this trace.
    const runs = inTrace.filter((s) => s.name === 'RunWorkflow:agentRun');
    expect(runs.map((s) => s.attributes.workflowId).sort()).toEqual([id, ...CHILDREN.map((name) => `${id}/${name}-1`)]);
    expect(inTrace.filter((s) => s.name === 'StartChildWorkflow:agentRun')).toHaveLength(3);

    // Every model call: parent twice, alpha and gamma once, beta twice.
    const chats = inTrace.filter((s) => s.name === 'chat test-model');
    expect(chats).toHaveLength(6);
    for (const chat of chats) {
      expect(chat.attributes['gen_ai.operation.name']).toBe('chat');
      expect(chat.attributes['gen_ai.request.model']).toBe('test-model');
      expect(chat.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
      expect(chat.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
      expect(chat.attributes['deputy.cost_usd']).toBeGreaterThan(0);
      expect(chat.attributes['gen_ai.response.finish_reasons']).toBeDefined();
      // A chat span is the child of its activity's span.
      const parent = inTrace.find((s) => s.spanContext().spanId === chat.parentSpanId);
      expect(parent?.name).toBe('RunActivity:callModel');
    }
    const tool = inTrace.find((s) => s.name === 'execute_tool calculate');
    expect(tool?.attributes).toMatchObject({ 'gen_ai.tool.name': 'calculate', 'deputy.tool.outcome': 'ok' });

    // Nothing of the dialogue: neither the task, the briefs nor any answer.
    for (const span of spans) expect(everyText(span)).not.toContain(secret);
  });

  it('R7.2 R7.4 a call that waited for approval: its request is a span under its activity, and its tool span names the request', async () => {
    const task = 'traced approval';
    h.model.add(
      {
        when: (r) => lastMessage(r) === task,
        reply: { toolCalls: [{ name: 'search_notes', arguments: { query: 'tax' } }] },
      },
      { when: (r) => userSays(task)(r) && r.body.messages.at(-1)?.role === 'tool', reply: { text: 'found it' } },
    );
    const id = h.id('traced-approval');
    exporter.reset();
    await deputy.startRun({ task }, { workflowId: id });
    for (let i = 0; i < 100 && (await deputy.approvals(id)).length === 0; i++)
      await new Promise((r) => setTimeout(r, 100));
    await deputy.decideApproval(id, 'a1.1', 'approve');
    expect((await deputy.result(id)).output).toBe('found it');
    await tracing.provider.forceFlush();
    const spans = exporter.getFinishedSpans();
    const request = spans.find((s) => s.name === 'request_approval search_notes');
    expect(request?.attributes).toMatchObject({
      'gen_ai.tool.name': 'search_notes',
      'deputy.approval.request_id': 'a1.1',
    });
    expect(spans.find((s) => s.spanContext().spanId === request!.parentSpanId)?.name).toBe(
      'RunActivity:requestApproval',
    );
    const tool = spans.find((s) => s.name === 'execute_tool search_notes');
    expect(tool?.attributes).toMatchObject({ 'deputy.approval.request_id': 'a1.1', 'deputy.tool.outcome': 'ok' });
  });

  it('an operator who opts in sees the prompt text on model call spans', async () => {
    process.env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT = 'true';
    try {
      const secret = 'OPTED-IN-3c9d';
      const { spans } = await tracedRun(secret);
      const chats = spans.filter((s) => s.name === 'chat test-model');
      expect(chats.some((s) => String(s.attributes['gen_ai.input.messages']).includes(`traced task ${secret}`))).toBe(
        true,
      );
      expect(
        chats.some((s) => String(s.attributes['gen_ai.output.messages']).includes(`parent answer ${secret}`)),
      ).toBe(true);
    } finally {
      delete process.env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT;
    }
  });
});
