/**
 * Regenerates the replay fixtures in test/fixtures/histories: runs representative scenarios on an embedded dev
 * server against the scripted model and saves each run's history as JSON.
 *
 *   npm run fixtures
 *
 * Regenerate only on purpose: until 1.0 a workflow change that breaks replay re-records the fixtures (the reason in
 * the commit message); from 1.0 on it needs a flag (docs/versioning.md), and the old histories stay. To add histories
 * of a new shape beside the old ones, record some scenarios under another prefix, e.g.
 * `FIXTURES=delegating-parent FIXTURE_PREFIX=fixture-flag-name-`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@temporalio/client';
import { execFileSync } from 'node:child_process';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { DeputyClient } from '../src/client/client.js';
import { parseConfig } from '../src/config/load.js';
import { DEFAULT_PERSONA } from '../src/config/schema.js';
import { startDevServer } from '../src/testing/dev-server.js';
import type { RunInput } from '../src/contract/run.js';
import { findTemporalCli, PROJECT_ROOT } from '../src/testing/temporal-cli.js';
import { COMPACTION_SYSTEM_PROMPT } from '../src/rules/compaction.js';
import { SUMMARY_SYSTEM_PROMPT } from '../src/rules/context.js';
import {
  forTask,
  ScriptedModelServer,
  userSays,
  type RecordedRequest,
  type ScriptRule,
} from '../src/testing/scripted-model.js';
import { createDeputyWorker } from '../src/worker/factory.js';

interface Scenario {
  name: string;
  input: RunInput;
  rules: ScriptRule[];
  /** Drives the run from outside (updates, cancellation) after it starts. */
  drive?: (deputy: DeputyClient, workflowId: string, model: ScriptedModelServer) => Promise<void>;
}

const isSummary = (r: RecordedRequest) => r.body.messages[0]?.content === SUMMARY_SYSTEM_PROMPT;
const isCompaction = (r: RecordedRequest) => r.body.messages[0]?.content === COMPACTION_SYSTEM_PROMPT;
/** The compacting run's requests: its task, or (once compacted away) its own tool calls. */
const isCompactingRun = (r: RecordedRequest) =>
  forTask('fixture: compact')(r) || JSON.stringify(r.body.messages).includes('shipping returns tax');
/** Turn number of a compacting run's request: which query its last tool result answered. */
const lastToolResult = (r: RecordedRequest) => {
  const asked = r.body.messages.flatMap((m) => (m.tool_calls ?? []) as { function: { arguments: string } }[]).at(-1);
  return asked ? Number(/tax (\d+)/.exec(asked.function.arguments)?.[1] ?? 0) : 0;
};

const ask = (question: string) => ({ name: 'ask_parent', arguments: { question } });
const lastMessageOf = (r: RecordedRequest) => r.body.messages.at(-1)?.content ?? '';

const calc = (a: number, b: number) => ({ name: 'calculate', arguments: { operation: 'add', a, b } });

