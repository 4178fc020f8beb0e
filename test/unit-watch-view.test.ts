/**
 * The watched tree folded for people: statuses, spend and roll-ups, questions waiting for an answer and
 * the no-tool-calls mark, from a hand-written event sequence (the live sequences are in watch.test.ts, web.test.ts).
 */
import { describe, expect, it } from 'vitest';
import type { WatchEvent } from '../src/client/watch-events.js';
import { describeWatchEvent, TreeView } from '../src/client/watch-view.js';

let seq = 0;
const at = '2026-12-01T00:00:00.000Z';
const ev = (run: string, parent: string | null, body: Record<string, unknown>) =>
  ({ run, parent, seq: ++seq, at, cursor: 'c', ...body }) as WatchEvent;
const usage = { inputTokens: 1, outputTokens: 1, costUsd: 0.001, modelCalls: 1, toolCalls: 0 };

describe('R6.5 TreeView', () => {
  it('folds runs, spend, roll-ups, a question waiting then answered, and marks a child that called no tool', () => {
    const view = new TreeView();
    const root = 'r';
    const child = 'r/research-1';
    for (const event of [
      ev(root, null, { type: 'run/started', taskName: null, depth: 0, task: 'plan' }),
      ev(root, null, {
        type: 'model/finished',
        model: 'm',
        activity: 'callModel',
        inputTokens: 100,
        outputTokens: 20,
        costUsd: 0.002,
        billed: { inputTokens: 90, outputTokens: 20, costUsd: 0.0018 },
        finishReason: 'tool_calls',
        toolCalls: ['delegate'],
      }),
      ev(root, null, {
        type: 'delegation/started',
        child,
        taskName: 'research',
        reserved: { maxTokens: 2000, maxCostUsd: 0.003 },
      }),
      ev(child, root, { type: 'run/started', taskName: 'research', depth: 1, task: 'look' }),
      ev(child, root, {
        type: 'model/finished',
        model: 'm',
        activity: 'callModel',
        inputTokens: 50,
        outputTokens: 10,
        costUsd: 0.001,
        billed: { inputTokens: 50, outputTokens: 10, costUsd: 0.001 },
        finishReason: 'stop',
        toolCalls: ['ask_parent'],
      }),
      ev(root, null, { type: 'question/asked', child, questionId: 'q1.1', question: 'Which city?' }),
    ])
      view.apply(event);
    expect(view.runs.get(child)!.status).toBe('waiting_for_answer');
    expect([...view.questions.values()]).toEqual([
      { questionId: 'q1.1', child, taskName: 'research', question: 'Which city?' },
    ]);
    view.apply(ev(child, root, { type: 'question/answered', questionId: 'q1.1', from: root }));
    expect(view.runs.get(child)!.status).toBe('running');
    expect(view.questions.size).toBe(0);
    const ended = ev(child, root, {
      type: 'run/ended',
      status: 'completed',
      limit: 'maxTurns',
      synthesis: true,
      usage,
      output: 'Paris',
    });
    expect(describeWatchEvent(ended)).toBe('completed (maxTurns, synthesised)');
    view.apply(ended);
    const joined = ev(root, null, { type: 'delegation/joined', child, status: 'completed', usage, overrun: null });
    view.apply(joined);
    expect(describeWatchEvent(joined)).toBe('research-1 joined: completed (no tool calls)');

    const rows = view.rows();
    expect(rows.map((r) => [r.name, r.depth, r.tokens])).toEqual([
      [root, 0, 120],
      ['research', 1, 60],
    ]);
    expect(rows[0]!.treeTokens).toBe(180);
    expect(rows[0]!.treeCostUsd).toBeCloseTo(0.003, 9);
    // R2.19 What the endpoints billed rolls up beside what was debited: the root's endpoint reported 10 tokens less.
    expect(rows[0]!.treeBilledCostUsd).toBeCloseTo(0.0028, 9);
    expect(rows[1]!.treeBilledCostUsd).toBeCloseTo(0.001, 9);
    // 49.8 Tool calls as the runs count them: those their models called, the child's taken from its own usage at
    // its end; the lines show each run's own spend, the summary the tree's.
    // The summary says both where they differ, labelled.
    expect(view.summary()).toBe(
      'running: tree of 2 runs: 2 model calls, 1 tool call, 180 tokens, $0.003000 (billed 170 tokens, $0.002800)',
    );
    expect(view.lines().slice(2, 4)).toEqual([
      `└─ research${' '.repeat(19)} completed${' '.repeat(11)} own 60 tok $0.001000`,
      '      completed (maxTurns, synthesised)',
    ]);
  });
});

