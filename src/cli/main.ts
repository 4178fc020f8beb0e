#!/usr/bin/env node
/**
 * `npm run deputy -- <command>`: look at runs and move sessions from the command line. `deputy help` lists the
 * commands (the table below), their options and the environment they read.
 */
import { DeputyError, UsageError } from '../contract/errors.js';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { basename, join } from 'node:path';
import { Client } from '@temporalio/client';
import { connectTemporal } from '../client/connect.js';
import { DeputyClient } from '../client/client.js';
import { loadConfig, readEnv, type DeputyEnv } from '../config/load.js';
import { type DeputyConfig } from '../config/schema.js';
import { configEntry } from '../config/schema.js';
import type { McpCaller } from './mcp-server.js';
import { describeTenantDelegation, temporalRunRecords, tenantDelegation } from '../config/tenant-evidence.js';
import { admitSession, sessionIds } from '../eval/admit.js';
import { Redactor, redactDeep } from '../eval/redact.js';
import { loadTree } from '../client/inspect.js';
import { renderTree } from '../client/tree.js';
import { describeWatchEvent, TreeView } from '../client/watch-view.js';
import { terminalSafe, terminalSafeJson } from '../rules/terminal.js';
import { deputyDataConverter } from '../codec/aes-gcm.js';
import { COMMANDS, help, parse, usageLine, type Parsed } from './usage.js';
import { labelledUsage } from '../rules/usage.js';
import { recordedState, unanswered, withinSeconds } from './recorded.js';
import { approvalsCommand } from './approvals.js';

async function main(argv: string[]): Promise<number> {
  const parsed = parse(argv);
  if (parsed === 'help') {
    if (!argv.some((a) => COMMANDS[a] && a !== 'help')) console.log(help());
    return 0;
  }
  const { command, args } = parsed;
  if (command === 'help') {
    console.log(help(args[0]));
    return 0;
  }
  const env = readEnv();
  if (command === 'eval') {
    if (args[0] !== 'admit') throw new UsageError(`eval takes admit <exported.json>; usage: ${usageLine('eval')}`);
    const admitted = await admitSession(readExport(args[1]!), basename(args[1]!));
    const target = join('scenarios', `${admitted.id}.yaml`);
    mkdirSync('scenarios', { recursive: true });
    writeFileSync(target, admitted.yaml);
    print(`wrote ${target}: review its redactions and write score.expect, then npm run eval -- ${target}`);
    return 0;
  }
  const connection = await connectTemporal(env.temporalAddress);
  try {
    // With DEPUTY_CODEC_KEYS set, encrypted runs read decoded.
    const dataConverter = deputyDataConverter();
    const client = new Client({
      connection,
      namespace: env.temporalNamespace,
      ...(dataConverter && { dataConverter }),
    });
    if (command === 'mcp') return await mcp(client, env, parsed.http);
    if (command === 'tenants') {
      // Capability evidence cites a failed run: Temporal's records say whether it is there, failed and the tenant's.
      const activations = await tenantDelegation(loadConfig(env), process.cwd(), temporalRunRecords(client));
      print(describeTenantDelegation(activations).join('\n'));
      return activations.every((a) => a.activated) ? 0 : 1;
    }
    const QUERY_SECONDS = 10;
    const deputy = new DeputyClient(client, { taskQueue: env.taskQueue });
    const [first, second] = args as [string, string];
    const started = (handle: { workflowId: string }) => print(`started ${handle.workflowId}`);
    switch (command) {
      case 'tree':
        print(renderTree(await loadTree(client, first)));
        break;
      case 'watch':
        return await watch(deputy, first, second);
      case 'run':
        return await start(deputy, first, parsed);
      case 'state': {
        const state = await withinSeconds(client, QUERY_SECONDS, () => deputy.getState(first)).catch(
          async (err: unknown) => {
            if (!unanswered(err)) throw err;
            console.error(
              `deputy: no worker answered for ${first} within ${QUERY_SECONDS} s; this is what Temporal recorded of it (start a worker on its task queue for the whole state)`,
            );
            return recordedState(client, first);
          },
        );
        output(terminalSafeJson(state), parsed.out);
        break;
      }
      case 'sessions':
        for (const s of await deputy.listSessions(first)) {
          print([s.sessionId, s.status, s.preset ?? '-', s.parentId ? `child of ${s.parentId}` : 'root'].join('\t'));
        }
        break;
      case 'export':
        {
          const exported = await withinSeconds(client, QUERY_SECONDS, () => deputy.exportSession(first)).catch(
            (err: unknown) => {
              if (!unanswered(err)) throw err;
              throw new DeputyError(
                `no worker answered for ${first} within ${QUERY_SECONDS} s: a session is read from a worker; start one on its task queue (npm run worker) and export again`,
              );
            },
          );
          if (parsed.redact) {
            // The run's own ids are no secret: kept, so an admitted scenario is named after its run.
            const redactor = await Redactor.keeping(sessionIds(exported));
            const redacted = await redactDeep(exported, redactor);
            output(terminalSafeJson(redacted), parsed.out);
            // The list goes to stderr, so what stdout holds still imports.
            for (const r of redactor.redactions)
              console.error(terminalSafe(`redacted ${r.kind} at ${r.where}: ${r.placeholder}`));
          } else output(terminalSafeJson(exported), parsed.out);
        }
        break;
      case 'import':
        started(await deputy.importSession(JSON.parse(readFileSync(first, 'utf8')), { task: second }));
        break;
      case 'fork':
        started(await deputy.fork(first, { task: second }));
        break;
      case 'followup':
        started(await deputy.followup(first, second));
        break;
      case 'approvals':
      case 'approve':
      case 'deny':
        print(await approvalsCommand(deputy, command, args, parsed));
        break;
    }
    return 0;
  } finally {
    await connection.close();
  }
}

