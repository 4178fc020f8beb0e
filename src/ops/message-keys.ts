/**
 * The keys that sign messages between runs. A workflow cannot keep a secret — its randomness is seeded from its run
 * id, which any client can read, and whatever it records is readable by whoever reads history — so messages are signed
 * and checked by workers, in local activities, with keys from the worker's environment:
 *
 * - `DEPUTY_MESSAGE_KEYS` (`id:base64,id:base64`, 32-byte keys, the first one signs, every one checks: rotate by
 *   putting a new key first and dropping the old one once no run in flight was signed with it), or
 *   `DEPUTY_MESSAGE_KEYS_FILE` (a file with the same text);
 * - else, only for a worker beside the embedded dev server (the demo, the tests), a key made on first use in
 *   `<DEPUTY_STATE_DIR or .deputy>/message-keys` (mode 0600). A worker on a shared server (`npm run worker`) makes
 *   no key of its own: two would drop each other's messages.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseCodecKeys } from '../codec/aes-gcm.js';
import { ConfigError } from '../contract/errors.js';
import type { MessageToSign, SignedMessage, VerifyMessageResult } from '../contract/signals.js';

/** JSON with object keys sorted, so a signature does not depend on the order a converter wrote them in. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Signs and checks messages between runs. */
export class MessageKeys {
  readonly #keys: ReadonlyMap<string, Buffer>;
  readonly #current: string;

  /** `keys` in order: the first signs, all check. */
  constructor(keys: readonly (readonly [id: string, key: Buffer])[]) {
    const [first] = keys;
    if (!first) throw new ConfigError(['DEPUTY_MESSAGE_KEYS: no key given'], 'environment');
    this.#keys = new Map(keys);
    this.#current = first[0];
  }

  /**
   * The keys the environment names; else, with `makeKeyFile`, the key file under the state directory (made on
   * first use), and without it a configuration error saying what to set.
   */
  static fromEnv(env: NodeJS.ProcessEnv = process.env, { makeKeyFile = true } = {}): MessageKeys {
    if (env.DEPUTY_MESSAGE_KEYS) return new MessageKeys(parseCodecKeys(env.DEPUTY_MESSAGE_KEYS, 'DEPUTY_MESSAGE_KEYS'));
    const file = env.DEPUTY_MESSAGE_KEYS_FILE;
    if (file) return new MessageKeys(parseCodecKeys(readKeyFile(file, 'DEPUTY_MESSAGE_KEYS_FILE'), file));
    if (!makeKeyFile) {
      throw new ConfigError(
        [
          "DEPUTY_MESSAGE_KEYS: not set. Workers sign the messages between runs with one key ring, and a worker on a shared Temporal server makes no key of its own (two workers with their own would drop each other's messages). Give every worker the same DEPUTY_MESSAGE_KEYS=k1:$(openssl rand -base64 32), or DEPUTY_MESSAGE_KEYS_FILE naming a file with that text",
        ],
        'environment',
      );
    }
    const dir = env.DEPUTY_STATE_DIR ?? '.deputy';
    return new MessageKeys(parseCodecKeys(sharedKeyFile(join(dir, 'message-keys')), 'message-keys'));
  }

  /**
   * What names the signing key without giving it away (its id and a digest of it): workers publish it, so a worker
   * that would sign with another key than the ones already polling refuses to start beside them.
   */
  get fingerprint(): string {
    const digest = createHash('sha256').update('deputy message key ').update(this.#keys.get(this.#current)!);
    return `${this.#current}/${digest.digest('hex').slice(0, 16)}`;
  }

  /** `<keyId>.<mac>` over the message. */
  sign(message: MessageToSign): string {
    return `${this.#current}.${mac(this.#keys.get(this.#current)!, message)}`;
  }

  /** `message` as it travels: its envelope with the signature. */
  seal<B>({ signal, ...envelope }: MessageToSign & { body: B }): SignedMessage<B> {
    return { ...envelope, sig: this.sign({ signal, ...envelope }) };
  }

  /** Whether one of these keys signed `message`. */
  verify(message: MessageToSign, sig: string): VerifyMessageResult {
    const dot = sig.indexOf('.');
    const key = dot > 0 ? this.#keys.get(sig.slice(0, dot)) : undefined;
    if (!key) return { ok: false, reason: 'unknown key' };
    const given = Buffer.from(sig.slice(dot + 1));
    const wanted = Buffer.from(mac(key, message));
    return given.length === wanted.length && timingSafeEqual(given, wanted)
      ? { ok: true }
      : { ok: false, reason: 'bad signature' };
  }
}

/**
 * HMAC-SHA-256 truncated to its first 128 bits (as RFC 4868 does): a forger's odds stay at one in 2^128, and every
 * grant and seal a run records in its history is 21 characters shorter.
 */
function mac(key: Buffer, { signal, from, to, id, body }: MessageToSign): string {
  const digest = createHash('sha256').update(canonicalJson(body)).digest('base64url');
  return createHmac('sha256', key)
    .update(JSON.stringify([signal, from, to, id, digest]))
    .digest()
    .subarray(0, MAC_BYTES)
    .toString('base64url');
}

const MAC_BYTES = 16;

function readKeyFile(path: string, source: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError([`${source}: cannot read ${path}: ${(err as Error).message}`], 'environment');
  }
}

/** The key file every worker of this directory shares; the first to need it writes it (atomically, once). */
function sharedKeyFile(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  mkdirSync(join(path, '..'), { recursive: true });
  const draft = `${path}.${process.pid}.${randomBytes(4).toString('hex')}`;
  writeFileSync(draft, `k1:${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
  chmodSync(draft, 0o600);
  try {
    linkSync(draft, path); // fails if another worker wrote it first: then theirs is the key
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    unlinkSync(draft);
  }
  return readFileSync(path, 'utf8');
}
