import { spawnSync } from 'node:child_process';
import { describe, expect, inject, it } from 'vitest';
import { PROJECT_ROOT } from '../src/testing/temporal-cli.js';
import { userSays } from '../src/testing/script.js';
import { renderTree, type TreeNode } from '../src/client/tree.js';
import { ZERO_USAGE } from '../src/rules/usage.js';
import {
  CHILD_USAGE,
  delegateReply,
  delegationConfig,
  DELEGATION_TOOLS,
  PARENT_SCOPES,
  PARENT_USAGE,
} from './support/delegation.js';
import { useHarness } from './support/harness.js';
import { forTask } from '../src/testing/script.js';

const h = useHarness({ config: delegationConfig(), tools: DELEGATION_TOOLS });

describe('R2.12 deputy tree', () => {
  it('R2.12 renders a tree with status, tokens, cost and calls per node', () => {
    const node = (workflowId: string, parentId: string | null, taskName: string | null, tokens: number): TreeNode => ({
      workflowId,
      parentId,
      taskName,
      status: 'completed',
      preset: 'assistant',
      contextMode: parentId ? 'none' : null,
      usage: {
        ...ZERO_USAGE,
        totalTokens: tokens,
        costMicroUsd: tokens,
        modelCalls: 1,
        billed: { inputTokens: tokens, outputTokens: 0, costMicroUsd: tokens },
      },
      costUsd: null,
    });
    const text = renderTree([node('p/b-1', 'p', 'b', 5), node('p', null, null, 30), node('p/a-1', 'p', 'a', 7)]);
    expect(text.split('\n').map((l) => l.replace(/\s+/g, ' '))).toEqual([
      'p completed tree 30 tok $0.000030',
      '│ own 1 model + 0 tool calls · [assistant]',
      '├─ a completed tree 7 tok $0.000007',
      '│ own 1 model + 0 tool calls · [assistant, context none] · p/a-1',
      '└─ b completed tree 5 tok $0.000005',
      ' own 1 model + 0 tool calls · [assistant, context none] · p/b-1',
    ]);
  });

  it('R2.12 `npm run deputy -- tree <id>` prints a finished delegating run from visibility and memos', async () => {
    const task = 'tree cli';
    h.model.add(
      {
        when: forTask(task, 0),
        reply: delegateReply(
          {
            briefs: [
              { task_name: 'one', message: 'tree child one' },
              { task_name: 'two', message: 'tree child two' },
            ],
          },
          PARENT_USAGE,
        ),
      },
      { when: userSays('tree child'), times: 2, reply: { text: 'leaf', usage: CHILD_USAGE } },
      { when: forTask(task, 1), reply: { text: 'root done', usage: PARENT_USAGE } },
    );
    const parentId = h.id('tree');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: parentId });
    await h.deputy.result(parentId);
    const run = () =>
      spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'tree', `${parentId}/one-1`], {
        cwd: PROJECT_ROOT,
        env: { ...process.env, TEMPORAL_ADDRESS: inject('temporalAddress') },
        encoding: 'utf8',
      });
    await expect
      .poll(
        () =>
          run()
            .stdout.split('\n')
            .filter((l) => l.includes('completed')).length,
        { timeout: 15_000 },
      )
      .toBe(3);
    const lines = run()
      .stdout.trim()
      .split('\n')
      .map((l) => l.replace(/\s+/g, ' '));
    expect(lines).toEqual([
      // 49.8 The tree's tokens and cost beside the run's own calls, each labelled, as every view shows them.
      `${parentId} completed tree 11240 tok $0.011480`,
      '│ own 2 model + 1 tool calls · [assistant]',
      '├─ one completed tree 520 tok $0.000540',
      '│ own 1 model + 0 tool calls · [assistant, context none]',
      `│ ${parentId}/one-1`,
      '└─ two completed tree 520 tok $0.000540',
      ' own 1 model + 0 tool calls · [assistant, context none]',
      ` ${parentId}/two-1`,
    ]);
    const bad = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'tree'], {
      cwd: PROJECT_ROOT,
      encoding: 'utf8',
    });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('usage: deputy tree <workflowId>');
  });
});

