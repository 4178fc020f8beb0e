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
import { deflateRawSync } from 'node:zlib';
import { AesGcmCodec, codecFromEnv, deputyDataConverter, parseCodecKeys } from '../src/codec/aes-gcm.js';
import { compressionFromEnv, DeflateCodec } from '../src/codec/compress.js';
import proto from '@temporalio/proto';

const { Payload: PayloadProto } = proto.temporal.api.common.v1;

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
    expect(converter?.externalStorage).toBeUndefined();
    // A payload store alone: no codec, the store.
    const stored = deputyDataConverter({ DEPUTY_PAYLOAD_STORE: mkdtempSync(join(tmpdir(), 'deputy-store-')) });
    expect(stored).toBeDefined();
    expect(Object.keys(stored!)).toEqual(['externalStorage']);
  });
});

describe('R6.3 compression (off by default)', () => {
  const dialogue = plain(JSON.stringify({ task: 'summarise the page', page: 'the quick brown fox. '.repeat(200) }));

  it('R6.3 a large payload is deflated and labelled binary/zlib; it reads back exactly, metadata included', async () => {
    const codec = new DeflateCodec();
    const [packed] = await codec.encode([dialogue]);
    expect(meta(packed, 'encoding')).toBe('binary/zlib');
    expect(Object.keys(packed!.metadata!)).toEqual(['encoding']);
    expect(packed!.data!.length).toBeLessThan(dialogue.data!.length / 10);
    const [opened] = await codec.decode([packed!]);
    expect(meta(opened, 'encoding')).toBe('json/plain');
    expect(Buffer.from(opened!.data!).equals(Buffer.from(dialogue.data!))).toBe(true);
  });

  it('R6.3 a short payload, or one deflate would not shrink, is written as it was', async () => {
    const codec = new DeflateCodec();
    const short = plain('"completed"');
    const random: Payload = { metadata: { encoding: Buffer.from('binary/plain') }, data: randomBytes(2000) };
    const [a, b] = await codec.encode([short, random]);
    expect(a).toBe(short);
    expect(b).toBe(random);
    const [c] = await codec.decode([short]);
    expect(c).toBe(short);
    // Under 256 bytes nothing is deflated, even text that would deflate well; a payload without metadata passes.
    const small = plain('a'.repeat(200));
    expect((await codec.encode([small]))[0]).toBe(small);
    const bare: Payload = { data: Buffer.from('x') };
    expect((await codec.decode([bare]))[0]).toBe(bare);
  });

  it('R6.3 a payload that would inflate past 16 MiB, or does not inflate, is refused with the reason', async () => {
    const codec = new DeflateCodec();
    const label = { encoding: Buffer.from('binary/zlib') };
    // A well-formed payload of 17 MiB of zeros deflates to a few KiB: a reader that inflated it whole would be the one
    // exhausted. Its twin of 1 MiB reads back.
    const zeros = (bytes: number) =>
      deflateRawSync(PayloadProto.encode({ metadata: {}, data: Buffer.alloc(bytes) }).finish());
    const bomb = { metadata: label, data: zeros(17 * 2 ** 20) };
    expect(bomb.data.length).toBeLessThan(64 * 1024);
    await expect(codec.decode([bomb])).rejects.toThrow(
      'payload labelled binary/zlib would inflate past 16777216 bytes; refused, not read',
    );
    const [fine] = await codec.decode([{ metadata: label, data: zeros(2 ** 20) }]);
    expect(fine!.data!.length).toBe(2 ** 20);
    await expect(codec.decode([{ metadata: label, data: Buffer.from('not deflate at all') }])).rejects.toThrow(
      /^payload labelled binary\/zlib does not inflate \(.+\); it is damaged$/,
    );
    await expect(codec.decode([{ metadata: label, data: deflateRawSync(Buffer.from([0xff, 0xff])) }])).rejects.toThrow(
      'payload labelled binary/zlib inflates to something that is not a payload; it is damaged',
    );
  });

  it('R6.3 payloads of one call, each under the limit, that would inflate past 64 MiB together are refused', async () => {
    const codec = new DeflateCodec();
    const label = { encoding: Buffer.from('binary/zlib') };
    const zeros = (bytes: number) => ({
      metadata: label,
      data: deflateRawSync(PayloadProto.encode({ metadata: {}, data: Buffer.alloc(bytes) }).finish()),
    });
    // Five of 15 MiB: each passes alone, four pass together (60 MiB), the fifth would take the call past 64 MiB.
    const one = zeros(15 * 2 ** 20);
    expect((await codec.decode([one, one, one, one])).map((p) => p.data!.length)).toEqual(Array(4).fill(15 * 2 ** 20));
    await expect(codec.decode([one, one, one, one, one])).rejects.toThrow(
      'payloads labelled binary/zlib would inflate past 67108864 bytes together; refused, not read',
    );
    // A separate call starts again.
    expect(await codec.decode([one])).toHaveLength(1);
  });

  it('R6.3 DEPUTY_COMPRESS=1 turns it on, before encryption; 0 or unset, off; anything else is refused', async () => {
    expect(compressionFromEnv({})).toBeUndefined();
    expect(compressionFromEnv({ DEPUTY_COMPRESS: '0' })).toBeUndefined();
    expect(() => compressionFromEnv({ DEPUTY_COMPRESS: 'yes' })).toThrow(
      'DEPUTY_COMPRESS: "yes" is neither 1 (compress) nor 0 (do not)',
    );
    expect(() => compressionFromEnv({ DEPUTY_COMPRESS: ' 1' })).toThrow('" 1" is neither');
    expect(() => compressionFromEnv({ DEPUTY_COMPRESS: 'x'.repeat(500) })).toThrow(`"${'x'.repeat(20)}" is neither`);
    expect(deputyDataConverter({ DEPUTY_COMPRESS: '1' })?.payloadCodecs?.[0]).toBeInstanceOf(DeflateCodec);
    const both = deputyDataConverter({ DEPUTY_COMPRESS: '1', DEPUTY_CODEC_KEYS: `k1:${K1.toString('base64')}` });
    const codecs = both!.payloadCodecs!;
    expect(codecs.map((codec) => codec.constructor.name)).toEqual(['DeflateCodec', 'AesGcmCodec']);
    // Compressed, then encrypted: the ciphertext is of the deflated payload, so it is small too.
    let sealed = [dialogue];
    for (const codec of codecs) sealed = await codec.encode(sealed);
    expect(meta(sealed[0], 'encoding')).toBe('binary/encrypted');
    expect(sealed[0]!.data!.length).toBeLessThan(dialogue.data!.length / 10);
    for (const codec of [...codecs].reverse()) sealed = await codec.decode(sealed);
    expect(Buffer.from(sealed[0]!.data!).equals(Buffer.from(dialogue.data!))).toBe(true);
  });
});
