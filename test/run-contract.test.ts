import { WorkflowUpdateFailedError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { InputError } from '../src/contract/errors.js';
import { RunResult, RunState } from '../src/contract/run.js';
import { SessionEvent } from '../src/contract/session.js';
import { forTask, offeredTools } from '../src/testing/script.js';
import { failureOf as failuresOf } from './support/failures.js';
import { TEST_API_KEY, useHarness } from './support/harness.js';

const h = useHarness();

const failureOf = (workflowId: string) => failuresOf(h.client, workflowId);

describe('§6 contract: a backend in any language starts agentRun by type name and JSON', () => {
  it('§6 plain @temporalio/client start with JSON input returns a valid RunResult', async () => {
    const task = 'plain client';
    h.model.add({ when: forTask(task), reply: { text: 'hello from a plain client' } });
    const json = JSON.parse(`{"task": "${task}", "limits": {"maxTurns": 3}, "tenant": "acme"}`) as unknown;
    const handle = await h.client.workflow.start('agentRun', {
      taskQueue: h.taskQueue,
      workflowId: h.id('plain'),
      args: [json],
    });
    const raw: unknown = await handle.result();
    const result = RunResult.parse(raw);
    expect(result).toMatchObject({
      status: 'completed',
      output: 'hello from a plain client',
      sessionId: handle.workflowId,
    });
  });

  it('§6 R1.5 prior messages seed the session before the task', async () => {
    const task = 'seeded';
    h.model.add({ name: 'seeded', when: forTask(task, 0), reply: { text: 'continuing' } });
    const workflowId = h.id('seeded');
    await h.deputy.startRun(
      {
        task,
        messages: [
          { role: 'user', content: 'earlier question' },
          { role: 'assistant', content: 'earlier answer' },
        ],
      },
      { workflowId },
    );
    expect((await h.deputy.result(workflowId)).status).toBe('completed');
    const request = h.model.requests.find((r) => r.rule === 'seeded')!;
    expect(request.body.messages.slice(1)).toEqual([
      { role: 'user', content: 'earlier question' },
      { role: 'assistant', content: 'earlier answer' },
      { role: 'user', content: task },
    ]);
  });

  it('§6 R1.5 the state query shows usage, remaining limits and the session events in order', async () => {
    const task = 'state query';
    // More than Deputy counts for these calls, so each is debited as reported: 520 tokens.
    const usage = { prompt_tokens: 500, completion_tokens: 20 };
    h.model.add(
      {
        when: forTask(task, 0),
        reply: { toolCalls: [{ name: 'calculate', arguments: { operation: 'add', a: 2, b: 2 } }], usage },
      },
      { when: forTask(task, 1), reply: { text: 'four', usage } },
    );
    const workflowId = h.id('state');
    await h.deputy.startRun({ task, limits: { maxTurns: 5 } }, { workflowId });
    await h.deputy.result(workflowId);
    const state = RunState.parse(await h.deputy.getState(workflowId));
    expect(state.status).toBe('completed');
    expect(state.remaining).toMatchObject({ turns: 3, toolCalls: 19, tokens: 100_000 - 2 * 520 });
    expect(state.session.map((e) => e.type)).toEqual([
      'session/header',
      'message/user',
      'message/assistant',
      'tool/result',
      'message/assistant',
      'run/ended',
    ]);
    for (const event of state.session) SessionEvent.parse(event);
  });
});

describe('R1.7 bad input never crashes a worker', () => {
  it('R1.7 the client rejects an invalid RunInput, naming the field', async () => {
    await expect(h.deputy.startRun({ task: 'x', limits: { maxTurns: -1 } })).rejects.toThrow(InputError);
    await expect(h.deputy.startRun({ task: 'x', limits: { maxTurns: -1 } })).rejects.toThrow(/limits\.maxTurns/);
  });

  it('R1.7 a workflow started with invalid JSON input fails non-retryably, naming each field', async () => {
    const workflowId = h.id('invalid-input');
    await h.client.workflow.start('agentRun', {
      taskQueue: h.taskQueue,
      workflowId,
      args: [{ task: '', mode: 'forever', limits: { maxCostUsd: 'lots' } }],
    });
    const failure = await failureOf(workflowId);
    expect(failure.type).toBe('RunInput.Invalid');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toContain('task: task must not be empty or only spaces');
    expect(failure.message).toContain('mode:');
    expect(failure.message).toContain('limits.maxCostUsd:');
  });

  it('R1.7 malformed tool arguments from the model become a tool error the model sees', async () => {
    const task = 'malformed arguments';
    h.model.add(
      {
        when: forTask(task, 0),
        reply: {
          toolCalls: [
            { name: 'calculate', arguments: '{"operation": "add", "a": 1,' },
            { name: 'calculate', arguments: { operation: 'power', a: 1, b: 2 } },
            { name: 'drop_database', arguments: {} },
          ],
        },
      },
      { name: 'after', when: forTask(task, 3), reply: { text: 'sorry, fixed' } },
    );
    const workflowId = h.id('malformed');
    await h.deputy.startRun({ task }, { workflowId });
    const result = await h.deputy.result(workflowId);
    expect(result).toMatchObject({ status: 'completed', output: 'sorry, fixed' });
    const seen = h.model.requests.find((r) => r.rule === 'after')!;
    // Results join the session as each tool finishes: put them back in call order by their call ids (`call_<n>_<i>`).
    const toolMessages = seen.body.messages
      .filter((m) => m.role === 'tool')
      .sort((a, b) => a.tool_call_id!.localeCompare(b.tool_call_id!))
      .map((m) => m.content);
    expect(toolMessages[0]).toMatch(/arguments for "calculate" are not valid JSON/);
    expect(toolMessages[1]).toMatch(/invalid arguments for "calculate": operation: /);
    expect(toolMessages[2]).toMatch(/tool "drop_database" is not available to this run/);
  });

  it('R1.1 tools are offered only when the run holds their scopes, and a call to another tool is refused', async () => {
    const task = 'scoped tools';
    h.model.add(
      { when: forTask(task, 0), reply: { toolCalls: [{ name: 'search_notes', arguments: { query: 'tax' } }] } },
      { name: 'after', when: forTask(task, 1), reply: { text: 'no notes for me' } },
    );
    const workflowId = h.id('scopes');
    await h.deputy.startRun({ task, scopes: ['tools.calc'] }, { workflowId });
    expect((await h.deputy.result(workflowId)).status).toBe('completed');
    const [first, second] = h.model.requests.filter(forTask(task));
    expect(offeredTools(first!)).toEqual(['calculate']);
    expect(second!.body.messages.at(-1)?.content).toBe(
      'tool "search_notes" is not available to this run; use only the tools you were given',
    );
  });

  it('R1.7 an unknown preset fails the run with an error that lists the known ones', async () => {
    const workflowId = h.id('unknown-preset');
    await h.deputy.startRun({ task: 'x', preset: 'wizard' }, { workflowId });
    const result = await h.deputy.result(workflowId);
    expect(result.status).toBe('failed');
    expect(result.error).toBe('unknown preset "wizard"; the config defines: assistant');
  });

  it('R1.7 an invalid sendMessage payload is rejected by the validator, naming the field; the run goes on', async () => {
    const task = 'conversation with a bad update';
    h.model.add(
      { when: forTask(task, 0), reply: { text: 'hi, what next?' } },
      {
        name: 'second',
        when: (r) => forTask(task)(r) && r.body.messages.at(-1)?.content === 'and now?',
        reply: { text: 'now this' },
      },
    );
    const workflowId = h.id('conversation');
    await h.deputy.startRun({ task, mode: 'conversation' }, { workflowId });
    await h.model.waitFor((rs) => rs.some(forTask(task)));
    const handle = h.client.workflow.getHandle(workflowId);
    await expect(handle.executeUpdate('sendMessage', { args: [{ message: '' }] })).rejects.toThrow(
      WorkflowUpdateFailedError,
    );
    await expect(handle.executeUpdate('sendMessage', { args: [{ text: 'hi' }] })).rejects.toThrow(
      WorkflowUpdateFailedError,
    );
    await h.deputy.sendMessage(workflowId, 'and now?');
    await h.model.waitFor((rs) => rs.some((r) => r.rule === 'second'));
    await expect.poll(async () => (await h.deputy.getState(workflowId)).status).toBe('waiting_for_user');
    await h.deputy.endConversation(workflowId, 'done');
    const result = await h.deputy.result(workflowId);
    expect(result).toMatchObject({ status: 'completed', output: 'now this' });
    expect(result.usage.modelCalls).toBe(2);
  });
});

describe('security: secrets never enter workflow history', () => {
  it('the API key reaches the model endpoint but never the fetched history', async () => {
    const task = 'secret check';
    h.model.add(
      { when: forTask(task, 0), reply: { toolCalls: [{ name: 'search_notes', arguments: { query: 'returns' } }] } },
      { when: forTask(task, 1), reply: { status: 401, message: `Incorrect API key provided: ${TEST_API_KEY}` } },
    );
    const workflowId = h.id('secret');
    await h.deputy.startRun({ task }, { workflowId });
    expect((await h.deputy.result(workflowId)).status).toBe('failed');
    const sent = h.model.requests.filter(forTask(task));
    expect(sent.map((r) => r.headers.authorization)).toEqual([`Bearer ${TEST_API_KEY}`, `Bearer ${TEST_API_KEY}`]);
    const history = JSON.stringify(await h.client.workflow.getHandle(workflowId).fetchHistory());
    expect(history).not.toContain(TEST_API_KEY);
    expect(history).not.toContain('DO-NOT-LEAK');
    expect(history).toContain('[redacted]');
  });
});
