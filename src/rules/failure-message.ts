/** Reading Temporal failure chains for people. Shared by workflow and client code: no Node built-ins. */
import { ApplicationFailure } from '@temporalio/common';

/** The message at the root of a failure chain (the original error). */
export function rootMessage(err: unknown): string {
  let current: unknown = err;
  while (current instanceof Error && current.cause instanceof Error) current = current.cause;
  return current instanceof Error ? current.message : String(current);
}

/** The message of the first `ApplicationFailure` in a chain (the one that says what to fix), else the root's. */
export function failureMessage(err: unknown): string {
  for (let current: unknown = err; current instanceof Error; current = current.cause) {
    if (current instanceof ApplicationFailure) return current.message;
  }
  return rootMessage(err);
}
