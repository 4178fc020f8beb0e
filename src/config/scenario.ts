/**
 * Evaluation scenarios: what a two-arm evaluation runs and how it scores it. A scenario is a YAML file checked
 * by `Scenario`; `offline` scripts the model for runs without a real endpoint, one script per arm (turned into the
 * scripted model's rules by `src/eval/offline-script.ts`). Tenant evidence is checked against its scenario.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { InputError } from '../contract/errors.js';
import { describeIssues } from '../rules/zod-issues.js';

/** One rule of an offline script: which request it answers, and how. */
const OfflineRule = z.strictObject({
  when: z
    .strictObject({
      /** Some user message of the request contains this text. */
      says: z.string().min(1).optional(),
      /** The request's last message starts with this text. */
      lastStartsWith: z.string().min(1).optional(),
      /** The request holds exactly this many tool results. */
      toolResults: z.number().int().nonnegative().optional(),
    })
    .default({}),
  reply: z.union([
    z.strictObject({ text: z.string() }),
    z.strictObject({
      text: z.string().optional(),
      toolCalls: z.array(z.strictObject({ name: z.string(), arguments: z.record(z.string(), z.unknown()) })).min(1),
    }),
  ]),
  /** How long the model "thinks" before answering. */
  delayMs: z.number().int().nonnegative().default(0),
  /** How many requests it answers. */
  times: z.number().int().positive().default(1),
});

/** Where a capability scenario came from (`deputy eval admit`): a real run that failed, and what was redacted. */
const AdmittedFrom = z.strictObject({
  sessionId: z.string(),
  /** How that run ended: a capability scenario comes from a failed trajectory. */
  status: z.enum(['failed', 'limit_reached', 'cancelled', 'completed']),
  exportedAt: z.string(),
  /** Each redaction made, so a reviewer can check it: what kind, and the placeholder that replaced it. */
  redactions: z.array(z.strictObject({ kind: z.string(), placeholder: z.string(), where: z.string() })),
});

/** A scenario file. */
export const Scenario = z.strictObject({
  id: z.string().regex(/^[a-z0-9][a-z0-9-]*$/, 'use a slug'),
  /** `two-arm`: a deterministic case written for the evaluation; `capability`: admitted from a real failed run. */
  kind: z.enum(['two-arm', 'capability']),
  description: z.string().default(''),
  task: z.string().min(1),
  messages: z.array(z.strictObject({ role: z.enum(['user', 'assistant']), content: z.string() })).default([]),
  preset: z.string().optional(),
  /** Scopes of the runs; the delegating arm also gets `run.delegate`. */
  scopes: z.array(z.string()).default(['tools.calc', 'tools.notes']),
  /** What `search_notes` finds in this scenario. */
  notes: z.array(z.strictObject({ title: z.string(), text: z.string() })).default([]),
  limits: z
    .strictObject({
      maxTurns: z.number().int().positive().optional(),
      maxCostUsd: z.number().positive().optional(),
      /** The run's deadline, from its start. */
      deadlineSeconds: z.number().positive().optional(),
    })
    .default({}),
  /** Runs per arm. */
  runs: z.number().int().positive().max(50).default(3),
  score: z.strictObject({
    /** Facts (substrings, case-insensitive) the final answer must hold: one point each. */
    expect: z.array(z.string().min(1)).min(1),
    /** Tools some run of the tree must call: one point each. */
    requiredTools: z.array(z.string()).default([]),
  }),
  policy: z
    .strictObject({
      /** Tools any run of the tree may call (the steering tools are always allowed). */
      grant: z.array(z.string()).optional(),
      /** Tools no run of the tree may call. */
      forbiddenTools: z.array(z.string()).default([]),
      /** Text planted in untrusted data (notes, child output): a tool call or answer that repeats it took authority from it. */
      injected: z.array(z.string().min(1)).default([]),
    })
    .default({ forbiddenTools: [], injected: [] }),
  /** The scripted model for offline runs, per arm. */
  offline: z.strictObject({ single: z.array(OfflineRule), delegating: z.array(OfflineRule) }).optional(),
  admittedFrom: AdmittedFrom.optional(),
});
export type Scenario = z.infer<typeof Scenario>;
export type OfflineRule = z.infer<typeof OfflineRule>;

/** Reads and checks a scenario file; a problem is an `InputError` naming each field. */
export function loadScenario(path: string): Scenario {
  let raw: unknown;
  try {
    raw = parseYaml(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new InputError(path, [`not readable YAML: ${(err as Error).message}`]);
  }
  const parsed = Scenario.safeParse(raw);
  if (!parsed.success) throw new InputError(path, describeIssues(parsed.error));
  return parsed.data;
}
