/**
 * The words of a JSON Schema check's problems, as zod's are read: one line per problem, naming the field.
 */
import type { OutputUnit, Schema } from '@cfworker/json-schema';
import type { SchemaMessages } from '../tools.js';

/**
 * The keyword a check written in another form stands for (a schema from outside has its patterns answered ahead),
 * in the words its problem is reported in.
 */
export const STANDS_FOR = 'x-deputy-stands-for';

/** Every (sub)schema of a root by its URI, as the validator resolves `$ref`s. */
export type Lookup = Record<string, Schema | boolean>;

/** A schema node as the validator's dereferencing leaves it. */
export type Node = { readonly [keyword: string]: unknown; readonly __absolute_ref__?: string };

const propertyOf = (node: Node, key: string): Node | undefined =>
  (node.properties as Record<string, Node> | undefined)?.[key];

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
export class Wording {
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
    else if (keyword === 'not' && typeof node?.[STANDS_FOR] === 'string') this.push(`${path}: ${node[STANDS_FOR]}`);
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
