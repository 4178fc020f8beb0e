/**
 * Watching a tree: `deputy.watch(rootId)` follows a delegating run from its start; each run's events match
 * its session (its model calls and their tool calls, its tools' results, its children), causally across runs; a
 * watch that stops half-way resumes from the cursor without loss or duplicates; on a finished tree it replays.
 */
import { spawn } from 'node:child_process';
import { describe, expect, inject, it } from 'vitest';
import { PROJECT_ROOT } from '../src/testing/temporal-cli.js';
import type { WatchEvent } from '../src/client/watch-events.js';
import { STEERING_TOOLS } from '../src/rules/children.js';
import { SUMMARY_SYSTEM_PROMPT } from '../src/rules/context.js';
import { TreeView } from '../src/client/watch-view.js';
import { loadTree } from '../src/client/inspect.js';
import { renderTree } from '../src/client/tree.js';
import type { RunResult } from '../src/contract/run.js';
import { forTask, toolMessages, userSays } from '../src/testing/script.js';
import { delegateReply, delegationConfig, DELEGATION_TOOLS, PARENT_SCOPES } from './support/delegation.js';
import { useHarness } from './support/harness.js';

const h = useHarness({ config: delegationConfig(), tools: DELEGATION_TOOLS });

/** A parent that delegates to `alpha` and `beta` (beta calls `calculate` first, and answers after `betaMs`). */
function scriptTree(task: string, betaMs = 0, hold: Promise<void> = Promise.resolve()) {
  h.model.add(
    {
      when: forTask(task, 0),
      reply: delegateReply({
        briefs: [
          { task_name: 'alpha', message: `alpha: ${task}` },
          { task_name: 'beta', message: `beta: ${task}` },
        ],
      }),
    },
    { when: forTask(task, 1), reply: { text: `parent answer to ${task}` } },
    {
      when: userSays(`beta: ${task}`, 0),
      reply: { toolCalls: [{ name: 'calculate', arguments: { operation: 'add', a: 2, b: 3 } }] },
    },
    {
      when: userSays(`beta: ${task}`),
      reply: async () => {
        await hold;
        return { text: 'beta found 5' };
      },
      delayMs: betaMs,
    },
    { when: userSays(`alpha: ${task}`), reply: { text: 'alpha done' } },
  );
}

async function collect(
  iterator: AsyncGenerator<WatchEvent>,
  stop: (event: WatchEvent) => boolean = () => false,
): Promise<WatchEvent[]> {
  const events: WatchEvent[] = [];
  for await (const event of iterator) {
    events.push(event);
    if (stop(event)) break;
  }
  return events;
}
const key = (e: WatchEvent) => `${e.run}#${e.seq}#${e.type}`;

