/**
 * Redaction of secrets and personal data in text that leaves a run (an admitted scenario, an exported session).
 * Secrets are found by secretlint's recommended rules (a maintained list: cloud, source-host, chat and payment
 * tokens, private keys, connection strings, basic auth …), then by the patterns below, which cover what that list
 * does not (a bare AWS access key id, JWTs, personal data) and, last, a generic rule for long high-entropy tokens.
 * Each redaction is listed with its kind and where it was found, for review.
 */
import { lintSource } from '@secretlint/core';
import { creator as recommended } from '@secretlint/secretlint-rule-preset-recommend';

/** What is redacted beside secretlint's findings, and how it is recognised. Order matters: specific before generic. */
const PATTERNS: readonly { kind: string; pattern: RegExp }[] = [
  { kind: 'private key', pattern: /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g },
  { kind: 'aws access key id', pattern: /\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA|ABIA|ACCA)[A-Z0-9]{16}\b/g },
  { kind: 'github token', pattern: /\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b/g },
  { kind: 'jwt', pattern: /\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{10,}/g },
  { kind: 'api key', pattern: /\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}/g },
  { kind: 'bearer token', pattern: /\bBearer\s+[A-Za-z0-9._~+/-]{16,}=*/g },
  { kind: 'url credentials', pattern: /(?<=\b[a-z][a-z0-9+.-]*:\/\/)[^\s/:@]+:[^\s/@]+(?=@)/gi },
  { kind: 'email address', pattern: /[\p{L}\p{N}._%+-]+@[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)*\.\p{L}{2,}/gu },
  { kind: 'card number', pattern: /\b\d(?:[ -]?\d){12,18}\b/g },
  { kind: 'phone number', pattern: /(?<![\w$])\+?\d[\d ().-]{7,}\d(?!\w)/g },
  { kind: 'IBAN', pattern: /\b[A-Z]{2}\d{2}[A-Z0-9]{11,30}\b/g },
  { kind: 'high-entropy token', pattern: /[A-Za-z0-9+/_=.-]{24,}/g },
];

/** Bits per character past which a long token reads as a secret, not a word or an id. */
const ENTROPY_BITS = 3.5;

function entropy(text: string): number {
  const counts = new Map<string, number>();
  for (const c of text) counts.set(c, (counts.get(c) ?? 0) + 1);
  let bits = 0;
  for (const n of counts.values()) bits -= (n / text.length) * Math.log2(n / text.length);
  return bits;
}

/** A long token counts as a secret only when it mixes letters and digits and is random enough. */
function looksRandom(token: string): boolean {
  return /[A-Za-z]/.test(token) && /\d/.test(token) && entropy(token) >= ENTROPY_BITS;
}

/** A match that is no secret after all: a long token that is not random, a date that reads like a phone number. */
function kept(kind: string, value: string): boolean {
  if (kind === 'high-entropy token') return !looksRandom(value);
  return kind === 'phone number' && /^\d{4}-\d{2}-\d{2}$/.test(value);
}

/** One redaction, for review. */
export interface Redaction {
  kind: string;
  placeholder: string;
  where: string;
}

/** Replaces secrets and personal data with numbered placeholders; the same value gets the same placeholder. */
export class Redactor {
  readonly redactions: Redaction[] = [];
  readonly #seen = new Map<string, string>();
  /** Values that are no secret wherever they appear (a session's own workflow ids), longest first. */
  readonly #keep: readonly string[];

  constructor(options: { keep?: readonly string[] } = {}) {
    this.#keep = [...(options.keep ?? [])].filter((v) => v.length > 0).sort((a, b) => b.length - a.length);
  }

  /**
   * A redactor that keeps the ids among `ids` that hold nothing but what Deputy generates (UUIDs) and text with
   * nothing to redact: `run-<uuid>/research-1` stays readable, an id a caller built from an address does not.
   */
  static async keeping(ids: Iterable<string>): Promise<Redactor> {
    const probe = new Redactor();
    const keep: string[] = [];
    for (const id of new Set(ids)) {
      const rest = id.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, 'uuid');
      if ((await probe.redact(rest, 'id')) === rest) keep.push(id);
    }
    return new Redactor({ keep });
  }

  /** `text` with what it recognises replaced, each replacement listed with `where`. */
  async redact(text: string, where: string): Promise<string> {
    // Kept values stand aside as marks no rule matches, and come back once the rules are done.
    const marks = this.#keep.map((_, i) => `\u0000${String.fromCharCode(0xe000 + i)}\u0000`);
    let out = this.#keep.reduce((t, keep, i) => t.replaceAll(keep, marks[i]!), text);
    const found: { start: number; end: number; kind: string }[] = [];
    const result = await lintSource({
      source: { filePath: `${where}.txt`, content: out, contentType: 'text' },
      options: { config: { rules: [{ id: '@secretlint/secretlint-rule-preset-recommend', rule: recommended }] } },
    });
    for (const message of result.messages) {
      const [start, end] = message.range;
      found.push({ start, end, kind: message.ruleId.replace(/^@secretlint\/secretlint-rule-/, '') });
    }
    out = replaceRanges(out, found, (value, kind) => this.#placeholder(value, kind, where));
    for (const { kind, pattern } of PATTERNS) {
      out = out.replace(pattern, (value) => (kept(kind, value) ? value : this.#placeholder(value, kind, where)));
    }
    return marks.reduce((t, mark, i) => t.replaceAll(mark, this.#keep[i]!), out);
  }

  #placeholder(value: string, kind: string, where: string): string {
    if (/^\[[a-z0-9-]+-\d+\]$/i.test(value)) return value; // already a placeholder
    let placeholder = this.#seen.get(value);
    if (!placeholder) {
      placeholder = `[${kind.replace(/[^a-z0-9]+/gi, '-')}-${this.#seen.size + 1}]`;
      this.#seen.set(value, placeholder);
    }
    this.redactions.push({ kind, placeholder, where });
    return placeholder;
  }
}

/** `text` with each range (non-overlapping after the first wins) replaced by what `replace` returns. */
function replaceRanges(
  text: string,
  ranges: readonly { start: number; end: number; kind: string }[],
  replace: (value: string, kind: string) => string,
): string {
  let out = '';
  let at = 0;
  for (const { start, end, kind } of [...ranges].sort((a, b) => a.start - b.start)) {
    if (start < at) continue;
    out += text.slice(at, start) + replace(text.slice(start, end), kind);
    at = end;
  }
  return out + text.slice(at);
}

/** Keys whose values are structure, not text anyone wrote: kept as they are. */
const STRUCTURAL = new Set(['type', 'at', 'format', 'version', 'exportedAt', 'role', 'status', 'isError', 'revision']);

/** Every string in `value` (an exported session, a scenario) redacted; `where` is the JSON path of each. */
export async function redactDeep<T>(value: T, redactor: Redactor, where = ''): Promise<T> {
  if (typeof value === 'string') return (await redactor.redact(value, where || '(root)')) as T;
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const [i, item] of value.entries()) out.push(await redactDeep(item, redactor, `${where}[${i}]`));
    return out as T;
  }
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      out[key] = STRUCTURAL.has(key) ? item : await redactDeep(item, redactor, where ? `${where}.${key}` : key);
    }
    return out as T;
  }
  return value;
}
