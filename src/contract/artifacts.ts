/**
 * Artifacts: what a run hands back besides its answer (a report, a table, a file it wrote). The bytes live in a
 * payload store; history holds only each artifact's reference, sealed by the worker that saved it and bound to the
 * run that saved it, so no record a client writes can stand in for one.
 */
import { z } from 'zod';

/** What history and results hold of an artifact. */
export const ArtifactRef = z.strictObject({
  /** `art-` and the first 16 hex digits of its SHA-256: the same bytes saved twice are one artifact. */
  id: z.string().regex(/^art-[0-9a-f]{16}$/),
  name: z.string().min(1).max(200),
  mediaType: z.string().min(1).max(100),
  /** In bytes. */
  size: z.number().int().nonnegative(),
  /** `sha256:` and 64 hex digits: a read checks the bytes against it. */
  digest: z.string().regex(/^sha256:[0-9a-f]{64}$/),
  /** Where the store keeps it. */
  key: z.string().min(1).max(1024),
  /** Workflow id of the run that saved it. */
  savedBy: z.string().min(1),
  /** The saving worker's seal over all of the above. */
  seal: z.string().min(1).max(200),
});
export type ArtifactRef = z.infer<typeof ArtifactRef>;

/** What a tool may do with artifacts: given to `execute` when its worker has an artifact store. */
export interface ArtifactAccess {
  /** Saves `content` as an artifact of the calling run; its result lists it, and its parent may read it. */
  save(name: string, mediaType: string, content: string): Promise<ArtifactRef>;
  /** The artifact `id` names, when the calling run may read it (its own, its children's, its brief's). */
  read(id: string): Promise<{ ref: ArtifactRef; content: string }>;
  /** The artifacts the calling run may read. */
  readonly readable: readonly ArtifactRef[];
}
