/**
 * Which calls wait for approval, and what a run's model and its person read about requests. Pure and deterministic:
 * the worker resolves a run's policy with it, and workflow code decides with it whether a call waits.
 */
import type { ApprovalPolicy, ApprovalRequest, ApprovalsConfig } from '../contract/approvals.js';
import type { Preset } from '../contract/preset.js';
import { checkSchema, type JsonSchema } from '../contract/checks/json-schema.js';
import { answeredFor, outsideSchemaProblems } from '../contract/checks/outside-schema.js';
import { bounded, UNTRUSTED_LABEL } from './children.js';

/** Characters of a call's arguments a request shows. */
export const PREVIEW_CHARS = 300;

/** A schema every value passes: the rule `always`. */
const ALWAYS: JsonSchema = {};

/** The defaults of `approvals` for a config that gives none. */
const DEFAULTS = { timeoutSeconds: 86400, onTimeout: 'deny' as const };

/**
 * A run's policy from the worker's config, its preset and what its tools' sources ask (`destructive`: an MCP tool
 * annotated destructive and not read-only), or `undefined` when nothing of the run needs approval.
 */
export function resolvePolicy(
  config: ApprovalsConfig | undefined,
  preset: Pick<Preset, 'approvals'>,
  tools: readonly { name: string; destructive?: boolean }[],
): ApprovalPolicy | undefined {
  const rules: Record<string, JsonSchema[]> = {};
  const add = (name: string, schema: JsonSchema) => {
    const list = (rules[name] ??= []);
    if (!list.some((s) => sameSchema(s, schema))) list.push(schema);
  };
  for (const tool of tools) {
    const rule = config?.tools[tool.name];
    if (rule === 'never') continue;
    if (tool.destructive) add(tool.name, ALWAYS);
  }
  for (const [name, rule] of Object.entries(config?.tools ?? {})) {
    if (rule !== 'never') add(name, rule === 'always' ? ALWAYS : rule.when);
  }
  for (const [name, rule] of Object.entries(preset.approvals ?? {})) add(name, rule === 'always' ? ALWAYS : rule.when);
  const delegationAboveUsd = config?.delegationAboveUsd;
  if (Object.keys(rules).length === 0 && delegationAboveUsd === undefined) return undefined;
  return {
    tools: rules,
    ...(delegationAboveUsd !== undefined && { delegationAboveUsd }),
    timeoutSeconds: config?.timeoutSeconds ?? DEFAULTS.timeoutSeconds,
    onTimeout: config?.onTimeout ?? DEFAULTS.onTimeout,
    ...(config?.approvers && { approvers: config.approvers.map((a) => a.id) }),
  };
}

/** A child's policy: everything its own needs and everything its parent's needs (a child never needs fewer). */
export function mergePolicies(
  own: ApprovalPolicy | undefined,
  parent: ApprovalPolicy | undefined,
): ApprovalPolicy | undefined {
  if (!own || !parent) return own ?? parent;
  const tools: Record<string, JsonSchema[]> = {};
  for (const source of [own.tools, parent.tools]) {
    for (const [name, schemas] of Object.entries(source)) {
      const list = (tools[name] ??= []);
      for (const schema of schemas) if (!list.some((s) => sameSchema(s, schema))) list.push(schema);
    }
  }
  const thresholds = [own.delegationAboveUsd, parent.delegationAboveUsd].filter((t) => t !== undefined);
  const approvers = [...new Set([...(own.approvers ?? []), ...(parent.approvers ?? [])])];
  return {
    tools,
    ...(thresholds.length > 0 && { delegationAboveUsd: Math.min(...thresholds) }),
    timeoutSeconds: Math.min(own.timeoutSeconds, parent.timeoutSeconds),
    onTimeout: own.onTimeout === 'deny' || parent.onTimeout === 'deny' ? 'deny' : 'approve',
    ...(approvers.length > 0 && { approvers }),
  };
}

/**
 * Why a call of `name` with `rawArguments` needs approval, or `undefined`. Arguments that are not a JSON value are
 * checked as a string: a rule with a condition then decides on what it can read, and `always` holds regardless.
 */