/** `deputy run`: starts the run, prints its id, and follows it unless told to detach. */
async function start(deputy: DeputyClient, task: string, options: Parsed): Promise<number> {
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
  print(`started ${handle.workflowId}`);
  if (options.detach) {
    print(`follow it with: deputy watch ${handle.workflowId}`);
    return 0;
  }
  const code = await watch(deputy, handle.workflowId, undefined);
  const result = await deputy.result(handle.workflowId);
  const { own, tree, billed } = labelledUsage(result.usage);
  print(`\n${own}; ${tree} debited, ${billed}`);
  print(`${result.status}: ${result.output ?? result.error ?? ''}`);
  return code;
}

/** `text` on stdout, or into `file` whole: written beside it and renamed, so a failure leaves no partial file. */
function output(text: string, file: string | undefined): void {
  if (file === undefined) {
    console.log(text);
    return;
  }
  const partial = `${file}.partial-${process.pid}`;
  try {
    writeFileSync(partial, `${text}\n`);
    renameSync(partial, file);
  } finally {
    rmSync(partial, { force: true });
  }
  console.error(`deputy: wrote ${file}`);
}

/** An exported session read from `file`, or a line saying what is wrong with the file and how to get a good one. */
function readExport(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new DeputyError(`cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  const again = `export the run again with deputy export <workflowId> --out ${file}`;
  if (text.trim() === '') throw new DeputyError(`${file} is empty (an export that failed?): ${again}`);
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new DeputyError(`${file} is not JSON (${(err as Error).message}): ${again}`);
  }
}

/**
 * `deputy watch`: on a terminal the tree is redrawn in place as events arrive; otherwise (a pipe, a log) each event
 * is a line. Then the tree and a summary; the exit code says whether the root completed.
 */
async function watch(deputy: DeputyClient, rootId: string, since: string | undefined): Promise<number> {
  const view = new TreeView();
  const live = process.stdout.isTTY;
  let drawn = 0;
  let timer: NodeJS.Timeout | undefined;
  const redraw = () => {
    timer = undefined;
    const lines = view.lines();
    process.stdout.write(`${drawn > 0 ? `\x1b[${drawn}F\x1b[J` : ''}${lines.map(terminalSafe).join('\n')}\n`);
    drawn = lines.length;
  };
  let last = '';
  for await (const event of deputy.watch(rootId, { ...(since && { since }) })) {
    view.apply(event);
    last = event.cursor;
    if (live) timer ??= setTimeout(redraw, 100);
    // A log gets one line per event, not one per live-output poll; a terminal shows the answer as it is written.
    else if (event.type !== 'model/progress')
      print(`${event.at}  ${view.runs.get(event.run)!.name}: ${describeWatchEvent(event)}`);
  }
  clearTimeout(timer);
  if (live) redraw();
  else print(`\n${view.lines().join('\n')}`);
  print(`\n${view.summary()}`);
  if (last) print(`resume after the last event: deputy watch ${rootId} ${last}`);
  const root = view.root ? view.runs.get(view.root) : undefined;
  return root?.status === 'completed' ? 0 : 1;
}

/**
 * `deputy mcp`: serves until the caller closes stdio, or (`--http <port>`) until SIGINT/SIGTERM. Nothing but the
 * protocol goes to stdout. Refuses to start without its own token.
 */
async function mcp(client: Client, env: DeputyEnv, port: number | undefined): Promise<number> {
  const http = port !== undefined;
  // Read once: over HTTP a server is made per request.
  const config = loadConfig(env);
  const callers = mcpTokens(config, http);
  const maxWaits = Number(process.env.DEPUTY_MCP_MAX_WAITS ?? '64');
  const perCaller = Number(process.env.DEPUTY_MCP_MAX_WAITS_PER_CALLER ?? String(Math.max(1, Math.ceil(maxWaits / 4))));
  const wholeAbove0 = (name: string, value: number) =>
    Number.isSafeInteger(value) && value > 0
      ? []
      : [`${name} is ${JSON.stringify(process.env[name])}; set a whole number above 0`];
  const problems = [
    ...(typeof callers === 'string' ? [callers] : []),
    ...wholeAbove0('DEPUTY_MCP_MAX_WAITS', maxWaits),
    ...wholeAbove0('DEPUTY_MCP_MAX_WAITS_PER_CALLER', perCaller),
  ];
  if (problems.length > 0 || typeof callers === 'string') {
    for (const problem of problems) console.error(`deputy mcp: ${problem}`);
    return 2;
  }
  // Loaded here: the other commands (the worker above all) do not carry the MCP SDK.
  const { callerOf, deputyMcpServer, serveMcpHttp, serveMcpStdio, Waits } = await import('./mcp-server.js');
  const waits = new Waits(maxWaits, perCaller);
  const make = (caller: McpCaller) => deputyMcpServer({ client, taskQueue: env.taskQueue, config, caller, waits });
  if (!http) {
    const [only] = callers;
    const server = make(callerOf(only!.token, only!.tenant));
    const closed = new Promise<void>((resolve) => (server.server.onclose = resolve));
    await serveMcpStdio(server);
    await closed;
    return 0;
  }
  const server = await serveMcpHttp(make, { tokens: callers, port });
  const address = server.address() as AddressInfo;
  console.error(`deputy mcp: listening on http://${address.address}:${address.port}/mcp`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  server.close();
  return 0;
}

/**
 * The callers `deputy mcp` serves: `DEPUTY_MCP_TOKEN`, one caller of the config's default tenant, and (over HTTP)
 * `DEPUTY_MCP_TOKENS`, `tenant=token` entries separated by commas, each token a caller of its tenant. A string is
 * what is wrong.
 */
function mcpTokens(config: DeputyConfig, http: boolean): { token: string; tenant?: string }[] | string {
  const single = (process.env.DEPUTY_MCP_TOKEN ?? '').trim();
  const listed = (process.env.DEPUTY_MCP_TOKENS ?? '').trim();
  const short = (token: string) => token.length < 16;
  if (single === '' && (listed === '' || !http)) {
    return `DEPUTY_MCP_TOKEN is not set; set a random secret of 16 characters or more${http ? ' (or DEPUTY_MCP_TOKENS, tenant=token entries)' : ' (over stdio it is the one caller that started this process)'}`;
  }
  if (single !== '' && short(single)) {
    return 'DEPUTY_MCP_TOKEN is too short; set a random secret of 16 characters or more';
  }
  const callers: { token: string; tenant?: string }[] = single === '' ? [] : [{ token: single }];
  if (!http) return callers;
  for (const entry of listed === '' ? [] : listed.split(',')) {
    const at = entry.indexOf('=');
    const tenant = entry.slice(0, at).trim();
    const token = entry.slice(at + 1).trim();
    if (at <= 0 || short(token)) {
      return `DEPUTY_MCP_TOKENS: an entry is not tenant=token with a token of 16 characters or more; write them as "alice=<secret>,bob=<secret>"`;
    }
    if (config.tenants && configEntry(config.tenants, tenant) === undefined) {
      return `DEPUTY_MCP_TOKENS: tenant "${tenant}" is not in the config's tenants (${Object.keys(config.tenants).join(', ')}); add it there first`;
    }
    if (callers.some((caller) => caller.token === token)) {
      return `DEPUTY_MCP_TOKENS: two entries share a token; each caller needs its own`;
    }
    callers.push({ token, tenant });
  }
  return callers;
}

/** Prints a line whose text may come from runs: control characters are shown, never obeyed. */
function print(text: string): void {
  console.log(terminalSafe(text));
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof UsageError) {
      console.error(`deputy: ${err.message}`);
      process.exit(2);
    }
    // Deputy's own errors already say what went wrong and what to do; another's cause may say more.
    const cause =
      !(err instanceof DeputyError) && err instanceof Error && err.cause instanceof Error
        ? ` (${err.cause.message})`
        : '';
    console.error(`deputy: ${err instanceof Error ? err.message : String(err)}${cause}`);
    process.exit(1);
  },
);
