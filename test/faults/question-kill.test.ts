/**
 * R3.9 under a crash: the worker process (`npm run worker`) is SIGKILLed after a child asked its parent and before
 * the answer, and again after the answer was given and before the child used it. A fresh worker finishes the tree:
 * the question is asked once, answered once, and the child finishes with the answer; the ledger says so.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunState } from '../../src/contract/run.js';
import { lastMessage, toolMessages, type RecordedRequest } from '../../src/testing/script.js';
import { createHarness, type Harness } from '../support/harness.js';
import type { WorkerProcess } from '../support/worker-process.js';
import { FAULT_CONFIG, startFaultWorker, TREE_SCOPES, writeConfig } from './support.js';

const TASK = 'question kill: convert the total';
const CHILD = 'question kill child: convert 120';

let h: Harness;
let worker: WorkerProcess | undefined;
const configPath = writeConfig(FAULT_CONFIG);

/** Holds the child's model call that reads the answer, until the test lets it go. */
let holdAnswered: { released: Promise<void>; reached: () => void } | undefined;

/** The child's requests: its task is its own user message (the parent's holds it only in the delegate call). */
const child = (r: RecordedRequest) => r.body.messages.some((m) => m.role === 'user' && m.content?.endsWith(CHILD));

beforeAll(async () => {
  h = await createHarness();
  h.model.add(
    {
      name: 'dispatch',
      when: (r) => lastMessage(r) === TASK,
      reply: { toolCalls: [{ name: 'delegate', arguments: { briefs: [{ task_name: 'conv', message: CHILD }] } }] },
    },
    {
      name: 'ask',
      when: (r) => child(r) && lastMessage(r).endsWith(CHILD),
      reply: { toolCalls: [{ name: 'ask_parent', arguments: { question: 'Which currency?' } }] },
    },
    {
      name: 'parent waits',
      when: (r) => !child(r) && lastMessage(r).startsWith('[question from child conv]'),
      reply: { toolCalls: [{ name: 'wait', arguments: {} }] },
      // The kill can land after this call was answered and before its result was recorded: the fresh worker calls
      // again, as Temporal retries any activity its worker died in.
      times: 2,
    },
    {
      name: 'answered',
      when: (r) => child(r) && lastMessage(r) === 'Answer from the run that delegated to you: EUR',
      reply: async () => {
        if (holdAnswered) {
          const { released, reached } = holdAnswered;
          holdAnswered = undefined;
          reached();
          await released;
          return { hang: true };
        }
        return { text: '120 EUR' };
      },
      times: Infinity,
    },
    {
      name: 'parent done',
      // The child's result (through wait), then the news that a person answered its question.
      when: (r) => !child(r) && toolMessages(r).some((m) => m.includes('120 EUR')),
      reply: { text: 'The total is 120 EUR.' },
    },
  );
});
afterAll(async () => {
  worker?.kill();
  await h?.close();
});

const kill = async () => {
  worker!.kill('SIGKILL');
  await worker!.exited;
};

describe('R3.9 a worker SIGKILL between question and answer', () => {
  it('R3.9 R1.1 killed after the question and again after the answer: asked once, answered once, the child finishes with it', async () => {
    worker = await startFaultWorker(h, configPath);
    const id = h.id('question-kill');
    const childId = `${id}/conv-1`;
    await h.deputy.startRun({ task: TASK, scopes: TREE_SCOPES }, { workflowId: id });
    await expect.poll(async () => (await h.deputy.openQuestions(id)).length, { timeout: 20_000 }).toBe(1);

    // Killed while the child waits for its answer and the parent waits for the child.
    await kill();
    worker = await startFaultWorker(h, configPath);
    // The question survived in both histories: still open, and the parent (a fresh worker replaying it) takes the answer.
    await expect
      .poll(() => h.deputy.openQuestions(id), { timeout: 20_000 })
      .toMatchObject([{ childWorkflowId: childId, questionId: 'q1.1' }]);
    let reached!: () => void;
    const reachedChild = new Promise<void>((resolve) => (reached = resolve));
    let release!: () => void;
    holdAnswered = { released: new Promise<void>((resolve) => (release = resolve)), reached };
    expect(await h.deputy.answer(childId, 'EUR')).toBe('q1.1');

    // Killed again while the child's model reads the answer.
    await reachedChild;
    await kill();
    release();
    worker = await startFaultWorker(h, configPath);

    const result = await h.deputy.result(id);
    expect(result, JSON.stringify(result)).toMatchObject({ status: 'completed', output: 'The total is 120 EUR.' });
    expect(await h.deputy.result(childId)).toMatchObject({ status: 'completed', output: '120 EUR' });
    const state = RunState.parse(await h.deputy.getState(id));
    expect(state.delegations[0]!.questions).toMatchObject([
      { id: 'q1.1', question: 'Which currency?', status: 'answered', answer: 'EUR', answeredBy: 'client' },
    ]);
    // Asked once, answered once: one signal each way in the histories, whatever the workers replayed.
    const signals = async (workflowId: string) =>
      ((await h.client.workflow.getHandle(workflowId).fetchHistory()).events ?? []).flatMap((e) => {
        const name = e.workflowExecutionSignaledEventAttributes?.signalName;
        return name ? [name] : [];
      });
    expect(await signals(id)).toEqual(['deputy.question']);
    expect(await signals(childId)).toEqual(['deputy.answer']);
    expect(h.model.requests.filter((r) => r.rule === 'ask').length).toBe(1);
  });
});
