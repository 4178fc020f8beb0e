/**
 * The commands that follow and steer runs: `run` and `watch` (the tree live, redrawn in place on a terminal),
 * `cancel`, and the starts that make a new run (`import`, `fork`, `followup`). Ctrl-C stops following, never the
 * run, and says how to cancel it.
 */
import type { DeputyClient } from '../client/client.js';
import { describeWatchEvent, TreeView } from '../client/watch-view.js';
import { wrapText } from '../client/tree.js';
import { labelledUsage } from '../rules/usage.js';
import { terminalSafeJson } from '../rules/terminal.js';
import { print } from './output.js';
import { safeStrings, terminalStyle } from './style.js';
import type { Parsed } from './usage.js';

/** `deputy run`: starts the run, prints its id, and follows it unless told to detach. */
export async function start(deputy: DeputyClient, task: string, options: Parsed): Promise<number> {
  const limits = {
    ...(options.maxTurns !== undefined && { maxTurns: options.maxTurns }),
    ...(options.maxCostUsd !== undefined && { maxCostUsd: options.maxCostUsd }),
  };
  const handle = await deputy.startRun({
    task,
    ...(options.preset && { preset: options.preset }),
    ...(options.model && { model: options.model }),
    ...(Object.keys(limits).length > 0 && { limits }),
  });
  // With --json, stdout holds only the events' JSON lines: the id goes to stderr.
  if (options.json) console.error(`started ${handle.workflowId}`);
  else print(`started ${handle.workflowId}`);
  if (options.detach) {
    if (options.json) console.log(JSON.stringify({ workflowId: handle.workflowId }));
    else print(`follow it with: deputy watch ${handle.workflowId}`);
    return 0;
  }
  const code = await watch(deputy, handle.workflowId, undefined, options.json);
  if (options.json) return code;
  const result = await deputy.result(handle.workflowId);
  const { own, tree, billed } = labelledUsage(result.usage);
  print(`\n${own}; ${tree} debited, ${billed}`);
  print(`${result.status}: ${result.output ?? result.error ?? ''}`);
  return code;
}

/** A new run that `import`, `fork` or `followup` started, and how to follow it. */
export function started(workflowId: string): string {
  return `started ${workflowId}\nfollow it with: deputy watch ${workflowId}`;
}

/**
 * `deputy watch`: on a terminal the tree is redrawn in place as events arrive; otherwise (a pipe, a log) each event
 * is a line, or with `--json` a JSON line. Then the tree and a summary; the exit code says whether the root completed.
 */
export async function watch(
  deputy: DeputyClient,
  rootId: string,
  since: string | undefined,
  json = false,
): Promise<number> {
  const view = new TreeView();
  const style = terminalStyle();
  const live = process.stdout.isTTY && !json;
  let drawn = 0;
  let timer: NodeJS.Timeout | undefined;
  const redraw = () => {
    timer = undefined;
    const lines = view.lines(style);
    process.stdout.write(`${drawn > 0 ? `\x1b[${drawn}F\x1b[J` : ''}${lines.join('\n')}\n`);
    drawn = lines.length;
  };
  const interrupted = () => {
    clearTimeout(timer);
    const status = view.root ? view.runs.get(view.root)?.status : undefined;
    console.error(
      `\ndeputy: stopped watching; ${rootId} goes on${status ? ` (${status})` : ''}. Watch it again with deputy watch ${rootId}, or cancel it (and its children) with deputy cancel ${rootId}`,
    );
    process.exit(130);
  };
  process.once('SIGINT', interrupted);
  let last = '';
  try {
    for await (const event of deputy.watch(rootId, { ...(since && { since }) })) {
      const safe = safeStrings(event);
      view.apply(safe);
      last = event.cursor;
      if (json) console.log(terminalSafeJson(event).replace(/\n\s*/g, ' '));
      else if (live) timer ??= setTimeout(redraw, 100);
      // A log gets one line per event, not one per live-output poll; a terminal shows the answer as it is written.
      else if (event.type !== 'model/progress')
        console.log(`${safe.at}  ${view.runs.get(safe.run)!.name}: ${describeWatchEvent(safe)}`);
    }
  } finally {
    process.off('SIGINT', interrupted);
  }
  clearTimeout(timer);
  const root = view.root ? view.runs.get(view.root) : undefined;
  const code = root?.status === 'completed' ? 0 : 1;
  if (json) return code;
  if (live) redraw();
  else console.log(`\n${view.lines(style).join('\n')}`);
  print(`\n${wrapText(view.summary(), '', style.width).join('\n')}`);
  if (last) print(`resume after the last event:\ndeputy watch ${rootId} ${last}`);
  return code;
}

/** How long `deputy cancel` waits to see the run end before it says the cancellation is on its way. */
const CANCEL_WAIT_MS = 15_000;

/** `deputy cancel`: asks the run to stop (its children with it) and says how it ended, or that it is ending. */
export async function cancel(deputy: DeputyClient, workflowId: string): Promise<number> {
  const described = await deputy.temporal.workflow.getHandle(workflowId).describe();
  if (described.status.name !== 'RUNNING') {
    print(`${workflowId} has already ended (${described.status.name.toLowerCase()}): nothing to cancel`);
    return 1;
  }
  await deputy.cancel(workflowId);
  const ended = await Promise.race([
    deputy.result(workflowId),
    new Promise<null>((resolve) => setTimeout(() => resolve(null), CANCEL_WAIT_MS).unref()),
  ]);
  if (ended === null) {
    print(
      `cancellation of ${workflowId} requested; it ends (its children with it) once a worker takes it: deputy tree ${workflowId} shows it`,
    );
    return 0;
  }
  print(`${workflowId} ${ended.status}${ended.status === 'cancelled' ? ', its children with it' : ''}`);
  return 0;
}
