/**
 * The `agentRun` contract: what a caller sends, what it gets back, and what the `state` query shows.
 * Must stay importable from workflow code: no Node built-ins, no I/O.
 */
import { ArtifactRef } from './artifacts.js';
import { z } from 'zod';
import { BriefLimits, ContextMode } from './delegation.js';
import { Effort, Preset } from './preset.js';
import { InheritedComposition, ResolveRunResult, SynthesisReserve } from './composition.js';
import { ApprovalPolicy } from './approvals.js';
import { forkProblems } from './fork.js';
import { LimitName, SessionEvent } from './session.js';

export { LimitName };
/**
 * What the model endpoints billed for a run's tree: their usage reports, Deputy's count for a call whose endpoint
 * reported none. What a provider's invoice is reconciled with; never more than what the budget debited.
 */
const BilledUsage = z.object({
  inputTokens: z.number().int().nonnegative(),
  outputTokens: z.number().int().nonnegative(),
  costMicroUsd: z.number().int().nonnegative(),
});
export type BilledUsage = z.infer<typeof BilledUsage>;

/**
 * Tokens and cost of a run so far; cost is integer micro-USD so sums never drift. The top-level figures are what the
 * budget debited (the larger of the endpoint's report and Deputy's count, each call): the limits hold on them.
 */
export const Usage = z.object({
  inputTokens: z.number().int().nonnegative(),
  outputTokens: z.number().int().nonnegative(),
  totalTokens: z.number().int().nonnegative(),
  costMicroUsd: z.number().int().nonnegative(),
  modelCalls: z.number().int().nonnegative(),
  toolCalls: z.number().int().nonnegative(),
  billed: BilledUsage,
});
export type Usage = z.infer<typeof Usage>;

export { SynthesisReserve };

/** Per-run limits as a caller asks for them; anything omitted comes from the config's defaults. */
export const Limits = BriefLimits.extend({
  /** Budget held back for the final answer. */
  synthesisReserve: SynthesisReserve.optional(),
});
export type Limits = z.infer<typeof Limits>;

/** A prior turn that seeds a run's session. */
const SeedMessage = z.strictObject({
  role: z.enum(['user', 'assistant']),
  content: z.string(),
});
export type SeedMessage = z.infer<typeof SeedMessage>;

/** Set by a parent on the runs it spawns; a root run has none. */
export const ChildOrigin = z.strictObject({
  parentId: z.string().min(1),
  rootId: z.string().min(1),
  depth: z.number().int().positive(),
  taskName: z.string().min(1),
  /** The parent's invocation number that spawned this child. */
  invocation: z.number().int().positive(),
  /** The tool call that spawned it, so a later attempt of that invocation recognises its own child. */
  invocationId: z.string().min(1).optional(),
  /** Tool names the parent granted; the child's preset and scopes narrow them further. */
  allowedTools: z.array(z.string()),
  contextMode: ContextMode,
  /**
   * The child's composition: the preset registered at spawn when the brief named a role (`selected`),
   * else the parent's exact definition. A large definition is left out: the child looks it up by its revision
   * (its worker's config, else what its parent recorded), so the start records the revision twice, not the text.
   */
  preset: z.strictObject({ definition: Preset.optional(), revision: z.string(), selected: z.boolean() }).optional(),
  /** The rest of an implicit child's composition, from its parent's: it starts without a look-up. */
  composition: InheritedComposition.optional(),
  /** The parent's context as prepared for this child: a `context/background` event before its task. */
  parentBackground: z
    .strictObject({
      source: z.enum(['parent-chat', 'summary']),
      content: z.string(),
      dialogue: z.array(z.strictObject({ role: z.enum(['user', 'assistant']), content: z.string() })).optional(),
    })
    .optional(),
  /** The artifacts its brief gave it to read, from those its parent could read. */
  artifacts: z.array(ArtifactRef).optional(),
  /** What its parent's calls wait for approval on: the child needs at least as much. */
  approvals: ApprovalPolicy.optional(),
});
export type ChildOrigin = z.infer<typeof ChildOrigin>;

