/**
 * Large payloads: Temporal's external storage (the claim-check built into the SDK's data converter) keeps
 * payloads past a threshold out of history — a long dialogue sent whole, a forked context, a continue-as-new input,
 * a big tool result — and history holds a small reference to them. Deputy's driver writes them to a directory
 * (content-addressed, written atomically, checked on read) or to an S3-compatible bucket (MinIO in the compose stack).
 *
 * `DEPUTY_PAYLOAD_STORE=/path` (or `file:///path`, or `s3://bucket/prefix`) turns it on;
 * `DEPUTY_PAYLOAD_STORE_THRESHOLD` (bytes, default 256 KiB) is the size past which a payload is stored. For S3,
 * `DEPUTY_PAYLOAD_STORE_S3_ENDPOINT` names an S3-compatible endpoint (path-style addressing), and the AWS SDK's usual
 * variables give the credentials and region (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`). Every worker
 * and client of a namespace needs the same store.
 */
import { ConfigError, PayloadStoreError } from '../contract/errors.js';
import { createHash, randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as AwsS3 from '@aws-sdk/client-s3';
import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
import {
  ExternalStorage,
  StorageDriverClaim,
  type Payload,
  type StorageDriver,
  type StorageDriverRetrieveContext,
  type StorageDriverStoreContext,
} from '@temporalio/common';
// A CommonJS package: Node's ESM loader sees only its default export.
import proto from '@temporalio/proto';

const { Payload: PayloadProto } = proto.temporal.api.common.v1;

/** Default size past which a payload goes to the store: 256 KiB, as the SDK's own default. */
const DEFAULT_STORE_THRESHOLD = 256 * 1024;
/**
 * With a store: the longest tool result kept whole (cut past it with a visible marker), 64 MiB. Without a
 * store, results are cut to fit history (`payloads.maxTextBytes`).
 */
export const STORE_MAX_TEXT_BYTES = 64 * 1024 * 1024;

/** A payload's bytes and their key: the SHA-256 of the bytes, so a store holds each payload once. */
function serialise(payload: Payload): { bytes: Uint8Array; key: string } {
  const bytes = PayloadProto.encode(payload).finish();
  return { bytes, key: createHash('sha256').update(bytes).digest('hex') };
}

/** A claim's key, checked: 64 hex digits, so a forged claim cannot name another path or object. */
function claimKey(claim: StorageDriverClaim): string {
  const key = claim.claimData.key ?? '';
  if (!/^[0-9a-f]{64}$/.test(key)) throw new PayloadStoreError(`not a payload key: "${key.slice(0, 80)}"`);
  return key;
}

/** The payload in `bytes`, after checking they are what was stored under `key`. */
function deserialise(bytes: Uint8Array, key: string, where: string): Payload {
  if (createHash('sha256').update(bytes).digest('hex') !== key) {
    throw new PayloadStoreError(`payload ${key.slice(0, 12)}… in ${where} is damaged (its SHA-256 differs)`);
  }
  return PayloadProto.decode(bytes);
}

const missing = (key: string, store: string, why: string) =>
  new PayloadStoreError(
    `payload ${key.slice(0, 12)}… is not in the store ${store} (${why}); every worker and client needs the same DEPUTY_PAYLOAD_STORE`,
  );

/** A storage driver over a directory: one file per payload, named by the SHA-256 of its bytes. */
export class FileStorageDriver implements StorageDriver {
  readonly name = 'deputy-file';
  readonly type = 'deputy.filedriver';

  constructor(readonly directory: string) {}

  #path(key: string): string {
    return join(this.directory, key.slice(0, 2), key);
  }

  async store(_context: StorageDriverStoreContext, payloads: Payload[]): Promise<StorageDriverClaim[]> {
    return Promise.all(
      payloads.map(async (payload) => {
        const { bytes, key } = serialise(payload);
        const path = this.#path(key);
        const present = await stat(path).then(
          (s) => s.size === bytes.length,
          () => false,
        );
        if (!present) {
          await mkdir(join(this.directory, key.slice(0, 2)), { recursive: true });
          // Written whole or not at all: a crash mid-write leaves a stray temporary file, never a short payload.
          const temporary = `${path}.${randomUUID()}.tmp`;
          await writeFile(temporary, bytes);
          await rename(temporary, path);
        }
        return new StorageDriverClaim({ key });
      }),
    );
  }

  async retrieve(_context: StorageDriverRetrieveContext, claims: StorageDriverClaim[]): Promise<Payload[]> {
    return Promise.all(
      claims.map(async (claim) => {
        const key = claimKey(claim);
        const path = this.#path(key);
        let bytes: Buffer;
        try {
          bytes = await readFile(path);
        } catch (err) {
          throw missing(key, this.directory, (err as NodeJS.ErrnoException).code ?? (err as Error).message);
        }
        return deserialise(bytes, key, path);
      }),
    );
  }
}

