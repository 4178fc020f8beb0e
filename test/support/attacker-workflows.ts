/**
 * Workflows of an attacker inside Deputy's namespace, on a worker of its own (its own queue, no Deputy code, no key):
 * everything a client of the namespace may do with Temporal's records. Each reports what Deputy answered.
 */
import {
  ApplicationFailure,
  executeChild,
  makeContinueAsNewFunc,
  proxyActivities,
  type ActivityFailure,
  type ChildWorkflowFailure,
} from '@temporalio/workflow';

/** What came back: a result, or the failure's type and message. */
export type Answer = { ok: unknown } | { type: string | undefined; message: string };

function failed(err: unknown): Answer {
  const cause = (err as ActivityFailure | ChildWorkflowFailure).cause;
  const root = cause instanceof ApplicationFailure ? cause : (err as Error);
  return { type: root instanceof ApplicationFailure ? (root.type ?? undefined) : undefined, message: root.message };
}

/**
 * A workflow the attacker names `agentRun`, so Temporal reports that type to Deputy's activities, which it then runs
 * one by one on Deputy's queue with inputs of its own making.
 */
export async function agentRun(input: {
  deputyQueue: string;
  calls: { activity: string; input: unknown }[];
}): Promise<Answer[]> {
  const activities = proxyActivities<Record<string, (input: unknown) => Promise<unknown>>>({
    taskQueue: input.deputyQueue,
    startToCloseTimeout: '30 seconds',
    retry: { maximumAttempts: 1 },
  });
  const answers: Answer[] = [];
  for (const call of input.calls) {
    answers.push(await activities[call.activity]!(call.input).then((ok) => ({ ok }), failed));
  }
  return answers;
}

/** Continues as new into Deputy's `agentRun`, on Deputy's queue, with an input of the attacker's making. */
export async function continueIntoAgentRun(input: { deputyQueue: string; runInput: unknown }): Promise<never> {
  const into = makeContinueAsNewFunc<(input: unknown) => Promise<unknown>>({
    workflowType: 'agentRun',
    taskQueue: input.deputyQueue,
  });
  return into(input.runInput);
}

/** Starts Deputy's `agentRun` as its own child, as a parent run would, with an input of the attacker's making. */
export async function fakeParent(input: { deputyQueue: string; childId: string; runInput: unknown }): Promise<Answer> {
  return executeChild<(input: unknown) => Promise<unknown>>('agentRun', {
    taskQueue: input.deputyQueue,
    workflowId: input.childId,
    args: [input.runInput],
  }).then((ok) => ({ ok }), failed);
}
