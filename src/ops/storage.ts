/**
 * Large payloads (issue 15): Temporal's external storage (the claim-check built into the SDK's data converter) keeps
 * payloads past a threshold out of history — a long dialogue sent whole, a forked context, a continue-as-new input,
 * a big tool result — and history holds a small reference to them. Deputy's driver writes them to a directory
 * (content-addressed, written atomically, checked on read); the compose stack points it at a shared volume.
 *
 * `DEPUTY_PAYLOAD_STORE=/path` (or `file:///path`) turns it on; `DEPUTY_PAYLOAD_STORE_THRESHOLD` (bytes, default
 * 256 KiB) is the size past which a payload is stored. Every worker and client of a namespace needs the same store.
 */
import { createHash, randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
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
import { ConfigError, DeputyError } from '../contract/errors.js';

const { Payload: PayloadProto } = proto.temporal.api.common.v1;

/** Default size past which a payload goes to the store: 256 KiB, as the SDK's own default. */
export const DEFAULT_STORE_THRESHOLD = 256 * 1024;
/**
 * R1.8 with a store: the longest tool result kept whole (cut past it with a visible marker), 64 MiB. Without a
 * store, results are cut to fit history (`payloads.maxTextBytes`).
 */
export const STORE_MAX_TEXT_BYTES = 64 * 1024 * 1024;

/** Thrown when a stored payload cannot be read back: gone, or not what was stored. */
export class PayloadStoreError extends DeputyError {}

/** A storage driver over a directory: one file per payload, named by the SHA-256 of its bytes. */
export class FileStorageDriver implements StorageDriver {
  readonly name = 'deputy-file';
  readonly type = 'deputy.filedriver';

  constructor(readonly directory: string) {}

  #path(key: string): string {
    if (!/^[0-9a-f]{64}$/.test(key)) throw new PayloadStoreError(`not a payload key: "${key.slice(0, 80)}"`);
    return join(this.directory, key.slice(0, 2), key);
  }

  async store(_context: StorageDriverStoreContext, payloads: Payload[]): Promise<StorageDriverClaim[]> {
    return Promise.all(
      payloads.map(async (payload) => {
        const bytes = PayloadProto.encode(payload).finish();
        const key = createHash('sha256').update(bytes).digest('hex');
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
      claims.map(async ({ claimData }) => {
        const key = claimData.key ?? '';
        const path = this.#path(key);
        let bytes: Buffer;
        try {
          bytes = await readFile(path);
        } catch (err) {
          throw new PayloadStoreError(
            `payload ${key.slice(0, 12)}… is not in the store ${this.directory} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); every worker and client needs the same DEPUTY_PAYLOAD_STORE`,
          );
        }
        if (createHash('sha256').update(bytes).digest('hex') !== key) {
          throw new PayloadStoreError(`payload ${key.slice(0, 12)}… in ${path} is damaged (its SHA-256 differs)`);
        }
        return PayloadProto.decode(bytes);
      }),
    );
  }
}

/** The external storage `env` asks for, or `undefined`. */
export function externalStorageFromEnv(env: NodeJS.ProcessEnv = process.env): ExternalStorage | undefined {
  const spec = env.DEPUTY_PAYLOAD_STORE;
  if (!spec) return undefined;
  const directory = spec.startsWith('file://') ? fileURLToPath(spec) : spec;
  const problems: string[] = [];
  if (!isAbsolute(directory)) {
    problems.push(`DEPUTY_PAYLOAD_STORE: "${spec}" is not an absolute path or file:// URL`);
  }
  const threshold = Number(env.DEPUTY_PAYLOAD_STORE_THRESHOLD ?? DEFAULT_STORE_THRESHOLD);
  if (!Number.isInteger(threshold) || threshold < 0) {
    problems.push(`DEPUTY_PAYLOAD_STORE_THRESHOLD: "${env.DEPUTY_PAYLOAD_STORE_THRESHOLD}" is not a size in bytes`);
  }
  if (problems.length > 0) throw new ConfigError(problems, 'environment');
  return new ExternalStorage({ drivers: [new FileStorageDriver(directory)], payloadSizeThreshold: threshold });
}
