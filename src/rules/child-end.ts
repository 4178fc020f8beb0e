/**
 * How a child's end reads to its parent, in pure code: its status, output and summary, and the spend it reported.
 * No Temporal, no I/O: the workflow does the effects.
 */
import type { ArtifactRef } from '../contract/artifacts.js';
import type { RunResult, Usage } from '../contract/run.js';
import { bounded, MAX_CHILD_OUTPUT_CHARS, type ChildOutcome } from './children.js';
import { asRunResult, checkReturnShape } from '../contract/checks/contract-checks.js';

/** How a child ended, as its parent books it: status, output, summary, error, and the spend it reported. */
export interface ChildEnd {
  status: ChildOutcome['status'];
  output: unknown;
  summary: string;
  error?: string;
  /** What the child reported it spent; `null` when it ended without saying (charged its whole reservation). */
  spent: RunResult['usage'] | null;
  /** What it and its children saved, as its result lists them. */
  artifacts?: ArtifactRef[];
}

/**
 * A child's result as its parent reads it: a completed child's output checked against the brief's `return_shape`
 * when it gave one (a mismatch fails the brief), any other status an error for its brief only.
 */
export function endOfResult(ended: RunResult, returnShape: Record<string, unknown> | undefined): ChildEnd {
  return { ...endOfOutput(ended, returnShape), ...(ended.artifacts && { artifacts: ended.artifacts }) };
}

function endOfOutput(ended: RunResult, returnShape: Record<string, unknown> | undefined): ChildEnd {
  const text = ended.output ?? '';
  if (ended.status === 'completed' && returnShape) {
    const checked = checkReturnShape(ended.output, returnShape);
    return checked.ok
      ? { status: 'completed', output: checked.value, summary: text, spent: ended.usage }
      : {
          status: 'failed',
          output: bounded(text, MAX_CHILD_OUTPUT_CHARS),
          summary: text,
          error: checked.error,
          spent: ended.usage,
        };
  }
  if (ended.status === 'completed') {
    return { status: 'completed', output: bounded(text, MAX_CHILD_OUTPUT_CHARS), summary: text, spent: ended.usage };
  }
  return {
    status: ended.status,
    output: ended.output && bounded(ended.output, MAX_CHILD_OUTPUT_CHARS),
    summary: text || ended.status,
    error: `the child ended ${ended.status}${ended.limit ? ` (${ended.limit})` : ''}; its output is its best so far`,
    spent: ended.usage,
  };
}

/** What a failed child reported it spent: the usage of the `RunResult` its failure carries, else `null`. */
export function reportedUsage(details: unknown): Usage | null {
  // A result that is not a RunResult reports nothing.
  return asRunResult(details)?.usage ?? null;
}

/** What a failed child had saved before it failed, as the `RunResult` its failure carries lists them. */
export function reportedArtifacts(details: unknown): Pick<ChildEnd, 'artifacts'> {
  const artifacts = asRunResult(details)?.artifacts;
  return artifacts ? { artifacts } : {};
}

/** A child that failed is an error for its brief only; what it reported spending, if anything, is charged. */
export function failedEnd(message: string, spent: Usage | null): ChildEnd {
  return { status: 'failed', output: null, summary: message, error: message, spent };
}

/** A child cancelled before it finished (not by its parent) is an error for its brief only. */
export function cancelledEnd(): ChildEnd {
  const error = 'the child was cancelled before it finished';
  return { status: 'cancelled', output: null, summary: 'the child was cancelled', error, spent: null };
}
