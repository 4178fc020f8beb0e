/**
 * Attacks on artifacts (item 39 of the threat model, docs/security.md): a client of the namespace completing a run's
 * pending tool call by hand with an artifact reference copied from another run's history, or one it rebound to the
 * run it attacks, to read bytes that run was never given.
 */
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { defineTool } from '../../src/contract/tools.js';
import type { ArtifactRef } from '../../src/contract/artifacts.js';
import { toolMessages, userSays } from '../../src/testing/script.js';
import { DELEGATION_TOOLS } from '../support/delegation.js';
import { testConfig, useHarness } from '../support/harness.js';
import { afterTool, temporalCli } from './support.js';

/** A tool that answers only when its run is cancelled or its call completed by someone else. */
const waitTool = defineTool({
  name: 'wait_for_ever',
  description: 'Waits.',
  parameters: z.strictObject({}),
  scopes: ['tools.calc'],
  execute: (_args, { signal }) => new Promise((resolve) => signal.addEventListener('abort', () => resolve('aborted'))),
});

const SCOPES = ['tools.calc', 'artifacts.read', 'artifacts.write'];
const config = testConfig({
  defaultScopes: SCOPES,
  grantableScopes: SCOPES,
  presets: [{ id: 'assistant', persona: 'You help.', tools: ['save_artifact', 'read_artifact', 'wait_for_ever'] }],
});
const h = useHarness({ config, tools: [...DELEGATION_TOOLS, waitTool] });

/** Completes the `runTool` call `workflowId` waits on by hand with `result`, as `temporal activity complete` lets any client. */
async function completeToolCallByHand(workflowId: string, result: unknown): Promise<void> {
  let pending: string | undefined;
  await expect
    .poll(async () => {
      const described = await h.client.workflow.getHandle(workflowId).describe();
      pending =
        described.raw.pendingActivities?.find((a) => a.activityType?.name === 'runTool')?.activityId ?? undefined;
      return pending;
    })
    .toBeDefined();
  const args = ['activity', 'complete', '--workflow-id', workflowId, '--activity-id', pending!];
  const completed = await temporalCli(...args, '--result', JSON.stringify(result));
  expect(completed.status, completed.output).toBe(0);
}

describe('attacks on artifacts', () => {
  it('R2.18 attack 39: a tool call completed by hand with another run’s artifact, copied or rebound, reads nothing', async () => {
    // The victim saves a secret: its reference, seal and all, is in its history for any client to copy.
    const secret = 'the launch code is 0000';
    const victimTask = 'attack 39: the victim saves';
    h.model.add(
      {
        name: victimTask,
        when: userSays(victimTask, 0),
        reply: { toolCalls: [{ name: 'save_artifact', arguments: { name: 'secret.txt', content: secret } }] },
      },
      { name: `${victimTask} done`, when: userSays(victimTask, 1), reply: { text: 'saved' } },
    );
    const victim = await h.deputy.startRun({ task: victimTask });
    const [stolen] = (await h.deputy.result(victim.workflowId)).artifacts as ArtifactRef[];
    expect(stolen).toMatchObject({ name: 'secret.txt', savedBy: victim.workflowId });

    for (const [label, refused] of [
      // Copied as it is: bound to the victim, so the attacked run never takes it.
      ['copied', `no artifact ${stolen!.id} is readable by this run; readable: none`],
      // Rebound to the attacked run: taken, but no worker sealed it for that run, so nothing is read.
      ['rebound', `artifact ${stolen!.id} ("secret.txt") carries no seal of a worker: it was not saved by a run`],
    ] as const) {
      const task = `attack 39: ${label}`;
      h.model.add(
        { name: task, when: userSays(task, 0), reply: { toolCalls: [{ name: 'wait_for_ever', arguments: {} }] } },
        {
          name: `${task} read`,
          when: afterTool(task, 'done'),
          reply: { toolCalls: [{ name: 'read_artifact', arguments: { id: stolen!.id } }] },
        },
        { name: `${task} end`, when: userSays(task, 2), reply: { text: 'read nothing' } },
      );
      const attacked = `${h.id('attacked')}-${label}`;
      await h.deputy.startRun({ task }, { workflowId: attacked });
      const forged = label === 'rebound' ? { ...stolen, savedBy: attacked } : stolen;
      await completeToolCallByHand(attacked, { content: 'done', isError: false, artifacts: [forged] });
      const result = await h.deputy.result(attacked);
      expect(result.status).toBe('completed');
      const [end] = h.model.requests.filter((r) => r.rule === `${task} end`);
      expect(toolMessages(end!).at(-1)).toBe(refused);
      expect(toolMessages(end!).join('\n')).not.toContain(secret);
      // What a copied reference names is not the run's to hand back either.
      expect(result.artifacts ?? []).toEqual(label === 'copied' ? [] : [forged]);
    }
  });
});
