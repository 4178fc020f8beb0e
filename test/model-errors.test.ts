import { ActivityFailure, ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { forTask, userSays } from '../src/testing/script.js';
import { useHarness } from './support/harness.js';

const h = useHarness();

describe('R1.2 model errors', () => {
  it('R1.2 429 with retry-after, then 500, then success: retried by the workflow, an activity an attempt after its wait, one turn of usage', async () => {
    const task = 'retry after rate limit';
    h.model.add(
      {
        name: '429',
        when: forTask(task),
        reply: { status: 429, message: 'slow down', headers: { 'retry-after': '1' } },
      },
      { name: '500', when: forTask(task), reply: { status: 500, message: 'upstream broke' } },
      {
        name: 'ok',
        when: forTask(task),
        reply: { text: 'done after retries', usage: { prompt_tokens: 1000, completion_tokens: 20 } },
      },
    );
    const workflowId = h.id('retry');
    const started = Date.now();
    await h.deputy.startRun({ task }, { workflowId });
    const result = await h.deputy.result(workflowId);
    expect(result).toMatchObject({ status: 'completed', output: 'done after retries' });
    // Only the answer that came back is debited (its report is above Deputy's count, so the report).
    expect(result.usage).toMatchObject({ modelCalls: 1, totalTokens: 1020 });
    expect(h.model.requests.filter(forTask(task)).map((r) => r.rule)).toEqual(['429', '500', 'ok']);
    // retry-after: 1 second was honoured before the second attempt.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    // Each attempt is an activity of its own; the waits between them are timers: the one asked for, then backoff.
    const events = (await h.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
    const calls = events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'callModel');
    expect(calls).toHaveLength(3);
    expect(calls.map((e) => e.activityTaskScheduledEventAttributes?.retryPolicy?.maximumAttempts)).toEqual([1, 1, 1]);
    const waits = events.flatMap((e) => e.timerStartedEventAttributes?.startToFireTimeout?.seconds ?? []);
    // A 429 uses no attempt (rate limits have their own patience): the 500 after it is the first failure, 1 s.
    expect(waits.map(Number)).toEqual([1, 1]);
    expect(events.filter((e) => e.activityTaskFailedEventAttributes)).toHaveLength(2);
  });

  it('R1.2 a truncated or invalid JSON answer, or a dropped connection, is retried', async () => {
    const task = 'garbled answers';
    h.model.add(
      { name: 'truncated', when: forTask(task), reply: { raw: '{"id": "x", "choices": [{"mess' } },
      { name: 'reset', when: forTask(task), reply: { reset: true } },
      { name: 'ok', when: forTask(task), reply: { text: 'clean answer' } },
    );
    const workflowId = h.id('garbled');
    await h.deputy.startRun({ task }, { workflowId });
    const result = await h.deputy.result(workflowId);
    expect(result).toMatchObject({ status: 'completed', output: 'clean answer' });
    expect(result.usage.modelCalls).toBe(1);
    expect(h.model.requests.filter(forTask(task)).map((r) => r.rule)).toEqual(['truncated', 'reset', 'ok']);
  });

  it('R1.2 401 fails the run at once, non-retryable, with a message that says what to fix', async () => {
    const task = 'bad key';
    h.model.add({
      name: '401',
      when: forTask(task),
      times: Infinity,
      reply: { status: 401, message: 'Incorrect API key' },
    });
    const workflowId = h.id('unauthorized');
    const handle = await h.deputy.startRun({ task }, { workflowId });
    const err = await handle.result().then(
      () => expect.fail('the run should fail'),
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(WorkflowFailedError);
    const activityFailure = (err as WorkflowFailedError).cause;
    expect(activityFailure).toBeInstanceOf(ActivityFailure);
    expect((activityFailure as ActivityFailure).activityType).toBe('callModel');
    const app = (activityFailure as ActivityFailure).cause;
    expect(app).toBeInstanceOf(ApplicationFailure);
    expect((app as ApplicationFailure).type).toBe('ModelCall.Unauthorized');
    expect((app as ApplicationFailure).nonRetryable).toBe(true);
    expect((app as ApplicationFailure).message).toContain('check OPENAI_API_KEY');
    expect(h.model.requests.filter(forTask(task))).toHaveLength(1);

    const result = await h.deputy.result(workflowId);
    expect(result).toMatchObject({ status: 'failed', output: null, sessionId: workflowId });
    expect(result.error).toContain('check OPENAI_API_KEY');
  });

  it('R1.2 404 names the model and the settings to check', async () => {
    const task = 'unknown model';
    h.model.add({ when: forTask(task), reply: { status: 404, message: 'model not found' } });
    const workflowId = h.id('not-found');
    await h.deputy.startRun({ task }, { workflowId });
    const result = await h.deputy.result(workflowId);
    expect(result.status).toBe('failed');
    expect(result.error).toMatch(/404 for test-model: check the model name .*OPENAI_BASE_URL/);
  });

  it('R1.2 cancelling a run aborts the model HTTP request in flight and the result is cancelled', async () => {
    const task = 'cancel me';
    h.model.add(
      {
        when: forTask(task, 0),
        reply: { text: 'first', toolCalls: [{ name: 'calculate', arguments: { operation: 'add', a: 1, b: 1 } }] },
      },
      { name: 'hang', when: forTask(task, 1), reply: { hang: true } },
    );
    const workflowId = h.id('cancel');
    await h.deputy.startRun({ task }, { workflowId });
    await h.model.waitFor((rs) => rs.some((r) => r.rule === 'hang'));
    await h.deputy.cancel(workflowId);
    const result = await h.deputy.result(workflowId);
    expect(result).toMatchObject({ status: 'cancelled', sessionId: workflowId });
    expect(result.usage).toMatchObject({ modelCalls: 1, toolCalls: 1 });
    const hung = h.model.requests.find((r) => r.rule === 'hang')!;
    expect(hung.aborted).toBe(true);
    const description = await h.client.workflow.getHandle(workflowId).describe();
    expect(description.status.name).toBe('CANCELLED');
  });

  it('R2.10 a run cancelled while its last call finishes ends cancelled, not completed with that answer', async () => {
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    h.model.add({
      name: 'late answer',
      when: userSays('r2.10 answers after the cancel'),
      reply: async () => {
        await answered;
        return { text: 'finished anyway' };
      },
    });
    const id = h.id('r2-10-late');
    await h.deputy.startRun({ task: 'r2.10 answers after the cancel', limits: { maxTurns: 1 } }, { workflowId: id });
    await h.model.waitFor((rs) => rs.some((r) => r.rule === 'late answer'));
    const handle = h.client.workflow.getHandle(id);
    await handle.cancel();
    // The cancel has reached the run (it asked its call to stop) but not the call, which answers now.
    await expect
      .poll(async () => (await handle.fetchHistory()).events?.some((e) => e.activityTaskCancelRequestedEventAttributes))
      .toBe(true);
    answer();
    expect((await h.deputy.result(id)).status).toBe('cancelled');
    expect((await handle.describe()).status.name).toBe('CANCELLED');
    expect(h.model.requests.find((r) => r.rule === 'late answer')?.aborted).toBe(false);
  });
});
