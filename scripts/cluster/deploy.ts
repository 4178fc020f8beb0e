/** The cluster's deploy check: a new Deputy deployed under runs in flight (test/support/deploy-scenario.ts). */
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { ScriptedModelServer } from '../../src/testing/scripted-model.js';
import { PROJECT_ROOT } from '../../src/testing/temporal-cli.js';
import { bundleDeputyWorkflows } from '../../src/worker/bundle.js';
import { unversionedDeploy, versionedDeploy, type DeployWorld } from '../../test/support/deploy-scenario.js';
import { delegationConfig, DELEGATION_TOOLS } from '../../test/support/delegation.js';
import type { Cluster } from './harness.js';

/**
 * A new Deputy deployed under runs in flight, on the cluster as on the dev server: with Worker Versioning the tree
 * ends on its version and the conversation moves; without it, the new workers break both (test/support).
 */
export async function checkDeploy(
  client: Client,
  cluster: Cluster,
  stops: (() => unknown)[],
  { say, check }: { say: (line: string) => void; check: (ok: unknown, what: string) => void },
): Promise<void> {
  const native = await NativeConnection.connect({ address: cluster.address });
  stops.push(() => native.close());
  const model = await ScriptedModelServer.start([], { quiet: true });
  stops.push(() => model.close());
  const [bundleA, bundleB] = await Promise.all([
    bundleDeputyWorkflows(),
    bundleDeputyWorkflows({ workflowsPath: join(PROJECT_ROOT, 'test', 'support', 'version-b', 'workflows.ts') }),
  ]);
  const world = (taskQueue: string): DeployWorld => ({
    address: cluster.address,
    connection: native,
    client,
    model,
    taskQueue,
    bundleA: { code: bundleA.code },
    bundleB: { code: bundleB.code },
    config: delegationConfig(),
    tools: DELEGATION_TOOLS,
    modelKey: 'sk-cluster',
    say,
  });
  const found = await versionedDeploy(world(`deploy-v-${Date.now()}`));
  check(
    found.tree.status === 'completed' && found.tree.buildIds.join() === 'a' && found.tree.childBuildIds.join() === 'a',
    `a new version deployed under runs in flight: the tree ends on a, its children with it (${found.tree.buildIds.join()}; ${found.tree.childBuildIds.join()})`,
  );
  check(
    found.chatAfter.version?.current?.endsWith(':b') === true &&
      found.chatAfter.session.length > found.chatBefore.session.length,
    `the conversation moved to b at a quiet moment and answered there (${found.chatAfter.version?.earlier.join() ?? ''} → ${found.chatAfter.version?.current ?? ''})`,
  );
  check(found.fresh.buildIds.join() === 'b', `a new run starts on b (${found.fresh.buildIds.join()})`);
  check(
    found.cli.drained.includes('a: no open run is pinned to it; its workers may stop'),
    'deputy versions says a is drained, and its workers stop',
  );
  check(found.tree.failures.length + found.chatFailures.length === 0, 'no workflow task failed anywhere');
  const broken = await unversionedDeploy(world(`deploy-u-${Date.now()}`));
  check(
    [...broken.tree, ...broken.chat].every((failure) => /NON_DETERMINISTIC|[Nn]ondeterminism/.test(failure)) &&
      broken.tree.length > 0 &&
      broken.chat.length > 0,
    'without versioning the same deploy breaks both runs (non-determinism)',
  );
}
