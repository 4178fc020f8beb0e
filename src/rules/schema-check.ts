/**
 * A fast, conservative check of a value against a JSON Schema generated from the zod contract
 * (`src/contract/json-schemas.ts`), for workflow code that must not pay for evaluating zod on every start.
 *
 * It answers `valid` only when zod would accept the value and return it unchanged (no default filled in, no unknown
 * key stripped); `invalid` with the field paths when the value breaks a rule the schema states; `unsure` for anything
 * it does not model (an unknown keyword, a missing field with a default). Callers treat `unsure` (and, where they
 * need zod's exact wording, `invalid`) by asking zod itself. Pure and deterministic.
 */

import type { JsonSchema } from '../contract/tools.js';

export type { JsonSchema };

/** The verdict on one value. */
export type SchemaVerdict = { kind: 'valid' } | { kind: 'invalid'; issues: string[] } | { kind: 'unsure' };

/** Keywords that carry no rule. */
const ANNOTATIONS = new Set(['$schema', 'description', 'title', 'examples', '$comment', 'id', '$id', '$defs']);
/** Keywords this checker enforces; any other keyword makes the verdict `unsure`. */
const ENFORCED = new Set([
  'type',
  'enum',
  'const',
  'properties',
  'required',
  'additionalProperties',
  'propertyNames',
  'items',
  'minItems',
  'maxItems',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'pattern',
  'anyOf',
  'oneOf',
  '$ref',
  'format',
]);

class Unsure extends Error {}

const PLAIN_KEY = /^[A-Za-z0-9_-]+$/;
const pathText = (path: readonly (string | number)[]) =>
  path.reduce<string>((text, key) => {
    const name = String(key);
    if (!PLAIN_KEY.test(name)) return `${text}[${JSON.stringify(name)}]`;
    return text === '' ? name : `${text}.${name}`;
  }, '') || '(root)';

const typeOf = (value: unknown): string => {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
};

