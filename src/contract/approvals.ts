/**
 * Approvals: which calls wait for a decision from outside the models before they run, the requests a run records
 * for them, and the decisions a person or a service sends. Zod is the source of truth; workflow code checks against
 * the JSON Schemas generated from it. Workflow-safe.
 */
import { z } from 'zod';

/**
 * The longest arguments a request records: a model answer's whole text budget (a call's arguments are part of it).
 */
export const MAX_REQUEST_ARGUMENTS_CHARS = 256 * 1024;

/** Longest request id: `a<segment>.<n>`. */
const REQUEST_ID = z.string().min(1).max(100);

/** A JSON Schema written by hand in the config, on a tool's arguments. */
const ArgumentsSchema = z.record(z.string(), z.unknown());

/**
 * What the config says of one tool: `always`, `{ when: <JSON Schema on its arguments> }`, or `never` (only to
 * overrule what an MCP server's annotations ask for: its destructive tools need approval unless the config says so).
 */
export const ApprovalRule = z.union([
  z.literal('always'),
  z.literal('never'),
  z.strictObject({ when: ArgumentsSchema }),
]);
export type ApprovalRule = z.infer<typeof ApprovalRule>;

/** What a preset adds: a preset may ask for more approvals, never for fewer. */
export const PresetApprovalRule = z.union([z.literal('always'), z.strictObject({ when: ArgumentsSchema })]);

/**
 * An approver's key: written in the config (at least 32 characters), or read by the worker when it checks a proof
 * from its environment (`{ env: NAME }`) or a file (`{ file: path }`, from the worker's working directory). Keys stay
 * on the workers: never in a run's input, its history or a log.
 */
export const ApproverKey = z.union([
  z.string().min(32, 'at least 32 characters'),
  z.strictObject({ env: z.string().min(1) }),
  z.strictObject({ file: z.string().min(1) }),
]);
export type ApproverKey = z.infer<typeof ApproverKey>;

/** An approver whose decisions carry proof: its id, and the key its proofs are made with. */
const Approver = z.strictObject({
  id: z.string().regex(/^[A-Za-z0-9._@-]{1,100}$/, 'letters, digits and . _ @ - only, at most 100'),
  key: ApproverKey,
});

/** The config's `approvals`. */
export const ApprovalsConfig = z
  .strictObject({
    /** Per tool name (built-in, defined or MCP): `always`, `{ when: <JSON Schema> }` or `never`. */
    tools: z.record(z.string(), ApprovalRule).default({}),
    /** A `delegate` call whose reservation for its children passes this many USD waits for approval. */
    delegationAboveUsd: z.number().nonnegative().optional(),
    /** How long a request waits for its decision, at most; never past the run's deadline. @default 86400 (24 h) */
    timeoutSeconds: z
      .number()
      .int()
      .positive()
      .max(30 * 86400)
      .default(86400),
    /** What a request that expires gets. @default 'deny' */
    onTimeout: z.enum(['deny', 'approve']).default('deny'),
    /** When set, every decision must carry `proof` made with the key of one of these approvers. */
    approvers: z.array(Approver).min(1).optional(),
  })
  .refine((config) => !(config.approvers && config.onTimeout === 'approve'), {
    message: 'onTimeout: "approve" cannot stand with approvers: an expired request has no proof; use "deny"',
    path: ['onTimeout'],
  });
export type ApprovalsConfig = z.infer<typeof ApprovalsConfig>;

/**
 * A run's approvals, as its composition carries them: per tool, the argument schemas any of which makes a call wait
 * (`{}` for always); resolved by a worker from its config, the run's preset and its tools' annotations, and merged
 * with its parent's so a child never needs fewer.
 */
export const ApprovalPolicy = z.strictObject({
  tools: z.record(z.string(), z.array(z.union([ArgumentsSchema, z.boolean()])).min(1)),
  delegationAboveUsd: z.number().nonnegative().optional(),
  timeoutSeconds: z.number().int().positive(),
  onTimeout: z.enum(['deny', 'approve']),
  /** The ids of the approvers whose proof a decision must carry (their keys stay on the workers). */
  approvers: z.array(z.string()).optional(),
});
export type ApprovalPolicy = z.infer<typeof ApprovalPolicy>;

