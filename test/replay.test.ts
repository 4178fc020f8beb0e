import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { PROJECT_ROOT } from '../src/testing/temporal-cli.js';
import { forTask } from '../src/testing/script.js';
import { createHarness, type Harness } from './support/harness.js';

const FIXTURES = join(PROJECT_ROOT, 'test', 'fixtures', 'histories');

describe('R1.1 replay: workflow code stays deterministic', () => {
  it('R1.1 every committed history replays without non-determinism', async () => {
    const files = readdirSync(FIXTURES).filter((f) => f.endsWith('.json'));
    expect(files.length).toBeGreaterThanOrEqual(24);
    const histories = files.map((file) => ({
      workflowId: file.replace(/\.json$/, '').replace(/__/g, '/'),
      // The replayer reads histories in the JSON form Temporal's CLI and UI export.
      history: JSON.parse(readFileSync(join(FIXTURES, file), 'utf8')) as unknown,
    }));
    const replayed: string[] = [];
    for await (const result of Worker.runReplayHistories(
      { workflowBundle: { codePath: inject('workflowBundlePath') }, replayName: 'fixtures' },
      histories,
    )) {
      expect(result.error, `${result.workflowId}: ${String(result.error)}`).toBeUndefined();
      replayed.push(result.workflowId);
    }
    expect(replayed.sort()).toEqual(histories.map((h) => h.workflowId).sort());
  });
});

describe('R1.1 a worker with no workflow cache replays on every task', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness();
    await h.startWorker({ workerOptions: { maxCachedWorkflows: 0 } });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('R1.1 a conversation with tools and updates completes with maxCachedWorkflows: 0', async () => {
    const task = 'no cache';
    h.model.add(
      {
        when: forTask(task, 0),
        reply: { toolCalls: [{ name: 'calculate', arguments: { operation: 'subtract', a: 10, b: 4 } }] },
      },
      { when: forTask(task, 1), reply: { text: 'six' } },
      {
        name: 'follow-up',
        when: (r) => forTask(task, 1)(r) && r.body.messages.at(-1)?.content === 'and shipping?',
        reply: { toolCalls: [{ name: 'search_notes', arguments: { query: 'shipping' } }] },
      },
      { when: forTask(task, 2), reply: { text: 'shipping is $4.99' } },
    );
    const workflowId = h.id('no-cache');
    await h.deputy.startRun({ task, mode: 'conversation' }, { workflowId });
    await expect
      .poll(async () => (await h.deputy.getState(workflowId)).status, { timeout: 20_000 })
      .toBe('waiting_for_user');
    await h.deputy.sendMessage(workflowId, 'and shipping?');
    await h.model.waitFor((rs) => rs.some((r) => r.rule === 'follow-up'));
    await expect
      .poll(async () => (await h.deputy.getState(workflowId)).status, { timeout: 20_000 })
      .toBe('waiting_for_user');
    await h.deputy.endConversation(workflowId);
    const result = await h.deputy.result(workflowId);
    expect(result).toMatchObject({ status: 'completed', output: 'shipping is $4.99' });
    expect(result.usage).toMatchObject({ modelCalls: 4, toolCalls: 2 });
    expect(h.model.requests.filter(forTask(task))).toHaveLength(4);
  });
});
