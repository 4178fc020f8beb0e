/**
 * Runs the hooks subscribed to one event, in config order, each as a `runHook` activity with its own timeout and
 * retries. A rewrite passes the new task to the next hook; a reject stops the chain. Deterministic code only.
 */
import { isCancellation, proxyActivities } from '@temporalio/workflow';
import type { DeputyActivities } from '../activities/index.js';
import { failureMessage } from '../src/rules/failure-message.js';
import type { HookEvent, HookInput, HookOutcome, HookSpec } from '../src/contract/hooks.js';

/** True when a hook listens to `event`. */
export function hasHooks(event: HookEvent, hooks: readonly HookSpec[]): boolean {
  return hooks.some((hook) => hook.events.includes(event));
}

/** Runs every hook of `event`; an erroring hook counts as a reject (`fail_closed`) or is skipped (`fail_open`). */
export async function runHooks(
  event: HookEvent,
  input: Omit<HookInput, 'event'>,
  hooks: readonly HookSpec[],
  grant: string,
): Promise<HookOutcome> {
  let task = input.task;
  const trail: string[] = [];
  for (const hook of hooks.filter((h) => h.events.includes(event))) {
    const { runHook } = proxyActivities<DeputyActivities>({
      startToCloseTimeout: `${hook.timeoutSeconds} seconds`,
      retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumAttempts: 3 },
    });
    try {
      const decision = await runHook.executeWithOptions({ summary: `hook ${hook.name} ${event}` }, [
        { hook: hook.name, input: { ...input, event, task }, grant },
      ]);
      trail.push(`${hook.name}: ${decision.decision}`);
      if (decision.decision === 'reject') {
        return {
          decision: 'reject',
          task,
          reason: `hook "${hook.name}" rejected it: ${decision.reason ?? 'no reason given'}`,
          trail,
        };
      }
      if (decision.decision === 'rewrite' && decision.task) task = decision.task;
    } catch (err) {
      if (isCancellation(err)) throw err;
      const message = failureMessage(err);
      if (hook.onError === 'fail_closed') {
        trail.push(`${hook.name}: failed, fail_closed → reject`);
        return { decision: 'reject', task, reason: `hook "${hook.name}" failed (fail_closed): ${message}`, trail };
      }
      trail.push(`${hook.name}: failed, fail_open → accept`);
    }
  }
  return { decision: task === input.task ? 'accept' : 'rewrite', task, trail };
}
