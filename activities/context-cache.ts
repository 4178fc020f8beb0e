/**
 * The dialogues a worker last sent the model, per run: a model call's input carries only what is new since
 * the run's previous call, and the worker puts the prompt back together from here. Only a cache: on a miss (another
 * worker, a restart, an eviction) the call fails with `ModelCall.ContextUnknown` and the workflow sends the whole
 * dialogue again. Keyed by what Temporal records of the calling run, never by what its input claims.
 */
import type { ChatMessage } from '../src/contract/dialogue.js';

interface Entry {
  messages: ChatMessage[];
  chars: number;
}

/** Bounds of a `ContextCache`. */
export interface ContextCacheOptions {
  /** Runs kept (least recently used first out). @default 1000 */
  maxRuns?: number;
  /** Characters of message text kept over all runs (about twice as many bytes). @default 32 Mi */
  maxChars?: number;
}

const charsOf = (messages: readonly ChatMessage[]) =>
  messages.reduce(
    (sum, m) => sum + (m.content?.length ?? 0) + ('tool_calls' in m ? JSON.stringify(m.tool_calls).length : 0),
    0,
  );

/** Per run (`workflowId/runId`), the full message lists of its last two calls, by call sequence number. */
export class ContextCache {
  private readonly runs = new Map<string, Map<number, Entry>>();
  private chars = 0;
  private readonly maxRuns: number;
  private readonly maxChars: number;

  constructor(options: ContextCacheOptions = {}) {
    this.maxRuns = options.maxRuns ?? 1000;
    this.maxChars = options.maxChars ?? 32 * 2 ** 20;
  }

  /** The messages of call `seq` of `run`, if this worker still has them and they are `length` long. */
  get(run: string, seq: number, length: number): ChatMessage[] | undefined {
    const calls = this.runs.get(run);
    const entry = calls?.get(seq);
    if (!calls || !entry || entry.messages.length !== length) return undefined;
    this.runs.delete(run);
    this.runs.set(run, calls);
    return entry.messages;
  }

  /** Keeps the messages of call `seq`; `baseChars` is the size of the part taken from call `baseSeq`, if any. */
  set(run: string, seq: number, messages: ChatMessage[], added: readonly ChatMessage[], baseSeq?: number): void {
    const calls = this.runs.get(run) ?? new Map<number, Entry>();
    const base = baseSeq === undefined ? undefined : calls.get(baseSeq);
    const chars = base && added.length < messages.length ? base.chars + charsOf(added) : charsOf(messages);
    const old = calls.get(seq);
    if (old) this.chars -= old.chars;
    calls.set(seq, { messages, chars });
    this.chars += chars;
    // The last two calls: a retried call still finds the one before it.
    for (const key of [...calls.keys()].sort((a, b) => a - b).slice(0, -2)) {
      this.chars -= calls.get(key)!.chars;
      calls.delete(key);
    }
    this.runs.delete(run);
    this.runs.set(run, calls);
    for (const [key, oldest] of this.runs) {
      if (this.runs.size <= this.maxRuns && this.chars <= this.maxChars) break;
      if (key === run && this.runs.size === 1) break;
      for (const entry of oldest.values()) this.chars -= entry.chars;
      this.runs.delete(key);
    }
  }

  /** Runs held (for tests and metrics). */
  get size(): number {
    return this.runs.size;
  }
}
