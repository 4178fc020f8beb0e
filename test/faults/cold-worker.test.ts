/**
 * A model call sends only what is new since the run's last call, and the worker keeps the rest. That is
 * only a cache: here the worker that ran a run's first turns is SIGKILLed mid-call, a fresh worker process that never
 * saw the run finishes it, and the model must have been asked exactly what an undisturbed run asks, turn by turn
 * (compaction included), so the run ends with the same output.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMPACTION_SYSTEM_PROMPT } from '../../src/rules/compaction.js';
import { type RecordedRequest } from '../../src/testing/script.js';
import { createHarness, type Harness } from '../support/harness.js';
import type { WorkerProcess } from '../support/worker-process.js';
import { FAULT_CONFIG, startFaultWorker, writeConfig } from './support.js';

const TASK = 'cold worker: add up six numbers';
const TURNS = 6;
/** The turn whose model call is held while the worker that made it is killed. */
const HELD_TURN = 4;

let h: Harness;
let worker: WorkerProcess | undefined;
// A threshold low enough that the run compacts before and after the kill.
const configPath = writeConfig({
  ...FAULT_CONFIG,
  compaction: { thresholdTokens: 150, keepRecentTurns: 2, continueAsNewAfterEvents: 10_000 },
});

const digest = (request: RecordedRequest) =>
  createHash('sha256').update(JSON.stringify(request.body.messages)).digest('hex').slice(0, 16);
const isCompaction = (request: RecordedRequest) => request.body.messages[0]?.content === COMPACTION_SYSTEM_PROMPT;
const isTurn = (request: RecordedRequest) =>
  !isCompaction(request) && JSON.stringify(request.body.messages).includes(TASK);

/** The turn a request is for: turn t adds t + 1, so the last tool result says which turn comes next (compaction
 * summarises the older ones away). */
function turnOf(request: RecordedRequest): number {
  const last = request.body.messages.findLast((message) => message.role === 'tool');
  return last ? Number(/-?\d+(\.\d+)?/.exec(String(last.content))?.[0] ?? NaN) : 0;
}

let hold: { release: () => void; released: Promise<void> } | undefined;

beforeAll(async () => {
  h = await createHarness();
  h.model.add(
    {
      name: 'compaction',
      when: (request) => isCompaction(request) && JSON.stringify(request.body.messages).includes('cold worker'),
      times: Infinity,
      // The summary depends on every byte of the prompt: a prompt put together wrongly changes what follows.
      reply: (request) => ({ text: `Summary ${digest(request)}: the task is "${TASK}".` }),
    },
    {
      name: 'turn',
      when: isTurn,
      times: Infinity,
      reply: async (request) => {
        const turn = turnOf(request);
        if (turn === HELD_TURN && hold) {
          const { released } = hold;
          hold = undefined;
          await released;
          return { hang: true };
        }
        if (turn < TURNS) {
          return {
            toolCalls: [{ id: `c${turn}`, name: 'calculate', arguments: { operation: 'add', a: turn, b: 1 } }],
          };
        }
        return { text: `done ${digest(request)}` };
      },
    },
  );
});
afterAll(async () => {
  worker?.kill();
  await h?.close();
});

const startWorker = () => startFaultWorker(h, configPath);

/** What the model was asked, in order: turn and compaction prompts, each as its digest. */
const asked = (requests: RecordedRequest[]) =>
  requests.filter((r) => !r.aborted && r.answeredAt !== undefined).map((r) => `${r.rule}:${digest(r)}`);

describe('R1.1 the worker-side dialogue is only a cache', () => {
  it('R1.1 a fresh worker that never saw the run finishes it after a SIGKILL mid-call (a crash between sending a turn and its answer): same prompts, same output', async () => {
    worker = await startWorker();
    const scopes = ['tools.calc'];

    // The undisturbed run.
    const from = h.model.requests.length;
    const reference = h.id('cold-ref');
    await h.deputy.startRun({ task: TASK, scopes }, { workflowId: reference });
    const expected = await h.deputy.result(reference);
    expect(expected, JSON.stringify(expected)).toMatchObject({ status: 'completed' });
    expect(expected.output).toMatch(/^done [0-9a-f]{16}$/);
    const referenceAsked = asked(h.model.requests.slice(from));
    expect(referenceAsked.filter((line) => line.startsWith('compaction:')).length).toBeGreaterThan(0);

    // The same run, its worker killed while the model is answering turn HELD_TURN.
    let release!: () => void;
    hold = { release: () => release(), released: new Promise<void>((resolve) => (release = resolve)) };
    const start = h.model.requests.length;
    const disturbed = h.id('cold-run');
    await h.deputy.startRun({ task: TASK, scopes }, { workflowId: disturbed });
    await h.model.waitFor((requests) => requests.slice(start).some((r) => isTurn(r) && turnOf(r) === HELD_TURN));
    worker.kill('SIGKILL');
    await worker.exited;
    release();
    worker = await startWorker();

    const result = await h.deputy.result(disturbed);
    expect(result).toMatchObject({ status: 'completed', output: expected.output });
    // Every prompt the model answered is the undisturbed run's, in the same order.
    expect(asked(h.model.requests.slice(start))).toEqual(referenceAsked);

    // The fresh worker did not hold the dialogue: its first call failed as such, and the workflow sent it whole.
    const history = await h.client.workflow.getHandle(disturbed).fetchHistory();
    const failures = (history.events ?? []).flatMap((event) => {
      const info = event.activityTaskFailedEventAttributes?.failure?.applicationFailureInfo;
      return info?.type ? [info.type] : [];
    });
    expect(failures).toContain('ModelCall.ContextUnknown');
    // The undisturbed run never needed to.
    const referenceHistory = await h.client.workflow.getHandle(reference).fetchHistory();
    expect(JSON.stringify(referenceHistory.events)).not.toContain('ModelCall.ContextUnknown');
  });
});
