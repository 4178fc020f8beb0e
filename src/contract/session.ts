/**
 * The session: a run's ordered, append-only event log, and the pure functions that read it.
 * Must stay importable from workflow code: no Node built-ins, no I/O.
 */
import { z } from 'zod';

/** A tool call as the model asked for it; `arguments` is the raw JSON text, which may be malformed. */
export const ToolCall = z.object({
  id: z.string(),
  name: z.string(),
  arguments: z.string(),
  /** The worker's proof that the model made this call in this run (see `activities/tool-call-seal.ts`). */
  seal: z.string().optional(),
});
export type ToolCall = z.infer<typeof ToolCall>;

const at = z.iso.datetime();

/** Fields every event has: when it happened, and whether it was copied from another session by a fork. */
const common = { at, inherited: z.boolean().optional() };

/** The names of the limits a run can reach. */
export const LimitName = z.enum(['maxTurns', 'maxTokens', 'maxCostUsd', 'maxToolCalls', 'deadline']);
export type LimitName = z.infer<typeof LimitName>;

/** Every event of a session; `type` names are part of the contract. */
export const SessionEvent = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('session/header'),
    ...common,
    version: z.number().int().positive(),
    sessionId: z.string(),
    parentId: z.string().nullable(),
    depth: z.number().int().nonnegative(),
    preset: z.string().nullable(),
    model: z.string(),
  }),
  z.object({ type: z.literal('message/user'), ...common, content: z.string() }),
  z.object({
    type: z.literal('message/assistant'),
    ...common,
    content: z.string().nullable(),
    toolCalls: z.array(ToolCall),
    /** Set on a synthesis call (no tools offered): the limit that forced it. */
    synthesisFor: LimitName.optional(),
    /** Set when another model than the run's own answered: which, and why the run's calls moved on to it. */
    model: z.string().optional(),
    fallback: z.string().optional(),
  }),
  z.object({
    type: z.literal('tool/result'),
    ...common,
    toolCallId: z.string(),
    name: z.string(),
    content: z.string(),
    isError: z.boolean(),
  }),
  z.object({ type: z.literal('compaction/summary'), ...common, summary: z.string(), replacesTurns: z.number().int() }),
  z.object({ type: z.literal('agent-preset/selected'), ...common, presetId: z.string(), revision: z.string() }),
  z.object({ type: z.literal('subagent/descriptor'), ...common, taskName: z.string(), parentId: z.string() }),
  z.object({
    type: z.literal('context/background'),
    ...common,
    /** `parent-chat`: copied from the parent's dialogue; `summary`: written for this run by a model. */
    source: z.enum(['parent-chat', 'summary']),
    /** The rendered block, heading included. */
    content: z.string(),
    /** Set with the preset option `contextRendering: "dialogue"`: the parent's turns as messages, roles kept. */
    dialogue: z.array(z.object({ role: z.enum(['user', 'assistant']), content: z.string() })).optional(),
  }),
  z.object({ type: z.literal('interjection'), ...common, content: z.string(), from: z.string() }),
  /** A background child's end, between turns; `content` is the same untrusted envelope as a waited result. */
  z.object({
    type: z.literal('subagent/result'),
    ...common,
    taskName: z.string(),
    childWorkflowId: z.string(),
    content: z.string(),
  }),
  /** A child's question, between turns; `content` is an untrusted envelope with its task name and id. */
  z.object({
    type: z.literal('subagent/question'),
    ...common,
    taskName: z.string(),
    childWorkflowId: z.string(),
    questionId: z.string(),
    content: z.string(),
  }),
  /** A request for approval somewhere below this run, between turns; `content` is an untrusted notice. */
  z.object({
    type: z.literal('subagent/approval'),
    ...common,
    taskName: z.string(),
    childWorkflowId: z.string(),
    requestId: z.string(),
    content: z.string(),
  }),
  /** A child's question answered by someone else than this run's model (a person, through `answerChild`). */
  z.object({
    type: z.literal('subagent/answered'),
    ...common,
    taskName: z.string(),
    childWorkflowId: z.string(),
    questionId: z.string(),
    answer: z.string(),
  }),
  z.object({
    type: z.literal('run/ended'),
    ...common,
    status: z.enum(['completed', 'failed', 'cancelled', 'limit_reached']),
    output: z.string().nullable(),
  }),
]);
export type SessionEvent = z.infer<typeof SessionEvent>;
