/**
 * Schemas that come from outside (a model's `return_shape`, an approval condition a caller's preset carries) checked
 * in bounded time, in workflow code too. The validator builds a backtracking `RegExp` for each `pattern` and
 * `patternProperties` key and compares every pair of items for `uniqueItems`: a pattern such as `^(a+)+$` against 30
 * `a`s and a `!` backtracks for seconds, long enough to fail the workflow task and take the worker process with it.
 * So before the validator sees such a schema:
 *
 * - the schema is held to caps (its size, its depth, how many subschemas apply to one value through `$ref`s and
 *   combinators), and a `$ref` that loops without going into the value is refused;
 * - every pattern is compiled by RE2 (`re2js`, linear-time matching), and one RE2 cannot read is refused naming
 *   the keyword;
 * - the costly keywords are answered once over the value, in linear time: each `pattern` becomes "not one of the
 *   value's strings that RE2 finds do not match", each `patternProperties` becomes `properties` for the value's
 *   keys that match, each `uniqueItems` becomes "not one of the value's arrays that repeat an item". The validator
 *   then only compares with `enum`s. `format` is read as an annotation, as JSON Schema 2020-12 reads it by default.
 *
 * Pure and deterministic.
 */
import { RE2JS } from 're2js';
import type { JsonSchema } from '../tools.js';
import { checkSchema, type SchemaCheck } from './json-schema.js';
import { STANDS_FOR } from './schema-wording.js';

/** The caps on a schema from outside. */
export const OUTSIDE_SCHEMA_CAPS = {
  /** Its JSON text, in UTF-16 code units. */
  chars: 32_768,
  /** How deeply its JSON nests. */
  depth: 32,
  /** How many subschemas may apply to one value, `$ref`s and combinators followed. */
  perValue: 1_000,
  /** One pattern's length. */
  patternChars: 1_000,
} as const;

type Node = Record<string, unknown>;

const isObject = (value: unknown): value is Node =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Keywords whose subschemas apply to the same value as their node (a loop through them never ends). */
const SAME_VALUE_ONE = ['not', 'if', 'then', 'else'] as const;
const SAME_VALUE_MANY = ['allOf', 'anyOf', 'oneOf'] as const;
const SAME_VALUE_MAP = ['dependentSchemas'] as const;
/** Keywords whose subschemas apply to a part of the value. */
const INNER_ONE = [
  'items',
  'additionalItems',
  'additionalProperties',
  'unevaluatedItems',
  'unevaluatedProperties',
  'contains',
  'propertyNames',
] as const;
const INNER_MANY = ['prefixItems', 'items'] as const;
const INNER_MAP = ['properties', 'patternProperties'] as const;
/** Keywords that hold subschemas only for `$ref`s to reach. */
const HOLDERS = ['$defs', 'definitions'] as const;

/** Every subschema of a node, with the keyword path to it and whether it applies to the node's own value. */
function* children(node: Node): Generator<{ keys: string[]; schema: unknown; sameValue: boolean }> {
  for (const key of SAME_VALUE_ONE) if (key in node) yield { keys: [key], schema: node[key], sameValue: true };
  for (const key of SAME_VALUE_MANY) {
    const list = node[key];
    if (Array.isArray(list))
      for (const [i, s] of list.entries()) yield { keys: [key, String(i)], schema: s, sameValue: true };
  }
  for (const key of SAME_VALUE_MAP) {
    const map = node[key];
    if (isObject(map)) for (const [k, s] of Object.entries(map)) yield { keys: [key, k], schema: s, sameValue: true };
  }
  for (const key of INNER_ONE) {
    if (key in node && !Array.isArray(node[key])) yield { keys: [key], schema: node[key], sameValue: false };
  }
  for (const key of INNER_MANY) {
    const list = node[key];
    if (Array.isArray(list))
      for (const [i, s] of list.entries()) yield { keys: [key, String(i)], schema: s, sameValue: false };
  }
  for (const key of [...INNER_MAP, ...HOLDERS]) {
    const map = node[key];
    if (isObject(map)) for (const [k, s] of Object.entries(map)) yield { keys: [key, k], schema: s, sameValue: false };
  }
}

const pointer = (keys: readonly string[]): string =>
  `#${keys.map((k) => `/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`).join('')}`;

/** A JSON Pointer segment as its key; one that is not valid percent-encoding names no key (`undefined`). */
const unescape = (key: string): string | undefined => {
  try {
    return decodeURIComponent(key).replace(/~1/g, '/').replace(/~0/g, '~');
  } catch {
    return undefined;
  }
};

