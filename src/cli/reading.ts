/**
 * The commands that read runs: `tree`, `state`, `export`, `approvals`, `sessions`. Each works without a worker: when
 * none answers for a run it reads what Temporal recorded of it and says so in one line on stderr, naming the worker
 * to start for live answers. `--json` gives scripts the same in JSON.
 */
import type { Client } from '@temporalio/client';
import { DeputyError } from '../contract/errors.js';
import type { DeputyClient } from '../client/client.js';
import { loadTree } from '../client/inspect.js';
import { renderTree } from '../client/tree.js';
import { Redactor, redactDeep } from '../eval/redact.js';
import { sessionIds } from '../eval/admit.js';
import { terminalSafeJson } from '../rules/terminal.js';
import { listApprovals } from './approvals.js';
import { askWorker, encryptedRun, encryptedWords, fromRecordLine } from '../client/recorded.js';
import { safeStrings, table, terminalStyle } from './style.js';
import type { Parsed } from './usage.js';
import { output, print, warn } from './output.js';

export async function readingCommand(
  client: Client,
  deputy: DeputyClient,
  { command, args, json, out, redact }: Parsed,
): Promise<number> {
  const [id] = args as [string];
  switch (command) {
    case 'tree': {
      const nodes = await loadTree(client, id);
      // Without its keys an encrypted tree reads as names and statuses only: say why, and what to set.
      if (!process.env.DEPUTY_CODEC_KEYS && (await encryptedRun(client, id)))
        warn(`${encryptedWords()}; below is what is readable without it`);
      const silent = nodes.filter((n) => n.unanswered).length;
      if (silent > 0)
        warn(
          `${silent} of the tree's runs did not answer (no worker for them): their figures are what Temporal recorded; start a worker on their task queue for live ones`,
        );
      // What runs wrote is made safe before the tree is coloured: the colours are the only escapes it prints.
      console.log(json ? terminalSafeJson(nodes) : renderTree(safeStrings(nodes), terminalStyle()));
      return 0;
    }
    case 'state': {
      const reading = await askWorker(client, id, () => deputy.getState(id));
      if ('recorded' in reading) {
        warn(fromRecordLine(id, reading));
        output(terminalSafeJson(reading.recorded), out);
        return 0;
      }
      const state = reading.live;
      // Why it failed is the first thing a person looks for: beside the status, from the run's end.
      const ended = ['failed', 'cancelled'].includes(state.status) ? await deputy.result(id) : undefined;
      output(terminalSafeJson({ ...state, error: ended?.error ?? null }), out);
      return 0;
    }
    case 'export': {
      const reading = await askWorker(client, id, () => deputy.exportSession(id));
      if ('recorded' in reading) {
        const queue = reading.recorded.taskQueue;
        throw new DeputyError(
          `${id}: ${reading.because}; a session is read from its worker: start one on task queue "${queue}" (DEPUTY_TASK_QUEUE=${queue} npm run worker) and export again`,
        );
      }
      if (!redact) {
        output(terminalSafeJson(reading.live), out);
        return 0;
      }
      // The run's own ids are no secret: kept, so an admitted scenario is named after its run.
      const redactor = await Redactor.keeping(sessionIds(reading.live));
      output(terminalSafeJson(await redactDeep(reading.live, redactor)), out);
      // The list goes to stderr, so what stdout holds still imports.
      for (const r of redactor.redactions) warn(`redacted ${r.kind} at ${r.where}: ${r.placeholder}`);
      return 0;
    }
    case 'approvals': {
      const reading = await askWorker(client, id, () => deputy.approvals(id));
      if ('recorded' in reading) {
        warn(fromRecordLine(id, reading));
        const { status, workflowStatus } = reading.recorded;
        print(
          json
            ? terminalSafeJson({ readFrom: reading.recorded.readFrom, status, workflowStatus, requests: null })
            : `${id} is ${status ?? workflowStatus.toLowerCase()} in Temporal's records; its open requests are held by its worker`,
        );
        return 0;
      }
      print(json ? terminalSafeJson(reading.live) : listApprovals(id, reading.live));
      return 0;
    }
    case 'sessions': {
      const sessions = await deputy.listSessions(id);
      if (json) print(terminalSafeJson(sessions));
      else if (sessions.length === 0) print(`no session matches${id ? ` ${id}` : ''}`);
      else
        print(
          table(
            ['SESSION', 'STATUS', 'PRESET', 'PARENT'],
            sessions.map((s) => [s.sessionId, s.status, s.preset ?? '-', s.parentId ?? '(root)']),
          ),
        );
      return 0;
    }
    default:
      throw new DeputyError(`${command} is not a reading command`);
  }
}