describe('R6.5 each event in one line', () => {
  const one = (body: Record<string, unknown>) => describeWatchEvent(ev('r/a-1', 'r', body));
  it('says what every kind of event was, cost, calls, reservations and overruns included', () => {
    const long = `a   long\n\ntask ${'word '.repeat(30)}`;
    expect(one({ type: 'run/started', taskName: 'a', depth: 1, task: long })).toBe(
      `started: ${'a long task word word word word word word word word word word'.slice(0, 59)}…`,
    );
    expect(one({ type: 'run/started', taskName: 'a', depth: 1, task: ' short \n task ' })).toBe('started: short task');
    expect(one({ type: 'run/ended', status: 'completed' })).toBe('completed');
    expect(one({ type: 'run/moved', from: 'acme:v1', to: 'acme:v2' })).toBe('moved from acme:v1 to acme:v2');
    expect(one({ type: 'run/ended', status: 'failed', error: 'the endpoint answered 400' })).toBe('failed');
    expect(one({ type: 'run/ended', status: 'limit_reached', limit: 'maxTurns' })).toBe('limit_reached (maxTurns)');
    expect(one({ type: 'run/ended', status: 'completed', limit: 'maxTokens', synthesis: true })).toBe(
      'completed (maxTokens, synthesised)',
    );
    expect(one({ type: 'model/started', model: 'm', activity: 'callModel' })).toBe('calling m');
    expect(one({ type: 'model/started', model: 'm', activity: 'compactSession' })).toBe('compactSession m');
    const finished = { type: 'model/finished', model: 'm', activity: 'callModel', inputTokens: 100, outputTokens: 20 };
    expect(one({ ...finished, costUsd: 0.0021, toolCalls: ['calculate', 'delegate'] })).toBe(
      'm answered (120 tokens, $0.002100) → calculate, delegate',
    );
    expect(one({ ...finished, costUsd: null, toolCalls: [] })).toBe('m answered (120 tokens)');
    expect(one({ type: 'model/progress', model: 'm', outputTokens: 7, partial: `${'x'.repeat(100)}\n the end` })).toBe(
      `writing (7 tokens): ${'x'.repeat(59)}…`,
    );
    expect(one({ type: 'model/progress', model: 'm', outputTokens: 2, partial: 'so\nfar' })).toBe(
      'writing (2 tokens): so far',
    );
    expect(one({ type: 'model/failed', model: 'm', error: 'boom' })).toBe('m failed: boom');
    // 74.2 Whole, on one line: it is what a person fixes the endpoint from.
    const reason = `the endpoint answered 400:\n ${'a reason '.repeat(20)}`;
    expect(one({ type: 'model/failed', model: 'm', error: reason })).toBe(
      `m failed: ${reason.replace(/\s+/g, ' ').trim()}`,
    );
    // 74.5 A retry says which attempt failed, of how many, and when the next is.
    const retrying = 'retrying: http://x/v1 answered 500, attempt 2 of 10, next in 2 s';
    expect(one({ type: 'model/retrying', status: retrying })).toBe(retrying);
    expect(one({ type: 'tool/called', name: 'calculate' })).toBe('running calculate');
    expect(one({ type: 'tool/result', name: 'calculate', ok: true, bytes: 12 })).toBe('calculate ok (12 B)');
    expect(one({ type: 'tool/result', name: 'calculate', ok: false, bytes: 3 })).toBe('calculate failed (3 B)');
    const started = { type: 'delegation/started', child: 'r/a-1/b-1', taskName: 'b' };
    expect(one({ ...started, reserved: { maxTokens: 2000, maxCostUsd: 0.003 } })).toBe(
      'delegated b (reserved 2000 tokens, $0.003000)',
    );
    expect(one({ ...started, reserved: { maxTokens: null, maxCostUsd: 0.003 } })).toBe(
      'delegated b (reserved $0.003000)',
    );
    expect(one({ ...started, reserved: { maxTokens: 5, maxCostUsd: null } })).toBe('delegated b (reserved 5 tokens)');
    expect(one({ ...started, reserved: { maxTokens: null, maxCostUsd: null } })).toBe('delegated b');
    expect(one({ type: 'delegation/refused', reason: 'too many' })).toBe('delegation refused: too many');
    const joined = { type: 'delegation/joined', child: 'r/a-1/b-1', status: 'completed' };
    expect(one({ ...joined, usage: { ...usage, toolCalls: 0 } })).toBe('b-1 joined: completed (no tool calls)');
    expect(one({ ...joined, usage: { ...usage, toolCalls: 2 } })).toBe('b-1 joined: completed');
    expect(one({ ...joined, status: 'failed', usage: { ...usage, toolCalls: 0 } })).toBe('b-1 joined: failed');
    expect(one({ ...joined, usage: null, overrun: { tokens: 40, costUsd: 0.00012 } })).toBe(
      'b-1 joined: completed; overran its reservation by 40 tok $0.000120',
    );
    expect(one({ type: 'question/asked', questionId: 'q1.1', question: 'which?' })).toBe('question q1.1: which?');
    expect(one({ type: 'question/answered', questionId: 'q1.1', from: 'client' })).toBe('answer to q1.1 (from client)');
    expect(one({ type: 'interjection', from: 'r' })).toBe('interjection from r');
    expect(one({ type: 'message/received' })).toBe('message received');
  });
});

