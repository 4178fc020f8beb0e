/**
 * Model endpoint misbehaving: rate limits with retry-after, server errors, hung connections past the model timeout,
 * resets, truncated and invalid JSON, invalid tool arguments, refusals — alone, inside a delegating tree, and in
 * random mixes across concurrent runs. Every run ends per policy (retried to completion, or failed with a typed
 * error that says why); none hangs; none is lost.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/schema.js';
import { RunState } from '../../src/contract/run.js';
import { forTask, userSays, type ScriptReply, type ScriptRule } from '../../src/testing/script.js';
import { useHarness } from '../support/harness.js';
import { FAULT_CONFIG, seededRandom, TREE_SCOPES, treeOutput, treeRules, treeTask } from './support.js';

const h = useHarness({ config: parseConfig(FAULT_CONFIG) });

const SEED = Number(process.env.FAULTS_SEED ?? 20261130);

/** Transient faults: each is retried and the run goes on. */
const TRANSIENT: Record<string, ScriptReply> = {
  '429 retry-after': { status: 429, message: 'slow down', headers: { 'retry-after': '1' } },
  '500': { status: 500 },
  '502': { status: 502 },
  '503': { status: 503 },
  reset: { reset: true },
  'truncated JSON': { raw: '{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"mess' },
  'invalid JSON': { raw: '<html><body>502 Bad Gateway</body></html>' },
  'no choices': { raw: '{"id":"chatcmpl-1","object":"chat.completion","choices":[]}' },
  hang: { hang: true },
};

/** Rules answering `task` with `faults` in order, then with a final answer. */
function faultsThenAnswer(task: string, faults: ScriptReply[]): ScriptRule[] {
  return [
    ...faults.map((reply, i) => ({ name: `${task} fault ${i}`, when: forTask(task), reply })),
    { name: `${task} answer`, when: forTask(task), reply: { text: `done: ${task}` } },
  ];
}

async function run(task: string, scopes?: string[]) {
  const workflowId = h.id('mf');
  await h.deputy.startRun({ task, ...(scopes && { scopes }) }, { workflowId });
  return { workflowId, result: await h.deputy.result(workflowId) };
}

