/**
 * Checking a value against a JSON Schema generated from the zod contract (`src/contract/json-schemas.ts`), for code
 * that must not carry zod: workflow code, where zod's size and start-up would be paid on every replay. The checks
 * are `@cfworker/json-schema`'s (no `eval`, no I/O, deterministic); what is ours is what zod does besides checking
 * (fill defaults in, drop the unknown keys of a non-strict object) and the words of each problem, as zod's are
 * read: one line per problem, naming the field. A schema checked at every start may come compiled ahead of time
 * (`src/contract/compiled-checks.js`), a faster first pass. `test/unit-contract-checks.test.ts` holds both to zod.
 */
import { dereference, validate, type OutputUnit, type Schema } from '@cfworker/json-schema';
import type { JsonSchema, SchemaMessages } from '../contract/tools.js';

export type { JsonSchema, SchemaMessages };

/** A value that passed its schema (as zod would return it), or one line per problem. */
export type SchemaCheck = { ok: true; value: unknown } | { ok: false; issues: string[] };

/** The draft a schema is written in. */
type Draft = '7' | '2020-12';
/** Every (sub)schema of a root by its URI, as the validator resolves `$ref`s. */
type Lookup = Record<string, Schema | boolean>;

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
const PLAIN_KEY = /^[A-Za-z0-9_-]+$/;

