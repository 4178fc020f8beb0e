import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { bundleDeputyWorkflows } from '../src/worker/bundle.js';
import { userSays } from '../src/testing/script.js';
import { createHarness, TEST_API_KEY, type Harness } from './support/harness.js';
import { delegationConfig, DELEGATION_TOOLS } from './support/delegation.js';
import {
  deputyCli,
  taskRecord,
  temporalCli,
  unversionedDeploy,
  versionedDeploy,
  type DeployWorld,
  type VersionedFindings,
} from './support/deploy-scenario.js';

const VERSION_B = new URL('./support/version-b/workflows.ts', import.meta.url).pathname;

let h: Harness;
let bundleB: { code: string };
let recordedOnA: VersionedFindings['recordedOnA'] = [];
let world: (taskQueue: string) => DeployWorld;
beforeAll(async () => {
  h = await createHarness();
  bundleB = { code: (await bundleDeputyWorkflows({ workflowsPath: VERSION_B })).code };
  world = (taskQueue) => ({
    address: inject('temporalAddress'),
    connection: h.connection,
    client: h.client,
    model: h.model,
    taskQueue,
    bundleA: { codePath: inject('workflowBundlePath') },
    bundleB,
    config: delegationConfig(),
    tools: DELEGATION_TOOLS,
    modelKey: TEST_API_KEY,
  });
}, 120_000);
afterAll(async () => {
  await h?.close();
});

