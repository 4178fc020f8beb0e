/**
 * What the delegate gates share: a worker whose config activates two tenants with the shipped evidence (one capped at
 * one live child), and a parent that delegates at its first turn and answers after the join.
 */
import { randomUUID } from 'node:crypto';
import { RunState } from '../../src/contract/run.js';
import { forTask, userSays, type ScriptReply } from '../../src/testing/script.js';
import { TWO_ARM } from './evidence.js';
import { delegateReply, delegationConfig, DELEGATION_TOOLS, PARENT_SCOPES, type PARENT_USAGE } from './delegation.js';
import { useHarness } from './harness.js';
import { afterTools } from './requests.js';

/** Starts the gates' worker before the calling file's tests; what they run with. */
export function useGates() {
  const evidence = [TWO_ARM];
  const TENANT = 'gates';
  const CAPPED = `gates-capped-${randomUUID().slice(0, 6)}`;
  const config = {
    ...delegationConfig(),
    tenants: {
      [TENANT]: { evidence, admissionSweepSeconds: 30 },
      [CAPPED]: { evidence, maxLiveChildren: 1, admissionSweepSeconds: 30 },
    },
  };
  const h = useHarness({ config, tools: DELEGATION_TOOLS });

  const state = async (id: string) => RunState.parse(await h.deputy.getState(id));

  /** A parent that delegates `args` at its first turn and answers `joined` after; its id, result and final state. */
  async function delegating(
    task: string,
    args: unknown,
    options: {
      limits?: Record<string, unknown>;
      tenant?: string;
      child?: ScriptReply;
      childDelayMs?: number;
      usage?: typeof PARENT_USAGE;
      /** Called with the parent's id while a child's model call is held (the parent then waits on it). */
      duringChild?: (parentId: string) => Promise<void>;
    } = {},
  ) {
    const usage = options.usage && { usage: options.usage };
    let id = '';
    h.model.add(
      { name: `${task}:delegate`, when: forTask(task, 0), reply: { ...delegateReply(args), ...usage } },
      { name: `${task}:join`, when: afterTools(task), reply: { text: `${task}: joined`, ...usage } },
      {
        name: `${task}:child`,
        when: (r) => !forTask(task)(r) && userSays(`${task} child`)(r),
        times: 8,
        delayMs: options.childDelayMs ?? 0,
        reply: async () => {
          await options.duringChild?.(id);
          return options.child ?? { text: `${task} child done` };
        },
      },
    );
    id = h.id('gate');
    await h.deputy.startRun(
      {
        task,
        scopes: PARENT_SCOPES,
        tenant: options.tenant ?? TENANT,
        ...(options.limits && { limits: options.limits }),
      },
      { workflowId: id },
    );
    const result = await h.deputy.result(id);
    return { id, result, final: await state(id), join: h.model.requests.find((r) => r.rule === `${task}:join`) };
  }
  const brief = (task: string, name: string, extra: Record<string, unknown> = {}) => ({
    task_name: name,
    message: `${task} child ${name}`,
    ...extra,
  });

  return { h, config, TENANT, CAPPED, state, delegating, brief };
}
