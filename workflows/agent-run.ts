/**
 * The `agentRun` workflow: one agent run, durable on Temporal. Deterministic code only: every effect (model calls,
 * tools, config lookups) is an activity, so retries, timeouts and cancellation come from history.
 */
import {
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  ContinueAsNew,
  isCancellation,
  proxyLocalActivities,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { DeputyActivities } from '../activities/index.js';
import type { PresetAtRevisionInput } from '../src/contract/activities.js';
import type { Preset } from '../src/contract/preset.js';
import type { ResolveRunResult } from '../src/contract/composition.js';
import { mergePolicies } from '../src/rules/approvals.js';
import { FAILURE } from '../src/contract/failures.js';
import type { RunInput, RunResult } from '../src/contract/run.js';
import { treeAttributes } from '../src/contract/search-attributes.js';
import { bestOutput, outputSinceLastMessage } from '../src/contract/dialogue.js';
import { failureMessage, findFailure } from '../src/rules/failure-message.js';
import { resolveLimits } from '../src/rules/budget.js';
import { compositionFromInput, startsFromInput } from '../src/rules/child-composition.js';
import { STEERING_TOOLS } from '../src/rules/children.js';
import { LOOKUP_OPTIONS } from './activity-options.js';
import { registerHandlers } from './handlers.js';
import { registerApprovalHandlers } from './approvals.js';
import { stopDetached } from './delegation/detached.js';
import { agentLoop } from './loop.js';
import { checkRunInput } from '../src/contract/checks/contract-checks.js';
import { Run, type ParsedRunInput } from './run/run.js';

/** A run looks its composition up in the worker's config without a server round trip. */
const local = proxyLocalActivities<DeputyActivities>(LOOKUP_OPTIONS);

/** Runs one agent: parse, start or resume, register handlers, loop until an answer or a limit, finish. */
export async function agentRun(rawInput: RunInput): Promise<RunResult> {
  const input = checkResume(parseInput(rawInput));
  const info = workflowInfo();
  const run = input.resume ? Run.fromResume(input, info.workflowId, input.resume) : new Run(input, info.workflowId);
  registerHandlers(run);
  registerApprovalHandlers(run);
  // A child and a resumed run act with the grant their input carries, which workers honour only for a run Temporal
  // records in the granted tree; a root is granted its tree when its composition is resolved.
  if (input.origin || input.resume) run.treeGrant = input.grant ?? '';
  let deadline: RunDeadline | undefined;
  try {
    if (!input.resume) await begin(run, input);
    // One upsert when the run starts running, of what its start did not set: a parent starts a child with all of
    // its attributes, status `running` included, so a child writes none.
    const present = workflowInfo().typedSearchAttributes.getAll();
    const missing = treeAttributes({
      rootId: run.rootId,
      depth: run.depth,
      tenant: run.tenant,
      preset: run.composition.preset,
      ...(run.origin && {
        child: {
          parentId: run.origin.parentId,
          taskName: run.origin.taskName,
          contextMode: String(run.origin.contextMode),
        },
      }),
    }).filter(({ key, value }) => !present.some((pair) => pair.key.name === key.name && pair.value === value));
    run.markRunning();
    if (missing.length > 0) upsertSearchAttributes(missing);
    deadline = RunDeadline.of(run);
    const outcome = deadline ? await deadline.bound(() => agentLoop(run)) : await agentLoop(run);
    // A call that finished before the cancel reached it does not outvote the person who asked the run to stop.
    if (CancellationScope.current().consideredCancelled) throw new CancelledFailure('the run was cancelled');
    // Detached children still live when the run ends (a conversation over, a limit) are cancelled first.
    if (run.children.hasLiveDetached()) await stopDetached(run);
    await run.sends.allThrough();
    run.end(outcome.status, outcome.output);
    return run.result({
      status: outcome.status,
      output: outcome.output,
      ...(outcome.limit && { limit: outcome.limit }),
    });
  } catch (err) {
    if (err instanceof ContinueAsNew) throw err;
    // So are those of a run that ends otherwise (cancelled with the run or its loop, or not yet: a failure).
    if (run.children.hasLiveDetached()) await stopDetached(run);
    await run.sends.allThrough();
    if (deadline?.endedRun(err)) {
      const output = bestOutput(run.events);
      run.end('limit_reached', output);
      return run.result({ status: 'limit_reached', output, limit: 'deadline' });
    }
    const cancelled = isCancellation(err);
    const partial = outputSinceLastMessage(run.events);
    run.end(cancelled ? 'cancelled' : 'failed', partial, cancelled ? undefined : failureMessage(err));
    if (findFailure(err, FAILURE.ActivityCaller)) throw ungranted(err);
    if (run.origin && !cancelled) {
      // A child's parent reads the child's spend from the failure's details.
      throw ApplicationFailure.create({
        type: FAILURE.ChildFailed,
        message: failureMessage(err),
        nonRetryable: true,
        cause: err instanceof Error ? err : undefined,
        details: [run.result({ status: 'failed', output: partial, error: failureMessage(err) })],
      });
    }
    throw err;
  }
}

/**
 * A new run's composition and limits. An implicit child got its composition from its parent (its preset looked up
 * first when given by reference); anything else looks it up, a preset by reference with it.
 */
async function begin(run: Run, input: ParsedRunInput): Promise<void> {
  const presetAt = presetLookup(input);
  const given =
    presetAt && startsFromInput(input) ? withPresetDefinition(input, await local.presetAtRevision(presetAt)) : input;
  const inherited = compositionFromInput(given);
  if (inherited) {
    return run.begin(
      withParentApprovals(inherited, input),
      resolveLimits(input.limits, inherited.defaultLimits, Date.now()),
    );
  }
  const root = !input.origin;
  const { grant, ...composition } = await local.resolveRun({ ...resolveRunInput(given, run.depth), presetAt, root });
  if (root) run.treeGrant = grant!;
  run.begin(
    withParentApprovals(composition, input),
    resolveLimits(input.limits, composition.defaultLimits, Date.now()),
  );
}

/** A child's composition needs every approval its parent's does, whatever its preset asked for. */
function withParentApprovals(composition: ResolveRunResult, input: ParsedRunInput): ResolveRunResult {
  const approvals = mergePolicies(composition.approvals, input.origin?.approvals);
  return approvals ? { ...composition, approvals } : composition;
}

/**
 * A child given its preset by reference (a large one) looks it up by its revision, once, recorded: its worker's
 * config when that still has the revision, else what its parent recorded, so it runs with the parent's exact preset.
 */
function presetLookup(input: ParsedRunInput): PresetAtRevisionInput | undefined {
  const { origin } = input;
  const { parent } = workflowInfo();
  if (!origin?.preset || origin.preset.definition || input.preset === undefined || !parent) return undefined;
  return {
    id: input.preset,
    revision: origin.preset.revision,
    parent: { workflowId: parent.workflowId, runId: parent.runId },
  };
}

/** The input with the definition its preset's revision was looked up to. */
function withPresetDefinition(input: ParsedRunInput, definition: Preset): ParsedRunInput {
  const origin = input.origin!;
  return { ...input, origin: { ...origin, preset: { ...origin.preset!, definition } } };
}

/**
 * A task run offered no steering tool waits only on activities (model calls, tools, compaction; hooks end at their
 * own timeouts): nothing else (children, messages) can hold it past its deadline.
 */
function waitsOnlyOnActivities(run: Run): boolean {
  return (
    (run.input.mode ?? 'task') === 'task' && !run.composition.tools.some(({ name }) => STEERING_TOOLS.includes(name))
  );
}

/**
 * A worker refused to act for the run: its input carries an `origin` or a `resume` of no Deputy run's writing (a
 * workflow of a client's own started it or continued into it), so it did nothing.
 */
function ungranted(err: unknown): ApplicationFailure {
  return ApplicationFailure.create({
    type: FAILURE.RunInputInvalid,
    message: `invalid RunInput: no worker granted this run: ${failureMessage(err)}; origin and resume are set only by Deputy's runs, on the children they start and the runs they continue as`,
    nonRetryable: true,
  });
}

/** Input that fails its schema is rejected naming each field. */
function parseInput(rawInput: RunInput): ParsedRunInput {
  const checked = checkRunInput(rawInput);
  if (!checked.ok) {
    throw ApplicationFailure.create({
      type: FAILURE.RunInputInvalid,
      message: `invalid RunInput: ${checked.issues.join('; ')}`,
      nonRetryable: true,
    });
  }
  return checkOrigin(checked.input);
}

/** `origin` only on a real Temporal child of the parent it names. */
function checkOrigin(input: ParsedRunInput): ParsedRunInput {
  const { parent } = workflowInfo();
  const { origin } = input;
  if (origin && parent?.workflowId !== origin.parentId) {
    throw ApplicationFailure.create({
      type: FAILURE.RunInputInvalid,
      message: `invalid RunInput: origin: this run claims to be a child of "${origin.parentId}", but Temporal records ${parent ? `"${parent.workflowId}" as its parent` : 'no parent'}; origin is set only by a parent run on the children it starts`,
      nonRetryable: true,
    });
  }
  return input;
}

/**
 * A resume carries a run's composition, limits and usage, so only the run's own earlier segment may write one: it is
 * honoured on a run Temporal records as continued from an earlier run of its id, and not on a retry or a cron run,
 * which Temporal also starts with the caller's own input.
 */
function checkResume(input: ParsedRunInput): ParsedRunInput {
  if (!input.resume) return input;
  const { continuedFromExecutionRunId, attempt, cronSchedule } = workflowInfo();
  if (continuedFromExecutionRunId && attempt === 1 && !cronSchedule) return input;
  throw ApplicationFailure.create({
    type: FAILURE.RunInputInvalid,
    message:
      'invalid RunInput: resume: only a run continuing as new writes it, and Temporal records this run as started by a caller; start the run without resume',
    nonRetryable: true,
  });
}

/** What `resolveRun` is asked: the run's own choices, a parent's grant and composition, or a restored session's. */
function resolveRunInput(input: ParsedRunInput, depth: number) {
  const { origin, restore } = input;
  return {
    preset: input.preset,
    model: input.model,
    effort: input.effort,
    scopes: input.scopes,
    depth,
    allowedTools: origin?.allowedTools,
    tenant: input.tenant,
    presetDefinition: origin?.preset?.definition ?? (restore?.select ? undefined : restore?.preset),
    ...(!origin?.preset && !restore?.select && restore?.preset && { presetFromCaller: true }),
    ...(restore?.select && { preset: restore.select.presetId }),
    ...(restore?.model && !input.model && !restore.select && { model: restore.model }),
  };
}

/**
 * How a run's deadline ends it, decided once when it starts running. A task run that waits only on activities has
 * each of them bounded by the deadline (schedule-to-close), and no timer. Any other run has a timer that cancels only
 * its loop's scope (cancelling the run cancels the root scope, and this timer with it; the timer cannot reject).
 * Either way the run ends `limit_reached` with its best output.
 */
class RunDeadline {
  readonly #scope = new CancellationScope();
  /**
   * The timer's wait (none when activities are bounded instead), held and never awaited: it never rejects, and a run
   * that ends first leaves it to Temporal, which drops a closed run's timers (Temporal's own `withTimeout` would
   * cancel it, one more command and event in every run's history).
   */
  readonly timer: Promise<void>;

  private constructor(
    readonly deadlineMs: number,
    readonly onActivities: boolean,
  ) {
    this.timer = onActivities ? Promise.resolve() : this.#cancelAtDeadline();
  }

  /** The run's deadline, if it has one. */
  static of(run: Run): RunDeadline | undefined {
    const { deadlineMs } = run.account.limits;
    const onActivities = deadlineMs !== null && waitsOnlyOnActivities(run);
    run.boundDeadlineByActivities(onActivities);
    return deadlineMs === null ? undefined : new RunDeadline(deadlineMs, onActivities);
  }

  /** Runs the loop under the deadline. */
  bound<T>(loop: () => Promise<T>): Promise<T> {
    return this.onActivities ? loop() : this.#scope.run(loop);
  }

  /**
   * Whether `err`, which ended the loop, is the deadline's doing: the timer's cancellation of the loop (not the run's
   * own), or an activity that the deadline bounded, at or after it.
   */
  endedRun(err: unknown): boolean {
    if (Date.now() < this.deadlineMs) return false;
    if (this.onActivities) return !isCancellation(err);
    return isCancellation(err) && !CancellationScope.current().consideredCancelled;
  }

  async #cancelAtDeadline(): Promise<void> {
    const summary = `deadline ${new Date(this.deadlineMs).toISOString()}`;
    try {
      await sleep(Math.max(1, this.deadlineMs - Date.now()), { summary });
    } catch {
      return;
    }
    this.#scope.cancel();
  }
}
