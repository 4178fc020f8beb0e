/**
 * Hooks: code a deployment runs at points of a child's life — HTTP webhooks from the config, or functions registered
 * with the worker. `task.submitted` and `subagent.start` may accept, rewrite or reject a child's task;
 * `subagent.end` is told how a child ended. Hooks run as activities, so each runs once per dispatch, with timeouts
 * and retries from Temporal.
 */
import { z } from 'zod';

/** The events a hook can subscribe to. */
export const HookEvent = z.enum(['task.submitted', 'subagent.start', 'subagent.end']);
export type HookEvent = z.infer<typeof HookEvent>;

/** A hook in the config file. */
export const HookConfig = z
  .strictObject({
    name: z.string().regex(/^[a-z0-9][a-z0-9_.-]*$/, 'use lowercase letters, digits, ., - and _'),
    events: z.array(HookEvent).min(1),
    /** An HTTP webhook: receives the `HookInput` as a JSON POST and answers a `HookDecision`. */
    url: z.url().optional(),
    /** A hook function registered with the worker under this name. */
    function: z.string().optional(),
    /** Per attempt. @default 10 */
    timeoutSeconds: z.number().positive().default(10),
    /** What an erroring or timed-out hook means once its retries are spent. @default 'fail_closed' */
    onError: z.enum(['fail_closed', 'fail_open']).default('fail_closed'),
  })
  .refine((hook) => (hook.url === undefined) !== (hook.function === undefined), {
    message: 'give exactly one of url or function',
  });
export type HookConfig = z.infer<typeof HookConfig>;

/** What a hook receives. */
export const HookInput = z.object({
  event: HookEvent,
  /** Workflow id of the run that delegates. */
  parentId: z.string(),
  rootId: z.string(),
  taskName: z.string(),
  /** The child's assignment as the parent wrote it (or as an earlier hook rewrote it). */
  task: z.string(),
  role: z.string(),
  contextMode: z.string(),
  childWorkflowId: z.string(),
  /** `subagent.end` only: how the child ended. */
  status: z.string().optional(),
  output: z.string().nullable().optional(),
});
export type HookInput = z.infer<typeof HookInput>;

/** What a hook answers; a missing body or `{}` means accept. */
export const HookDecision = z.object({
  decision: z.enum(['accept', 'rewrite', 'reject']).default('accept'),
  /** With `rewrite`: the task to run instead. */
  task: z.string().min(1).optional(),
  /** With `reject`: why, shown to the parent's model. */
  reason: z.string().optional(),
});
export type HookDecision = z.infer<typeof HookDecision>;

/** A hook function registered with the worker. */
export type HookFunction = (input: HookInput, context: { signal: AbortSignal }) => Promise<HookDecision | void>;

/** A hook as the workflow sees it: JSON only. */
export const HookSpec = z.object({
  name: z.string(),
  events: z.array(HookEvent),
  timeoutSeconds: z.number(),
  onError: z.enum(['fail_closed', 'fail_open']),
});
export type HookSpec = z.infer<typeof HookSpec>;

/** The outcome of running every hook of one event, in order. */
export interface HookOutcome {
  decision: 'accept' | 'rewrite' | 'reject';
  task: string;
  reason?: string;
  /** One line per hook that ran, for the ledger (`policy: rewrite`, `audit: failed, fail_open → accept` …). */
  trail: string[];
}
