#!/usr/bin/env node
/**
 * `npm run deputy -- <command>`: look at runs and move sessions from the command line. `deputy help` lists the
 * commands (the table below), their options and the environment they read.
 */
import { DeputyError, UsageError } from '../contract/errors.js';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { basename, join } from 'node:path';
import { Client, WorkflowNotFoundError } from '@temporalio/client';
import { connectTemporal } from '../client/connect.js';
import { DeputyClient } from '../client/client.js';
import { loadConfig, readEnv, type DeputyEnv } from '../config/load.js';
import { type DeputyConfig } from '../config/schema.js';
import { configEntry } from '../config/schema.js';
import type { McpCaller } from './mcp-server.js';
import { describeTenantDelegation, temporalRunRecords, tenantDelegation } from '../config/tenant-evidence.js';
import { admitSession } from '../eval/admit.js';
import { deputyDataConverter } from '../codec/aes-gcm.js';
import { COMMANDS, help, parse, usageLine } from './usage.js';
import { decideCommand } from './approvals.js';
import { cancel, start, started, watch } from './follow.js';
import { print } from './output.js';
import { readingCommand } from './reading.js';
import { replay, versions } from './deploys.js';
import { encryptedWords } from '../client/recorded.js';

async function main(argv: string[]): Promise<number> {
  const parsed = parse(argv);
  if (parsed === 'help') {
    if (!argv.some((a) => COMMANDS[a] && a !== 'help')) console.log(help());
    return 0;
  }
  const { command, args } = parsed;
  if (command === 'help') {
    if (args[0] !== undefined && !COMMANDS[args[0]])
      throw new UsageError(`no command "${args[0]}" to help with; deputy help lists the commands`);
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
  // Exported histories need no server: a host's CI replays them offline.
  if (command === 'replay' && parsed.from) return await replay(undefined, args[0], parsed);
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
      print(parsed.json ? JSON.stringify(activations, null, 2) : describeTenantDelegation(activations).join('\n'));
      return activations.every((a) => a.activated) ? 0 : 1;
    }
    const deputy = new DeputyClient(client, { taskQueue: env.taskQueue });
    const [first, second] = args as [string, string];
    switch (command) {
      case 'watch':
        return await watch(deputy, first, second, parsed.json);
      case 'run':
        return await start(deputy, first, parsed);
      case 'cancel':
        return await cancel(deputy, first);
      case 'versions':
        return await versions(client, first, parsed);
      case 'replay':
        return await replay(client, first, parsed);
      case 'import':
        print(started((await deputy.importSession(readExport(first), { task: second })).workflowId));
        break;
      case 'fork':
        print(started((await deputy.fork(first, { task: second })).workflowId));
        break;
      case 'followup':
        print(started((await deputy.followup(first, second)).workflowId));
        break;
      case 'approve':
      case 'deny':
        print(await decideCommand(deputy, command, args, parsed));
        break;
      default:
        return await readingCommand(client, deputy, parsed);
    }
    return 0;
  } finally {
    await connection.close();
  }
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

main(process.argv.slice(2)).then(
  // Exits once what it printed is out: a pipe takes a long report in parts, and exiting at once would cut it.
  (code) => process.stdout.write('', () => process.exit(code)),
  (err: unknown) => {
    if (err instanceof UsageError) {
      console.error(`deputy: ${err.message}`);
      process.exit(2);
    }
    const said = plainWords(err);
    if (said !== undefined) {
      console.error(`deputy: ${said}`);
      process.exit(1);
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

/** What a person should read for an error Temporal reports in its own words, or `undefined` to print it as it is. */
function plainWords(err: unknown): string | undefined {
  if (err instanceof WorkflowNotFoundError) {
    const env = readEnv();
    return `no run "${err.workflowId}" in namespace "${env.temporalNamespace}" at ${env.temporalAddress}: check the id (deputy sessions lists the runs there) or TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE`;
  }
  const message = err instanceof Error ? err.message : String(err);
  if (/Unknown encoding: binary\/encrypted|Unknown encryption key id/.test(message)) return encryptedWords();
  return undefined;
}