describe('R2.19 usage billed beside usage debited', () => {
  it('R2.19 an endpoint that reports less than Deputy counts: the result, a child, the watch and the tree show both, labelled', async () => {
    const task = 'billed apart';
    const LOW = { prompt_tokens: 3, completion_tokens: 2 };
    h.model.add(
      {
        when: forTask(task, 0),
        reply: delegateReply({ briefs: [{ task_name: 'one', message: 'billed child one' }] }, LOW),
      },
      { when: userSays('billed child'), reply: { text: 'leaf', usage: LOW } },
      { when: forTask(task, 1), reply: { text: 'root done', usage: LOW } },
    );
    const parentId = h.id('billed');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: parentId });
    const result = await h.deputy.result(parentId);
    // Three calls in the tree, each billed what its endpoint reported; each debited at Deputy's larger count.
    expect(result.usage.billed).toMatchObject({ inputTokens: 9, outputTokens: 6 });
    expect(result.usage.inputTokens).toBeGreaterThan(9);
    expect(result.usage.billed.costMicroUsd).toBeGreaterThan(0);
    expect(result.usage.billed.costMicroUsd).toBeLessThan(result.usage.costMicroUsd);
    const child = await h.deputy.result(`${parentId}/one-1`);
    expect(child.usage.billed).toMatchObject({ inputTokens: 3, outputTokens: 2 });
    expect(child.usage.inputTokens).toBeGreaterThan(3);

    const finished: { billed: { inputTokens: number; outputTokens: number } }[] = [];
    let ended: { billed: { inputTokens: number; outputTokens: number } } | undefined;
    for await (const event of h.deputy.watch(parentId)) {
      if (event.type === 'model/finished') finished.push(event);
      if (event.type === 'run/ended' && event.run === parentId && event.usage) ended = event.usage;
    }
    expect(finished.map(({ billed }) => [billed.inputTokens, billed.outputTokens])).toEqual([
      [3, 2],
      [3, 2],
      [3, 2],
    ]);
    expect(ended?.billed).toMatchObject({ inputTokens: 9, outputTokens: 6 });

    const tree = () =>
      spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'tree', parentId], {
        cwd: PROJECT_ROOT,
        env: { ...process.env, TEMPORAL_ADDRESS: inject('temporalAddress') },
        encoding: 'utf8',
      }).stdout;
    await expect
      .poll(
        () =>
          tree()
            .split('\n')
            .filter((l) => l.includes('completed')).length,
        { timeout: 15_000 },
      )
      .toBe(2);
    const usd = (micro: number) => `$${(micro / 1e6).toFixed(6)}`;
    const [root, details] = tree()
      .split('\n')
      .map((l) => l.replace(/\s+/g, ' '));
    expect(root).toContain(`tree ${result.usage.totalTokens} tok ${usd(result.usage.costMicroUsd)}`);
    expect(details).toContain(`billed 15 tok ${usd(result.usage.billed.costMicroUsd)}`);
  });
});

describe('R2.12 where a run waits, from Temporal UI', () => {
  it('R2.12 the stack trace query shows where a waiting conversation waits, each stack its innermost six frames, mapped to workflows/', async () => {
    const task = 'stack: say hello, then wait for me';
    h.model.add({ name: task, when: forTask(task, 0), reply: { text: 'hello' } });
    const workflowId = h.id('stack-trace');
    await h.deputy.startRun({ task, mode: 'conversation' }, { workflowId });
    const handle = h.client.workflow.getHandle(workflowId);
    await expect.poll(async () => (await h.deputy.getState(workflowId)).status).toBe('waiting_for_user');
    const stacks = (await handle.query<string>('__stack_trace')).split('\n\n').filter((stack) => stack.trim() !== '');
    expect(stacks.length).toBeGreaterThan(0);
    for (const stack of stacks) {
      expect(stack.split('\n').filter((line) => line.trim().startsWith('at ')).length).toBeLessThanOrEqual(6);
    }
    expect(stacks.join('\n')).toMatch(/workflows\/(loop|agent-run|run\/run)\.ts:\d+/);
    await handle.terminate('the stack was read');
  });
});
