/**
 * Bounded payloads: every text Deputy writes to Temporal history has a size budget well under the server's
 * payload limit (2 MB by default). Texts past it are cut with a marker the model can read; inputs past it are
 * refused before they are sent. Pure functions: importable from workflow code.
 */
import type { PayloadLimits } from '../contract/composition.js';

export type { PayloadLimits };

/** The defaults: an eighth and a half of Temporal's default 2 MB payload limit. */
export const DEFAULT_PAYLOAD_LIMITS: PayloadLimits = Object.freeze({
  maxTextBytes: 256 * 1024,
  maxInputBytes: 1024 * 1024,
});

/** Longest error text carried into history: an endpoint's or a tool's error can be megabytes. */
export const MAX_ERROR_BYTES = 2000;

/** The UTF-8 size of `text` in bytes, without allocating an encoded copy (no `Buffer` in workflow code). */
export function utf8Bytes(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/** A size as people read it: `812 B`, `256 KB`, `3.1 MB` (powers of 1024). */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

/** The longest prefix of `text` whose UTF-8 size is at most `maxBytes`, never splitting a surrogate pair. */
export function prefixWithin(text: string, maxBytes: number): string {
  if (maxBytes <= 0) return '';
  // Each UTF-16 code unit is at most 3 bytes: a prefix of maxBytes / 3 units always fits; grow from there.
  let lo = Math.min(text.length, Math.floor(maxBytes / 3));
  let hi = Math.min(text.length, maxBytes);
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (utf8Bytes(text.slice(0, mid)) <= maxBytes) lo = mid;
    else hi = mid - 1;
  }
  const code = text.charCodeAt(lo - 1);
  return code >= 0xd800 && code <= 0xdbff ? text.slice(0, lo - 1) : text.slice(0, lo);
}

/** The marker a cut text ends with: `[truncated: 3.1 MB → 256 KB]`. */
export function truncationMarker(fromBytes: number, toBytes: number): string {
  return `[truncated: ${formatBytes(fromBytes)} → ${formatBytes(toBytes)}]`;
}

/**
 * `text` when it fits in `maxBytes`; else its beginning and a visible marker, the whole at most `maxBytes`.
 */
export function cutText(text: string, maxBytes: number): string {
  if (text.length <= maxBytes / 3) return text; // fast path: cannot exceed
  const size = utf8Bytes(text);
  if (size <= maxBytes) return text;
  const marker = `\n${truncationMarker(size, maxBytes)}`;
  return prefixWithin(text, maxBytes - utf8Bytes(marker)) + marker;
}

/** True when `text` was cut by `cutText`. */
export function wasCut(text: string): boolean {
  return /\[truncated: [\d.]+ [KM]?B → [\d.]+ [KM]?B\]$/.test(text);
}

/**
 * Whether a value as JSON fits `maxBytes`, counting bytes only when the characters alone cannot tell (each UTF-16
 * unit is at most 3 bytes): the per-turn check stays as cheap as the serialisation itself.
 */
export function jsonFits(value: unknown, maxBytes: number): boolean {
  const json = JSON.stringify(value) ?? '';
  return json.length * 3 <= maxBytes || (json.length <= maxBytes && utf8Bytes(json) <= maxBytes);
}

/** The UTF-8 size of a value as JSON, as it will be written to history. */
export function jsonBytes(value: unknown): number {
  return utf8Bytes(JSON.stringify(value) ?? '');
}