describe('R6.5 watch a tree', () => {
  it('follows a delegating run from its start: each run matches its session, causally ordered across runs', async () => {
    const task = 'watch me delegate';
    scriptTree(task);
    const id = h.id('watched');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: id });
    const events = await collect(h.deputy.watch(id));

    const runs = [...new Set(events.map((e) => e.run))];
    expect(runs.sort()).toEqual([id, `${id}/alpha-1`, `${id}/beta-1`]);
    const of = (run: string) => events.filter((e) => e.run === run);
    const types = (run: string) => of(run).map((e) => e.type);

    // Exact sequences per run.
    expect(types(`${id}/alpha-1`)).toEqual(['run/started', 'model/started', 'model/finished', 'run/ended']);
    expect(types(`${id}/beta-1`)).toEqual([
      'run/started',
      'model/started',
      'model/finished',
      'tool/called',
      'tool/result',
      'model/started',
      'model/finished',
      'run/ended',
    ]);
    expect(types(id)).toEqual([
      'run/started',
      'model/started',
      'model/finished',
      'delegation/started',
      'delegation/started',
      'delegation/joined',
      'delegation/joined',
      'model/started',
      'model/finished',
      'run/ended',
    ]);

    // Against each run's session: its model calls' tool calls, its tools' results, its children, its end.
    for (const run of runs) {
      const state = await h.deputy.getState(run);
      const session = state.session;
      const calls = session.filter((e) => e.type === 'message/assistant');
      const finished = of(run).filter((e) => e.type === 'model/finished');
      expect(finished.map((e) => e.toolCalls)).toEqual(calls.map((e) => (e.toolCalls ?? []).map((c) => c.name)));
      const results = session.filter((e) => e.type === 'tool/result' && !STEERING_TOOLS.includes(e.name));
      expect(of(run).flatMap((e) => (e.type === 'tool/result' ? [[e.name, e.ok]] : []))).toEqual(
        results.map((e) => (e.type === 'tool/result' ? [e.name, !e.isError] : [])),
      );
      const ended = of(run).find((e) => e.type === 'run/ended');
      const result = await h.deputy.result(run);
      expect(ended).toMatchObject({ status: result.status, usage: { modelCalls: result.usage.modelCalls } });
      for (const call of finished) {
        if (call.type !== 'model/finished') continue;
        expect(call.model).toBe('test-model');
        expect(call.inputTokens).toBeGreaterThan(0);
        expect(call.costUsd).toBeGreaterThan(0);
      }
    }
    const started = of(id).filter((e) => e.type === 'delegation/started');
    expect(started.map((e) => (e.type === 'delegation/started' ? e.child : '')).sort()).toEqual(
      (await h.deputy.getState(id)).delegations.map((d) => d.childWorkflowId).sort(),
    );
    expect(started[0]).toMatchObject({ taskName: 'alpha', reserved: { maxCostUsd: 0.003 } });

    // The fabrication signal: each child's result in the parent's untrusted envelope carries its call counts; alpha,
    // which answered without a tool, is marked.
    const [envelope] = toolMessages(h.model.requests.filter(forTask(task))[1]!);
    const results = JSON.parse(envelope!.split('<EXTERNAL_UNTRUSTED>\n')[1]!.split('\n</EXTERNAL_UNTRUSTED>')[0]!) as {
      task_name: string;
      calls: unknown;
      evidence?: string;
    }[];
    const alpha = results.find((r) => r.task_name === 'alpha')!;
    const beta = results.find((r) => r.task_name === 'beta')!;
    expect(alpha.calls).toEqual({ model_calls: 1, tool_calls: 0 });
    expect(alpha.evidence).toMatch(/^none: this child called no tool; anything its answer states as fact/);
    expect(beta.calls).toEqual({ model_calls: 2, tool_calls: 1 });
    expect(beta).not.toHaveProperty('evidence');

    // Causal order: a child after its start, the join after the child's end.
    const at = (run: string, type: string, child?: string) =>
      events.findIndex(
        (e) => e.run === run && e.type === type && (child === undefined || ('child' in e && e.child === child)),
      );
    for (const child of [`${id}/alpha-1`, `${id}/beta-1`]) {
      expect(at(id, 'delegation/started', child)).toBeLessThan(at(child, 'run/started'));
      expect(at(child, 'run/ended')).toBeLessThan(at(id, 'delegation/joined', child));
    }
    // Per run, in history order.
    for (const run of runs) {
      const seqs = of(run).map((e) => e.seq);
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    }
  });

  it('a watch stopped half-way resumes from its cursor without loss or duplicates; a finished tree replays', async () => {
    const task = 'watch me twice';
    scriptTree(task, 1500);
    const id = h.id('resumed');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: id });
    // Disconnected while the tree works: after beta's tool result, while beta's model is still thinking.
    const first = await collect(h.deputy.watch(id), (e) => e.type === 'tool/result');
    expect((await h.deputy.getState(`${id}/beta-1`)).status).toBe('running');
    const rest = await collect(h.deputy.watch(id, { since: first.at(-1)!.cursor }));
    const replayed = await collect(h.deputy.watch(id));

    const resumed = [...first, ...rest];
    expect(new Set(resumed.map(key)).size).toBe(resumed.length);
    expect(resumed.map(key).sort()).toEqual(replayed.map(key).sort());
    expect(replayed).toHaveLength(22);
    // Resuming from every event's cursor yields exactly what followed it.
    for (const [i, event] of replayed.entries()) {
      const after = await collect(h.deputy.watch(id, { since: event.cursor }));
      expect(after.map(key).sort(), `after event ${i} (${key(event)})`).toEqual(
        replayed
          .slice(i + 1)
          .map(key)
          .sort(),
      );
    }

    await expect(collect(h.deputy.watch(id, { since: 'not-a-cursor' }))).rejects.toThrow(/not a watch cursor/);
    await expect(collect(h.deputy.watch('no-such-run'))).rejects.toThrow(
      /^no run "no-such-run" in namespace default to watch \(start it first\)$/,
    );
  });

  it('deputy watch <id> prints each event as it happens, then the tree and a summary; it follows a live tree to its end', async () => {
    const task = 'watch me from the terminal';
    let seen!: () => void;
    scriptTree(task, 0, new Promise<void>((resolve) => (seen = resolve))); // beta answers once the CLI shows a line
    const id = h.id('terminal');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: id });
    const cli = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'watch', id], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, TEMPORAL_ADDRESS: inject('temporalAddress') },
    });
    let output = '';
    let firstLineAt = 0;
    const endedAt = h.deputy.result(id).then(() => Date.now());
    cli.stdout.on('data', (chunk: Buffer) => {
      firstLineAt ||= Date.now();
      output += chunk.toString();
      seen();
    });
    cli.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => cli.once('exit', resolve));
    expect(code, output).toBe(0);
    expect(firstLineAt).toBeLessThan(await endedAt); // it followed the tree live, not after the fact
    const lines = output.split('\n');
    expect(lines.some((l) => l.endsWith(`${id}: started: ${task}`))).toBe(true);
    expect(lines.some((l) => / {2}beta: calculate ok \(\d+ B\)$/.test(l))).toBe(true);
    expect(lines.some((l) => /: delegated alpha \(reserved 2000 tokens, \$0\.003000\)$/.test(l))).toBe(true);
    expect(lines.some((l) => l.endsWith(`${id}: completed`))).toBe(true);
    expect(lines.some((l) => l.endsWith(': alpha-1 joined: completed (no tool calls)'))).toBe(true);
    expect(lines.some((l) => l.endsWith(': beta-1 joined: completed'))).toBe(true);
    // The tree: the root, then its children indented, each with status, tokens, cost and latest event.
    const tree = lines.filter((l) => /^([^\s│├└]|[├└]─ )/.test(l) && / tok \$/.test(l));
    expect(tree[0]).toMatch(new RegExp(`^${id} +completed +own \\d+ tok \\$0\\.\\d{6}$`));
    expect(tree.slice(1).map((l) => l.split(/ +/).slice(0, 3))).toEqual(
      expect.arrayContaining([
        [expect.stringMatching(/^[├└]─$/), 'alpha', 'completed'],
        ['└─', expect.stringMatching(/^(alpha|beta)$/), 'completed'],
      ]),
    );
    // 49.8 The root's delegate and beta's calculate: tool calls as the runs' own usage counts them.
    // R2.19 What the endpoints billed follows, labelled: the scripted model reports less than Deputy counts.
    // The summary, wrapped to the terminal's width.
    const summary = output
      .slice(output.indexOf('completed: tree of'), output.indexOf('resume after'))
      .replace(/\s+/g, ' ');
    expect(summary).toMatch(
      /^completed: tree of 3 runs: 5 model calls, 2 tool calls, \d+ tokens, \$0\.\d{6} \(billed \d+ tokens, \$0\.\d{6}\) $/,
    );
    expect(output).toMatch(new RegExp(`resume after the last event:\\ndeputy watch ${id} \\S+`));
  });

  it('49.8 one count: the result, the tree, the state and the watch (which the web view folds) show the same own calls and tree spend', async () => {
    const task = 'count me once';
    // The parent writes alpha a summary (a model call of its own spend, not a turn), then delegates; beta calls a tool.
    h.model.add({
      when: (r) => r.body.messages[0]?.content === SUMMARY_SYSTEM_PROMPT && userSays(task)(r),
      reply: { text: 'the background' },
    });
    h.model.add(
      {
        when: forTask(task, 0),
        reply: delegateReply({
          briefs: [
            { task_name: 'alpha', message: `alpha: ${task}`, context: 'summary' },
            { task_name: 'beta', message: `beta: ${task}` },
          ],
        }),
      },
      {
        when: forTask(task, 1),
        reply: { toolCalls: [{ name: 'calculate', arguments: { operation: 'add', a: 1, b: 1 } }] },
      },
      { when: forTask(task, 2), reply: { text: `parent answer to ${task}` } },
      {
        when: userSays(`beta: ${task}`, 0),
        reply: { toolCalls: [{ name: 'calculate', arguments: { operation: 'add', a: 2, b: 3 } }] },
      },
      { when: userSays(`beta: ${task}`), reply: { text: 'beta found 5' } },
      { when: userSays(`alpha: ${task}`), reply: { text: 'alpha done' } },
    );
    const id = h.id('counted');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: id });
    const events = await collect(h.deputy.watch(id));
    const results = new Map<string, RunResult>();
    for (const run of [id, `${id}/alpha-1`, `${id}/beta-1`]) results.set(run, await h.deputy.result(run));
    const root = results.get(id)!;
    expect(root.usage).toMatchObject({ modelCalls: 3, toolCalls: 2 });

    // Folded as the events come, before any run's end says its own count: the same calls as each run's result.
    const live = new TreeView();
    for (const event of events.filter((e) => e.type !== 'run/ended')) live.apply(event);
    const folded = new TreeView();
    for (const event of events) folded.apply(event);
    for (const view of [live, folded]) {
      for (const [run, result] of results) {
        expect([view.runs.get(run)!.modelCalls, view.runs.get(run)!.toolCalls], run).toEqual([
          result.usage.modelCalls,
          result.usage.toolCalls,
        ]);
      }
      const top = view.rows()[0]!;
      expect(top.treeTokens).toBe(root.usage.totalTokens);
      expect(top.treeCostUsd).toBeCloseTo(root.usage.costMicroUsd / 1e6, 9);
    }
    expect(folded.summary()).toBe(
      `completed: tree of 3 runs: 6 model calls, 3 tool calls, ${root.usage.totalTokens} tokens, $${(root.usage.costMicroUsd / 1e6).toFixed(6)} (billed 840 tokens, $${(root.usage.billed.costMicroUsd / 1e6).toFixed(6)})`,
    );

    const state = await h.deputy.getState(id);
    expect(state.usage).toEqual(root.usage);
    await expect
      .poll(
        async () =>
          renderTree(await loadTree(h.client, id), { width: 400 })
            .split('\n')
            .slice(0, 2)
            .join(' ')
            .replace(/[\s│]+/g, ' '),
        { timeout: 15_000 },
      )
      .toBe(
        // R2.19 The scripted endpoint reports 100 + 20 tokens a call, less than Deputy counts: the tree says both.
        `${id} completed tree ${root.usage.totalTokens} tok $${(root.usage.costMicroUsd / 1e6).toFixed(6)} own 3 model + 2 tool calls · billed 840 tok $${(root.usage.billed.costMicroUsd / 1e6).toFixed(6)} · [assistant]`,
      );
    expect(root.usage.billed).toMatchObject({ inputTokens: 700, outputTokens: 140 });
  });
});
