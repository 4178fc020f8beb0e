/**
 * The runs a caller of `deputy mcp` reaches: who the caller is (its token's digest and tenant), the runs it started
 * (recorded in each run's memo), the waits for their ends the server holds, and how its tools answer.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { z } from 'zod';
import { DeputyClient } from '../client/client.js';
import { DeputyError } from '../contract/errors.js';
import type { narrowLimits } from '../config/caller-limits.js';

// Every tool's arguments are a strict object: a caller that sends what the server does not take (scopes, tools) is
// refused, not quietly ignored.

/** Runs started through the MCP server have ids with this prefix, and it reaches no others. */
const MCP_RUN_PREFIX = 'mcp-';
/** The longest a tool waits for a run's end before answering with its id. */
const MAX_WAIT_SECONDS = 600;

export const RunId = z
  .string()
  .regex(new RegExp(`^${MCP_RUN_PREFIX}[0-9a-f-]{36}$`), `a run id this server gave (${MCP_RUN_PREFIX}…)`)
  .describe('the id `run` returned');
export const WaitSeconds = z
  .number()
  .min(0)
  .max(MAX_WAIT_SECONDS)
  .optional()
  .describe(`how long to wait for the run to end (0 to ${MAX_WAIT_SECONDS} s); then its id and status come back`);

/** What a tool answers: the JSON as text, and as structured content. */
export function reply(value: Record<string, unknown>, isError = false): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value, isError };
}

/** A refusal the caller can act on (a bad id, an unknown preset, an update the run refused). */
export function refusal(err: unknown): CallToolResult {
  if (err instanceof DeputyError || err instanceof z.ZodError) return reply({ error: err.message }, true);
  throw err;
}

/** Who calls: the tenant its token maps to (none: the config's default) and an id that names the token, not it. */
export interface McpCaller {
  id: string;
  tenant?: string;
}

/** The caller a token is: its id is a digest of the token, so the memo that records it gives the token away to no one. */
export function callerOf(token: string, tenant?: string): McpCaller {
  return { id: digest(`deputy mcp caller ${token}`).toString('hex').slice(0, 24), ...(tenant && { tenant }) };
}

/** The memo field a run started through the server records its caller in. */
const CALLER_MEMO = 'deputyMcpCaller';

/**
 * The waits for a run's end the server holds at once: at most `max` over every caller, and at most `perCaller` for
 * one, so no caller can hold them all; one more answers at once.
 */
export class Waits {
  #open = 0;
  readonly #byCaller = new Map<string, number>();
  constructor(
    readonly max: number,
    readonly perCaller = Math.max(1, Math.ceil(max / 4)),
  ) {}
  /** Takes a place for `caller`, or says why there is none. */
  take(caller: string): true | string {
    const held = this.#byCaller.get(caller) ?? 0;
    if (held >= this.perCaller) return `this caller already holds ${this.perCaller} waits, its most`;
    if (this.#open >= this.max) return `this server already holds ${this.max} waits`;
    this.#open += 1;
    this.#byCaller.set(caller, held + 1);
    return true;
  }
  give(caller: string): void {
    this.#open -= 1;
    const held = (this.#byCaller.get(caller) ?? 1) - 1;
    if (held > 0) this.#byCaller.set(caller, held);
    else this.#byCaller.delete(caller);
  }
}

/** A refusal for a run the caller did not start, or that does not exist: the two are not told apart. */
const notYours = (runId: string) => new DeputyError(`no run ${runId} was started by this caller`);

/** The runs a caller started through the server: their status, questions and results. */
export class CallerRuns {
  readonly deputy: DeputyClient;

  constructor(
    readonly client: Client,
    taskQueue: string,
    readonly caller: McpCaller,
    readonly waits: Waits,
  ) {
    this.deputy = new DeputyClient(client, { taskQueue });
  }

  /** Starts a run on `task` as this caller (its tenant, its record in the run's memo); returns its id. */
  async start(task: string, preset: string | undefined, limits: ReturnType<typeof narrowLimits>): Promise<string> {
    const runId = `${MCP_RUN_PREFIX}${randomUUID()}`;
    await this.deputy.startRun(
      {
        task,
        ...(preset !== undefined && { preset }),
        ...(this.caller.tenant !== undefined && { tenant: this.caller.tenant }),
        limits,
      },
      {
        workflowId: runId,
        summary: `agentRun (MCP): ${task.replace(/\s+/g, ' ').slice(0, 70)}`,
        memo: { [CALLER_MEMO]: this.caller.id },
      },
    );
    return runId;
  }

  /** Throws unless `runId` was started by this caller, as the run's start recorded. */
  async own(runId: string): Promise<void> {
    const described = await this.client.workflow
      .getHandle(runId)
      .describe()
      .catch((err: unknown) => {
        if (err instanceof WorkflowNotFoundError) throw notYours(runId);
        throw err;
      });
    if (described.type !== 'agentRun' || described.memo?.[CALLER_MEMO] !== this.caller.id) throw notYours(runId);
  }

  /**
   * The run's result once it ends within `seconds`, or its status while it is still going. `gone` aborts when the
   * caller has gone (its connection closed): the wait ends and its place is given back at once.
   */
  async settle(runId: string, seconds: number, gone?: AbortSignal): Promise<Record<string, unknown>> {
    const now = await this.describe(runId);
    if (now.running && seconds === 0) return { runId, status: now.status, openQuestions: now.openQuestions };
    const place = now.running ? this.waits.take(this.caller.id) : true;
    if (place !== true) {
      return {
        runId,
        status: now.status,
        openQuestions: now.openQuestions,
        waited: false,
        note: `${place}; ask again with result later`,
      };
    }
    // An ended run's result is there already: return it whatever the wait asked.
    if (!now.running) return { runId, ...(await this.deputy.result(runId)) };
    try {
      return await this.read(runId, seconds, gone);
    } finally {
      this.waits.give(this.caller.id);
    }
  }

  private async read(runId: string, seconds: number, gone?: AbortSignal): Promise<Record<string, unknown>> {
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(), seconds * 1000);
    const leave = () => stop.abort();
    gone?.addEventListener('abort', leave, { once: true });
    if (gone?.aborted) stop.abort();
    try {
      return { runId, ...(await this.client.withAbortSignal(stop.signal, () => this.deputy.result(runId))) };
    } catch (err) {
      if (!stop.signal.aborted) throw err;
      const later = await this.describe(runId);
      return { runId, status: later.status, openQuestions: later.openQuestions };
    } finally {
      clearTimeout(timer);
      gone?.removeEventListener('abort', leave);
    }
  }

  /** Status and the tree's open questions of a run that may still be going. */
  async describe(runId: string) {
    const described = await this.client.workflow.getHandle(runId).describe();
    const running = described.status.name === 'RUNNING';
    // A live run's status is its worker's (the `state` query); visibility shows only the waits a listing needs.
    const live = running ? await this.deputy.getState(runId).catch(() => null) : null;
    const status = live?.status ?? (described.searchAttributes.DeputyStatus?.[0] as string | undefined) ?? 'starting';
    const questions = running ? await this.deputy.openQuestions(runId) : [];
    const approvals = running ? await this.deputy.approvals(runId) : [];
    return {
      running,
      status,
      openQuestions: questions.map((q) => ({ questionId: q.questionId, child: q.taskName, question: q.question })),
      ...(approvals.length > 0 && { openApprovals: approvals }),
    };
  }
}

const digest = (text: string) => createHash('sha256').update(text).digest();
