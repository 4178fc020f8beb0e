/**
 * Attacks by a hostile or broken model endpoint (items 17–20 and 32 of the threat model, docs/security.md): a stream
 * that opens and then says nothing useful, chunks whose keys reach for the worker's prototypes, usage no call could
 * have used, an answer streamed in pieces that would be over-counted one by one, and a response of 80 MiB. The endpoint is the scripted model
 * writing raw Server-Sent Events, as any server on the other end of `OPENAI_BASE_URL` can.
 */
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import { userSays } from '../../src/testing/script.js';
import { testConfig, useHarness } from '../support/harness.js';

const TIMEOUT_SECONDS = 2;
const h = useHarness({ config: testConfig({ modelTimeoutSeconds: TIMEOUT_SECONDS }) });

const chunk = (delta: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  id: 'chatcmpl-hostile',
  object: 'chat.completion.chunk',
  created: 0,
  model: 'test-model',
  choices: [{ index: 0, delta, finish_reason: null }],
  ...extra,
});
const done = (usage?: { prompt_tokens: number; completion_tokens: number }) => [
  { data: { ...chunk({}), choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] } },
  ...(usage ? [{ data: { ...chunk({}), choices: [], usage } }] : []),
];

/** Runs `task` against the script, returning its result and the requests the script's first rule answered. */
async function run(task: string) {
  const handle = await h.deputy.startRun({ task });
  const result = await h.deputy.result(handle.workflowId);
  return { result, requests: h.model.requests.filter((r) => r.rule?.startsWith(task)) };
}

