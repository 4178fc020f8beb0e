/**
 * Grants: what a run acts with, signed by a worker, so no record a client of the namespace writes can stand in for it.
 *
 * Temporal lets any client of the namespace start `agentRun` as the child of a workflow of its own, continue a
 * workflow of its own as new into `agentRun`, or run an activity from a workflow of its own that it names `agentRun`.
 * What such a client cannot do is run code on Deputy's workers, nor make Temporal record one of Deputy's runs as the
 * parent of a workflow it starts:
 *
 * - a root is granted its tree when it resolves its composition against the config (`resolveRun`, a local activity:
 *   it runs in the worker running the root's code, so only Deputy's own code gets one), a signature bound to the
 *   root's chain of runs (`caller-chain.ts`);
 * - the root's children, theirs, and every run continuing one of them as new carry that grant in their input: Deputy's
 *   code is what writes their input (`origin`, `resume`), and Temporal records each as a child (or a later run) of the
 *   run that wrote it;
 * - every activity that acts for a run (a model call, a tool, a hook, a signed message) asks for the grant, and
 *   honours it only when the run Temporal reports as its caller is the granted chain or descends from it in what
 *   Temporal records. A workflow of a client's own has no Deputy run among its ancestors, whatever grant it copies
 *   from a history, so the input it writes (a forged `origin` or `resume`) acts with nothing.
 */
import type { MessageKeys } from '../src/ops/message-keys.js';
import type { MessageToSign } from '../src/contract/signals.js';
import type { MadeByModelInput } from '../src/contract/activities.js';
import { Context } from '@temporalio/activity';
import { callerChain, callerLineageHas, type Chain } from './caller-chain.js';
import { toolCallSeals } from './tool-call-seal.js';

/** The grant of a tree: its root's chain of executions (a reset or a continue-as-new keeps it). */
function treeMessage(root: Chain): MessageToSign {
  return { signal: 'grant/run', from: root.workflowId, to: root.firstRunId, id: 'run', body: null };
}

export function runGrants(keys: MessageKeys) {
  const seals = toolCallSeals(keys);
  return {
    /** The grant of the tree whose root is the caller: asked for only by a root's own code, in a local activity. */
    grantTree: async (): Promise<string> => keys.sign(treeMessage((await callerChain())!)),

    /** Whether `grant` is the grant of the caller's tree, as Temporal records the caller and its ancestors. */
    holds: async (grant: unknown): Promise<boolean> =>
      typeof grant === 'string' && callerLineageHas((chain) => keys.verify(treeMessage(chain), grant).ok),

    /** Whether a steering call (run in workflow code) came from a model answer in this run. */
    madeByModel: async ({ call, firstRunId }: MadeByModelInput): Promise<boolean> =>
      seals.verify(call, { workflowId: Context.current().info.workflowExecution!.workflowId, firstRunId }),
  };
}