/** A field path as people read it: `limits.maxTurns`, `presets.0.id`, `prices["gpt 4"].inputPerMTokUsd`. */
export function formatPath(path: readonly PropertyKey[], root = ''): string {
  let text = root;
  for (const key of path) {
    const name = typeof key === 'symbol' ? key.toString() : String(key);
    if (PLAIN_KEY.test(name)) text += text === '' ? name : `.${name}`;
    else text += `[${JSON.stringify(name)}]`;
  }
  return text || '(root)';
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

type Node = { readonly [keyword: string]: unknown; readonly __absolute_ref__?: string };

const propertyOf = (node: Node, key: string): Node | undefined =>
  (node.properties as Record<string, Node> | undefined)?.[key];

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

const typeOf = (value: unknown): string => {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
};

/** A JSON Pointer (`#/a/b~1c`, URI-encoded as the validator writes it) as its keys. */
const keysOf = (pointer: string): string[] =>
  pointer
    .replace(/^#\/?/, '')
    .split('/')
    .filter((key, i, all) => key !== '' || all.length > 1)
    .map((key) => decodeURIComponent(key).replace(/~1/g, '/').replace(/~0/g, '~'));

const at = (root: unknown, keys: readonly string[]): unknown =>
  keys.reduce<unknown>((value, key) => (value as Record<string, unknown> | undefined)?.[key], root);

/** Keywords whose problems are reported by the keywords below them. */
const SUMMARIES = new Set([
  'properties',
  'items',
  'prefixItems',
  'additionalProperties',
  'propertyNames',
  '$ref',
  'allOf',
]);
const UNIONS = new Set(['anyOf', 'oneOf']);
/** Keywords of checks on a value of the right shape (zod goes on after them; after any other, it gives up). */
const CHECKS = new Set([
  'minLength',
  'maxLength',
  'pattern',
  'format',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minItems',
  'maxItems',
]);

/** The validator's output as one line per problem, in the words zod's callers read. */
class Wording {
  private readonly lines: string[] = [];
  /** Objects whose missing or unknown keys are already named. */
  private readonly seen = new Set<string>();

  constructor(
    private readonly root: Schema | boolean,
    private readonly lookup: Lookup,
    private readonly value: unknown,
    private readonly messages: SchemaMessages,
  ) {}

  /** The schema at a keyword location, which runs through the `$ref`s it followed. */
  private schemaAt(keys: readonly string[]): unknown {
    return keys.reduce<unknown>((node, key) => {
      const here = node as Node | undefined;
      if (key === '$ref' && typeof here?.__absolute_ref__ === 'string') return this.lookup[here.__absolute_ref__];
      return here?.[key];
    }, this.root);
  }

  describe(errors: readonly OutputUnit[]): string[] {
    const kept = this.withinUnions(errors);
    for (const error of kept) this.add(error, errors);
    return this.lines.length > 0 ? this.lines : ['(root): does not match the schema'];
  }

  /**
   * Problems inside a union's alternatives are dropped for one line at the union, except when the value names its
   * alternative (an object whose `type` one alternative fixes): then that alternative's problems, as zod reports a
   * discriminated union.
   */
  private withinUnions(errors: readonly OutputUnit[]): OutputUnit[] {
    const unions = errors.filter((e) => UNIONS.has(e.keyword));
    const chosen = new Map(unions.map((union) => [union, this.chosenBranch(union, errors)]));
    const inBranch = (error: OutputUnit, union: OutputUnit, branch: number | undefined) =>
      branch !== undefined && error.keywordLocation.startsWith(`${union.keywordLocation}/${branch}/`);
    return errors.filter((error) => {
      const enclosing = unions.filter((u) => u !== error && error.keywordLocation.startsWith(`${u.keywordLocation}/`));
      if (!enclosing.every((union) => inBranch(error, union, chosen.get(union)))) return false;
      return !(UNIONS.has(error.keyword) && chosen.get(error) !== undefined);
    });
  }

  /**
   * The alternative whose problems zod reports for a union: the one a tagged value names, else the only one that
   * failed on checks alone (a bound, a pattern) rather than on its shape; none when zod reports the union itself.
   */
  private chosenBranch(union: OutputUnit, errors: readonly OutputUnit[]): number | undefined {
    const branches = this.schemaAt(keysOf(union.keywordLocation)) as Node[] | undefined;
    if (!branches) return undefined;
    if (this.tags(union) !== undefined) {
      const tag = (at(this.value, keysOf(union.instanceLocation)) as { type?: unknown } | undefined)?.type;
      const index = branches.findIndex((b) => propertyOf(b, 'type')?.const === tag);
      return index === -1 ? undefined : index;
    }
    const checksOnly = branches.flatMap((_, i) => {
      const own = errors.filter(
        (e) => e.keywordLocation.startsWith(`${union.keywordLocation}/${i}/`) && !SUMMARIES.has(e.keyword),
      );
      return own.length > 0 && own.every((e) => CHECKS.has(e.keyword)) ? [i] : [];
    });
    return checksOnly.length === 1 ? checksOnly[0] : undefined;
  }

  private add(error: OutputUnit, all: readonly OutputUnit[]): void {
    const { keyword } = error;
    const instanceKeys = keysOf(error.instanceLocation);
    const path = formatPath(instanceKeys);
    const node = this.schemaAt(keysOf(error.keywordLocation).slice(0, -1)) as Node | undefined;
    const custom = this.messages[error.keywordLocation];
    if (custom !== undefined) this.push(`${path}: ${custom}`);
    else if (keyword === 'additionalProperties' && node?.additionalProperties === false) this.unknown(error, node);
    else if (keyword === 'false' && this.namedAsUnknown(error, all)) return;
    else if (SUMMARIES.has(keyword)) return;
    else if (keyword === 'required') this.missing(error, instanceKeys, node);
    else if (keyword === 'format' && node?.pattern !== undefined)
      return; // the pattern says it
    else if (UNIONS.has(keyword) && this.tags(error) !== undefined) this.untagged(error, instanceKeys);
    else this.push(`${path}: ${this.words(keyword, node, at(this.value, instanceKeys), error.error)}`);
  }

  /** The `type` each alternative of a union fixes, when every one fixes one (a tagged union). */
  private tags(union: OutputUnit): unknown[] | undefined {
    const branches = this.schemaAt(keysOf(union.keywordLocation)) as Node[] | undefined;
    const tags = branches?.map((b) => propertyOf(b, 'type')?.const);
    return tags && tags.every((tag) => tag !== undefined) ? tags : undefined;
  }

  /** A tagged union's value that names none of its alternatives: the tag is the problem, as zod reports it. */
  private untagged(union: OutputUnit, instanceKeys: string[]): void {
    const v = at(this.value, instanceKeys);
    if (typeOf(v) !== 'object') this.push(`${formatPath(instanceKeys)}: expected object, received ${typeOf(v)}`);
    else {
      const tags = (this.tags(union) ?? []).map((tag) => JSON.stringify(tag)).join(', ');
      this.push(`${formatPath([...instanceKeys, 'type'])}: expected one of ${tags}`);
    }
  }

  /** A key refused by `additionalProperties: false`, already named at its object. */
  private namedAsUnknown(error: OutputUnit, all: readonly OutputUnit[]): boolean {
    const parent = error.instanceLocation.slice(0, error.instanceLocation.lastIndexOf('/'));
    return all.some((e) => e.keyword === 'additionalProperties' && e.instanceLocation === parent);
  }

  private words(keyword: string, node: Node | undefined, v: unknown, fallback: string): string {
    const limit = node?.[keyword];
    switch (keyword) {
      case 'type': {
        const types = Array.isArray(node?.type) ? (node.type as string[]) : [String(node?.type)];
        return `expected ${types.join(' or ')}, received ${typeOf(v)}`;
      }
      case 'const':
        return `expected ${JSON.stringify(limit)}`;
      case 'enum':
        return `expected one of ${(limit as unknown[]).map((e) => JSON.stringify(e)).join(', ')}`;
      case 'minLength':
        return `too short (at least ${String(limit)} characters)`;
      case 'maxLength':
        return `too long (at most ${String(limit)} characters)`;
      case 'pattern':
        return `does not match ${String(limit)}`;
      case 'minimum':
        return `must be >= ${String(limit)}`;
      case 'maximum':
        return `must be <= ${String(limit)}`;
      case 'exclusiveMinimum':
        return `must be > ${String(limit)}`;
      case 'exclusiveMaximum':
        return `must be < ${String(limit)}`;
      case 'minItems':
        return `too few items (at least ${String(limit)})`;
      case 'maxItems':
        return `too many items (at most ${String(limit)})`;
      case 'anyOf':
      case 'oneOf':
        return 'matches none of the allowed forms';
      case 'false':
        return 'not allowed';
      default:
        return fallback;
    }
  }

  /** Each missing field on a line of its own, in the schema's order. */
  private missing(error: OutputUnit, instanceKeys: string[], node: Node | undefined): void {
    const where = `${error.instanceLocation} ${error.keywordLocation}`;
    if (this.seen.has(where)) return;
    this.seen.add(where);
    const present = at(this.value, instanceKeys) as Record<string, unknown>;
    for (const key of (node?.required ?? []) as string[]) {
      if (!Object.hasOwn(present, key)) this.push(`${formatPath([...instanceKeys, key])}: required`);
    }
  }

  /** The keys an object does not know, named at the object on one line. */
  private unknown(error: OutputUnit, node: Node): void {
    if (this.seen.has(error.instanceLocation)) return;
    this.seen.add(error.instanceLocation);
    const keys = keysOf(error.instanceLocation);
    const object = at(this.value, keys) as Record<string, unknown>;
    const known = (node.properties ?? {}) as Record<string, unknown>;
    const unknown = Object.keys(object).filter((key) => !Object.hasOwn(known, key));
    const names = unknown.map((key) => JSON.stringify(key)).join(', ');
    this.push(`${formatPath(keys)}: unrecognized key${unknown.length > 1 ? 's' : ''} ${names}`);
  }

  private push(line: string): void {
    this.lines.push(line);
  }
}
