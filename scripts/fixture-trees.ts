/** The replay fixtures of delegating trees: children, parent context, background children, questions, roles, artifacts. */
import { setTimeout as sleep } from 'node:timers/promises';

import { forTask, userSays } from '../src/testing/script.js';
import { ask, isSummary, lastMessageOf, type Scenario } from './fixture-runs.js';

export const TREE_SCENARIOS: Scenario[] = [
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
    // Background children, `wait` on one, an answer while the other is live, its result between turns.
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
    // A conversation talks while a background child with context works, interjects, hears its result.
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
    // A waited child asks (the wait ends, the model answers); another asks later and a person answers it.
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
];