const SCENARIOS: Scenario[] = [
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
    name: 'delegating-parent',
    input: { task: 'fixture: delegate', scopes: ['tools.calc', 'tools.notes', 'run.delegate'] },
    rules: [
      {
        when: forTask('fixture: delegate', 0),
        reply: {
          toolCalls: [
            {
              name: 'delegate',
              arguments: {
                briefs: [
                  { task_name: 'tax', message: 'fixture child: find the sales tax rate' },
                  { task_name: 'sum', message: 'fixture child: add 2 and 3', allowed_tools: ['calculate'] },
                ],
              },
            },
          ],
        },
      },
      {
        when: userSays('fixture child: find the sales tax rate', 0),
        reply: { toolCalls: [{ name: 'search_notes', arguments: { query: 'tax' } }] },
      },
      { when: userSays('fixture child: find the sales tax rate', 1), reply: { text: '8%' } },
      { when: userSays('fixture child: add 2 and 3'), reply: { text: '5' } },
      { when: forTask('fixture: delegate', 1), reply: { text: 'tax 8%, sum 5' } },
    ],
  },
  {
    // A root on a preset past the size a child's input carries whole: its implicit child gets it by reference and
    // looks it up (a presetAtRevision marker) before its first turn.
    name: 'implicit-by-reference',
    input: { task: 'fixture: by reference', preset: 'writer', scopes: ['tools.calc', 'tools.notes', 'run.delegate'] },
    rules: [
      {
        when: forTask('fixture: by reference', 0),
        reply: {
          toolCalls: [
            { name: 'delegate', arguments: { briefs: [{ task_name: 'draft', message: 'fixture child: one line' }] } },
          ],
        },
      },
      { when: userSays('fixture child: one line'), reply: { text: 'a line' } },
      { when: forTask('fixture: by reference', 1), reply: { text: 'the child wrote a line' } },
    ],
  },
  {
    name: 'context-summary-and-all',
    input: { task: 'fixture: context', scopes: ['tools.calc', 'tools.notes', 'run.delegate'] },
    rules: [
      {
        when: (r) => forTask('fixture: context', 0)(r) && !isSummary(r),
        reply: { text: 'Splitting.', toolCalls: [{ name: 'calculate', arguments: { operation: 'add', a: 1, b: 1 } }] },
      },
      {
        when: (r) => forTask('fixture: context', 1)(r) && !isSummary(r),
        reply: {
          toolCalls: [
            {
              name: 'delegate',
              arguments: {
                briefs: [
                  { task_name: 'summarised', message: 'fixture child: summary context', context: 'summary' },
                  { task_name: 'copied', message: 'fixture child: all context', context: 'all' },
                ],
              },
            },
          ],
        },
      },
      { when: isSummary, reply: { text: 'background: 1 + 1 = 2' } },
      { when: userSays('fixture child: summary context'), reply: { text: 'summary child done' } },
      { when: userSays('fixture child: all context'), reply: { text: 'all child done' } },
      { when: (r) => forTask('fixture: context', 2)(r) && !isSummary(r), reply: { text: 'both done' } },
    ],
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
    // R2.14: background children, `wait` on one, an answer while the other is live, its result between turns.
    name: 'background-task',
    input: { task: 'fixture: background', scopes: ['tools.calc', 'tools.notes', 'run.delegate'] },
    rules: [
      {
        when: forTask('fixture: background', 0),
        reply: {
          toolCalls: [
            {
              name: 'delegate',
              arguments: {
                briefs: [
                  { task_name: 'early', message: 'fixture bg child: early', wait: false },
                  { task_name: 'late', message: 'fixture bg child: late', wait: false },
                ],
              },
            },
          ],
        },
      },
      {
        when: forTask('fixture: background', 1),
        reply: { toolCalls: [{ name: 'wait', arguments: { task_names: ['early'] } }] },
      },
      { when: forTask('fixture: background', 2), reply: { text: 'early in, late pending' } },
      { when: userSays('fixture bg child: early'), reply: { text: 'early done' } },
      { when: userSays('fixture bg child: late'), delayMs: 2000, reply: { text: 'late done' } },
      { when: userSays('[background child late ended]'), reply: { text: 'all done' } },
    ],
  },
  {
    // R2.14 R3.7: a conversation talks while a background child with context works, interjects, hears its result.
    name: 'background-chat',
    input: { task: 'fixture: background chat', mode: 'conversation', scopes: ['tools.notes', 'run.delegate'] },
    rules: [
      {
        when: forTask('fixture: background chat', 0),
        reply: {
          toolCalls: [
            {
              name: 'delegate',
              arguments: {
                briefs: [{ task_name: 'ctx', message: 'fixture bg child: ctx', context: 'all', wait: false }],
              },
            },
          ],
        },
      },
      { when: forTask('fixture: background chat', 1), reply: { text: 'dispatched' } },
      { when: (r) => r.body.messages.at(-1)?.content === 'fixture: while it works', reply: { text: 'still busy' } },
      {
        when: userSays('fixture bg child: ctx', 0),
        delayMs: 2500,
        reply: { toolCalls: [{ name: 'search_notes', arguments: { query: 'tax' } }] },
      },
      { when: userSays('fixture bg child: ctx', 1), reply: { text: 'ctx done' } },
      { name: 'bg reported', when: userSays('[background child ctx ended]'), reply: { text: 'ctx reported' } },
    ],
    async drive(deputy, workflowId, model) {
      await model.waitFor((rs) => rs.some(forTask('fixture: background chat', 1)));
      await deputy.sendMessage(workflowId, 'fixture: while it works');
      while ((await deputy.getState(workflowId)).delegations[0]?.status !== 'running') await sleep(50);
      await deputy.interject(workflowId, 'ctx', 'fixture: a note for you');
      await model.waitFor((rs) => rs.some((r) => r.rule === 'bg reported'));
      while ((await deputy.getState(workflowId)).status !== 'waiting_for_user') await sleep(50);
      await deputy.endConversation(workflowId);
    },
  },
  {
    // R3.9: a waited child asks (the wait ends, the model answers); another asks later and a person answers it.
    name: 'questions',
    input: { task: 'fixture: questions', scopes: ['tools.calc', 'run.delegate'] },
    rules: [
      {
        when: forTask('fixture: questions', 0),
        reply: {
          toolCalls: [
            {
              name: 'delegate',
              arguments: {
                briefs: [
                  { task_name: 'asker', message: 'fixture q child: asker' },
                  { task_name: 'direct', message: 'fixture q child: direct' },
                ],
              },
            },
          ],
        },
      },
      {
        when: (r) => lastMessageOf(r).startsWith('[question from child asker]'),
        reply: { toolCalls: [{ name: 'answer_child', arguments: { task_name: 'asker', answer: 'The rate is 8%.' } }] },
      },
      {
        when: (r) =>
          lastMessageOf(r).startsWith('answer to q1.1 delivered') ||
          lastMessageOf(r).startsWith('[question from child direct]'),
        times: 2,
        reply: { toolCalls: [{ name: 'wait', arguments: {} }] },
      },
      { when: userSays('was answered directly'), reply: { text: 'questions settled' } },
      { when: userSays('fixture q child: asker', 0), reply: { toolCalls: [ask('Which rate?')] } },
      { when: userSays('fixture q child: asker', 1), reply: { text: 'asker done at 8%' } },
      { when: userSays('fixture q child: direct', 0), delayMs: 1500, reply: { toolCalls: [ask('Which currency?')] } },
      { when: userSays('fixture q child: direct', 1), reply: { text: 'direct done in EUR' } },
    ],
    async drive(deputy, workflowId) {
      while ((await deputy.openQuestions(workflowId)).every((q) => q.taskName !== 'direct')) await sleep(50);
      await deputy.answer(`${workflowId}/direct-1`, 'EUR');
    },
  },
  {
    // A child with an explicit role (its own preset) and a follow-up of it: the follow-up restores its session and
    // keeps its role.
    name: 'role-child',
    input: { task: 'fixture: role child', scopes: ['tools.calc', 'tools.notes', 'run.delegate'] },
    rules: [
      { when: userSays('fixture role child: and the shipping?'), reply: { text: 'shipping is $4.99' } },
      {
        when: forTask('fixture: role child', 0),
        reply: {
          toolCalls: [
            {
              name: 'delegate',
              arguments: {
                briefs: [{ task_name: 'look', message: 'fixture role child: the tax rate', role: 'researcher' }],
              },
            },
          ],
        },
      },
      {
        when: userSays('fixture role child: the tax rate', 0),
        reply: { toolCalls: [{ name: 'search_notes', arguments: { query: 'tax' } }] },
      },
      { when: userSays('fixture role child: the tax rate', 1), reply: { text: 'the tax is 8%' } },
      {
        when: forTask('fixture: role child', 1),
        reply: {
          toolCalls: [
            { name: 'followup', arguments: { task_name: 'look', message: 'fixture role child: and the shipping?' } },
          ],
        },
      },
      { when: forTask('fixture: role child', 2), reply: { text: 'tax 8%, shipping $4.99' } },
    ],
  },
  {
    // A child saves an artifact; its parent reads it after the join (the reference travels in the child's result).
    name: 'artifacts',
    input: {
      task: 'fixture: artifacts',
      preset: 'editor',
      scopes: ['tools.calc', 'run.delegate', 'artifacts.read', 'artifacts.write'],
    },
    rules: [
      {
        when: forTask('fixture: artifacts', 0),
        reply: {
          toolCalls: [
            {
              name: 'delegate',
              arguments: {
                briefs: [{ task_name: 'report', message: 'fixture artifact child: the table', role: 'reporter' }],
              },
            },
          ],
        },
      },
      {
        when: userSays('fixture artifact child: the table', 0),
        reply: {
          toolCalls: [
            {
              name: 'save_artifact',
              arguments: { name: 'rates.md', media_type: 'text/markdown', content: '| Springfield | 8% |\n' },
            },
          ],
        },
      },
      { when: userSays('fixture artifact child: the table', 1), reply: { text: 'saved rates.md' } },
      {
        when: forTask('fixture: artifacts', 1),
        reply: { toolCalls: [{ name: 'read_artifact', arguments: { id: 'art-74670919ba39761f' } }] },
      },
      { when: forTask('fixture: artifacts', 2), reply: { text: 'Springfield: 8%' } },
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

/** The config every fixture is recorded with. */
function fixtureConfig() {
  return parseConfig({
    model: 'test-model',
    prices: { 'test-model': { inputPerMTokUsd: 1, outputPerMTokUsd: 2 } },
    delegation: { enabled: true, activation: 'unconditional' },
    // What the scenarios ask for: a caller's scopes only narrow what the config grants.
    grantableScopes: ['tools.calc', 'tools.notes', 'run.delegate', 'artifacts.read', 'artifacts.write'],
    presets: [
      { id: 'assistant', persona: DEFAULT_PERSONA, tools: ['calculate', 'search_notes'] },
      // Past the size a child's input carries whole: children get these by reference and look them up.
      {
        id: 'writer',
        persona: `You write. ${'Say it in one line. '.repeat(60)}`,
        tools: ['calculate', 'search_notes'],
      },
      { id: 'editor', persona: DEFAULT_PERSONA, tools: ['calculate', 'save_artifact', 'read_artifact'] },
      { id: 'reporter', persona: 'You report in a table.', tools: ['save_artifact'] },
      {
        id: 'researcher',
        persona: `You research with the notes. ${'Quote the note you used, word for word. '.repeat(26)}`,
        tools: ['search_notes'],
      },
    ],
    // Small enough that the compacting scenario compacts; the other scenarios stay far below it.
    compaction: { thresholdTokens: 700, keepRecentTurns: 2, continueAsNewAfterEvents: 100_000 },
    hooks: [{ name: 'audit', events: ['task.submitted', 'subagent.start', 'subagent.end'], function: 'audit' }],
  });
}

/** A run's history in the JSON form Temporal's CLI exports (and the replayer reads). */
function exportHistory(address: string, workflowId: string): { text: string; events: number } {
  const cli = findTemporalCli();
  if (!cli) throw new Error('the Temporal CLI is needed to export histories: npm run setup');
  const text = execFileSync(
    cli,
    ['workflow', 'show', '--workflow-id', workflowId, '--output', 'json', '--address', address],
    {
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  return { text, events: (JSON.parse(text) as { events: unknown[] }).events.length };
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const out = join(PROJECT_ROOT, 'test', 'fixtures', 'histories');
  mkdirSync(out, { recursive: true });
  const server = await startDevServer();
  const model = await ScriptedModelServer.start(SCENARIOS.flatMap((s) => s.rules));
  const taskQueue = 'fixtures';
  const client = new Client({ connection: server.env.connection });
  const worker = await createDeputyWorker({
    connection: server.env.nativeConnection,
    client,
    taskQueue,
    childTaskQueue: `${taskQueue}-background`,
    config: fixtureConfig(),
    hookFunctions: { audit: async () => ({ decision: 'accept' as const }) },
    model: { apiKey: 'sk-fixture', baseURL: model.url },
  });
  const deputy = new DeputyClient(client, { taskQueue });
  try {
    await worker.runUntil(async () => {
      const only = process.env.FIXTURES?.split(',');
      for (const scenario of SCENARIOS.filter((s) => !only || only.includes(s.name))) {
        const workflowId = `${process.env.FIXTURE_PREFIX ?? 'fixture-'}${scenario.name}`;
        await deputy.startRun(scenario.input, { workflowId });
        await scenario.drive?.(deputy, workflowId, model);
        const result = await deputy.result(workflowId);
        const children = (await deputy.getState(workflowId)).delegations.map((d) => d.childWorkflowId);
        for (const id of [workflowId, ...children]) {
          const history = exportHistory(server.address, id);
          const name = id.replace(/\//g, '__'); // the replay test maps __ back to /
          writeFileSync(join(out, `${name}.json`), history.text);
          console.log(`${name}: ${id === workflowId ? result.status : 'child'}, ${history.events} events`);
        }
      }
    });
  } finally {
    await model.close();
    await server.env.teardown();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