describe('R6.5 the tree as lines', () => {
  it('an empty view says so; a grandchild is indented under its parent; its question wakes only the run that asked', () => {
    const empty = new TreeView();
    expect(empty.rows()).toEqual([]);
    expect(empty.lines()).toEqual([]);
    expect(empty.summary()).toBe('unknown: tree of 0 runs: 0 model calls, 0 tool calls, 0 tokens, $0.000000');
    const view = new TreeView();
    const [root, mid, leaf] = ['root', 'root/mid-1', 'root/mid-1/leaf-1'];
    for (const event of [
      ev(root, null, { type: 'run/started', taskName: null, depth: 0, task: 'plan' }),
      ev(root, null, {
        type: 'delegation/started',
        child: mid,
        taskName: 'mid',
        reserved: { maxTokens: 9, maxCostUsd: null },
      }),
      ev(mid, root, { type: 'run/started', taskName: 'mid', depth: 1, task: 'sub' }),
      ev(leaf, mid, { type: 'run/started', taskName: 'leaf', depth: 2, task: 'leaf' }),
      ev(leaf, mid, {
        type: 'model/finished',
        model: 'm',
        activity: 'callModel',
        inputTokens: 5,
        outputTokens: 5,
        costUsd: null,
        billed: { inputTokens: 5, outputTokens: 5, costUsd: null },
        finishReason: 'stop',
        toolCalls: [],
      }),
      ev(leaf, mid, { type: 'tool/result', name: 'calculate', ok: true, bytes: 1 }),
      ev(mid, root, { type: 'question/asked', child: leaf, questionId: 'q1.1', question: 'which?' }),
      ev(mid, root, { type: 'question/answered', questionId: 'q9.9', from: 'client' }),
    ]) {
      view.apply(event);
    }
    expect(view.runs.get(leaf)!.status).toBe('waiting_for_answer');
    expect([...view.questions.values()]).toEqual([
      { questionId: 'q1.1', child: leaf, taskName: 'leaf', question: 'which?' },
    ]);
    view.apply(ev(mid, root, { type: 'question/answered', questionId: 'q1.1', from: 'client' }));
    expect(view.runs.get(leaf)!.status).toBe('running');
    expect(view.questions.size).toBe(0);
    view.apply(ev(mid, root, { type: 'question/answered', questionId: 'q1.1', from: 'client' }));
    view.apply(ev(root, null, { type: 'run/ended', status: 'completed' }));
    expect(view.rows().map((r) => [r.name, r.depth, r.treeTokens])).toEqual([
      ['root', 0, 10],
      ['mid', 1, 10],
      ['leaf', 2, 10],
    ]);
    // The glyphs and columns of deputy tree: each run a line, its latest event under it.
    expect(view.lines()).toEqual([
      `${'root'.padEnd(30)} ${'completed'.padEnd(20)} own 0 tok $0.000000`,
      '│  completed',
      `└─ ${'mid'.padEnd(27)} ${'running'.padEnd(20)} own 0 tok $0.000000`,
      '   │  answer to q1.1 (from client)',
      `   └─ ${'leaf'.padEnd(24)} ${'running'.padEnd(20)} own 10 tok $0.000000`,
      '         calculate ok (1 B)',
    ]);
    // A model call that called no tool: the tool result alone (a follow-up's, say) is no call of this run's model.
    expect(view.summary()).toBe('completed: tree of 3 runs: 1 model call, 0 tool calls, 10 tokens, $0.000000');
  });
});

