import { Context } from '@temporalio/activity';
import { FAILURE } from '../src/contract/failures.js';
import { ApplicationFailure } from '@temporalio/common';
import type { RunHookInput } from '../src/contract/activities.js';
import type { ConfigStore } from '../src/config/store.js';
import { HookDecision, type HookFunction } from '../src/contract/hooks.js';
import { cutText, MAX_ERROR_BYTES } from '../src/rules/payloads.js';
import { describeIssues } from '../src/rules/zod-issues.js';

/**
 * Builds the `runHook` activity: one attempt of one hook. A webhook gets the input as a JSON POST; a function hook is
 * called with it. Transport errors and 5xx throw and are retried by Temporal; an answer that is not a decision fails
 * at once. The workflow applies the hook's `onError` policy once the retries are spent.
 */
export function createRunHook(config: ConfigStore, functions: ReadonlyMap<string, HookFunction>) {
  return async function runHook({ hook: name, input }: RunHookInput): Promise<HookDecision> {
    const hook = config.current.hooks.find((h) => h.name === name);
    if (!hook) {
      throw ApplicationFailure.create({
        type: FAILURE.HookUnknown,
        message: `hook "${name}" is not configured`,
        nonRetryable: true,
      });
    }
    const context = Context.current();
    const signal = AbortSignal.any([context.cancellationSignal, AbortSignal.timeout(hook.timeoutSeconds * 1000)]);
    let raw: unknown;
    if (hook.function !== undefined) {
      const fn = functions.get(hook.function);
      if (!fn) {
        throw ApplicationFailure.create({
          type: FAILURE.HookUnknown,
          message: `hook function "${hook.function}" is not registered with this worker`,
          nonRetryable: true,
        });
      }
      raw = (await fn(input, { signal })) ?? {};
    } else {
      const response = await fetch(hook.url!, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(input),
        signal,
      });
      const text = await response.text();
      if (!response.ok) {
        throw ApplicationFailure.create({
          type: FAILURE.HookHttpError,
          message: `hook "${name}" answered ${response.status}: ${text.slice(0, 200)}`,
          nonRetryable:
            response.status >= 400 && response.status < 500 && response.status !== 408 && response.status !== 429,
        });
      }
      try {
        raw = text.trim() === '' ? {} : JSON.parse(text);
      } catch {
        throw ApplicationFailure.create({
          type: FAILURE.HookBadAnswer,
          message: `hook "${name}" answered text that is not JSON`,
          nonRetryable: true,
        });
      }
    }
    const decision = HookDecision.safeParse(raw);
    if (!decision.success) {
      throw ApplicationFailure.create({
        type: FAILURE.HookBadAnswer,
        message: `hook "${name}" answered an invalid decision: ${describeIssues(decision.error).join('; ')}`,
        nonRetryable: true,
      });
    }
    if (decision.data.decision === 'rewrite' && !decision.data.task) {
      throw ApplicationFailure.create({
        type: FAILURE.HookBadAnswer,
        message: `hook "${name}" rewrote the task without giving one`,
        nonRetryable: true,
      });
    }
    // A hook's answer past the payload budget is cut, so it always fits in history.
    const maxBytes = config.current.payloads.maxTextBytes;
    return {
      ...decision.data,
      ...(decision.data.task !== undefined && { task: cutText(decision.data.task, maxBytes) }),
      ...(decision.data.reason !== undefined && { reason: cutText(decision.data.reason, MAX_ERROR_BYTES) }),
    };
  };
}