/** A pattern compiled by RE2, or why it cannot be. */
function compile(pattern: string): RE2JS | string {
  if (pattern.length > OUTSIDE_SCHEMA_CAPS.patternChars) {
    return `is ${pattern.length} characters, past ${OUTSIDE_SCHEMA_CAPS.patternChars}`;
  }
  try {
    return RE2JS.compile(pattern);
  } catch (err) {
    return `is not a pattern Deputy can match in linear time (RE2 syntax: no lookaround, no backreferences): ${(err as Error).message}`;
  }
}

/** Nesting depth of a JSON value, counted up to `cap + 1`. */
function depthOf(value: unknown, cap: number, depth = 0): number {
  if (depth > cap || typeof value !== 'object' || value === null) return depth;
  let deepest = depth + 1;
  for (const inner of Object.values(value)) {
    deepest = Math.max(deepest, depthOf(inner, cap, depth + 1));
    if (deepest > cap) break;
  }
  return deepest;
}

/**
 * What makes a schema from outside uncheckable in bounded time, one line per problem naming the keyword; none for
 * a schema the bounded check takes.
 */
export function outsideSchemaProblems(schema: unknown): string[] {
  // Depth first: what follows walks the schema recursively.
  if (depthOf(schema, OUTSIDE_SCHEMA_CAPS.depth) > OUTSIDE_SCHEMA_CAPS.depth) {
    return [`the schema nests deeper than ${OUTSIDE_SCHEMA_CAPS.depth} levels`];
  }
  const text = JSON.stringify(schema) ?? '';
  if (text.length > OUTSIDE_SCHEMA_CAPS.chars) {
    return [`the schema is ${text.length} characters of JSON, past ${OUTSIDE_SCHEMA_CAPS.chars}`];
  }
  const problems: string[] = [];
  const nodes = new Map<string, unknown>();
  const walk = (node: unknown, keys: string[]) => {
    nodes.set(pointer(keys), node);
    if (!isObject(node)) return;
    if (typeof node.pattern === 'string') {
      const why = compile(node.pattern);
      if (typeof why === 'string')
        problems.push(`${pointer([...keys, 'pattern'])}: ${JSON.stringify(node.pattern)} ${why}`);
    }
    if (isObject(node.patternProperties)) {
      for (const key of Object.keys(node.patternProperties)) {
        const why = compile(key);
        if (typeof why === 'string')
          problems.push(`${pointer([...keys, 'patternProperties'])}: ${JSON.stringify(key)} ${why}`);
      }
    }
    if (typeof node.$ref === 'string' && !node.$ref.startsWith('#')) {
      problems.push(
        `${pointer([...keys, '$ref'])}: only references inside the schema (#…) are followed, not ${JSON.stringify(node.$ref)}`,
      );
    }
    for (const child of children(node)) walk(child.schema, [...keys, ...child.keys]);
  };
  walk(schema, []);
  if (problems.length > 0) return problems;
  // How many subschemas apply to one value: a node, what applies beside it, and what its `$ref` leads to.
  const perValue = new Map<unknown, number>();
  const open = new Set<unknown>();
  const count = (node: unknown, at: string): number | string => {
    if (!isObject(node)) return 1;
    const known = perValue.get(node);
    if (known !== undefined) return known;
    if (open.has(node)) return `${at}: a $ref loops back to a schema without going into the value`;
    open.add(node);
    let total = 1;
    const same = [...children(node)].filter((c) => c.sameValue).map((c) => c.schema);
    if (typeof node.$ref === 'string') {
      const keys = node.$ref.replace(/^#\/?/, '').split('/').filter(Boolean).map(unescape);
      const target = keys.every((k) => k !== undefined) ? nodes.get(pointer(keys)) : undefined;
      if (target === undefined) {
        open.delete(node);
        return `${at}: $ref ${JSON.stringify(node.$ref)} points at no schema inside it`;
      }
      same.push(target);
    }
    for (const inner of same) {
      const n = count(inner, at);
      if (typeof n === 'string') return n;
      total += n;
      if (total > OUTSIDE_SCHEMA_CAPS.perValue) break;
    }
    open.delete(node);
    perValue.set(node, total);
    return total;
  };
  for (const [at, node] of nodes) {
    const n = count(node, at);
    if (typeof n === 'string') return [n];
    if (n > OUTSIDE_SCHEMA_CAPS.perValue) {
      return [
        `${at}: ${n} subschemas apply to one value there ($ref and combinators followed), past ${OUTSIDE_SCHEMA_CAPS.perValue}`,
      ];
    }
  }
  return [];
}

/** The strings and object keys of a value (each once, and how many places hold one), and its arrays. */
function partsOf(value: unknown): { strings: Set<string>; places: number; arrays: unknown[][] } {
  const strings = new Set<string>();
  const arrays: unknown[][] = [];
  const stack: unknown[] = [value];
  let places = 0;
  while (stack.length > 0) {
    const v = stack.pop();
    places += 1;
    if (typeof v === 'string') strings.add(v);
    else if (Array.isArray(v)) {
      const items = v as unknown[];
      arrays.push(items);
      for (const item of items) stack.push(item);
    } else if (isObject(v)) {
      for (const [key, inner] of Object.entries(v)) {
        strings.add(key);
        stack.push(inner);
      }
    }
  }
  return { strings, places, arrays };
}

/** A JSON value's text with object keys in order: equal texts for values JSON Schema deems equal. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (isObject(value)) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

const repeatsAnItem = (array: unknown[]): boolean => new Set(array.map(canonical)).size < array.length;

/**
 * How many comparisons the validator may make with the answers, at most: each place in the value compared with
 * every answer listed. Past it the pair is refused rather than checked.
 */
export const OUTSIDE_CHECK_WORK = 4_000_000;

/**
 * The schema with its costly keywords answered for `value` (see the module's comment), or why the pair is too large
 * to check in bounded time. Call only on a schema `outsideSchemaProblems` passed.
 */
export function answeredFor(schema: JsonSchema, value: unknown): { schema: JsonSchema } | { problem: string } {
  try {
    return answer(schema, value);
  } catch (err) {
    // A value nested past what a recursive walk takes (a child may answer 100,000 brackets): refused, never thrown.
    return { problem: `the value could not be checked (${(err as Error).message})` };
  }
}

function answer(schema: JsonSchema, value: unknown): { schema: JsonSchema } | { problem: string } {
  const { strings, places, arrays } = partsOf(value);
  let listed = 0;
  let repeating: unknown[][] | undefined;
  // Each pattern compiled once per check (the schema passed `outsideSchemaProblems`, so each compiles).
  const compiled = new Map<string, RE2JS>();
  const matching = (pattern: string) => {
    let re = compiled.get(pattern);
    if (re === undefined) compiled.set(pattern, (re = compile(pattern) as RE2JS));
    return [...strings].filter((s) => re.matcher(s).find());
  };
  const rewrite = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(rewrite);
    if (!isObject(node)) return node;
    const out: Node = {};
    for (const [key, inner] of Object.entries(node)) {
      // Keys that hold values rather than subschemas are kept as they are.
      out[key] = key === 'enum' || key === 'const' || key === 'default' || key === 'examples' ? inner : rewrite(inner);
    }
    const checks: Node[] = [];
    if (typeof node.pattern === 'string') {
      const matched = new Set(matching(node.pattern));
      const failing = [...strings].filter((s) => !matched.has(s));
      listed += failing.length;
      checks.push({ [STANDS_FOR]: `does not match ${node.pattern}`, not: { enum: failing } });
      delete out.pattern;
    }
    if (isObject(node.patternProperties)) {
      const properties: Node = { ...(out.properties as Node | undefined) };
      for (const [pattern, inner] of Object.entries(out.patternProperties as Node)) {
        for (const key of matching(pattern)) {
          listed += 1;
          properties[key] = Object.hasOwn(properties, key) ? { allOf: [properties[key], inner] } : inner;
        }
      }
      out.properties = properties;
      delete out.patternProperties;
    }
    if (node.uniqueItems === true) {
      repeating ??= arrays.filter(repeatsAnItem);
      listed += repeating.length;
      checks.push({ [STANDS_FOR]: 'has an item more than once', not: { enum: repeating } });
      delete out.uniqueItems;
    }
    delete out.format;
    if (checks.length > 0) out.allOf = [...((out.allOf as unknown[] | undefined) ?? []), ...checks];
    return out;
  };
  const answered = rewrite(schema) as JsonSchema;
  if (places * listed > OUTSIDE_CHECK_WORK) {
    return {
      problem: `the value (${places} places) is too large to check against this schema's patterns in bounded time (${listed} answers to compare with; at most ${OUTSIDE_CHECK_WORK} comparisons)`,
    };
  }
  return { schema: answered };
}

/** Checks `value` against a schema from outside, in bounded time: one line per problem, as `checkSchema` gives. */
export function checkOutsideSchema(schema: JsonSchema, value: unknown): SchemaCheck {
  const problems = outsideSchemaProblems(schema);
  if (problems.length > 0) return { ok: false, issues: problems.map((p) => `(schema) ${p}`) };
  const answered = answeredFor(schema, value);
  if ('problem' in answered) return { ok: false, issues: [`(root): ${answered.problem}`] };
  return checkSchema(answered.schema, value, { unknownKeys: 'keep' });
}
