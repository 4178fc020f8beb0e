/**
 * Bare Temporal workflows of the same shapes as the benchmarked Deputy runs: the floor a durable agent runtime on
 * Temporal cannot go below. Deterministic code only; bundled apart from Deputy's workflows.
 */
import { executeChild, proxyActivities } from '@temporalio/workflow';
import type { BaselineActivities } from './activities.js';

const { chat, fetchPage } = proxyActivities<BaselineActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumAttempts: 10 },
});

/** One model call: a child of `baselineTree`. */
export async function baselineLeaf(task: string): Promise<string> {
  const reply = await chat([{ role: 'user', content: task }]);
  return reply.content ?? '';
}

/** A model call, `briefs.length` children of one model call each (in parallel), and a final model call. */
export async function baselineTree(task: string, briefs: string[]): Promise<string> {
  await chat([{ role: 'user', content: task }]);
  const results = await Promise.all(
    briefs.map((brief, i) => executeChild(baselineLeaf, { args: [brief], workflowId: `${task}/leaf-${i + 1}` })),
  );
  const final = await chat([
    { role: 'user', content: task },
    { role: 'user', content: results.join('\n') },
  ]);
  return final.content ?? '';
}

/** `rounds` rounds of a model call and `width` children of one model call each (in parallel), then a final call. */
export async function baselineWide(task: string, rounds: number, width: number): Promise<string> {
  const results: string[] = [];
  for (let round = 1; round <= rounds; round++) {
    await chat([
      { role: 'user', content: `${task} round ${round}` },
      ...results.map((content) => ({ role: 'user' as const, content })),
    ]);
    const leaves = Array.from({ length: width }, (_, i) =>
      executeChild(baselineLeaf, {
        args: [`leaf: part ${(round - 1) * width + i + 1}`],
        workflowId: `${task}/leaf-${round}-${i + 1}`,
      }),
    );
    results.push((await Promise.all(leaves)).join('\n'));
  }
  const final = await chat([
    { role: 'user', content: task },
    { role: 'user', content: results.join('\n') },
  ]);
  return final.content ?? '';
}

/** `turns` turns of a model call and a 2 KB page, then a final model call; the transcript is not carried. */
export async function baselineLoop(task: string, turns: number): Promise<string> {
  for (let turn = 1; turn <= turns; turn++) {
    await chat([{ role: 'user', content: `${task} turn ${turn}` }]);
    await fetchPage(turn);
  }
  const final = await chat([{ role: 'user', content: `${task} done` }]);
  return final.content ?? '';
}
