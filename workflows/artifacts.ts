/**
 * A run's artifacts, as its workflow keeps them: what it saved and what its children handed back (its result lists
 * both), and what its brief gave it to read. A reference is taken only from where it can come from: a tool's save
 * for this run, a child's result for that child's own subtree, the brief its parent sealed. The saving worker's seal,
 * checked before any read, binds each reference to the run that saved it, so none can be carried in from elsewhere.
 * Deterministic code only.
 */
import type { ArtifactRef } from '../src/contract/artifacts.js';
import type { RunResult, RunResume } from '../src/contract/run.js';

/** `id "name"` of each, for a message that lists them. */
const describeArtifacts = (refs: readonly ArtifactRef[]) =>
  refs.map((ref) => `${ref.id} "${ref.name}" (${ref.mediaType}, ${ref.size} bytes)`);

export class RunArtifacts {
  #produced: ArtifactRef[] = [];
  #given: ArtifactRef[] = [];

  /** `given`: what the brief its parent sealed gave it to read; `carried`: what its earlier segment had. */
  constructor(
    readonly runId: string,
    given: readonly ArtifactRef[] | undefined,
    carried: RunResume['artifacts'],
  ) {
    this.#given = [...(carried?.given ?? given ?? [])];
    this.#produced = [...(carried?.produced ?? [])];
  }

  /** What the run saved and its children handed back: its result lists them. */
  get produced(): readonly ArtifactRef[] {
    return this.#produced;
  }

  /** What the run may read: its own, its children's, its brief's. */
  get readable(): ArtifactRef[] {
    return [...this.#produced, ...this.#given.filter((ref) => !this.#has(this.#produced, ref))];
  }

  /** The artifacts a tool saved in this run; a reference saved for another run is not taken. */
  saved(refs: readonly ArtifactRef[] | undefined): ArtifactRef[] {
    return this.#add((refs ?? []).filter((ref) => ref.savedBy === this.runId));
  }

  /** What a child handed back, from its own subtree only; the ids its ledger entry lists. */
  handedBack(childId: string, refs: readonly ArtifactRef[] | undefined): string[] {
    const own = (refs ?? []).filter((ref) => ref.savedBy === childId || ref.savedBy.startsWith(`${childId}/`));
    this.#add(own);
    return own.map((ref) => ref.id);
  }

  /** How a parent's model reads what a child handed back: id, name, media type and size of each. */
  describe(ids: readonly string[]): string[] {
    return describeArtifacts(this.#produced.filter((ref) => ids.includes(ref.id)));
  }

  /** The references a brief's ids name, all readable by this run, or the error that says which are not. */
  forBrief(ids: readonly string[] | undefined): { ok: true; refs: ArtifactRef[] } | { ok: false; error: string } {
    const readable = this.readable;
    const refs = (ids ?? []).map((id) => readable.find((ref) => ref.id === id));
    const unknown = (ids ?? []).filter((_, i) => refs[i] === undefined);
    if (unknown.length === 0) return { ok: true, refs: refs as ArtifactRef[] };
    const known = describeArtifacts(readable).join(', ') || 'none';
    return {
      ok: false,
      error: `brief names artifacts this run cannot read (${unknown.join(', ')}); a brief may pass on only its own run's artifacts, its children's or its brief's: ${known}`,
    };
  }

  /** What a result lists: nothing when the run has nothing to hand back. */
  listed(): Pick<RunResult, 'artifacts'> {
    return this.#produced.length > 0 ? { artifacts: [...this.#produced] } : {};
  }

  /** What the next segment carries. */
  toResume(): Pick<RunResume, 'artifacts'> {
    return this.#produced.length + this.#given.length > 0
      ? { artifacts: { produced: [...this.#produced], given: [...this.#given] } }
      : {};
  }

  #add(refs: readonly ArtifactRef[]): ArtifactRef[] {
    const added: ArtifactRef[] = [];
    for (const ref of refs) {
      if (this.#has(this.#produced, ref)) continue;
      this.#produced.push(ref);
      added.push(ref);
    }
    return added;
  }

  #has(list: readonly ArtifactRef[], ref: ArtifactRef): boolean {
    return list.some((other) => other.id === ref.id && other.savedBy === ref.savedBy);
  }
}
