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
  const checker = new Checker(schema);
  try {
    checker.visit(schema, value, []);
  } catch (err) {
    if (err instanceof Unsure) return { kind: 'unsure' };
    throw err;
  }
  return checker.issues.length === 0 ? { kind: 'valid' } : { kind: 'invalid', issues: checker.issues };
}

type Path = (string | number)[];
type SchemaNode = { readonly [keyword: string]: unknown };

/** One check: the issues found so far, and the patterns compiled on the way. */
class Checker {
  readonly issues: string[] = [];
  readonly patterns = new Map<string, RegExp>();

  constructor(private readonly schema: JsonSchema) {}

  visit(node: JsonSchema, v: unknown, path: Path): void {
    if (node === true) return;
    if (node === false) {
      this.issues.push(`${pathText(path)}: not allowed`);
      return;
    }
    for (const keyword of Object.keys(node)) {
      if (!ENFORCED.has(keyword) && !ANNOTATIONS.has(keyword) && keyword !== 'default') throw new Unsure();
    }
    if ('format' in node && !('pattern' in node) && node.format !== undefined) throw new Unsure();
    if (typeof node.$ref === 'string') {
      const ref = node.$ref;
      if (ref === '#') return this.visit(this.schema, v, path);
      const match = /^#\/\$defs\/([^/]+)$/.exec(ref);
      const target =
        match && typeof this.schema === 'object'
          ? (this.schema.$defs as Record<string, JsonSchema> | undefined)?.[match[1]!]
          : undefined;
      if (target === undefined) throw new Unsure();
      return this.visit(target, v, path);
    }
    const alternatives = (node.anyOf ?? node.oneOf) as JsonSchema[] | undefined;
    if (alternatives) {
      let unsure = false;
      for (const alternative of alternatives) {
        const verdict = this.attempt(alternative, v, path);
        if (verdict === 'valid') return;
        if (verdict === 'unsure') unsure = true;
      }
      if (unsure) throw new Unsure();
      this.issues.push(`${pathText(path)}: matches none of the allowed forms`);
      return;
    }
    const actual = typeOf(v);
    if (node.type !== undefined) {
      const types = Array.isArray(node.type) ? (node.type as string[]) : [node.type as string];
      const ok = types.some((t) => t === actual || (t === 'number' && actual === 'integer'));
      if (!ok || (typeof v === 'number' && !Number.isFinite(v))) {
        this.issues.push(`${pathText(path)}: expected ${types.join(' or ')}, received ${actual}`);
        return;
      }
    }
    if ('const' in node && v !== node.const)
      this.issues.push(`${pathText(path)}: expected ${JSON.stringify(node.const)}`);
    if (Array.isArray(node.enum) && !node.enum.includes(v)) {
      this.issues.push(`${pathText(path)}: expected one of ${node.enum.map((e) => JSON.stringify(e)).join(', ')}`);
    }
    if (typeof v === 'string') this.checkString(node, v, path);
    if (typeof v === 'number') this.checkNumber(node, v, path);
    if (Array.isArray(v)) {
      if (typeof node.minItems === 'number' && v.length < node.minItems) {
        this.issues.push(`${pathText(path)}: too few items (at least ${node.minItems})`);
      }
      if (typeof node.maxItems === 'number' && v.length > node.maxItems) {
        this.issues.push(`${pathText(path)}: too many items (at most ${node.maxItems})`);
      }
      if (node.items !== undefined) v.forEach((item, i) => this.visit(node.items as JsonSchema, item, [...path, i]));
    } else if (actual === 'object') this.checkObject(node, v as Record<string, unknown>, path);
  }

  checkString(node: SchemaNode, v: string, path: Path): void {
    // zod counts UTF-16 code units, as `length` does.
    if (typeof node.minLength === 'number' && v.length < node.minLength) {
      this.issues.push(`${pathText(path)}: too short (at least ${node.minLength} characters)`);
    }
    if (typeof node.maxLength === 'number' && v.length > node.maxLength) {
      this.issues.push(`${pathText(path)}: too long (at most ${node.maxLength} characters)`);
    }
    if (typeof node.pattern === 'string') {
      let regex = this.patterns.get(node.pattern);
      if (!regex) this.patterns.set(node.pattern, (regex = new RegExp(node.pattern)));
      if (!regex.test(v)) this.issues.push(`${pathText(path)}: does not match ${node.pattern}`);
    }
  }

  checkNumber(node: SchemaNode, v: number, path: Path): void {
    const bound = (key: string, ok: (limit: number) => boolean, words: string) => {
      const limit = node[key];
      if (typeof limit === 'number' && !ok(limit)) this.issues.push(`${pathText(path)}: must be ${words} ${limit}`);
    };
    bound('minimum', (l) => v >= l, '>=');
    bound('maximum', (l) => v <= l, '<=');
    bound('exclusiveMinimum', (l) => v > l, '>');
    bound('exclusiveMaximum', (l) => v < l, '<');
  }

  checkObject(node: SchemaNode, v: Record<string, unknown>, path: Path): void {
    const properties = (node.properties ?? {}) as Record<string, JsonSchema>;
    const required = (node.required ?? []) as string[];
    // As zod reports them: the schema's fields in order, then the keys it does not know, named at the object.
    for (const [key, property] of Object.entries(properties)) {
      if (v[key] === undefined) {
        if (Object.hasOwn(v, key)) throw new Unsure();
        if (required.includes(key)) this.issues.push(`${pathText([...path, key])}: required`);
        // zod would fill a default in: the value it returns is not this one.
        else if (typeof property === 'object' && 'default' in property) throw new Unsure();
        continue;
      }
      this.visit(property, v[key], [...path, key]);
    }
    const unknown: string[] = [];
    for (const key of Object.keys(v)) {
      if (Object.hasOwn(properties, key)) continue;
      const extra = node.additionalProperties;
      // zod strips unknown keys of a non-strict object: the value it returns is not this one.
      if (extra === undefined || v[key] === undefined) throw new Unsure();
      if (extra === false) unknown.push(JSON.stringify(key));
      else {
        if (node.propertyNames !== undefined) this.visit(node.propertyNames as JsonSchema, key, [...path, key]);
        this.visit(extra as JsonSchema, v[key], [...path, key]);
      }
    }
    if (unknown.length > 0)
      this.issues.push(`${pathText(path)}: unrecognized key${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}`);
  }

  attempt(node: JsonSchema, v: unknown, path: Path): 'valid' | 'invalid' | 'unsure' {
    const before = this.issues.length;
    try {
      this.visit(node, v, path);
    } catch (err) {
      this.issues.length = before;
      if (err instanceof Unsure) return 'unsure';
      throw err;
    }
    const failed = this.issues.length > before;
    this.issues.length = before;
    return failed ? 'invalid' : 'valid';
  }
}
