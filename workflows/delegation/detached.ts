/**
 * Detached children (a brief with `wait: false`, the spec's "background delegation"): each runs in a cancellation
 * scope of its own while the parent goes on. The child's end joins the parent's inbox as a `subagent/result` (the untrusted envelope of a
 * waited result) and wakes an idle parent, unless the `wait` tool took it first. Deterministic code only.
 */
import { condition, setCurrentDetails } from '@temporalio/workflow';
import type { RunToolResult } from '../../src/contract/activities.js';
import type { LedgerEntry } from '../../src/contract/run.js';
import type { ToolCall } from '../../src/contract/session.js';
import { renderChildResults } from '../../src/rules/children.js';
import type { Run } from '../run/run.js';
import type { Child } from './child.js';
import { parseSteeringArgs } from '../../src/contract/checks/contract-checks.js';
import { toolError } from './plan.js';
import { questionWaiting } from './questions.js';

/** How long `wait` waits when the model names no timeout. */
const DEFAULT_WAIT_SECONDS = 300;

/**
 * Follows a child as a detached child: from its dispatch (`wait: false`), or from the moment a waited child asked a
 * question and the call waiting for it returned. Its end reaches the parent's inbox.
 */
export function detach(run: Run, child: Child): void {
  child.detach(reportEnd(run, child));
}

/** A detached child's end as a message in its parent's inbox. */
async function reportEnd(run: Run, child: Child): Promise<void> {
  await child.life;
  const { outcome } = child;
  if (!outcome) {
    // Cancelled with its parent, or by `stopDetached` at the parent's end: settled as cancelled, nobody to tell.
    child.reported();
    return;
  }
  run.inbox.receive({
    type: 'child-result',
    from: child.id,
    content: renderChildResults([outcome]),
    child: { taskName: child.taskName, childWorkflowId: child.id },
  });
}

/** What the `delegate` call answers for the briefs it dispatched in the background. */
export function renderDetached(entries: readonly LedgerEntry[]): string {
  const list = entries.map((entry) => `${entry.taskName} (child run ${entry.childWorkflowId})`).join(', ');
  return `Dispatched in the background: ${list}. Each result arrives as a message when its child ends, labelled EXTERNAL_UNTRUSTED; call wait to join them sooner, or interject to tell a child something.`;
}

/** A parent that ends (or a conversation that is over) cancels its live detached children, and settles them. */
export async function stopDetached(run: Run): Promise<void> {
  const live = run.children.detached().filter((child) => !child.over);
  for (const child of live) child.scope!.cancel();
  await Promise.all(live.map((child) => child.detached!.settled));
}

/**
 * A task run whose model answered while detached children are live waits for the first of them to end (or
 * a message), then gets a turn with what arrived.
 */
export async function awaitDetached(run: Run): Promise<void> {
  run.setStatus('waiting_for_children');
  setCurrentDetails('waiting for detached children before ending');
  await condition(() => run.inbox.size > 0 || !run.children.hasLiveDetached());
  run.setStatus(run.liveStatus());
}

/** The `wait` tool: joins detached children (all live ones, or those named) within a timeout. */
export async function runWait(call: ToolCall, run: Run): Promise<RunToolResult> {
  const parsed = parseSteeringArgs('wait', call.arguments);
  if (!parsed.ok) return toolError(parsed.error);
  const { task_names: names, timeout_seconds: timeout = DEFAULT_WAIT_SECONDS } = parsed.args;
  const children = run.children.detached();
  const notes: string[] = [];
  let chosen: Child[];
  if (names) {
    chosen = [];
    for (const name of names) {
      const child = children.findLast((c) => c.taskName === name);
      if (!child) {
        const known = children.map((c) => c.taskName).join(', ') || 'none';
        return toolError(`no background child named "${name}"; the background children are: ${known}`);
      }
      if (child.detached!.reported) notes.push(`${name}: ended earlier; its result was already reported`);
      else chosen.push(child);
    }
  } else {
    chosen = children.filter((c) => !c.detached!.reported);
  }
  if (chosen.length === 0) {
    return notes.length > 0
      ? { content: notes.join('\n'), isError: false }
      : toolError('there are no background children to wait for (dispatch some with delegate and wait: false)');
  }
  if (chosen.some((c) => !c.over)) {
    const ids = chosen.map((c) => c.id);
    run.setStatus('waiting_for_children');
    setCurrentDetails(`waiting for ${ids.join(', ')} (wait, ${timeout} s)`);
    // A question from one of them ends the wait too, so the model can answer it.
    run.beginWait();
    try {
      await condition(() => chosen.every((c) => c.over) || questionWaiting(run, ids), `${timeout} seconds`);
    } finally {
      run.endWait();
    }
    run.setStatus(run.liveStatus());
  }
  // A child cancelled meanwhile is already `reported`: only real outcomes are left. One already reported now was taken
  // by another `wait` call of this turn (nothing joins the dialogue during a turn).
  const ended = chosen.filter((c) => c.outcome && !c.detached!.reported);
  for (const child of chosen.filter((c) => c.outcome && c.detached!.reported)) {
    notes.push(`${child.taskName}: ended; its result went to another wait call of this turn`);
  }
  for (const child of ended) take(run, child);
  const still = chosen.filter((c) => !c.over).map((c) => c.taskName);
  const asking = chosen.filter((c) => questionWaiting(run, [c.id])).map((c) => c.taskName);
  if (asking.length > 0) {
    notes.push(
      `${asking.join(', ')} asked you a question (it follows this result); answer with answer_child, then wait again`,
    );
  }
  if (still.length > asking.length) {
    notes.push(
      `still running${asking.length > 0 ? '' : ` after ${timeout} s`}: ${still.filter((n) => !asking.includes(n)).join(', ')}; each result arrives as a message when its child ends (or call wait again)`,
    );
  }
  const outcomes = ended.map((c) => c.outcome!);
  const parts = [...(outcomes.length > 0 ? [renderChildResults(outcomes)] : []), ...notes];
  return {
    content: parts.join('\n\n'),
    isError: outcomes.length > 0 && outcomes.every((o) => o.status !== 'completed'),
  };
}

/** The `wait` tool reports a result still in the inbox: it will not join the dialogue a second time. */
function take(run: Run, child: Child): void {
  child.reported();
  const waiting = run.inbox.items.find(
    (item) => item.type === 'child-result' && item.child.childWorkflowId === child.id,
  );
  if (waiting) run.inbox.withdraw(waiting);
}
