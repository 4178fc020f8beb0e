/**
 * Payload bounds (R1.8) as arithmetic: UTF-8 sizes counted without encoding, cuts that stay within their budget and
 * never split a character, the marker a cut ends with, and the JSON fit check the loop runs every turn.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  cutText,
  formatBytes,
  jsonBytes,
  jsonFits,
  truncationMarker,
  utf8Bytes,
  wasCut,
} from '../src/rules/payloads.js';

/** Any UTF-16 text: lone surrogates and pairs included. */
const anyText = fc.string({ unit: 'binary', maxLength: 400 });
const mixed = fc
  .array(fc.constantFrom('a', 'é', '€', '😀', '\ud83d', '\ude00', '\n'), { maxLength: 300 })
  .map((a) => a.join(''));

describe('R1.8 payload arithmetic', () => {
  it('R1.8 property: utf8Bytes is the size Node encodes, lone surrogates counted as the replacement character', () => {
    fc.assert(fc.property(fc.oneof(anyText, mixed), (text) => utf8Bytes(text) === Buffer.byteLength(text, 'utf8')));
    expect([
      utf8Bytes('a'),
      utf8Bytes('\u007f'),
      utf8Bytes('\u0080'),
      utf8Bytes('\u07ff'),
      utf8Bytes('\u0800'),
    ]).toEqual([1, 1, 2, 2, 3]);
    expect([utf8Bytes('😀'), utf8Bytes('\ud83d'), utf8Bytes('\ud83da'), utf8Bytes('\ude00')]).toEqual([4, 3, 4, 3]);
  });

  it('R1.8 sizes read as people read them, at each boundary', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(1024)).toBe('1 KB');
    expect(formatBytes(1535)).toBe('1 KB');
    expect(formatBytes(1536)).toBe('2 KB');
    expect(formatBytes(1024 * 1024 - 1)).toBe('1024 KB');
    expect(formatBytes(1024 * 1024)).toBe('1.0 MB');
    expect(formatBytes(3.26 * 1024 * 1024)).toBe('3.3 MB');
    expect(truncationMarker(3 * 1024 * 1024, 256 * 1024)).toBe('[truncated: 3.0 MB → 256 KB]');
  });

  it('R1.8 property: a cut text fits its budget, keeps the longest beginning it can, never splits a pair, and says so', () => {
    fc.assert(
      fc.property(fc.oneof(anyText, mixed), fc.integer({ min: 40, max: 600 }), (text, maxBytes) => {
        const cut = cutText(text, maxBytes);
        if (utf8Bytes(text) <= maxBytes) return cut === text && !wasCut(cut);
        const marker = `\n${truncationMarker(utf8Bytes(text), maxBytes)}`;
        if (!cut.endsWith(marker) || !wasCut(cut)) return false;
        const kept = cut.slice(0, cut.length - marker.length);
        const room = maxBytes - utf8Bytes(marker);
        const last = kept.charCodeAt(kept.length - 1);
        // The longest: one more code unit (two for a pair) would not fit, or would split a pair.
        const next = text.slice(0, kept.length + 1);
        const longest =
          utf8Bytes(next) > room ||
          (last >= 0xd800 && last <= 0xdbff) ||
          (next.charCodeAt(next.length - 1) >= 0xd800 && next.charCodeAt(next.length - 1) <= 0xdbff);
        return (
          text.startsWith(kept) &&
          utf8Bytes(cut) <= maxBytes &&
          !(last >= 0xd800 && last <= 0xdbff && text.charCodeAt(kept.length) >= 0xdc00) &&
          longest
        );
      }),
    );
  });

  it('R1.8 a cut at the exact size keeps the text; one byte less cuts it; a budget smaller than its marker gets the marker alone', () => {
    const text = 'x'.repeat(300);
    expect(cutText(text, 300)).toBe(text);
    const cut = cutText(text, 299);
    expect(cut).toBe(`${'x'.repeat(299 - 29)}\n[truncated: 300 B → 299 B]`);
    expect(utf8Bytes(cut)).toBe(299);
    expect(cutText('é'.repeat(100), 100)).toMatch(/^é+\n\[truncated: 200 B → 100 B\]$/);
    expect(cutText('x'.repeat(100), 25)).toBe('\n[truncated: 100 B → 25 B]');
    expect(wasCut('plain [truncated: 1 KB → 2 B] text')).toBe(false);
    expect(wasCut('text\n[truncated: 1.5 MB → 256 KB]')).toBe(true);
  });

  it('R1.8 property: a value fits exactly when its JSON does; its size is the size of its JSON', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.integer({ min: 0, max: 400 }), (value, maxBytes) => {
        const size = Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
        return jsonBytes(value) === size && jsonFits(value, maxBytes) === size <= maxBytes;
      }),
    );
    expect(jsonBytes(undefined)).toBe(0);
    expect(jsonFits(undefined, 0)).toBe(true);
    expect(jsonFits('é'.repeat(10), 22)).toBe(true);
    expect(jsonFits('é'.repeat(10), 21)).toBe(false);
  });
});
