/**
 * How `deputy` is called: its commands, their options and the environment it reads, as `deputy help` shows them,
 * and the parsing of a command line against them (Node's `util.parseArgs`).
 */
import { UsageError } from '../contract/errors.js';
import { parseArgs } from 'node:util';

/** What `approve` and `deny` take. */
const DECISION_OPTIONS = [
  '--reason <text>      why: the model reads it (with a denial)',
  "--approver <id>      who decides: one of the config's approvals.approvers",
  "--key-env <NAME>     the approver's key, read from this environment variable: the proof is made here, the key never sent",
];

/** Each command: its arguments, what it does, and the options it takes. */
export const COMMANDS: Record<string, { args: string; does: string; min: number; max: number; options?: string[] }> = {
  run: {
    args: '<task>',
    does: 'starts a run with <task>, prints its id, then follows it like watch',
    min: 1,
    max: 1,
    options: [
      "--preset <id>       a preset from the config (default: the config's defaultPreset)",
      "--model <name>      the model, over the preset's",
      '--max-turns <n>     at most n model turns',
      '--max-cost <usd>    at most this many dollars, the tree included',
      '--detach            print the id and return; follow it later with deputy watch <workflowId>',
      '--json              each event as a JSON line instead of the live tree',
    ],
  },
  tree: {
    args: '<workflowId>',
    does: "the run's delegation tree: status, tokens, cost and calls per run",
    min: 1,
    max: 1,
    options: ['--json   the runs as JSON, ids whole'],
  },
  watch: {
    args: '<workflowId> [cursor]',
    does: "the tree live: each run's status, tokens, cost and latest event, then a summary",
    min: 1,
    max: 2,
    options: ['--json   each event as a JSON line'],
  },
  cancel: {
    args: '<workflowId>',
    does: 'cancels the run and, with it, its children (a child cancelled alone leaves its parent running)',
    min: 1,
    max: 1,
  },
  state: {
    args: '<workflowId>',
    does: "the run's state as JSON; with no worker answering, what Temporal recorded of it",
    min: 1,
    max: 1,
    options: ['--out <file>   written whole or not at all, instead of stdout', '--json         (it is JSON already)'],
  },
  sessions: {
    args: '[query]',
    does: `sessions from visibility (roots and children), e.g. "DeputyRootId = 'run-1'"`,
    min: 0,
    max: 1,
    options: ['--json   the sessions as JSON'],
  },
  export: {
    args: '<workflowId>',
    does: "the run's session as versioned JSON on stdout",
    min: 1,
    max: 1,
    options: [
      '--redact       secrets and personal data replaced by placeholders (listed on stderr); ids kept',
      '--out <file>   written whole or not at all, instead of stdout',
      '--json         (it is JSON already)',
    ],
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
  approvals: {
    args: '<workflowId>',
    does: 'the approval requests open in the tree: run, request id, tool, arguments, deadline, path',
    min: 1,
    max: 1,
    options: ['--json   the requests as JSON'],
  },
  approve: {
    args: '<workflowId> <requestId>',
    does: 'approves a request: the call runs once, with the arguments it was asked with (the run or its root)',
    min: 2,
    max: 2,
    options: DECISION_OPTIONS,
  },
  deny: {
    args: '<workflowId> <requestId>',
    does: 'denies a request: the model reads who denied it and why',
    min: 2,
    max: 2,
    options: DECISION_OPTIONS,
  },
  tenants: {
    args: '',
    does: 'each configured tenant: activated or not, and why (its evidence)',
    min: 0,
    max: 0,
    options: ['--json   each tenant as JSON'],
  },
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
  versions: {
    args: '[deployment]',
    does: "the deployment's versions: current, ramping or draining, and the open runs and waiting conversations on each",
    min: 0,
    max: 1,
    options: [
      '--move   asks the conversations waiting on an older version to move to the current one now',
      '--json   the versions as JSON',
    ],
  },
  replay: {
    args: '[query]',
    does: "replays recent runs' histories against the workflow bundle about to be deployed; exit 1 if any would break",
    min: 0,
    max: 1,
    options: [
      '--bundle <file>     the workflow bundle to check (default: the Deputy installed here)',
      '--from <path>       exported histories (a .json file or a folder of them) instead of the namespace',
      '--since-hours <n>   runs started within the last n hours (default 24)',
      '--limit <n>         at most n histories (default 1000)',
      '--json              the report as JSON',
    ],
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

const EXIT_CODES = [
  '0     done (run, watch: the root completed)',
  '1     something failed, or the run did not complete (the last line says why)',
  '2     the command line is wrong (the message says what to do)',
  '130   interrupted (Ctrl-C): following stopped, the run goes on',
];

export const usageLine = (name: string) => `deputy ${name}${COMMANDS[name]!.args ? ` ${COMMANDS[name]!.args}` : ''}`;

/** `deputy help`: one line per command, then the environment it reads; or one command with its options. */
export function help(name?: string): string {
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
    'exit codes:',
    ...EXIT_CODES.map((e) => `  ${e}`),
    '',
    'deputy <command> --help shows one command with its options.',
  ].join('\n');
}

/** Every option any command takes, as `util.parseArgs` reads them; which command takes which is in `COMMANDS`. */
const OPTIONS = {
  help: { type: 'boolean', short: 'h' },
  redact: { type: 'boolean' },
  http: { type: 'string' },
  out: { type: 'string' },
  preset: { type: 'string' },
  model: { type: 'string' },
  'max-turns': { type: 'string' },
  'max-cost': { type: 'string' },
  detach: { type: 'boolean' },
  json: { type: 'boolean' },
  reason: { type: 'string' },
  approver: { type: 'string' },
  'key-env': { type: 'string' },
  move: { type: 'boolean' },
  bundle: { type: 'string' },
  from: { type: 'string' },
  'since-hours': { type: 'string' },
  limit: { type: 'string' },
} as const;

export interface Parsed {
  command: string;
  args: string[];
  redact: boolean;
  http: number | undefined;
  /** Where the output goes, written whole or not at all; stdout when absent. */
  out: string | undefined;
  preset: string | undefined;
  model: string | undefined;
  maxTurns: number | undefined;
  maxCostUsd: number | undefined;
  detach: boolean;
  /** JSON for scripts instead of text. */
  json: boolean;
  reason: string | undefined;
  approver: string | undefined;
  /** The environment variable that holds the approver's key. */
  keyEnv: string | undefined;
  move: boolean;
  bundle: string | undefined;
  from: string | undefined;
  sinceHours: number | undefined;
  limit: number | undefined;
}

export function parse(argv: string[]): Parsed | 'help' {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
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
    throw new UsageError(`${command} takes ${spec.args || 'no arguments'}; usage: ${usageLine(command)}`);
  }
  for (const [name, value] of Object.entries(parsed.values)) {
    if (value === undefined || name === 'help') continue;
    if (!spec.options?.some((o) => o.startsWith(`--${name} `) || o === `--${name}`))
      throw new UsageError(`${command} takes no --${name}; deputy ${command} --help lists what it takes`);
  }
  const { http, out, preset, model, detach, json, redact, reason, approver } = parsed.values;
  const keyEnv = parsed.values['key-env'];
  if (keyEnv !== undefined && !approver)
    throw new UsageError('--key-env makes a proof for an approver: give --approver too');
  if (http !== undefined && !/^\d{1,5}$/.test(http)) throw new UsageError(`--http takes a port number, not "${http}"`);
  if (out !== undefined && out.trim() === '') throw new UsageError('--out takes a file name');
  const maxTurns = parsed.values['max-turns'];
  if (maxTurns !== undefined && !/^[1-9]\d{0,5}$/.test(maxTurns))
    throw new UsageError(`--max-turns takes a whole number above 0, not "${maxTurns}"`);
  const maxCost = parsed.values['max-cost'];
  if (maxCost !== undefined && !(/^\d+(\.\d+)?$/.test(maxCost) && Number(maxCost) > 0))
    throw new UsageError(`--max-cost takes dollars above 0, like 0.50, not "${maxCost}"`);
  const whole = (name: 'since-hours' | 'limit') => {
    const value = parsed.values[name];
    if (value !== undefined && !/^[1-9]\d{0,6}$/.test(value))
      throw new UsageError(`--${name} takes a whole number above 0, not "${value}"`);
    return value === undefined ? undefined : Number(value);
  };
  return {
    command,
    args,
    move: parsed.values.move ?? false,
    bundle: parsed.values.bundle,
    from: parsed.values.from,
    sinceHours: whole('since-hours'),
    limit: whole('limit'),
    redact: redact ?? false,
    http: http === undefined ? undefined : Number(http),
    out,
    preset,
    model,
    maxTurns: maxTurns === undefined ? undefined : Number(maxTurns),
    maxCostUsd: maxCost === undefined ? undefined : Number(maxCost),
    detach: detach ?? false,
    json: json ?? false,
    reason,
    approver,
    keyEnv,
  };
}
