/**
 * A run's children: those of this segment as `Child` values, those of earlier segments as their ledger recorded
 * them (a segment starts with no live child), and where each child's view of the run's session ends.
 * Deterministic code only.
 */
import type { LedgerEntry, RunResume } from '../../src/contract/run.js';
import type { Child } from '../delegation/child.js';

/** Every child a run booked, in order. */
export class RunChildren {
  /** Children of earlier segments, settled. */
  readonly #earlier: LedgerEntry[] = [];
  readonly #booked: Child[] = [];
  /** Per child: the run's `appended` when its context was last sent. */
  readonly #snapshotMarks = new Map<string, number>();

  /** The delegations ledger: every child booked over the run's life, in order. */
  get ledger(): readonly Readonly<LedgerEntry>[] {
    return [...this.#earlier, ...this.#booked.map((child) => child.entry)];
  }

  /** How many children the run booked over its life. */
  get count(): number {
    return this.#earlier.length + this.#booked.length;
  }

  /** The last child booked under `taskName`, as the ledger shows it (of any segment). */
  lastNamed(taskName: string): Readonly<LedgerEntry> | undefined {
    return this.ledger.findLast((entry) => entry.taskName === taskName);
  }

  /** The child of this segment with this workflow id. */
  byId(childWorkflowId: string): Child | undefined {
    return this.#booked.findLast((child) => child.id === childWorkflowId);
  }

  /** The children of this segment. */
  get booked(): readonly Child[] {
    return this.#booked;
  }

  book(child: Child): void {
    this.#booked.push(child);
  }

  /** Children reserved whose limits are not given yet: the reservations an overrun of the run may cut. */
  preparing(): Child[] {
    return this.#booked.filter((child) => child.phase === 'preparing');
  }

  /** Children followed detached (dispatched with `wait: false`, or left running when one asked a question). */
  detached(): Child[] {
    return this.#booked.filter((child) => child.detached !== undefined);
  }

  /** True while a child is reserved or running. */
  hasLive(): boolean {
    return this.#booked.some((child) => child.live);
  }

  /** The children the run waits for (not those detached) that are reserved or running. */
  liveWaited(): Child[] {
    return this.#booked.filter((child) => child.live && !child.entry.background);
  }

  /** True while a child followed detached has not ended. */
  hasLiveDetached(): boolean {
    return this.#booked.some((child) => child.detached !== undefined && !child.over);
  }

  /** True while a child's question to this run waits for an answer. */
  hasOpenQuestions(): boolean {
    return this.#booked.some((child) => child.questions.some((q) => q.status === 'open'));
  }

  /** Where `childWorkflowId`'s view of the run's session ends. */
  snapshotMark(childWorkflowId: string): number | undefined {
    return this.#snapshotMarks.get(childWorkflowId);
  }

  /** A child has been sent the run's session up to `mark`. */
  markSnapshot(childWorkflowId: string, mark: number): void {
    this.#snapshotMarks.set(childWorkflowId, mark);
  }

  /** What the next segment carries of them: settled, every one. */
  toResume(): Pick<RunResume, 'delegations' | 'snapshotMarks'> {
    return {
      delegations: this.ledger.map((entry) => ({ ...entry })),
      snapshotMarks: Object.fromEntries(this.#snapshotMarks),
    };
  }

  resume({ delegations, snapshotMarks }: Pick<RunResume, 'delegations' | 'snapshotMarks'>): void {
    this.#earlier.push(...delegations);
    for (const [child, mark] of Object.entries(snapshotMarks)) this.#snapshotMarks.set(child, mark);
  }
}
