/**
 * What the question tests share: a tree whose children may delegate (their calls carry the steering tools' specs, so
 * they get room for them), the scripted replies that ask and answer, and which request is which.
 */
import { RunState } from '../../src/contract/run.js';
import { lastMessage, userSays, type RecordedRequest } from '../../src/testing/script.js';
import { DELEGATION_TOOLS, delegationConfig } from './delegation.js';
import { useHarness } from './harness.js';

/** Starts the worker before the calling file's tests; a run's state, and its `DeputyStatus` as Temporal lists it. */
export function useQuestionTree() {
  const h = useHarness({
    config: delegationConfig({
      maxDepth: 2,
      childDefaults: { maxTurns: 6, maxTokens: 40_000, maxCostUsd: 0.05, maxToolCalls: 5 },
    }),
    tools: DELEGATION_TOOLS,
  });
  const state = async (id: string) => RunState.parse(await h.deputy.getState(id));
  const status = async (id: string) =>
    (await h.client.workflow.getHandle(id).describe()).searchAttributes.DeputyStatus?.[0] as string | undefined;
  return { h, state, status };
}

/** A request whose dialogue ends with a message starting with `prefix`. */
export const endsWith = (task: string, prefix: string) => (r: RecordedRequest) =>
  userSays(task)(r) && lastMessage(r).startsWith(prefix);

/** A request whose last message is the result of a tool call containing `text`. */
export const afterTool = (task: string, text: string) => (r: RecordedRequest) =>
  userSays(task)(r) && r.body.messages.at(-1)?.role === 'tool' && lastMessage(r).includes(text);

/** A model reply that asks the run's parent. */
export const ask = (question: string) => ({ toolCalls: [{ name: 'ask_parent', arguments: { question } }] });

/** A model reply that answers a child's open question. */
export const answerChild = (taskName: string, answer: string) => ({
  toolCalls: [{ name: 'answer_child', arguments: { task_name: taskName, answer } }],
});