describe('R6.10 a new Deputy deployed under runs in flight', () => {
  it('R6.10 with versioning: the tree ends on a, the conversation moves to b at a quiet moment and keeps its dialogue, usage and limits, new runs start on b, a drains; no workflow task fails', async () => {
    const found = await versionedDeploy(world(h.id('deploy-v')));
    expect(found.tree.status).toBe('completed');
    expect(found.tree.buildIds).toEqual(['a']);
    // The second child started after b was current: a child on a queue its parent's version polls inherits it.
    expect(found.tree.childBuildIds).toEqual(['a']);
    expect(found.tree.failures).toEqual([]);
    expect(found.chatBefore.version?.current).toMatch(/:a$/);
    expect(found.chatAfter.version?.current).toMatch(/:b$/);
    expect(found.chatAfter.version?.earlier).toEqual([found.chatBefore.version?.current]);
    expect(found.chatAfter.limits).toEqual(found.chatBefore.limits);
    expect(found.chatAfter.usage.modelCalls).toBe(found.chatBefore.usage.modelCalls + 1);
    const said = (state: typeof found.chatAfter) =>
      state.session.filter((e) => e.type === 'message/user' || e.type === 'message/assistant').map((e) => e.content);
    expect(said(found.chatAfter).slice(0, 2)).toEqual(said(found.chatBefore));
    expect(said(found.chatAfter)).toHaveLength(4);
    expect(found.chatRuns).toBe(2);
    expect(found.watched).toEqual([`${found.chatBefore.version?.current} → ${found.chatAfter.version?.current}`]);
    expect(found.chatFailures).toEqual([]);
    expect(found.fresh).toEqual({ status: 'completed', buildIds: ['b'] });
    expect(found.cli.move).toContain('asked 2 waiting conversation(s) to move to b');
    // Asked to move while its background child was live, the busy conversation stayed; it moved after its child ended.
    expect(found.busy.whileChildLive).toMatch(/:a$/);
    expect(found.busy.after?.current).toMatch(/:b$/);
    expect(found.busy.childBuildIds).toEqual(['a']);
    expect(found.busy.failures).toEqual([]);
    expect(found.chatAfter.details).toMatch(/; moved from \S+:a to \S+:b$/);
    expect(found.cli.drained).toMatch(/\n {2}a +draining +0 +0\n/);
    expect(found.cli.drained).toContain('a: no open run is pinned to it; its workers may stop');
    recordedOnA = found.recordedOnA;
  }, 240_000);

  it("R6.10 deputy replay: a's histories would break under b's bundle (exit 1) and replay under a's (exit 0), from the namespace or exported", async () => {
    expect(recordedOnA.length).toBe(4);
    const dir = mkdtempSync(join(tmpdir(), 'deputy-replay-'));
    const bFile = join(dir, 'bundle-b.js');
    writeFileSync(bFile, bundleB.code);
    const histories = join(dir, 'histories');
    mkdirSync(histories);
    for (const { workflowId, runId } of recordedOnA) {
      const shown = await temporalCli({ address: inject('temporalAddress') }, [
        'workflow',
        'show',
        '--workflow-id',
        workflowId,
        ...(runId ? ['--run-id', runId] : []),
        '--output',
        'json',
      ]);
      writeFileSync(join(histories, `${workflowId.replace(/\//g, '__')}.json`), shown);
    }
    const where = { address: inject('temporalAddress') };
    const underB = await deputyCli(where, ['replay', '--from', histories, '--bundle', bFile]);
    expect(underB.code, underB.stdout).toBe(1);
    expect(underB.stdout.match(/^would break: /gm)).toHaveLength(4);
    expect(underB.stdout).toMatch(/[Nn]ondeterminism/);
    expect(underB.stdout).toContain('replayed 4 histories');
    const underA = await deputyCli(where, ['replay', '--from', histories, '--bundle', inject('workflowBundlePath')]);
    expect(underA.code, underA.stdout).toBe(0);
    expect(underA.stdout).toMatch(/replayed 4 histories in [\d.]+ s: 0 would break/);
    const tree = recordedOnA[0]!.workflowId;
    const live = await deputyCli(where, ['replay', `WorkflowId = '${tree}'`, '--bundle', bFile]);
    expect(live.code, live.stdout).toBe(1);
    expect(live.stdout).toContain(`would break: ${tree} (run `);
  }, 240_000);

  it('R6.10 without versioning the same deploy breaks the runs in flight: b cannot replay what a recorded', async () => {
    const found = await unversionedDeploy(world(h.id('deploy-u')));
    expect(found.tree.join('\n')).toMatch(/NON_DETERMINISTIC|[Nn]ondeterminism/);
    expect(found.chat.join('\n')).toMatch(/NON_DETERMINISTIC|[Nn]ondeterminism/);
  }, 240_000);

  it('R6.10 attack: checkVersion signals with null, junk or huge payloads, from any client, move nothing on an unversioned worker and do not stretch a conversation past its idle timeout', async () => {
    await h.startWorker();
    h.model.add({ when: userSays('idle chat'), times: 3, reply: { text: 'still here' } });
    const id = h.id('idle-chat');
    const { firstExecutionRunId: runId } = await h.deputy.startRun(
      { task: 'idle chat: hello', mode: 'conversation', idleTimeoutSeconds: 3 },
      { workflowId: id },
    );
    const handle = h.client.workflow.getHandle(id);
    await expect.poll(async () => (await h.deputy.getState(id)).status, { timeout: 20_000 }).toBe('waiting_for_user');
    for (const junk of [null, [1, 2], { sig: 'forged', to: id }, 'x'.repeat(200_000)]) {
      await handle.signal('deputy.checkVersion', junk);
    }
    await h.deputy.sendMessage(id, 'idle chat: are you there?');
    await expect
      .poll(async () => (await h.deputy.getState(id)).session.filter((e) => e.type === 'message/assistant').length)
      .toBe(2);
    const answeredAt = Date.now();
    // Nudged every 200 ms, it still ends when its person has been silent for its idle timeout.
    let ended = false;
    const result = h.deputy.result(id).finally(() => (ended = true));
    while (!ended && Date.now() - answeredAt < 10_000) {
      await handle.signal('deputy.checkVersion').catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect((await result).status).toBe('completed');
    expect(Date.now() - answeredAt).toBeLessThan(3000 + 3000);
    const described = await handle.describe();
    expect(described.runId).toBe(runId);
    // A completion the server turns back because a signal came in meanwhile (UnhandledCommand) is Temporal's way of
    // handing the signal over, and is retried at once; nothing else may fail.
    const failures = (await taskRecord(h.client, id)).failures;
    expect(failures.filter((failure) => !failure.includes('UnhandledCommand'))).toEqual([]);
  }, 60_000);
});
