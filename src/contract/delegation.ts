/**
 * The delegation contract: what a brief, the steering tools' arguments and a run's delegation settings look like,
 * and the registry of steering tools. Zod is the source of truth; workflow code checks against the JSON Schemas
 * generated from it (`src/contract/json-schemas.ts`).
 */
import { DELEGATE_SCOPE } from './scopes.js';
import { z } from 'zod';
import { ContextMode, Effort } from './preset.js';
import { parametersSchema, type ToolSpec } from './tools.js';

export { ContextMode };

/** Limits of a run (or that a brief asks for a child, each capped by what the parent has left). */
export const BriefLimits = z.strictObject({
  /** Model calls allowed. */
  maxTurns: z.number().int().positive().optional(),
  /** Input plus output tokens allowed over all model calls (a parent's include its children's). */
  maxTokens: z.number().int().positive().optional(),
  /** Spend allowed, in USD (a parent's includes its children's). */
  maxCostUsd: z.number().positive().optional(),
  /** Tool calls allowed. */
  maxToolCalls: z.number().int().nonnegative().optional(),
  /** Absolute time (ISO 8601) by which the run must end. */
  deadline: z.iso.datetime({ offset: true }).optional(),
});
export type BriefLimits = z.infer<typeof BriefLimits>;

/** One child's assignment. */
export const Brief = z.strictObject({
  task_name: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]{0,39}$/, 'use a slug: lowercase letters, digits and -, at most 40 characters'),
  message: z
    .string()
    .min(1, 'the assignment must not be empty')
    .describe('the assignment, complete and self-contained'),
  success_condition: z.string().optional().describe('how the child knows it is done'),
  role: z.string().optional().describe("preset id for the child; omit to inherit this run's preset"),
  context: ContextMode.optional().describe('"none" (default unless configured), "all", N recent turns, or "summary"'),
  model: z.string().optional(),
  effort: Effort.optional(),
  allowed_tools: z.array(z.string()).optional().describe('a subset of your own tools; default: all of them'),
  limits: BriefLimits.optional(),
  artifacts: z.array(z.string()).optional().describe('ids of artifacts the child may read'),
  inline_context: z.string().optional().describe('extra context written for the child'),
  wait: z
    .boolean()
    .optional()
    .describe(
      'false: the child runs in the background; you go on at once and its result arrives as a message when it ends (or call wait). Default true: this call returns with its result',
    ),
});
export type Brief = z.infer<typeof Brief>;

/** Arguments of the `delegate` tool. */
export const DelegateArgs = z.strictObject({
  briefs: z.array(Brief).min(1, 'give at least one brief').max(3, 'at most 3 briefs per invocation'),
  return_shape: z
    .record(z.string(), z.unknown())
    .optional()
    .describe("JSON Schema every child's final answer must match; the child is asked to answer in JSON"),
});
export type DelegateArgs = z.infer<typeof DelegateArgs>;

/** Arguments of the `interject` tool and payload of the `interject` update. */
export const InterjectArgs = z.strictObject({
  task_name: z.string().min(1).describe('the task_name of a child that is still running'),
  message: z.string().min(1, 'message must not be empty').describe('what to tell the child'),
});
export type InterjectArgs = z.infer<typeof InterjectArgs>;

/** Arguments of the `wait` tool. */
export const WaitArgs = z.strictObject({
  task_names: z
    .array(z.string().min(1))
    .min(1)
    .optional()
    .describe('the background children to wait for, by task_name; default: all that are still running'),
  timeout_seconds: z
    .number()
    .int()
    .positive()
    .max(3600)
    .optional()
    .describe('stop waiting after this long (default 300); children still running keep running'),
});
export type WaitArgs = z.infer<typeof WaitArgs>;

/** Arguments of the `ask_parent` tool. */
const AskParentArgs = z.strictObject({
  question: z
    .string()
    .min(1, 'question must not be empty')
    .max(4000, 'keep the question under 4000 characters')
    .describe('complete and self-contained'),
});
export type AskParentArgs = z.infer<typeof AskParentArgs>;

/** Arguments of the `answer_child` tool and payload of the `answerChild` update. */
export const AnswerChildArgs = z.strictObject({
  task_name: z.string().min(1).describe('the child that asked'),
  answer: z.string().min(1, 'answer must not be empty'),
  question_id: z.string().min(1).optional().describe('only when the child has several questions open'),
});
export type AnswerChildArgs = z.infer<typeof AnswerChildArgs>;

/** The delegation settings a run resolves at its start and keeps. */
/**
 * A child's final-synthesis reserve, sized to the child: `fraction` of its token and cost limits, never below the
 * floors (`fraction: 0` gives every child exactly the floors); `false` gives children none.
 */