/** Checks `value` against `schema` (the root of a generated schema, which `$ref`s resolve against). */
export function checkSchema(schema: JsonSchema, value: unknown): SchemaVerdict {
  const patterns = new Map<string, RegExp>();
  const issues: string[] = [];
  const visit = (node: JsonSchema, v: unknown, path: (string | number)[]): void => {
    if (node === true) return;
    if (node === false) {
      issues.push(`${pathText(path)}: not allowed`);
      return;
    }
    for (const keyword of Object.keys(node)) {
      if (!ENFORCED.has(keyword) && !ANNOTATIONS.has(keyword) && keyword !== 'default') throw new Unsure();
    }
    if ('format' in node && !('pattern' in node) && node.format !== undefined) throw new Unsure();
    if (typeof node.$ref === 'string') {
      const ref = node.$ref;
      if (ref === '#') return visit(schema, v, path);
      const match = /^#\/\$defs\/([^/]+)$/.exec(ref);
      const target =
        match && typeof schema === 'object'
          ? (schema.$defs as Record<string, JsonSchema> | undefined)?.[match[1]!]
          : undefined;
      if (target === undefined) throw new Unsure();
      return visit(target, v, path);
    }
    const alternatives = (node.anyOf ?? node.oneOf) as JsonSchema[] | undefined;
    if (alternatives) {
      let unsure = false;
      for (const alternative of alternatives) {
        const verdict = attempt(alternative, v, path);
        if (verdict === 'valid') return;
        if (verdict === 'unsure') unsure = true;
      }
      if (unsure) throw new Unsure();
      issues.push(`${pathText(path)}: matches none of the allowed forms`);
      return;
    }
    const actual = typeOf(v);
    if (node.type !== undefined) {
      const types = Array.isArray(node.type) ? (node.type as string[]) : [node.type as string];
      const ok = types.some((t) => t === actual || (t === 'number' && actual === 'integer'));
      if (!ok || (typeof v === 'number' && !Number.isFinite(v))) {
        issues.push(`${pathText(path)}: expected ${types.join(' or ')}, received ${actual}`);
        return;
      }
    }
    if ('const' in node && v !== node.const) issues.push(`${pathText(path)}: expected ${JSON.stringify(node.const)}`);
    if (Array.isArray(node.enum) && !node.enum.includes(v)) {
      issues.push(`${pathText(path)}: expected one of ${node.enum.map((e) => JSON.stringify(e)).join(', ')}`);
    }
    if (typeof v === 'string') checkString(node, v, path);
    if (typeof v === 'number') checkNumber(node, v, path);
    if (Array.isArray(v)) {
      if (typeof node.minItems === 'number' && v.length < node.minItems) {
        issues.push(`${pathText(path)}: too few items (at least ${node.minItems})`);
      }
      if (typeof node.maxItems === 'number' && v.length > node.maxItems) {
        issues.push(`${pathText(path)}: too many items (at most ${node.maxItems})`);
      }
      if (node.items !== undefined) v.forEach((item, i) => visit(node.items as JsonSchema, item, [...path, i]));
    } else if (actual === 'object') checkObject(node, v as Record<string, unknown>, path);
  };
  const checkString = (node: { readonly [k: string]: unknown }, v: string, path: (string | number)[]) => {
    // zod counts UTF-16 code units, as `length` does.
    if (typeof node.minLength === 'number' && v.length < node.minLength) {
      issues.push(`${pathText(path)}: too short (at least ${node.minLength} characters)`);
    }
    if (typeof node.maxLength === 'number' && v.length > node.maxLength) {
      issues.push(`${pathText(path)}: too long (at most ${node.maxLength} characters)`);
    }
    if (typeof node.pattern === 'string') {
      let regex = patterns.get(node.pattern);
      if (!regex) patterns.set(node.pattern, (regex = new RegExp(node.pattern)));
      if (!regex.test(v)) issues.push(`${pathText(path)}: does not match ${node.pattern}`);
    }
  };
  const checkNumber = (node: { readonly [k: string]: unknown }, v: number, path: (string | number)[]) => {
    const bound = (key: string, ok: (limit: number) => boolean, words: string) => {
      const limit = node[key];
      if (typeof limit === 'number' && !ok(limit)) issues.push(`${pathText(path)}: must be ${words} ${limit}`);
    };
    bound('minimum', (l) => v >= l, '>=');
    bound('maximum', (l) => v <= l, '<=');
    bound('exclusiveMinimum', (l) => v > l, '>');
    bound('exclusiveMaximum', (l) => v < l, '<');
  };
  const checkObject = (
    node: { readonly [k: string]: unknown },
    v: Record<string, unknown>,
    path: (string | number)[],
  ) => {
    const properties = (node.properties ?? {}) as Record<string, JsonSchema>;
    const required = (node.required ?? []) as string[];
    // As zod reports them: the schema's fields in order, then the keys it does not know, named at the object.
    for (const [key, property] of Object.entries(properties)) {
      if (v[key] === undefined) {
        if (Object.hasOwn(v, key)) throw new Unsure();
        if (required.includes(key)) issues.push(`${pathText([...path, key])}: required`);
        // zod would fill a default in: the value it returns is not this one.
        else if (typeof property === 'object' && 'default' in property) throw new Unsure();
        continue;
      }
      visit(property, v[key], [...path, key]);
    }
    const unknown: string[] = [];
    for (const key of Object.keys(v)) {
      if (Object.hasOwn(properties, key)) continue;
      const extra = node.additionalProperties;
      // zod strips unknown keys of a non-strict object: the value it returns is not this one.
      if (extra === undefined || v[key] === undefined) throw new Unsure();
      if (extra === false) unknown.push(JSON.stringify(key));
      else {
        if (node.propertyNames !== undefined) visit(node.propertyNames as JsonSchema, key, [...path, key]);
        visit(extra as JsonSchema, v[key], [...path, key]);
      }
    }
    if (unknown.length > 0)
      issues.push(`${pathText(path)}: unrecognized key${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}`);
  };
  const attempt = (node: JsonSchema, v: unknown, path: (string | number)[]): 'valid' | 'invalid' | 'unsure' => {
    const before = issues.length;
    try {
      visit(node, v, path);
    } catch (err) {
      issues.length = before;
      if (err instanceof Unsure) return 'unsure';
      throw err;
    }
    const failed = issues.length > before;
    issues.length = before;
    return failed ? 'invalid' : 'valid';
  };
  try {
    visit(schema, value, []);
  } catch (err) {
    if (err instanceof Unsure) return { kind: 'unsure' };
    throw err;
  }
  return issues.length === 0 ? { kind: 'valid' } : { kind: 'invalid', issues };
}
