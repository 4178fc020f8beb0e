/**
 * A run's dialogue as the model reads it, and when each event was appended: what a child saw is what came before its
 * mark, wherever a compaction has since moved the event. Deterministic code only.
 */
import type { SessionEvent } from '../../src/contract/session.js';

/** The events of one run's session. */
export class RunSession {
  #events: SessionEvent[] = [];
  /** Events appended over the run's life (compaction does not lower it). */
  #appended = 0;
  /** When each event of the dialogue was appended (the value of `appended` after it). */
  readonly #appendedAt = new WeakMap<SessionEvent, number>();

  /** The events as the model reads them (a compaction replaces the oldest). */
  get events(): readonly SessionEvent[] {
    return this.#events;
  }

  /** Events appended over the run's life (compaction does not lower it). */
  get appended(): number {
    return this.#appended;
  }

  append(event: SessionEvent): void {
    this.#appended += 1;
    this.#appendedAt.set(event, this.#appended);
    this.#events.push(event);
  }

  /**
   * The dialogue once a compaction has replaced `replaced` by its summary: the summary counts as appended with the
   * newest event it took in, so a child that had not seen that event is sent the summary.
   */
  compacted(events: SessionEvent[], replaced: readonly SessionEvent[]): void {
    const newest = Math.max(0, ...replaced.map((event) => this.#appendedAt.get(event) ?? 0));
    for (const event of events) if (!this.#appendedAt.has(event)) this.#appendedAt.set(event, newest);
    this.#events = events;
  }

  /** True when `event` was appended after `mark` (a value of `appended`). */
  appendedAfter(event: SessionEvent, mark: number): boolean {
    return (this.#appendedAt.get(event) ?? 0) > mark;
  }

  /**
   * The session an earlier segment carried. It had no live child, so no child's mark is older than the events it
   * carries: they are counted back from the end, as they were appended.
   */
  resume(events: readonly SessionEvent[], appended: number): void {
    this.#events.push(...events);
    this.#appended = appended;
    this.#events.forEach((event, i) => this.#appendedAt.set(event, appended - (this.#events.length - 1 - i)));
  }
}