describe('49.8 the watch counts as a run counts itself', () => {
  it('a summary or a compaction is spend of its own, not a turn; a turn counts the tools its model called; the end has the last word', () => {
    const view = new TreeView();
    const finished = (activity: string, toolCalls: string[]) =>
      ev('r', null, {
        type: 'model/finished',
        model: 'm',
        activity,
        inputTokens: 10,
        outputTokens: 5,
        costUsd: 0.001,
        billed: { inputTokens: 10, outputTokens: 5, costUsd: 0.001 },
        finishReason: 'stop',
        toolCalls,
      });
    view.apply(ev('r', null, { type: 'run/started', taskName: null, depth: 0, task: 't' }));
    view.apply(finished('summarizeContext', []));
    view.apply(finished('compactSession', ['not', 'a', 'turn']));
    view.apply(finished('callModel', ['delegate', 'calculate']));
    view.apply(ev('r', null, { type: 'tool/result', name: 'calculate', ok: true, bytes: 3 }));
    const run = view.runs.get('r')!;
    expect([run.modelCalls, run.toolCalls, run.tokens]).toEqual([1, 2, 45]);
    expect(run.costUsd).toBeCloseTo(0.003, 9);
    // A call refused by maxToolCalls was asked for, never run: the run's own count at its end wins.
    view.apply(
      ev('r', null, {
        type: 'run/ended',
        status: 'completed',
        limit: null,
        synthesis: false,
        usage: {
          inputTokens: 30,
          outputTokens: 15,
          costUsd: 0.003,
          modelCalls: 1,
          toolCalls: 1,
          billed: { inputTokens: 30, outputTokens: 15, costUsd: 0.003 },
        },
        output: 'done',
      }),
    );
    expect([run.modelCalls, run.toolCalls]).toEqual([1, 1]);
  });
});

describe('R7.3 approvals in the watched tree', () => {
  it('R7.3 a request is listed and its run shown waiting_for_approval until its decision; deputy watch says each in a line', () => {
    const view = new TreeView();
    const root = 'a';
    const child = 'a/mailer-1';
    const requested = ev(child, root, {
      type: 'approval/requested',
      requestId: 'a1.1',
      tool: 'send_email',
      why: 'the config asks approval of every call of send_email',
      preview: '{"to":"board@example.com"}',
      deadline: '2026-12-02T00:00:00.000Z',
    });
    for (const event of [
      ev(root, null, { type: 'run/started', taskName: null, depth: 0, task: 'mail' }),
      ev(root, null, {
        type: 'delegation/started',
        child,
        taskName: 'mailer',
        reserved: { maxTokens: null, maxCostUsd: null },
      }),
      ev(child, root, { type: 'run/started', taskName: 'mailer', depth: 1, task: 'send' }),
      requested,
    ])
      view.apply(event);
    expect([...view.approvals.values()]).toEqual([
      {
        run: child,
        taskName: 'mailer',
        requestId: 'a1.1',
        tool: 'send_email',
        preview: '{"to":"board@example.com"}',
        deadline: '2026-12-02T00:00:00.000Z',
      },
    ]);
    expect(view.runs.get(child)?.status).toBe('waiting_for_approval');
    expect(describeWatchEvent(requested)).toBe(
      'approval a1.1 requested: send_email {"to":"board@example.com"} (until 2026-12-02T00:00:00.000Z)',
    );
    const decided = ev(child, root, { type: 'approval/decided', requestId: 'a1.1', decision: 'deny', by: 'ops' });
    view.apply(decided);
    expect(view.approvals.size).toBe(0);
    expect(view.runs.get(child)?.status).toBe('running');
    expect(describeWatchEvent(decided)).toBe('approval a1.1 denied by ops');
    const expired = ev(child, root, {
      type: 'approval/decided',
      requestId: 'a1.2',
      decision: 'expired',
      by: 'timeout',
    });
    expect(describeWatchEvent(expired)).toBe('approval a1.2 expired (no decision by its deadline)');
  });
});