/**
 * A storage driver over an S3-compatible bucket: one object per payload under `prefix`, named by its SHA-256. The AWS
 * SDK is loaded on first use: a process without an S3 store never loads it.
 */
export class S3StorageDriver implements StorageDriver {
  readonly name = 'deputy-s3';
  readonly type = 'deputy.s3driver';
  #sdk: Promise<{ client: S3Client; sdk: typeof AwsS3 }> | undefined;

  constructor(
    readonly config: S3ClientConfig,
    readonly bucket: string,
    readonly prefix = '',
  ) {}

  #s3() {
    this.#sdk ??= import('@aws-sdk/client-s3').then((sdk) => ({ sdk, client: new sdk.S3Client(this.config) }));
    return this.#sdk;
  }

  get #where(): string {
    return `s3://${this.bucket}/${this.prefix}`;
  }

  async store(context: StorageDriverStoreContext, payloads: Payload[]): Promise<StorageDriverClaim[]> {
    return Promise.all(
      payloads.map(async (payload) => {
        const { bytes, key } = serialise(payload);
        const { client, sdk } = await this.#s3();
        // Content-addressed: putting the same payload again writes the same object.
        await client.send(new sdk.PutObjectCommand({ Bucket: this.bucket, Key: `${this.prefix}${key}`, Body: bytes }), {
          abortSignal: context.abortSignal,
        });
        return new StorageDriverClaim({ key });
      }),
    );
  }

  async retrieve(context: StorageDriverRetrieveContext, claims: StorageDriverClaim[]): Promise<Payload[]> {
    return Promise.all(
      claims.map(async (claim) => {
        const key = claimKey(claim);
        const { client, sdk } = await this.#s3();
        let bytes: Uint8Array;
        try {
          const object = await client.send(
            new sdk.GetObjectCommand({ Bucket: this.bucket, Key: `${this.prefix}${key}` }),
            { abortSignal: context.abortSignal },
          );
          bytes = await object.Body!.transformToByteArray();
        } catch (err) {
          const name = (err as Error).name;
          if (name === 'NoSuchKey' || name === 'NotFound' || name === 'NoSuchBucket') {
            throw missing(key, this.#where, name);
          }
          throw err; // unreachable store, denied, throttled: the SDK's own error, retried by Temporal
        }
        return deserialise(bytes, key, this.#where);
      }),
    );
  }
}

/** The driver `spec` names: a directory, a file:// URL, or s3://bucket/prefix; or the problem with it. */
export function driverFor(spec: string, env: NodeJS.ProcessEnv): StorageDriver | string {
  if (spec.startsWith('s3://')) {
    const [bucket, ...rest] = spec.slice('s3://'.length).split('/');
    if (!bucket) return `DEPUTY_PAYLOAD_STORE: "${spec}" names no bucket (s3://bucket/prefix)`;
    const prefix = rest.join('/');
    const endpoint = env.DEPUTY_PAYLOAD_STORE_S3_ENDPOINT;
    const { AWS_ACCESS_KEY_ID: accessKeyId, AWS_SECRET_ACCESS_KEY: secretAccessKey } = env;
    const config: S3ClientConfig = {
      region: env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1',
      ...(endpoint && { endpoint, forcePathStyle: true }),
      // Keys in `env` when given; else the SDK's own chain (its environment, profiles, instance roles).
      ...(accessKeyId && secretAccessKey && { credentials: { accessKeyId, secretAccessKey } }),
    };
    return new S3StorageDriver(config, bucket, prefix && !prefix.endsWith('/') ? `${prefix}/` : prefix);
  }
  const directory = spec.startsWith('file://') ? fileURLToPath(spec) : spec;
  if (!isAbsolute(directory)) return `DEPUTY_PAYLOAD_STORE: "${spec}" is not an absolute path, file:// or s3:// URL`;
  return new FileStorageDriver(directory);
}

/** The external storage `env` asks for, or `undefined`. */
export function externalStorageFromEnv(env: NodeJS.ProcessEnv = process.env): ExternalStorage | undefined {
  const spec = env.DEPUTY_PAYLOAD_STORE;
  if (!spec) return undefined;
  const problems: string[] = [];
  const driver = driverFor(spec, env);
  if (typeof driver === 'string') problems.push(driver);
  const threshold = Number(env.DEPUTY_PAYLOAD_STORE_THRESHOLD ?? DEFAULT_STORE_THRESHOLD);
  if (!Number.isInteger(threshold) || threshold < 0) {
    problems.push(`DEPUTY_PAYLOAD_STORE_THRESHOLD: "${env.DEPUTY_PAYLOAD_STORE_THRESHOLD}" is not a size in bytes`);
  }
  if (problems.length > 0) throw new ConfigError(problems, 'environment');
  return new ExternalStorage({ drivers: [driver as StorageDriver], payloadSizeThreshold: threshold });
}