/** Input of the `agentRun` workflow. */
export const RunInput = z
  .strictObject({
    /** The assignment: the run's first user message. */
    task: z.string().regex(/\S/, 'task must not be empty or only spaces'),
    /** Prior user/assistant turns placed before the task. */
    messages: z.array(SeedMessage).optional(),
    /** `task` ends at the final answer; `conversation` waits for the next `sendMessage` after each answer. @default 'task' */
    mode: z.enum(['task', 'conversation']).optional(),
    /** Seconds a conversation waits for the next message before it ends. @default 3600 */
    idleTimeoutSeconds: z.number().int().positive().optional(),
    /** Preset id from the config. @default the config's `defaultPreset` */
    preset: z.string().min(1).optional(),
    /** Model name; overrides the preset's and the config's. */
    model: z.string().min(1).optional(),
    /** Reasoning effort passed to models that support it. */
    effort: Effort.optional(),
    /** Limits for this run. */
    limits: Limits.optional(),
    /** Scopes this run holds; a tool is offered only when the run holds all of its scopes. @default the config's `defaultScopes` */
    scopes: z.array(z.string().min(1)).optional(),
    /** Tenant the run belongs to, for the caller's own bookkeeping. */
    tenant: z.string().min(1).optional(),
    /** Set by a parent run on its children; never set it yourself. */
    origin: ChildOrigin.optional(),
    /**
     * A session this run starts from: import, fork or follow-up. With `select`, the preset is resolved in
     * the registry now and the run fails if it is gone; otherwise the run uses `preset` exactly.
     */
    restore: z
      .strictObject({
        kind: z.enum(['import', 'fork', 'followup']),
        events: z.array(SessionEvent),
        select: z.strictObject({ presetId: z.string(), revision: z.string() }).optional(),
        /** The exact preset definition to run with (validated like the config's presets). */
        preset: Preset.optional(),
        model: z.string().optional(),
      })
      .optional(),
    /** Set when a run continues as new: its state so far. Never set it yourself. */
    resume: z.lazy(() => RunResume).optional(),
    /** The grant of the run's tree, made by a worker for its root, carried with `origin` or `resume`. Never set it yourself. */
    grant: z.string().max(200).optional(),
  })
  .superRefine((input, ctx) => {
    for (const { path, message } of forkProblems(input)) ctx.addIssue({ code: 'custom', path, message });
  });
export type RunInput = z.input<typeof RunInput>;
/** A run's input once parsed (defaults filled in). */
export type ParsedRunInput = z.output<typeof RunInput>;

/** How a run ends. */
export const RunStatus = z.enum(['completed', 'failed', 'cancelled', 'limit_reached']);
export type RunStatus = z.infer<typeof RunStatus>;

/** What a run is doing now, as the `state` query reports it. */
export const LiveStatus = z.enum([
  'starting',
  'running',
  'waiting_for_user',
  'waiting_for_children',
  /** A child waiting for the answer to its `ask_parent` question. */
  'waiting_for_answer',
  /** A call of the run waits for a decision from outside the models. */
  'waiting_for_approval',
  ...RunStatus.options,
]);
export type LiveStatus = z.infer<typeof LiveStatus>;

/** Result of the `agentRun` workflow. */
export const RunResult = z.object({
  status: RunStatus,
  /** The final answer, or the best output so far when a limit was reached. */
  output: z.string().nullable(),
  usage: Usage,
  /** Id of the run's session (its workflow id). */
  sessionId: z.string(),
  /** The limit that forced a synthesis answer or ended the run, if any. */
  limit: LimitName.optional(),
  /** Why the run failed, when it did. */
  error: z.string().optional(),
  /** What the run and its children saved for whoever reads the result; absent when nothing. */
  artifacts: z.array(ArtifactRef).optional(),
});
export type RunResult = z.infer<typeof RunResult>;

/** Limits in force, as integers (cost in micro-USD, deadline in epoch ms); `null` means unlimited. */
export const ResolvedLimits = z.object({
  maxTurns: z.number().int().nullable(),
  maxTokens: z.number().int().nullable(),
  maxCostMicroUsd: z.number().int().nullable(),
  maxToolCalls: z.number().int().nullable(),
  deadlineMs: z.number().int().nullable(),
  synthesis: z.boolean(),
  reserveTokens: z.number().int(),
  reserveCostMicroUsd: z.number().int(),
});
export type ResolvedLimits = z.infer<typeof ResolvedLimits>;

/** What is left of each limit; `null` means unlimited. */
export const Remaining = z.object({
  turns: z.number().int().nullable(),
  tokens: z.number().int().nullable(),
  costMicroUsd: z.number().int().nullable(),
  toolCalls: z.number().int().nullable(),
  deadlineMs: z.number().int().nullable(),
});
export type Remaining = z.infer<typeof Remaining>;

/** Tokens and integer micro-USD. */
export const AmountSchema = z.object({ tokens: z.number().int(), costMicroUsd: z.number().int() });

