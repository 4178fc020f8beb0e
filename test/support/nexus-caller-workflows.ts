/**
 * Workflows of another team, in a namespace of its own, calling Deputy through its Nexus front door: they know only
 * the endpoint's name and the service's contract.
 */
import { CancellationScope, createNexusServiceClient, isCancellation, sleep } from '@temporalio/workflow';
import { deputyService, type FrontDoorState } from '../../src/contract/front-door.js';

/** What the caller saw, for the test to check. */
export interface CallerReport {
  questions: FrontDoorState['openQuestions'];
  answeredChild: string;
  ended: string;
}

/**
 * Starts a run through `endpoint`, waits for its child's question, answers it, then cancels the run by cancelling the
 * operation, and reports how it ended.
 */
export async function askDeputyThenCancel(input: {
  endpoint: string;
  key: string;
  task: string;
  answer: string;
}): Promise<CallerReport> {
  const deputy = createNexusServiceClient({ service: deputyService, endpoint: input.endpoint });
  const scope = new CancellationScope();
  const handle = await scope.run(() =>
    deputy.startOperation('run', { key: input.key, task: input.task }, { scheduleToCloseTimeout: '10 minutes' }),
  );
  let state: FrontDoorState | undefined;
  for (let i = 0; i < 300 && !state?.openQuestions.length; i += 1) {
    if (i > 0) await sleep(200);
    state = await deputy.executeOperation('state', { key: input.key }, { scheduleToCloseTimeout: '1 minute' });
  }
  const answered = await deputy.executeOperation(
    'answer',
    { key: input.key, answer: input.answer },
    { scheduleToCloseTimeout: '1 minute' },
  );
  scope.cancel();
  const ended = await handle.result().then(
    (result) => `completed: ${result.status}`,
    (err: unknown) => (isCancellation(err) ? 'cancelled' : `failed: ${(err as Error).message}`),
  );
  return { questions: state?.openQuestions ?? [], answeredChild: answered.child, ended };
}

/** Sends `request` as the `run` operation's input as it is, and reports how the front door answered. */
export async function askDeputyRaw(input: { endpoint: string; request: unknown }): Promise<string> {
  const deputy = createNexusServiceClient({ service: deputyService, endpoint: input.endpoint });
  try {
    const result = await deputy.executeOperation('run', input.request as never, {
      scheduleToCloseTimeout: '1 minute',
    });
    return `completed: ${JSON.stringify(result)}`;
  } catch (err) {
    const cause = (err as Error).cause as Error | undefined;
    return `refused: ${(err as Error).message}${cause ? ` (${cause.message})` : ''}`;
  }
}

/** Reads the state of a run by its key through `endpoint`. */
export async function readDeputyState(input: { endpoint: string; key: string }): Promise<string> {
  const deputy = createNexusServiceClient({ service: deputyService, endpoint: input.endpoint });
  try {
    const state = await deputy.executeOperation('state', { key: input.key }, { scheduleToCloseTimeout: '1 minute' });
    return `read: ${state.status}`;
  } catch (err) {
    const cause = (err as Error).cause as Error | undefined;
    return `refused: ${(err as Error).message}${cause ? ` (${cause.message})` : ''}`;
  }
}

/** What a caller saw deciding an approval through the front door. */
export interface DecisionReport {
  approvals: FrontDoorState['openApprovals'];
  decided: string;
  again: string;
  ended: string;
}

/**
 * Starts a run through `endpoint`, waits until a call of its tree waits for approval, approves it, tries to decide it
 * a second time, and reports how the run ended.
 */
export async function approveThroughDeputy(input: {
  endpoint: string;
  key: string;
  task: string;
}): Promise<DecisionReport> {
  const deputy = createNexusServiceClient({ service: deputyService, endpoint: input.endpoint });
  const handle = await deputy.startOperation(
    'run',
    { key: input.key, task: input.task },
    { scheduleToCloseTimeout: '10 minutes' },
  );
  let state: FrontDoorState | undefined;
  for (let i = 0; i < 300 && !state?.openApprovals.length; i += 1) {
    if (i > 0) await sleep(200);
    state = await deputy.executeOperation('state', { key: input.key }, { scheduleToCloseTimeout: '1 minute' });
  }
  const requestId = state?.openApprovals[0]?.requestId ?? 'none';
  const decide = async () => {
    try {
      const decided = await deputy.executeOperation(
        'decide',
        { key: input.key, requestId, decision: 'approve', reason: 'through the front door' },
        { scheduleToCloseTimeout: '1 minute' },
      );
      return `${decided.decision} by ${decided.by}`;
    } catch (err) {
      const cause = (err as Error).cause as Error | undefined;
      return `refused: ${cause?.message ?? (err as Error).message}`;
    }
  };
  const decided = await decide();
  const again = await decide();
  const result = await handle.result();
  return { approvals: state?.openApprovals ?? [], decided, again, ended: `${result.status}: ${result.output}` };
}

/**
 * Starts a run through `endpoint` and reports at once whether the front door took it (the run goes on: the test ends
 * it); with `twice`, starts the same key again meanwhile and reports both.
 */
export async function startDeputyRuns(input: {
  endpoint: string;
  key: string;
  task: string;
  twice?: boolean;
}): Promise<string[]> {
  const deputy = createNexusServiceClient({ service: deputyService, endpoint: input.endpoint });
  const start = async () => {
    try {
      await deputy.startOperation(
        'run',
        { key: input.key, task: input.task },
        { scheduleToCloseTimeout: '10 minutes' },
      );
      return 'started';
    } catch (err) {
      const cause = (err as Error).cause as Error | undefined;
      return `refused: ${(err as Error).message}${cause ? ` (${cause.message})` : ''}`;
    }
  };
  const first = await start();
  return input.twice ? [first, await start()] : [first];
}
