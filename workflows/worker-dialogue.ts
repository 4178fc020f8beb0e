/**
 * What the worker that made a run's last model call holds of its dialogue: a call sends only what is new since then,
 * and a worker that does not hold the rest says so (the call is then sent whole). Deterministic bookkeeping only.
 */
import type { ChatMessage } from '../src/contract/dialogue.js';
import { startsWith } from '../src/contract/dialogue.js';
import type { RunResume } from '../src/contract/run.js';

/** The reference a call carries: its number, and (when reusable) what the worker already holds. */
export interface SentContext {
  seq: number;
  baseSeq?: number;
  base?: number;
}

export class WorkerDialogue {
  /** Model calls made with a context sequence number. */
  #seq = 0;
  /** The messages of the last call that succeeded. */
  #last: { seq: number; messages: ChatMessage[] } | undefined;
  /** The next call's messages, as what is new since the last call unless `whole` (or nothing before is reusable). */
  next(messages: ChatMessage[], whole: boolean): { messages: ChatMessage[]; context: SentContext } {
    const seq = ++this.#seq;
    const last = this.#last;
    const reusable = !whole && last !== undefined && startsWith(messages, last.messages);
    if (!reusable || last.messages.length === 0) return { messages, context: { seq } };
    const base = last.messages.length;
    return { messages: messages.slice(base), context: { seq, baseSeq: last.seq, base } };
  }

  /** Call `seq` succeeded: its worker holds `messages` now. */
  held(seq: number, messages: ChatMessage[]): void {
    this.#last = { seq, messages };
  }

  /** What the next segment carries, when the last call's messages still start the dialogue. */
  carry(dialogue: readonly ChatMessage[]): RunResume['context'] | undefined {
    const last = this.#last;
    if (!last || !startsWith(dialogue, last.messages)) return undefined;
    return { seq: this.#seq, lastSeq: last.seq, length: last.messages.length };
  }

  /** Goes on from what the previous segment carried: its last call's messages start this segment's dialogue. */
  resume(context: NonNullable<RunResume['context']>, dialogue: readonly ChatMessage[]): void {
    this.#seq = context.seq;
    this.#last = { seq: context.lastSeq, messages: dialogue.slice(0, context.length) };
  }
}
