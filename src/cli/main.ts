#!/usr/bin/env node
/**
 * `npm run deputy -- <command>`: look at runs and move sessions from the command line. `deputy help` lists the
 * commands (the table below), their options and the environment they read.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { AddressInfo } from 'node:net';
import { basename, join } from 'node:path';
import { Client } from '@temporalio/client';
import { connectTemporal } from '../client/connect.js';
import { DeputyError } from '../contract/errors.js';
import { DeputyClient } from '../client/client.js';
import { loadConfig, readEnv, type DeputyConfig, type DeputyEnv } from '../config/load.js';
import { configEntry } from '../config/schema.js';
import type { McpCaller } from './mcp-server.js';
import { describeTenantDelegation, tenantDelegation } from '../config/tenant-evidence.js';
import { admitSession } from '../eval/admit.js';
import { Redactor, redactDeep } from '../eval/redact.js';
import { loadTree } from '../client/inspect.js';
import { renderTree } from '../client/tree.js';
import { describeWatchEvent, TreeView } from '../client/watch-view.js';
import { terminalSafe, terminalSafeJson } from '../rules/terminal.js';
import { deputyDataConverter } from '../codec/aes-gcm.js';

/** Each command: its arguments, what it does, and the options it takes. */
const COMMANDS: Record<string, { args: string; does: string; min: number; max: number; options?: string[] }> = {
  tree: {
    args: '<workflowId>',
    does: "the run's delegation tree: status, tokens, cost and calls per run",
    min: 1,
    max: 1,
  },
  watch: {
    args: '<workflowId> [cursor]',
    does: "the tree live: each run's status, tokens, cost and latest event, then a summary",
    min: 1,
    max: 2,
  },
  state: { args: '<workflowId>', does: "the run's state query as JSON (needs a worker to answer)", min: 1, max: 1 },
  sessions: {
    args: '[query]',
    does: `sessions from visibility (roots and children), e.g. "DeputyRootId = 'run-1'"`,
    min: 0,
    max: 1,
  },
  export: {
    args: '<workflowId>',
    does: "the run's session as versioned JSON on stdout",
    min: 1,
    max: 1,
    options: ['--redact   secrets and personal data replaced by placeholders (listed on stderr)'],
  },
  import: {
    args: '<file> <task>',
    does: 'a new run that restores the session in <file> and goes on with <task>',
    min: 2,
    max: 2,
  },
  fork: {
    args: '<workflowId> <task>',
    does: 'a new run from a copy of the session, with exactly its composition',
    min: 2,
    max: 2,
  },
  followup: {
    args: '<workflowId> <task>',
    does: "a new run that goes on from a finished run's session",
    min: 2,
    max: 2,
  },
  tenants: { args: '', does: 'each configured tenant: activated or not, and why (its evidence)', min: 0, max: 0 },
  eval: {
    args: 'admit <exported.json>',
    does: 'a capability scenario from an exported failed session (npm run eval runs it)',
    min: 2,
    max: 2,
  },
  mcp: {
    args: '',
    does: 'Deputy as an MCP server over stdio (start it with npm run --silent, or the installed deputy command)',
    min: 0,
    max: 0,
    options: ['--http <port>   Streamable HTTP at http://127.0.0.1:<port>/mcp instead of stdio'],
  },
  help: { args: '[command]', does: 'this list, or one command with its options', min: 0, max: 1 },
};

const ENVIRONMENT = [
  'TEMPORAL_ADDRESS      the Temporal server (default localhost:7233)',
  'TEMPORAL_NAMESPACE    its namespace (default default)',
  'DEPUTY_TASK_QUEUE     where runs started here go (default deputy)',
  'DEPUTY_CONFIG         the config file (tenants, mcp)',
  'DEPUTY_CODEC_KEYS     keys to read encrypted runs',
  'DEPUTY_MCP_TOKEN      mcp: the token callers present (DEPUTY_MCP_TOKENS: tenant=token entries, over HTTP)',
];

const usageLine = (name: string) => `deputy ${name}${COMMANDS[name]!.args ? ` ${COMMANDS[name]!.args}` : ''}`;

/** `deputy help`: one line per command, then the environment it reads; or one command with its options. */
function help(name?: string): string {
  if (name && COMMANDS[name]) {
    const command = COMMANDS[name];
    return [
      `usage: ${usageLine(name)}`,
      '',
      `  ${command.does}`,
      ...(command.options ? ['', 'options:', ...command.options.map((o) => `  ${o}`)] : []),
      '',
      'environment:',
      ...ENVIRONMENT.map((e) => `  ${e}`),
    ].join('\n');
  }
  const width = Math.max(...Object.keys(COMMANDS).map((n) => usageLine(n).length));
  return [
    'usage: deputy <command> [arguments]   (from a checkout: npm run deputy -- <command>)',
    '',
    'commands:',
    ...Object.entries(COMMANDS).map(([n, c]) => `  ${usageLine(n).padEnd(width)}  ${c.does}`),
    '',
    'environment:',
    ...ENVIRONMENT.map((e) => `  ${e}`),
    '',
    'deputy <command> --help shows one command with its options.',
  ].join('\n');
}

