/**
 * Named changes to workflow code. Deputy is unreleased: until 1.0 a change that alters what a workflow records
 * re-records the replay fixtures instead of keeping old shapes alive. From 1.0 on, every such change gets an entry
 * here and its code branches on `flagged(...)`, so histories recorded before it replay as recorded and new runs
 * take the new path. An entry is removed only once no history recorded without it can still be replayed (the
 * oldest open run and the retention period both past it). See docs/versioning.md.
 */
import { patched } from '@temporalio/workflow';

export interface WorkflowFlag {
  /** The marker Temporal records (`deputy-<name>`); never reused once released. */
  readonly id: string;
  /** What changed, in a sentence a person replaying an old history can follow. */
  readonly change: string;
}

export function defineFlag(name: string, change: string): WorkflowFlag {
  return { id: `deputy-${name}`, change };
}

/** The changes made since 1.0, oldest first. Empty while Deputy is unreleased. */
export const DeputyFlags: Readonly<Record<string, WorkflowFlag>> = {};

/** Whether this run takes the changed path: always for a new run, and when replaying a history that took it. */
export function flagged(flag: WorkflowFlag): boolean {
  return patched(flag.id);
}
