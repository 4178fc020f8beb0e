/**
 * The replay fixtures of single runs: tools, limits, a conversation, compaction, model errors, a cancellation; and
 * what every fixture scenario is made of.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { type DeputyClient } from '../src/client/client.js';
import type { RunInput } from '../src/contract/run.js';
import { COMPACTION_SYSTEM_PROMPT } from '../src/rules/compaction.js';
import { SUMMARY_SYSTEM_PROMPT } from '../src/rules/context.js';
import { type ScriptedModelServer } from '../src/testing/scripted-model.js';
import { forTask, type RecordedRequest, type ScriptRule } from '../src/testing/script.js';

export interface Scenario {
  name: string;
  input: RunInput;
  rules: ScriptRule[];
  /** Drives the run from outside (updates, cancellation) after it starts. */
  drive?: (deputy: DeputyClient, workflowId: string, model: ScriptedModelServer) => Promise<void>;
}

export const isSummary = (r: RecordedRequest) => r.body.messages[0]?.content === SUMMARY_SYSTEM_PROMPT;
export const isCompaction = (r: RecordedRequest) => r.body.messages[0]?.content === COMPACTION_SYSTEM_PROMPT;
/** The compacting run's requests: its task, or (once compacted away) its own tool calls. */
export const isCompactingRun = (r: RecordedRequest) =>
  forTask('fixture: compact')(r) || JSON.stringify(r.body.messages).includes('shipping returns tax');
/** Turn number of a compacting run's request: which query its last tool result answered. */
export const lastToolResult = (r: RecordedRequest) => {
  const asked = r.body.messages.flatMap((m) => (m.tool_calls ?? []) as { function: { arguments: string } }[]).at(-1);
  return asked ? Number(/tax (\d+)/.exec(asked.function.arguments)?.[1] ?? 0) : 0;
};

export const ask = (question: string) => ({ name: 'ask_parent', arguments: { question } });
export const lastMessageOf = (r: RecordedRequest) => r.body.messages.at(-1)?.content ?? '';

export const calc = (a: number, b: number) => ({ name: 'calculate', arguments: { operation: 'add', a, b } });

export const RUN_SCENARIOS: Scenario[] = [
  {
    name: 'two-tool-calls',
    input: { task: 'fixture: two tools' },
    rules: [
      {
        when: forTask('fixture: two tools', 0),
        reply: { toolCalls: [{ name: 'search_notes', arguments: { query: 'tax' } }] },
      },
      { when: forTask('fixture: two tools', 1), reply: { toolCalls: [calc(1, 2)] } },
      { when: forTask('fixture: two tools', 2), reply: { text: 'three, taxed at 8%' } },
    ],
  },
  {
    name: 'synthesis-then-limit',
    input: { task: 'fixture: synthesis', limits: { maxTurns: 2, synthesisReserve: {} } },
    rules: [
      { when: forTask('fixture: synthesis', 0), reply: { text: 'draft', toolCalls: [calc(2, 2)] } },
      { when: forTask('fixture: synthesis', 1), reply: { text: 'final answer: 4' } },
    ],
  },
  {
    name: 'limit-reached-tool-calls',
    input: { task: 'fixture: tool limit', limits: { maxToolCalls: 1, synthesisReserve: false } },
    rules: [{ when: forTask('fixture: tool limit'), times: 2, reply: { text: 'more', toolCalls: [calc(1, 1)] } }],
  },
  {
    name: 'conversation',
    input: { task: 'fixture: chat', mode: 'conversation' },
    rules: [
      { when: forTask('fixture: chat', 0), reply: { text: 'hello' } },
      { when: (r) => r.body.messages.at(-1)?.content === 'fixture: second message', reply: { text: 'second answer' } },
    ],
    async drive(deputy, workflowId, model) {
      await model.waitFor((rs) => rs.some(forTask('fixture: chat')));
      await deputy.sendMessage(workflowId, 'fixture: second message');
      await model.waitFor((rs) => rs.some((r) => r.body.messages.at(-1)?.content === 'fixture: second message'));
      while ((await deputy.getState(workflowId)).status !== 'waiting_for_user') await sleep(50);
      await deputy.endConversation(workflowId);
    },
  },
  {
    name: 'compacting',
    input: { task: 'fixture: compact', scopes: ['tools.notes'] },
    rules: [
      { when: isCompaction, times: Infinity, reply: { text: 'summary of the earlier turns' } },
      ...[0, 1, 2, 3, 4, 5].map((n) => ({
        when: (r: RecordedRequest) => isCompactingRun(r) && !isCompaction(r) && lastToolResult(r) === n,
        reply: { toolCalls: [{ name: 'search_notes', arguments: { query: `shipping returns tax ${n + 1}` } }] },
      })),
      {
        when: (r: RecordedRequest) => isCompactingRun(r) && !isCompaction(r) && lastToolResult(r) === 6,
        reply: { text: 'compacted and done' },
      },
    ],
  },
  {
    name: 'model-401',
    input: { task: 'fixture: unauthorized' },
    rules: [{ when: forTask('fixture: unauthorized'), reply: { status: 401, message: 'Incorrect API key' } }],
  },
  {
    // A model call retried by its workflow: a 500, then a stream cut mid-answer (billed), then the answer.
    name: 'model-retried',
    input: { task: 'fixture: retried' },
    rules: [
      { when: forTask('fixture: retried'), reply: { status: 500, message: 'upstream broke' } },
      { when: forTask('fixture: retried'), reply: { text: 'a long answer that is cut '.repeat(8), cutAfterChars: 32 } },
      { when: forTask('fixture: retried'), reply: { text: 'Answered on the third attempt.' } },
    ],
  },
  {
    name: 'cancelled',
    input: { task: 'fixture: cancel' },
    rules: [{ name: 'hang', when: forTask('fixture: cancel'), reply: { hang: true } }],
    async drive(deputy, workflowId, model) {
      await model.waitFor((rs) => rs.some((r) => r.rule === 'hang'));
      await deputy.cancel(workflowId);
    },
  },
];