/** The `decideApproval` update's argument. */
export const DecideApprovalInput = z.strictObject({
  requestId: REQUEST_ID,
  decision: z.enum(['approve', 'deny']),
  /** Why, in the decider's words: the model reads it with a denial. */
  reason: z.string().max(2000).optional(),
  /** Who decides: one of `approvals.approvers` when the config lists them. */
  approver: z.string().min(1).max(100).optional(),
  /**
   * HMAC-SHA256, hex, by the approver's key over `deputy-approval-v2`, the run's workflow id, the first run id of
   * its chain, the request id, the decision and the arguments digest, one per line (`approvalProof` computes it).
   */
  proof: z
    .string()
    .regex(/^[0-9a-f]{64}$/, '64 lowercase hex digits')
    .optional(),
});
export type DecideApprovalInput = z.infer<typeof DecideApprovalInput>;

/** The `decideApproval` update's answer. */
export interface DecideApprovalResult {
  requestId: string;
  decision: 'approve' | 'deny';
  /** Who decided: the approver's id, or `client` when the config lists no approvers. */
  by: string;
}

/** An open request as the `approvals` query lists it. */
export const ApprovalRequest = z.strictObject({
  requestId: REQUEST_ID,
  /** Workflow id of the run that waits: `decideApproval` goes there. */
  run: z.string().min(1).max(1000),
  /** Where it is in the tree, from the root: `<root>/<task>/<task>`. */
  path: z.string().max(2000),
  tool: z.string().max(200),
  /** SHA-256, hex, of the tool's name and arguments: a decision is for these arguments only. */
  digest: z.string().regex(/^[0-9a-f]{64}$/),
  /**
   * The first run of the waiting run's chain, as Temporal reports it (continue-as-new keeps it): a proof covers it,
   * so no proof approves anything in another run of the same workflow id.
   */
  firstRunId: z.string().min(1).max(100),
  /** The arguments on one line, cut to a few hundred characters: for a line in a stream, not for deciding. */
  preview: z.string().max(1000),
  /**
   * The arguments exactly as the model wrote them: whole in the run that waits; in a report to a parent, cut past
   * 2,000 characters (the client reads them whole from the run that waits).
   */
  arguments: z.string().max(MAX_REQUEST_ARGUMENTS_CHARS),
  /** How long the arguments are whole, in characters: more than `arguments` holds when they were cut. */
  argumentsChars: z.number().int().nonnegative(),
  /** Why it needs approval. */
  why: z.string().max(1000),
  requestedAt: z.string().max(40),
  /** When it takes `approvals.onTimeout`. */
  deadline: z.string().max(40),
});
export type ApprovalRequest = z.infer<typeof ApprovalRequest>;

/** The open requests of a child's subtree, as the child last reported them to its parent. */
export const ApprovalsBody = z.strictObject({
  /** Grows with each report, so a late one never overwrites a newer. */
  version: z.number().int().nonnegative(),
  requests: z.array(ApprovalRequest).max(100),
});
export type ApprovalsBody = z.infer<typeof ApprovalsBody>;

/** Input of the `requestApproval` activity. */
export interface RequestApprovalInput {
  grant: string;
  runId: string;
  requestId: string;
  /** The call as the model answer recorded it, with its seal: a worker asks approval only of a model's call. */
  call: { id: string; name: string; arguments: string; seal?: string | undefined };
  why: string;
  /** When it takes `approvals.onTimeout` (ISO 8601). */
  deadline: string;
}
/** Its result: what the request records of the call. */
export interface RequestApprovalResult {
  digest: string;
  preview: string;
}

/** Input of the `checkApproval` activity: a decision's proof, checked with the approvers' keys of the worker. */
export interface CheckApprovalInput {
  grant: string;
  runId: string;
  requestId: string;
  decision: 'approve' | 'deny';
  digest: string;
  approver?: string | undefined;
  proof?: string | undefined;
}
export type CheckApprovalResult = { ok: true } | { ok: false; reason: string };

/** What an approved call carries to `runTool`: the worker checks it against the call it runs. */
export interface ApprovedCall {
  requestId: string;
  digest: string;
  approver?: string;
  proof?: string;
}
