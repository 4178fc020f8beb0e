/**
 * The watched tree folded for people (issue 16): statuses, spend and roll-ups, questions waiting for an answer and
 * the no-tool-calls mark, from a hand-written event sequence (the live sequences are in watch.test.ts, web.test.ts).
 */
import { describe, expect, it } from 'vitest';
import type { WatchEvent } from '../src/client/watch.js';
import { describeWatchEvent, TreeView } from '../src/client/watch-view.js';

let seq = 0;
const at = '2026-12-01T00:00:00.000Z';
const ev = (run: string, parent: string | null, body: Record<string, unknown>) =>
  ({ run, parent, seq: ++seq, at, cursor: 'c', ...body }) as WatchEvent;
const usage = { inputTokens: 1, outputTokens: 1, costUsd: 0.001, modelCalls: 1, toolCalls: 0 };

describe('issue 16 TreeView', () => {
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
    expect(view.summary()).toBe('running: 2 runs, 2 model calls, 0 tool calls, 180 tokens, $0.003000');
    expect(view.lines()[1]).toMatch(
      /^ {2}└ research +completed +60 tok \$0\.001000 {2}completed \(maxTurns, synthesised\)$/,
    );
  });
});