describe('model endpoint misbehaving', () => {
  it('R1.2 each transient fault, three times in a row, is retried until the run completes', async () => {
    const names = Object.keys(TRANSIENT).filter((name) => name !== 'hang');
    for (const name of names)
      h.model.add(...faultsThenAnswer(`triple ${name}`, Array<ScriptReply>(3).fill(TRANSIENT[name]!)));
    const results = await Promise.all(names.map((name) => run(`triple ${name}`)));
    for (const [i, { result }] of results.entries()) {
      const task = `triple ${names[i]}`;
      expect(result, task).toMatchObject({ status: 'completed', output: `done: ${task}` });
      expect(result.usage.modelCalls, task).toBe(1);
      expect(h.model.requests.filter(forTask(task)), task).toHaveLength(4);
    }
    // retry-after: 1 is honoured: the attempts are at least a second apart.
    const limited = h.model.requests.filter(forTask('triple 429 retry-after')).map((r) => r.receivedAt);
    for (let i = 1; i < limited.length; i++) expect(limited[i]! - limited[i - 1]!).toBeGreaterThanOrEqual(950);
  });

  it('R1.2 a connection that hangs past modelTimeoutSeconds is abandoned and the call retried', async () => {
    h.model.add(...faultsThenAnswer('hung call', [TRANSIENT.hang!, TRANSIENT.hang!]));
    const { result } = await run('hung call');
    expect(result).toMatchObject({ status: 'completed', output: 'done: hung call' });
    const requests = h.model.requests.filter(forTask('hung call'));
    expect(requests.map((r) => r.aborted)).toEqual([true, true, false]);
    // Abandoned after the 3 s timeout, not after the 5-minute activity timeout.
    expect(requests[1]!.receivedAt - requests[0]!.receivedAt).toBeLessThan(10_000);
  });

  it('R1.2 refusals fail the run at once with a typed error that says what to fix', async () => {
    h.model.add(
      { when: forTask('refused 401'), reply: { status: 401, message: 'bad key' } },
      { when: forTask('refused 404'), reply: { status: 404, message: 'no such model' } },
      { when: forTask('refused 400'), reply: { status: 400, message: 'bad request' } },
    );
    const [r401, r404, r400] = await Promise.all([run('refused 401'), run('refused 404'), run('refused 400')]);
    expect([r401, r404, r400].map(({ result }) => result.status)).toEqual(['failed', 'failed', 'failed']);
    expect(r401.result.error).toContain('check OPENAI_API_KEY');
    expect(r404.result.error).toContain('check the model name');
    expect(r400.result.error).toContain('tool schemas');
    for (const task of ['refused 401', 'refused 404', 'refused 400'])
      expect(h.model.requests.filter(forTask(task)), task).toHaveLength(1);
    expect(JSON.stringify([r401, r404, r400])).not.toContain('DO-NOT-LEAK');
  });

  it('R1.3 tool calls with invalid arguments come back to the model as tool errors and the run goes on', async () => {
    const task = 'bad tool arguments';
    h.model.add(
      {
        when: forTask(task, 0),
        reply: {
          toolCalls: [
            { name: 'calculate', arguments: '{"operation": "multiply", "a": 6' },
            { name: 'calculate', arguments: { operation: 'power', a: 2, b: 'ten' } },
            { name: 'teleport', arguments: {} },
          ],
        },
      },
      { when: forTask(task, 3), reply: { text: 'recovered' } },
    );
    const { workflowId, result } = await run(task, ['tools.calc']);
    expect(result).toMatchObject({ status: 'completed', output: 'recovered' });
    const state = RunState.parse(await h.deputy.getState(workflowId));
    // Results join the session as they come in (R3.2): read them in the order of the calls.
    const asked = state.session.find((e) => e.type === 'message/assistant' && e.toolCalls.length === 3);
    const calls = asked?.type === 'message/assistant' ? asked.toolCalls.map((call) => call.id) : [];
    const errors = calls.map((id) =>
      JSON.stringify(state.session.find((e) => e.type === 'tool/result' && e.toolCallId === id)),
    );
    expect(errors).toHaveLength(3);
    expect(errors[0]).toContain('not valid JSON');
    expect(errors[1]).toMatch(/invalid arguments for \\"calculate\\": operation: .*; b: /);
    expect(errors[2]).toContain('not available to this run');
  });

  it('R1.2 children of a delegating run meet rate limits and server errors and the tree still completes', async () => {
    h.model.add(
      { when: userSays('mf kid'), times: 2, reply: TRANSIENT['429 retry-after']! },
      { when: userSays('mf kid'), times: 2, reply: TRANSIENT['503']! },
      { when: userSays('mf tree'), reply: TRANSIENT.reset! },
      ...treeRules('mf'),
    );
    const { workflowId, result } = await run(treeTask('mf', 7), TREE_SCOPES);
    expect(result).toMatchObject({ status: 'completed', output: treeOutput(7) });
    const state = RunState.parse(await h.deputy.getState(workflowId));
    expect(state.reserved).toEqual({ tokens: 0, costMicroUsd: 0 });
    expect(state.delegations.map((e) => e.status)).toEqual(['completed', 'completed']);
  });

  it(`R1.2 random mixes of faults across 16 concurrent runs (seed ${SEED}): each completes, none lost`, async () => {
    const random = seededRandom(SEED);
    const names = Object.keys(TRANSIENT);
    const plans = Array.from({ length: 16 }, (_, i) => {
      const count = Math.floor(random() * 4);
      const faults = Array.from({ length: count }, () => names[Math.floor(random() * names.length)]!);
      return { task: `mix ${i}: ${faults.join(', ') || 'no faults'}`, faults };
    });
    for (const plan of plans)
      h.model.add(
        ...faultsThenAnswer(
          plan.task,
          plan.faults.map((name) => TRANSIENT[name]!),
        ),
      );
    const results = await Promise.all(plans.map((plan) => run(plan.task)));
    for (const [i, { result }] of results.entries()) {
      const { task, faults } = plans[i]!;
      expect(result, task).toMatchObject({ status: 'completed', output: `done: ${task}` });
      // Every fault was met once and the answer once: nothing skipped, nothing asked again after it succeeded.
      expect(h.model.requests.filter(forTask(task)), task).toHaveLength(faults.length + 1);
    }
    expect(h.model.pendingRules().filter((name) => name.startsWith('mix'))).toEqual([]);
  });
});
