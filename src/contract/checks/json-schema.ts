/**
 * Checking a value against a JSON Schema generated from the zod contract (`src/contract/json-schemas.ts`), for code
 * that must not carry zod: workflow code, where zod's size and start-up would be paid on every replay. The checks
 * are `@cfworker/json-schema`'s (no `eval`, no I/O, deterministic); what is ours is what zod does besides checking
 * (fill defaults in, drop the unknown keys of a non-strict object) and the words of each problem, as zod's are
 * read: one line per problem, naming the field. A schema checked at every start may come compiled ahead of time
 * (`src/contract/compiled-checks.js`), a faster first pass. `test/unit-contract-checks.test.ts` holds both to zod.
 */
import { dereference, validate, type Schema } from '@cfworker/json-schema';
import type { JsonSchema, SchemaMessages } from '../tools.js';
import { Wording, type Lookup, type Node } from './schema-wording.js';

export type { JsonSchema, SchemaMessages };

/** A value that passed its schema (as zod would return it), or one line per problem. */
export type SchemaCheck = { ok: true; value: unknown } | { ok: false; issues: string[] };

/** The draft a schema is written in. */
type Draft = '7' | '2020-12';

/** How a schema is read. */
export interface SchemaOptions {
  /** The contract's own words for some of its checks. */
  messages?: SchemaMessages;
  /** The draft it is written in. @default '2020-12' (the contract's) */
  draft?: Draft;
  /**
   * The keys of an object schema that states no `additionalProperties`: `strip` as zod does for the contract's
   * objects (its loose ones state `additionalProperties`), `keep` as JSON Schema reads one written by hand.
   * @default 'strip'
   */
  unknownKeys?: 'strip' | 'keep';
  /**
   * The same schema compiled ahead of time, checking and shaping in one pass (it fills defaults in and drops
   * unknown keys in the value it is given): a value it passes is the answer; one it refuses is checked again here,
   * for the words of each problem.
   */
  compiled?: (value: unknown) => boolean;
}
/**
 * A checker for one schema: compiled on first use, then reused. Its cache is in private fields, which stay writable
 * when the worker freezes a module it shares between workflows.
 */
export class SchemaChecker {
  #compiled?: { root: Schema | boolean; lookup: Lookup };

  private readonly draft: Draft;

  constructor(
    private readonly schema: JsonSchema,
    private readonly options: SchemaOptions = {},
  ) {
    this.draft = options.draft ?? '2020-12';
  }

  /** Checks `value`; on success the value zod would return (defaults filled in, unknown keys of loose objects gone). */
  check(value: unknown): SchemaCheck {
    // A signal or update sent without its argument carries nothing, which the validator does not take.
    if (value === undefined) return { ok: false, issues: ['(root): required, received nothing'] };
    try {
      return this.#check(value);
    } catch (err) {
      // Whatever the validator cannot take is refused, never thrown: a throw here would fail the workflow task.
      return { ok: false, issues: [`(root): could not be checked (${(err as Error).message})`] };
    }
  }

  /** For synchronous checks (an update's validator): throws naming each field unless `value` fits. */
  assert(value: unknown, what: string): void {
    const checked = this.check(value);
    if (!checked.ok) throw new Error(`invalid ${what}: ${checked.issues.join('; ')}`);
  }

  #check(value: unknown): SchemaCheck {
    // The compiled check changes what it checks, so it is given a copy (what comes in is JSON, as the payload
    // converter decoded it).
    const { compiled } = this.options;
    if (compiled) {
      const shaped = copy(value);
      if (compiled(shaped)) return { ok: true, value: shaped };
    }
    const { root, lookup } = this.#compile();
    if (validate(value, root, this.draft, lookup, true).valid) {
      const shaper = new Shaper(lookup, this.draft, this.options.unknownKeys ?? 'strip');
      return { ok: true, value: shaper.shape(root, value) };
    }
    const { errors } = validate(value, root, this.draft, lookup, false);
    return { ok: false, issues: new Wording(root, lookup, value, this.options.messages ?? {}).describe(errors) };
  }

  #compile(): { root: Schema | boolean; lookup: Lookup } {
    if (!this.#compiled) {
      // The schema constants may be frozen (shared between workflows), and dereferencing annotates what it reads.
      const root = JSON.parse(JSON.stringify(this.schema)) as Schema | boolean;
      this.#compiled = { root, lookup: dereference(root) };
    }
    return this.#compiled;
  }
}

/** Checks `value` against `schema` once (for schemas that arrive at run time, such as a brief's return shape). */
export function checkSchema(schema: JsonSchema, value: unknown, options?: SchemaOptions): SchemaCheck {
  return new SchemaChecker(schema, options).check(value);
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const copy = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

/** What zod returns for a value it accepted: a copy, defaults filled in, unknown keys dropped where zod drops them. */
class Shaper {
  constructor(
    private readonly lookup: Lookup,
    private readonly draft: Draft,
    private readonly unknownKeys: 'strip' | 'keep',
  ) {}

  shape(schema: Schema | boolean, value: unknown): unknown {
    if (typeof schema === 'boolean') return copy(value);
    const node = schema as Node;
    if (typeof node.$ref === 'string') return this.shape(this.resolve(node), value);
    const branches = (node.anyOf ?? node.oneOf) as (Schema | boolean)[] | undefined;
    if (branches) {
      const match = branches.find((branch) => validate(value, branch, this.draft, this.lookup, true).valid);
      return match === undefined ? copy(value) : this.shape(match, value);
    }
    if (Array.isArray(value)) {
      const items = node.items as Schema | boolean | undefined;
      return (value as unknown[]).map((item) => (items === undefined ? copy(item) : this.shape(items, item)));
    }
    if (!isObject(value)) return value;
    const properties = (node.properties ?? {}) as Record<string, Schema | boolean>;
    const extra = node.additionalProperties as Schema | boolean | undefined;
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) {
      if (Object.hasOwn(properties, key)) out[key] = this.shape(properties[key]!, inner);
      else if (extra !== undefined) out[key] = this.shape(extra, inner);
      // An object that states nothing of other keys: zod's (non-strict) drops them, JSON Schema keeps them.
      else if (this.unknownKeys === 'keep') out[key] = copy(inner);
    }
    for (const [key, property] of Object.entries(properties)) {
      if (out[key] === undefined && typeof property === 'object' && 'default' in property) {
        out[key] = copy(property.default as unknown);
      }
    }
    return out;
  }

  private resolve(node: Node): Schema | boolean {
    const target = node.__absolute_ref__ === undefined ? undefined : this.lookup[node.__absolute_ref__];
    if (target === undefined) throw new Error(`unresolved $ref ${String(node.$ref)}`);
    return target;
  }
}