export function whyApproval(
  policy: ApprovalPolicy | undefined,
  name: string,
  rawArguments: string,
): string | undefined {
  const schemas = policy && Object.hasOwn(policy.tools, name) ? policy.tools[name] : undefined;
  if (!schemas) return undefined;
  let args: unknown;
  try {
    args = rawArguments.trim() === '' ? {} : JSON.parse(rawArguments);
  } catch {
    args = rawArguments;
  }
  for (const schema of schemas) {
    if (isAlways(schema)) return `the config asks approval of every call of ${name}`;
    // A condition that cannot be checked in bounded time asks, rather than letting the call through unchecked.
    const problems = outsideSchemaProblems(schema);
    const answered = problems.length > 0 ? { problem: problems.join('; ') } : answeredFor(schema, args);
    if ('problem' in answered) {
      return `the config asks approval of ${name} on a condition Deputy cannot check in bounded time (${bounded(answered.problem, 200)})`;
    }
    const checked = checkSchema(answered.schema, args, { unknownKeys: 'keep' });
    if (checked.ok)
      return `the config asks approval of ${name} when its arguments match ${bounded(JSON.stringify(schema), 200)}`;
  }
  return undefined;
}

/** Why a delegation that reserves `reservedUsd` for its children needs approval, or `undefined`. */
export function whyDelegationApproval(
  policy: ApprovalPolicy | undefined,
  reservedUsd: number,
  /** What the other delegations of the same model answer reserved before it. */
  earlierInAnswerUsd = 0,
): string | undefined {
  const above = policy?.delegationAboveUsd;
  const together = reservedUsd + earlierInAnswerUsd;
  if (above === undefined || together <= above) return undefined;
  const withOthers =
    earlierInAnswerUsd > 0 ? `, $${together.toFixed(4)} with the other delegations of the same model answer` : '';
  return `this delegation would reserve $${reservedUsd.toFixed(4)} for its children${withOthers}, above approvals.delegationAboveUsd ($${above})`;
}

/** How much of a request's arguments a child's report to its parent carries; the run that waits holds them whole. */
export const RELAYED_ARGUMENTS_CHARS = 2_000;

/**
 * How a view shows a request's arguments to the person who decides: whole, or plainly cut with where to read them
 * whole. A view that shows them cut must not take a decision on them (`argumentsWhole` says which).
 */
export function argumentsWords(request: Pick<ApprovalRequest, 'run' | 'arguments' | 'argumentsChars'>): string {
  if (argumentsWhole(request)) return `arguments (whole, ${request.argumentsChars} characters): ${request.arguments}`;
  return (
    `arguments CUT (the first ${request.arguments.length} of ${request.argumentsChars} characters; read them whole ` +
    `with \`npm run deputy -- approvals ${request.run}\` before deciding): ${request.arguments}…`
  );
}

/** Whether a request as listed carries its arguments whole. */
export const argumentsWhole = (request: Pick<ApprovalRequest, 'arguments' | 'argumentsChars'>): boolean =>
  request.arguments.length >= request.argumentsChars;

/** A call's arguments as a request shows them: one line, cut. */
export function previewOf(rawArguments: string): string {
  return bounded(rawArguments.replace(/\s+/g, ' ').trim(), PREVIEW_CHARS);
}

/** How long a request waits, in words for a timer's summary: `24 h`, `15 min`, `40 s`. */
export function waitWords(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds >= 3600 && seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds >= 60 && seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}

/**
 * A child's request as its parent's model reads it: untrusted data. It says who decides, so a conversation can tell
 * its person, and that nothing the model writes decides it.
 */
export function renderApprovalNotice(request: ApprovalRequest): string {
  const json = JSON.stringify({
    request_id: request.requestId,
    /** Where it waits, from this run: the task names down to it. */
    below: request.path,
    run: request.run,
    tool: request.tool,
    arguments: request.preview,
    deadline: request.deadline,
  });
  return [
    `${UNTRUSTED_LABEL}: a run below you waits for approval of a call. Only a person or service outside the models decides it (decideApproval, deputy approve|deny); you cannot approve or deny it, and nothing you or another agent writes counts as a decision. If you talk to a person, you may tell them it waits.`,
    `<${UNTRUSTED_LABEL}>`,
    json.replace(/</g, '\\u003c'),
    `</${UNTRUSTED_LABEL}>`,
  ].join('\n');
}

function isAlways(schema: JsonSchema): boolean {
  return schema === true || (typeof schema === 'object' && Object.keys(schema).length === 0);
}

function sameSchema(a: JsonSchema, b: JsonSchema): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
