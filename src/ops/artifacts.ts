/**
 * Artifacts: what a run hands back besides its answer (a report, a table, a file it wrote), kept in the payload store
 * the data converter uses (`DEPUTY_PAYLOAD_STORE`: a directory, or an S3-compatible bucket), or, with none configured,
 * in a directory of the worker's (`.deputy/artifacts`: enough for one worker and the embedded dev server; a fleet
 * needs a store every worker and client shares). History holds only each artifact's reference: id, name, media type,
 * size, the SHA-256 of its bytes, and the seal of the worker that saved it, bound to the run that saved it; a read
 * checks both.
 */
import { ArtifactError } from '../contract/errors.js';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { StorageDriverClaim, type StorageDriver } from '@temporalio/common';
import { driverFor } from './storage.js';
import { type MessageKeys } from './message-keys.js';
import type { ArtifactAccess, ArtifactRef } from '../contract/artifacts.js';
import type { MessageToSign } from '../contract/signals.js';

/** An artifact as the store reports it: its reference before a worker seals it to the run that saved it. */
export type StoredArtifact = Omit<ArtifactRef, 'savedBy' | 'seal'>;

/** The largest artifact a run may save: what one tool call's arguments can carry is far below. */
export const MAX_ARTIFACT_BYTES = 16 * 2 ** 20;

const digestOf = (bytes: Uint8Array) => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

/** The artifacts of a worker or a client: saved to and read from one payload store. */
export class ArtifactStore {
  constructor(readonly driver: StorageDriver) {}

  /** The store `env` names (`DEPUTY_PAYLOAD_STORE`), else a directory under `baseDir`. */
  static fromEnv(env: NodeJS.ProcessEnv = process.env, baseDir = process.cwd()): ArtifactStore {
    const spec = env.DEPUTY_PAYLOAD_STORE || join(baseDir, '.deputy', 'artifacts');
    const driver = driverFor(spec, env);
    if (typeof driver === 'string') throw new ArtifactError(driver);
    return new ArtifactStore(driver);
  }

  /** Saves `content` as an artifact named `name`; the reference says where it is and what it was. */
  async save(name: string, mediaType: string, content: string, signal?: AbortSignal): Promise<StoredArtifact> {
    const bytes = new TextEncoder().encode(content);
    if (bytes.length > MAX_ARTIFACT_BYTES) {
      throw new ArtifactError(`artifact "${name}" is ${bytes.length} bytes, past the ${MAX_ARTIFACT_BYTES} one may be`);
    }
    const digest = digestOf(bytes);
    const payload = { metadata: { encoding: new TextEncoder().encode('binary/plain') }, data: bytes };
    const [claim] = await this.driver.store({ abortSignal: signal }, [payload]);
    return {
      id: `art-${digest.slice('sha256:'.length, 'sha256:'.length + 16)}`,
      name,
      mediaType,
      size: bytes.length,
      digest,
      key: claim!.claimData.key!,
    };
  }

  /** The text of the artifact `ref` names, after checking its bytes are the ones saved. */
  async read(ref: StoredArtifact, signal?: AbortSignal): Promise<string> {
    const [payload] = await this.driver.retrieve({ abortSignal: signal }, [new StorageDriverClaim({ key: ref.key })]);
    const bytes = payload?.data ?? new Uint8Array();
    if (digestOf(bytes) !== ref.digest || bytes.length !== ref.size) {
      throw new ArtifactError(`artifact ${ref.id} ("${ref.name}") in the store is not what was saved`);
    }
    return new TextDecoder().decode(bytes);
  }
}

/** What a seal is made over: the reference, and the run that saved it (the signature canonicalises the body). */
function sealed({ seal: _seal, ...ref }: Omit<ArtifactRef, 'seal'> & { seal?: string }): MessageToSign {
  return { signal: 'artifact', from: ref.savedBy, to: '', id: ref.id, body: ref };
}

/** Seals artifact references for the run that saved them, and checks a seal before anything is read. */
function artifactSeals(keys: MessageKeys) {
  return {
    seal: (stored: StoredArtifact, savedBy: string): ArtifactRef => ({
      ...stored,
      savedBy,
      seal: keys.sign(sealed({ ...stored, savedBy })),
    }),
    verify: (ref: ArtifactRef): boolean => keys.verify(sealed(ref), ref.seal).ok,
  };
}

/**
 * What one tool call may do with artifacts: save for `caller` (the run Temporal reports, not one an input names),
 * read what its run may read, each read checked against the saving worker's seal and the stored digest.
 */
export function artifactAccess(
  store: ArtifactStore,
  keys: MessageKeys,
  caller: string,
  readable: readonly ArtifactRef[],
  signal?: AbortSignal,
): { access: ArtifactAccess; saved: ArtifactRef[] } {
  const seals = artifactSeals(keys);
  const saved: ArtifactRef[] = [];
  const access: ArtifactAccess = {
    readable,
    async save(name, mediaType, content) {
      const ref = seals.seal(await store.save(name, mediaType, content, signal), caller);
      saved.push(ref);
      return ref;
    },
    async read(id) {
      const ref = readable.find((r) => r.id === id) ?? saved.find((r) => r.id === id);
      if (!ref) {
        const known = [...readable, ...saved].map((r) => `${r.id} (${r.name})`).join(', ') || 'none';
        throw new ArtifactError(`no artifact ${id} is readable by this run; readable: ${known}`);
      }
      if (!seals.verify(ref)) {
        throw new ArtifactError(
          `artifact ${id} ("${ref.name}") carries no seal of a worker: it was not saved by a run`,
        );
      }
      return { ref, content: await store.read(ref, signal) };
    },
  };
  return { access, saved };
}