export const ChildSynthesisReserve = z.union([
  z.literal(false),
  z.strictObject({
    fraction: z.number().min(0).max(0.5).default(0.1),
    minTokens: z.number().int().nonnegative().default(500),
    minCostUsd: z.number().nonnegative().default(0.0005),
  }),
]);
export type ChildSynthesisReserve = z.infer<typeof ChildSynthesisReserve>;

export const DelegationSettings = z.object({
  enabled: z.boolean(),
  /** Present when delegation is on without evidence, because the config says so. */
  activation: z.literal('unconditional').optional(),
  maxDepth: z.number().int(),
  maxBriefsPerInvocation: z.number().int(),
  maxChildrenPerRun: z.number().int(),
  neverInherit: z.array(z.string()),
  /** Limits a child gets when its brief asks for none (still capped by the parent's remaining). */
  childDefaults: BriefLimits,
  /** What each child keeps for its final answer, sized to the child (absent: the default sizing). */
  childSynthesisReserve: ChildSynthesisReserve.optional(),
  /** The context a brief without `context` gets (absent: `none`); a preset's `defaultContext` wins. */
  defaultContext: ContextMode.optional(),
  /** The run's tenant caps its live children across all of its runs. */
  admission: z
    .object({ tenant: z.string(), maxLiveChildren: z.number().int(), sweepSeconds: z.number().int() })
    .optional(),
  childTaskQueue: z.string(),
});
export type DelegationSettings = z.infer<typeof DelegationSettings>;

/** A tool that steers other runs: run in the workflow itself, not as an activity. */
export interface SteeringTool {
  /** What the model reads about the tool. */
  description: string;
  /** Its arguments; the JSON Schema the model sees and workflow code checks is generated from them. */
  args: z.ZodType;
  /**
   * Who is offered it: `parent` tools come with the delegation scope below max depth (`delegate` decides); `child`
   * tools are offered to every child and need no scope (asking grants nothing).
   */
  offeredTo: 'parent' | 'child';
  /** What the model is told to send when its arguments are not JSON. */
  example: string;
}

/**
 * Every steering tool, one entry each. The names, the model's specs and the JSON Schemas workflow code checks
 * arguments with (`npm run schemas`) come from here; the workflow's handler for each name is required by type
 * (`workflows/tool-turn.ts`).
 */
export const STEERING_TOOL_REGISTRY = {
  delegate: {
    description:
      "Hand parts of your work to child runs, one per brief (1 to 3 briefs). Children run in parallel with budgets taken from yours and tools no wider than yours; you get one result with each child's answer, labelled EXTERNAL_UNTRUSTED. Give each brief everything the child needs: unless this run is configured otherwise it sees nothing of this conversation. Fork context only when the child needs what was said here; self-contained look-ups need none. A brief with wait: false runs in the background: this call returns at once, you go on (and keep talking), and the child's result arrives later as a message.",
    args: DelegateArgs,
    offeredTo: 'parent',
    example: '{"briefs": [...]}',
  },
  interject: {
    description:
      'Send a message to one of your children that is still running (by its task_name). A child that was given your context also receives what you said and did since it started.',
    args: InterjectArgs,
    offeredTo: 'parent',
    example: '{"task_name": …, "message": …}',
  },
  followup: {
    description:
      'Continue a child that has finished (by its task_name) with a new message: a new child run starts from its session, with its composition and background, and you get its answer like a delegate result.',
    args: InterjectArgs,
    offeredTo: 'parent',
    example: '{"task_name": …, "message": …}',
  },
  wait: {
    description:
      'Wait for children you dispatched in the background (delegate with wait: false) and get their results now, labelled EXTERNAL_UNTRUSTED. Without task_names it waits for all of them that are still running.',
    args: WaitArgs,
    offeredTo: 'parent',
    example: '{} or {"task_names": [...]}',
  },
  answer_child: {
    description:
      'Answer the open question of one of your children, which waits for it. If you do not know, ask first (ask_parent, or the person).',
    args: AnswerChildArgs,
    offeredTo: 'parent',
    example: '{"task_name": …, "answer": …}',
  },
  ask_parent: {
    description:
      "Ask the run that gave you this task what only it can tell you (a missing fact, an ambiguity). You wait, at most until your deadline; the answer is this call's result.",
    args: AskParentArgs,
    offeredTo: 'child',
    example: '{"question": …}',
  },
} as const satisfies Record<string, SteeringTool>;

export type SteeringToolName = keyof typeof STEERING_TOOL_REGISTRY;
/** The parsed arguments of one steering tool. */
export type SteeringArgs<N extends SteeringToolName> = z.output<(typeof STEERING_TOOL_REGISTRY)[N]['args']>;

/** A steering tool as the model sees it. */
export function steeringToolSpec(name: SteeringToolName): ToolSpec {
  const { description, args, offeredTo } = STEERING_TOOL_REGISTRY[name];
  return {
    name,
    description,
    parameters: parametersSchema(args, 'input'),
    scopes: offeredTo === 'parent' ? [DELEGATE_SCOPE] : [],
  };
}
