/**
 * The payload codec on its own (R6.3): what it writes, what it refuses to read, and how its keys are given. The
 * end-to-end behaviour against a real server is in codec.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Payload } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { AesGcmCodec, codecFromEnv, deputyDataConverter, parseCodecKeys } from '../src/codec/aes-gcm.js';

const K1 = randomBytes(32);
const K2 = randomBytes(32);
const plain = (data: string): Payload => ({
  metadata: { encoding: Buffer.from('json/plain') },
  data: Buffer.from(data),
});
const meta = (payload: Payload | undefined, key: string) => Buffer.from(payload!.metadata![key]!).toString();

describe('R6.3 the codec', () => {
  it('R6.3 writes ciphertext labelled binary/encrypted with its current key id; reads it back exactly', async () => {
    const codec = new AesGcmCodec([
      ['k2', K2],
      ['k1', K1],
    ]);
    expect(codec.currentKeyId).toBe('k2');
    const original = plain('"the secret task"');
    const [sealed, again] = await codec.encode([original, original]);
    expect(meta(sealed, 'encoding')).toBe('binary/encrypted');
    expect(meta(sealed, 'encryption-key-id')).toBe('k2');
    expect(Object.keys(sealed!.metadata!).sort()).toEqual(['encoding', 'encryption-key-id']);
    expect(Buffer.from(sealed!.data!).toString('latin1')).not.toContain('secret');
    // A fresh IV each time: the same payload never encrypts the same way twice.
    expect(Buffer.from(sealed!.data!).equals(Buffer.from(again!.data!))).toBe(false);
    expect(sealed!.data!.length).toBeGreaterThanOrEqual(12 + 16 + 17);
    const [opened] = await codec.decode([sealed!]);
    expect(meta(opened, 'encoding')).toBe('json/plain');
    expect(Buffer.from(opened!.data!).toString()).toBe('"the secret task"');
  });

  it('R6.3 a payload written without the codec passes through unchanged', async () => {
    const codec = new AesGcmCodec([['k1', K1]]);
    const original = plain('"plain"');
    const [out] = await codec.decode([original]);
    expect(out).toBe(original);
    const [none] = await codec.decode([{ data: Buffer.from('x') }]);
    expect(Buffer.from(none!.data!).toString()).toBe('x');
  });

  it('R6.3 a payload relabelled with another key id of the ring is refused, not decrypted with whichever key fits', async () => {
    const ring = new AesGcmCodec([
      ['k2', K2],
      ['k1', K1],
    ]);
    const [sealed] = await new AesGcmCodec([['k1', K1]]).encode([plain('"the task"')]);
    expect(meta(sealed, 'encryption-key-id')).toBe('k1');
    const [opened] = await ring.decode([sealed!]);
    expect(Buffer.from(opened!.data!).toString()).toBe('"the task"');
    const relabelled = { ...sealed!, metadata: { ...sealed!.metadata, 'encryption-key-id': Buffer.from('k2') } };
    await expect(ring.decode([relabelled])).rejects.toThrow(
      'payload encrypted with key "k2" does not decrypt with the key held under that id (a wrong key, or damaged data)',
    );
    const unlabelled = { ...sealed!, metadata: { encoding: sealed!.metadata!.encoding! } };
    await expect(ring.decode([unlabelled])).rejects.toThrow(
      `payload encrypted with key "", which is not among this process's keys (k2, k1); add it to DEPUTY_CODEC_KEYS`,
    );
  });

  it('R6.3 damaged ciphertext is refused, whichever byte changed', async () => {
    const codec = new AesGcmCodec([['k1', K1]]);
    const [sealed] = await codec.encode([plain('"data"')]);
    const data = Buffer.from(sealed!.data!);
    for (const at of [0, 12, data.length - 17, data.length - 1]) {
      const damaged = Buffer.from(data);
      damaged[at] = damaged[at]! ^ 0x01;
      await expect(codec.decode([{ ...sealed!, data: damaged }]), `byte ${at}`).rejects.toThrow(
        /key "k1" does not decrypt/,
      );
    }
  });

  it('R6.3 a codec needs a key', () => {
    expect(() => new AesGcmCodec([])).toThrow('DEPUTY_CODEC_KEYS: no key given');
  });
});

describe('R6.3 codec keys from the environment', () => {
  it('R6.3 keys are checked: each id:base64 of 32 bytes, separated by commas or spaces', () => {
    expect(() => parseCodecKeys('k1:' + Buffer.alloc(16).toString('base64'), 'DEPUTY_CODEC_KEYS')).toThrow(
      'DEPUTY_CODEC_KEYS: key "k1" is 16 bytes; AES-256 needs 32 (openssl rand -base64 32)',
    );
    expect(() => parseCodecKeys('nokey', 'DEPUTY_CODEC_KEYS')).toThrow('DEPUTY_CODEC_KEYS: "nokey…" is not id:base64');
    expect(() => parseCodecKeys(`:${K1.toString('base64')}`, 'X')).toThrow(/is not id:base64/);
    expect(() => parseCodecKeys(' , ', 'X')).toThrow('X: no key given');
    const keys = parseCodecKeys(
      `a:${K1.toString('base64')}, b:${K2.toString('base64')}\nc:${K1.toString('base64')}`,
      'x',
    );
    expect(keys.map(([id]) => id)).toEqual(['a', 'b', 'c']);
    expect(keys[1]![1].equals(K2)).toBe(true);
  });

  it('R6.3 DEPUTY_CODEC_KEYS or DEPUTY_CODEC_KEYS_FILE configure the codec; neither, none', () => {
    expect(codecFromEnv({})).toBeUndefined();
    expect(deputyDataConverter({})).toBeUndefined();
    const spec = `k9:${K1.toString('base64')},k8:${K2.toString('base64')}`;
    expect(codecFromEnv({ DEPUTY_CODEC_KEYS: spec })?.currentKeyId).toBe('k9');
    const file = join(mkdtempSync(join(tmpdir(), 'deputy-codec-')), 'keys');
    writeFileSync(file, `${spec}\n`);
    expect(codecFromEnv({ DEPUTY_CODEC_KEYS_FILE: file })?.currentKeyId).toBe('k9');
    expect(() => codecFromEnv({ DEPUTY_CODEC_KEYS_FILE: `${file}.missing` })).toThrow(
      /\n {2}- DEPUTY_CODEC_KEYS_FILE: cannot read: ENOENT/,
    );
    const converter = deputyDataConverter({ DEPUTY_CODEC_KEYS: spec });
    expect(converter?.payloadCodecs).toHaveLength(1);
    expect(converter?.payloadCodecs?.[0]).toBeInstanceOf(AesGcmCodec);
  });
});