/** One child in a parent's delegations ledger. */
export const LedgerEntry = z.object({
  invocation: z.number().int(),
  /** Id of the model's `delegate` tool call. */
  invocationId: z.string(),
  childWorkflowId: z.string(),
  taskName: z.string(),
  preset: z.string(),
  status: z.enum(['reserved', 'running', 'completed', 'failed', 'cancelled', 'limit_reached', 'rejected']),
  reserved: AmountSchema,
  actual: AmountSchema.nullable(),
  /** How far `actual` passed `reserved` (an endpoint billed past the cap Deputy enforced); absent when not. */
  overrun: AmountSchema.optional(),
  /** A bounded summary of the child's output or error. */
  summary: z.string().nullable(),
  artifacts: z.array(z.string()),
  /** A follow-up's source: the finished child whose session it goes on from. */
  followupOf: z.string().optional(),
  /** The child was started (a brief refused at its start, its id held by another run, never was). */
  started: z.boolean().optional(),
  /** What its brief narrowed (role, model, effort, tools, limits as asked, return shape): a follow-up keeps it. */
  narrowing: z
    .object({
      role: z.string().optional(),
      model: z.string().optional(),
      effort: z.string().optional(),
      allowedTools: z.array(z.string()).optional(),
      limits: z.record(z.string(), z.unknown()).optional(),
      returnShape: z.record(z.string(), z.unknown()).optional(),
    })
    .optional(),
  /** Dispatched with `wait: false`; its end arrives as a `subagent/result` event. */
  background: z.boolean().optional(),
  /** Interjections delivered to the child (by this run's model or through the client). */
  interjections: z.number().int().nonnegative().optional(),
  /** The questions the child asked, and what became of each. */
  questions: z
    .array(
      z.object({
        id: z.string(),
        question: z.string(),
        status: z.enum(['open', 'answered', 'unanswered']),
        answer: z.string().nullable(),
        /** `model`: this run's model (`answer_child`); `client`: a person through the `answerChild` update. */
        answeredBy: z.enum(['model', 'client']).nullable(),
        askedAt: z.iso.datetime(),
        answeredAt: z.iso.datetime().nullable(),
      }),
    )
    .optional(),
  preparation: z.object({
    contextMode: ContextMode,
    backgroundChars: z.number().int().nullable(),
    hookOutcome: z.string().nullable(),
  }),
});
export type LedgerEntry = z.infer<typeof LedgerEntry>;

/** What a run carries into its next segment when it continues as new. */
export const RunResume = z.object({
  segment: z.number().int().positive(),
  /** The session in effective form: compacted turns are not carried. */
  session: z.array(SessionEvent),
  usage: Usage,
  limits: ResolvedLimits,
  /** The composition resolved at the run's start, kept as it was. */
  composition: ResolveRunResult,
  delegations: z.array(LedgerEntry),
  inbox: z.array(
    z.object({
      from: z.string(),
      content: z.string(),
      interjection: z.boolean().optional(),
      /** A background child's result waiting to join the dialogue. */
      subagent: z.object({ taskName: z.string(), childWorkflowId: z.string() }).optional(),
      /** A child's question, or news that one was answered directly. */
      question: z
        .object({
          taskName: z.string(),
          childWorkflowId: z.string(),
          questionId: z.string(),
          answered: z.boolean().optional(),
        })
        .optional(),
      /** A request for approval below the run. */
      approval: z
        .object({ taskName: z.string(), childWorkflowId: z.string(), requestId: z.string(), run: z.string() })
        .optional(),
    }),
  ),
  appended: z.number().int().nonnegative(),
  snapshotMarks: z.record(z.string(), z.number().int()),
  /** The artifacts the run saved or its children handed back, and those its brief gave it. */
  artifacts: z.object({ produced: z.array(ArtifactRef), given: z.array(ArtifactRef) }).optional(),
  /** Messages from other runs accepted so far (`<from> <id>`), so a repeat is refused in the next segment too. */
  seenMessages: z.array(z.string()).optional(),
  /**
   * The model-call counter, and the last call a worker may still hold (its number and how many of the
   * session's messages it sent), so the next segment sends only what is new; absent when no model call was made.
   */
  context: z
    .object({ seq: z.number().int(), lastSeq: z.number().int(), length: z.number().int().nonnegative() })
    .optional(),
  /** Deployment versions (`<deployment>:<build id>`) its earlier segments ran on, oldest first. */
  versions: z.array(z.string().max(500)).max(10).optional(),
});
export type RunResume = z.infer<typeof RunResume>;

/** Reply of the `state` query. */
export const RunState = z.object({
  status: LiveStatus,
  /**
   * What the run is doing now, as its current details in Temporal UI say: the turn and the model it calls, the
   * children or the answer it waits on, a model call it retries and why.
   */
  details: z.string(),
  model: z.string().nullable(),
  preset: z.string().nullable(),
  usage: Usage,
  limits: ResolvedLimits.nullable(),
  remaining: Remaining.nullable(),
  /** The composition the run resolved at its start: preset definition, revision, model. */
  composition: z.object({ preset: Preset, revision: z.string(), model: z.string() }).nullable(),
  /**
   * How the run was given delegation: on its tenant's evidence, or `unconditional` because the config says so;
   * `null` when it was not given delegation.
   */
  activation: z.enum(['evidence', 'unconditional']).nullable(),
  /** Tokens and cost held for live children. */
  reserved: AmountSchema,
  /** Every child this run has reserved or started. */
  delegations: z.array(LedgerEntry),
  /** The session's events in effective form. */
  session: z.array(SessionEvent),
  /** The artifacts the run may read: those it saved, those its children handed back, those its brief gave it. */
  artifacts: z.array(ArtifactRef).optional(),
  /** The deployment version running the run (`null`: unversioned), and those its earlier segments ran on. */
  version: z.object({ current: z.string().nullable(), earlier: z.array(z.string()) }).optional(),
});
export type RunState = z.infer<typeof RunState>;

export { EndConversationInput, SendMessageInput } from './updates.js';