describe('attacks by the model endpoint', () => {
  it.each([
    ['opens the stream and then sends nothing', { events: [], hold: true }],
    [
      'sends only keep-alive comments',
      { events: Array.from({ length: 40 }, () => ({ comment: 'ping', afterMs: 250 })), hold: true },
    ],
    [
      'sends one token, then usage-only chunks every 250 ms',
      {
        events: [
          { data: chunk({ role: 'assistant', content: 'Hel' }) },
          ...Array.from({ length: 40 }, () => ({
            data: { ...chunk({}), choices: [], usage: { prompt_tokens: 10, completion_tokens: 1 } },
            afterMs: 250,
          })),
        ],
        hold: true,
      },
    ],
  ])(
    'R1.15 attack 17: an endpoint that %s is abandoned after modelTimeoutSeconds of no content, and the call is retried',
    async (what, reply) => {
      const task = `attack 17: ${what}`;
      h.model.add(
        { name: `${task} stalls`, when: userSays(task), reply },
        { name: `${task} answers`, when: userSays(task), reply: { text: 'answered on the retry' } },
      );
      const { result, requests } = await run(task);
      expect(result).toMatchObject({ status: 'completed', output: 'answered on the retry' });
      const [stalled] = requests;
      expect(stalled!.aborted).toBe(true);
      // Abandoned by Deputy within the timeout (and a heartbeat's tick), not at the 5-minute start-to-close. The
      // worker's clock starts when it sends the request, the server's when the request arrives: on a busy machine
      // that gap has been seen at 126 ms, so the lower bound leaves half a second for it.
      const heldMs = stalled!.abortedAt! - stalled!.receivedAt;
      expect(heldMs).toBeGreaterThanOrEqual(TIMEOUT_SECONDS * 1000 - 500);
      expect(heldMs).toBeLessThan(TIMEOUT_SECONDS * 1000 + 2000);
    },
  );

  it('R1.15 attack 18: a tool-call chunk whose index is "__proto__" or "constructor" touches no prototype of the worker', async () => {
    const task = 'attack 18: prototype keys';
    h.model.add({
      name: task,
      when: userSays(task),
      reply: {
        events: [
          {
            data: chunk({
              role: 'assistant',
              tool_calls: [{ index: '__proto__', id: 'polluted', function: { name: 'x' } }],
            }),
          },
          { data: chunk({ tool_calls: [{ index: 'constructor', id: 'polluted', function: { name: 'x' } }] }) },
          { data: chunk({ tool_calls: [{ index: -1, id: 'polluted', function: { name: 'x' } }] }) },
          { data: chunk({ content: 'still an answer' }) },
          ...done(),
        ],
      },
    });
    const { result } = await run(task);
    expect(result).toMatchObject({ status: 'completed', output: 'still an answer' });
    expect(Object.prototype.hasOwnProperty.call(Array.prototype, 'id')).toBe(false);
    expect(Object.prototype.hasOwnProperty.call(Array.prototype, 'name')).toBe(false);
    expect(([] as unknown as { id?: unknown }).id).toBeUndefined();
    expect(result.usage.toolCalls).toBe(0);
  });

  it('R1.15 R2.15 attack 19: a usage report of 2^53 - 1 tokens is refused as impossible; the run is debited what it could have used', async () => {
    const task = 'attack 19: absurd usage';
    const absurd = Number.MAX_SAFE_INTEGER;
    h.model.add({
      name: task,
      when: userSays(task),
      reply: {
        events: [
          { data: chunk({ role: 'assistant', content: 'cheap answer' }) },
          ...done({ prompt_tokens: absurd, completion_tokens: absurd }),
        ],
      },
    });
    const { result, requests } = await run(task);
    expect(result.status).toBe('completed');
    const sent = requests[0]!.body.max_completion_tokens as number;
    expect(typeof sent).toBe('number');
    // At most the input Deputy sent (with its margin) and the cap it sent: never the report.
    expect(result.usage.outputTokens).toBeLessThanOrEqual(sent);
    expect(result.usage.inputTokens).toBeLessThan(10_000);
    expect(result.usage.costMicroUsd).toBeLessThanOrEqual(1_000_000);
    expect(result.usage.costMicroUsd).toBeGreaterThan(0);
  });

  it('R1.15 R2.13 attack 20: an answer streamed as 150 pieces of "word " is counted as the whole text, 151 tokens, not 300', async () => {
    const task = 'attack 20: pieces';
    const pieces = Array.from({ length: 150 }, () => 'word ');
    h.model.behaviour.reportsUsage = false;
    h.model.add({
      name: task,
      when: userSays(task),
      reply: {
        events: [
          { data: chunk({ role: 'assistant', content: '' }) },
          ...pieces.map((piece) => ({ data: chunk({ content: piece }) })),
          ...done(),
        ],
      },
    });
    try {
      const { result } = await run(task);
      expect(result).toMatchObject({ status: 'completed', output: pieces.join('') });
      expect(countTokens(pieces.join(''))).toBe(151);
      expect(result.usage.outputTokens).toBe(151);
    } finally {
      h.model.behaviour.reportsUsage = true;
    }
  });

  it('R1.15 attack 32: an endpoint sending 80 MiB in one response is cut off at 64 MiB, said so, and the call retried', async () => {
    const task = 'attack 32: a flood of keep-alives';
    const mebibyte = 'x'.repeat(2 ** 20);
    h.model.add(
      {
        name: `${task} floods`,
        when: userSays(task),
        // A token between each mebibyte of keep-alive: the stream never stalls, it only grows.
        reply: {
          events: Array.from({ length: 80 }, () => [{ data: chunk({ content: 'a ' }) }, { comment: mebibyte }]).flat(),
          hold: true,
        },
      },
      { name: `${task} answers`, when: userSays(task), reply: { text: 'answered after the flood' } },
    );
    const handle = await h.deputy.startRun({ task });
    const result = await h.deputy.result(handle.workflowId);
    expect(result).toMatchObject({ status: 'completed', output: 'answered after the flood' });
    const history = await h.client.workflow.getHandle(handle.workflowId).fetchHistory();
    const failures = (history.events ?? []).flatMap((e) => e.activityTaskFailedEventAttributes?.failure?.message ?? []);
    expect(failures).toHaveLength(1);
    expect(failures[0]).toContain('the model endpoint sent more than 64 MiB in one response; it was abandoned');
  });
});