/** A mistake in how the command was called: one line on stderr, exit status 2. */
class UsageError extends DeputyError {}

interface Parsed {
  command: string;
  args: string[];
  redact: boolean;
  http: string | undefined;
}

function parse(argv: string[]): Parsed | 'help' {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { help: { type: 'boolean', short: 'h' }, redact: { type: 'boolean' }, http: { type: 'string' } },
    });
  } catch (err) {
    throw new UsageError(`${(err as Error).message.split(/\.\s/)[0]}; deputy help lists the commands and options`);
  }
  const [command, ...args] = parsed.positionals;
  if (!command) {
    if (parsed.values.help) return 'help';
    throw new UsageError('no command given; deputy help lists them');
  }
  const spec = COMMANDS[command];
  if (!spec) throw new UsageError(`unknown command "${command}"; deputy help lists the commands`);
  if (parsed.values.help) {
    console.log(help(command));
    return 'help';
  }
  if (args.length < spec.min || args.length > spec.max) {
    throw new UsageError(`${command} takes ${spec.args || 'no arguments'}: ${usageLine(command)}`);
  }
  const takes = (option: string) => spec.options?.some((o) => o.startsWith(option)) ?? false;
  if (parsed.values.redact && !takes('--redact')) throw new UsageError(`${command} takes no --redact`);
  if (parsed.values.http !== undefined && !takes('--http')) throw new UsageError(`${command} takes no --http`);
  const http = parsed.values.http;
  if (http !== undefined && !/^\d{1,5}$/.test(http))
    throw new UsageError(`mcp --http takes a port number, not "${http}"`);
  return { command, args, redact: parsed.values.redact ?? false, http };
}

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
  if (command === 'tenants') {
    const activations = tenantDelegation(loadConfig(env), process.cwd());
    print(
      activations.length > 0
        ? describeTenantDelegation(activations).join('\n')
        : 'no tenants configured: the delegation flag alone decides',
    );
    return activations.every((a) => a.activated) ? 0 : 1;
  }
  if (command === 'eval') {
    if (args[0] !== 'admit') throw new UsageError(`eval takes admit <exported.json>: ${usageLine('eval')}`);
    const admitted = await admitSession(JSON.parse(readFileSync(args[1]!, 'utf8')), basename(args[1]!));
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
    const deputy = new DeputyClient(client, { taskQueue: env.taskQueue });
    const [first, second] = args as [string, string];
    const started = (handle: { workflowId: string }) => print(`started ${handle.workflowId}`);
    switch (command) {
      case 'tree':
        print(renderTree(await loadTree(client, first)));
        break;
      case 'watch':
        return await watch(deputy, first, second);
      case 'state':
        console.log(terminalSafeJson(await deputy.getState(first)));
        break;
      case 'sessions':
        for (const s of await deputy.listSessions(first)) {
          print([s.sessionId, s.status, s.preset ?? '-', s.parentId ? `child of ${s.parentId}` : 'root'].join('\t'));
        }
        break;
      case 'export':
        {
          const exported = await deputy.exportSession(first);
          if (parsed.redact) {
            const redactor = new Redactor();
            const redacted = await redactDeep(exported, redactor);
            console.log(terminalSafeJson(redacted));
            // The list goes to stderr, so what stdout holds still imports.
            for (const r of redactor.redactions)
              console.error(terminalSafe(`redacted ${r.kind} at ${r.where}: ${r.placeholder}`));
          } else console.log(terminalSafeJson(exported));
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
    }
    return 0;
  } finally {
    await connection.close();
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
async function mcp(client: Client, env: DeputyEnv, port: string | undefined): Promise<number> {
  const http = port !== undefined;
  // Read once: over HTTP a server is made per request.
  const config = loadConfig(env);
  const callers = mcpTokens(config, http);
  const maxWaits = Number(process.env.DEPUTY_MCP_MAX_WAITS ?? '64');
  const problems = [
    ...(typeof callers === 'string' ? [callers] : []),
    ...(Number.isSafeInteger(maxWaits) && maxWaits > 0
      ? []
      : [`DEPUTY_MCP_MAX_WAITS is ${JSON.stringify(process.env.DEPUTY_MCP_MAX_WAITS)}; set a whole number above 0`]),
  ];
  if (problems.length > 0 || typeof callers === 'string') {
    for (const problem of problems) console.error(`deputy mcp: ${problem}`);
    return 2;
  }
  // Loaded here: the other commands (the worker above all) do not carry the MCP SDK.
  const { callerOf, deputyMcpServer, serveMcpHttp, serveMcpStdio, Waits } = await import('./mcp-server.js');
  const waits = new Waits(maxWaits);
  const make = (caller: McpCaller) => deputyMcpServer({ client, taskQueue: env.taskQueue, config, caller, waits });
  if (!http) {
    const [only] = callers;
    const server = make(callerOf(only!.token, only!.tenant));
    const closed = new Promise<void>((resolve) => (server.server.onclose = resolve));
    await serveMcpStdio(server);
    await closed;
    return 0;
  }
  const server = await serveMcpHttp(make, { tokens: callers, port: Number(port) });
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
