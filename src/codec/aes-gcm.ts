/**
 * Encrypted history: a payload codec that encrypts every payload Deputy's client and workers write to
 * Temporal — prompts, dialogue, outputs — with AES-256-GCM, so Temporal's database holds ciphertext. Each payload
 * names its key (`encryption-key-id`), so keys rotate by adding one: the first key encrypts, every key decrypts.
 * Search attributes are not payloads of this kind and stay plain; they never carry dialogue text.
 *
 * Keys come from `DEPUTY_CODEC_KEYS` (`id:base64,id:base64`, the first one current) or `DEPUTY_CODEC_KEYS_FILE`
 * (a file with the same text). Without either, nothing is encrypted.
 */
import { CodecError, ConfigError } from '../contract/errors.js';
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { DataConverter, Payload, PayloadCodec } from '@temporalio/common';
// A CommonJS package: Node's ESM loader sees only its default export.
import proto from '@temporalio/proto';
import { externalStorageFromEnv } from '../ops/storage.js';
import { compressionFromEnv } from './compress.js';

const { Payload: PayloadProto } = proto.temporal.api.common.v1;
const ENCODING = 'binary/encrypted';
const KEY_ID = 'encryption-key-id';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const utf8 = (text: string) => new TextEncoder().encode(text);
const text = (bytes: Uint8Array | null | undefined) => (bytes ? new TextDecoder().decode(bytes) : '');

/** AES-256-GCM over each whole payload (its metadata included), as Temporal's encryption samples do. */
export class AesGcmCodec implements PayloadCodec {
  readonly #keys: ReadonlyMap<string, Buffer>;
  readonly #current: string;

  /** `keys` in order: the first encrypts, all decrypt. */
  constructor(keys: readonly (readonly [id: string, key: Buffer])[]) {
    const [first] = keys;
    if (!first) throw new ConfigError(['DEPUTY_CODEC_KEYS: no key given'], 'environment');
    this.#keys = new Map(keys);
    this.#current = first[0];
  }

  get currentKeyId(): string {
    return this.#current;
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    const key = this.#keys.get(this.#current)!;
    return payloads.map((payload) => {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const plain = PayloadProto.encode(payload).finish();
      const data = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
      return { metadata: { encoding: utf8(ENCODING), [KEY_ID]: utf8(this.#current) }, data };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      if (text(payload.metadata?.encoding) !== ENCODING) return payload; // written without the codec
      const id = text(payload.metadata?.[KEY_ID]);
      const key = this.#keys.get(id);
      if (!key) {
        throw new CodecError(
          `payload encrypted with key "${id}", which is not among this process's keys (${[...this.#keys.keys()].join(', ')}); add it to DEPUTY_CODEC_KEYS`,
        );
      }
      const data = Buffer.from(payload.data ?? new Uint8Array());
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
        decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
        const plain = Buffer.concat([
          decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)),
          decipher.final(),
        ]);
        return PayloadProto.decode(plain);
      } catch {
        throw new CodecError(
          `payload encrypted with key "${id}" does not decrypt with the key held under that id (a wrong key, or damaged data)`,
        );
      }
    });
  }
}

/** Parses `id:base64,id:base64`; each key must be 32 bytes. */
export function parseCodecKeys(spec: string, source: string): [string, Buffer][] {
  const problems: string[] = [];
  const keys = spec
    .split(/[,\s]+/)
    .filter(Boolean)
    .map((entry): [string, Buffer] => {
      const at = entry.indexOf(':');
      const id = entry.slice(0, at);
      const key = Buffer.from(entry.slice(at + 1), 'base64');
      if (at <= 0) problems.push(`${source}: "${entry.slice(0, 12)}…" is not id:base64`);
      else if (key.length !== 32)
        problems.push(`${source}: key "${id}" is ${key.length} bytes; AES-256 needs 32 (openssl rand -base64 32)`);
      return [id, key];
    });
  if (keys.length === 0) problems.push(`${source}: no key given`);
  if (problems.length > 0) throw new ConfigError(problems, 'environment');
  return keys;
}

/** The codec the environment configures, or `undefined` when it configures none. */
export function codecFromEnv(env: NodeJS.ProcessEnv = process.env): AesGcmCodec | undefined {
  if (env.DEPUTY_CODEC_KEYS) return new AesGcmCodec(parseCodecKeys(env.DEPUTY_CODEC_KEYS, 'DEPUTY_CODEC_KEYS'));
  if (env.DEPUTY_CODEC_KEYS_FILE) {
    let spec: string;
    try {
      spec = readFileSync(env.DEPUTY_CODEC_KEYS_FILE, 'utf8');
    } catch (err) {
      throw new ConfigError([`DEPUTY_CODEC_KEYS_FILE: cannot read: ${(err as Error).message}`], 'environment');
    }
    return new AesGcmCodec(parseCodecKeys(spec, 'DEPUTY_CODEC_KEYS_FILE'));
  }
  return undefined;
}

/** The codecs the environment configures, in the order they encode: compression (`DEPUTY_COMPRESS`), then encryption. */
export function codecsFromEnv(env: NodeJS.ProcessEnv = process.env): PayloadCodec[] {
  const compression = compressionFromEnv(env);
  const encryption = codecFromEnv(env);
  return [...(compression ? [compression] : []), ...(encryption ? [encryption] : [])];
}

/**
 * The data converter client and workers use: Temporal's default, with the codecs and the external payload
 * store when the environment configures them.
 */
export function deputyDataConverter(env: NodeJS.ProcessEnv = process.env): DataConverter | undefined {
  const payloadCodecs = codecsFromEnv(env);
  const externalStorage = externalStorageFromEnv(env);
  if (payloadCodecs.length === 0 && !externalStorage) return undefined;
  return { ...(payloadCodecs.length > 0 && { payloadCodecs }), ...(externalStorage && { externalStorage }) };
}
