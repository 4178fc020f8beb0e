/**
 * Where a run's work stands in the queues a fleet shares: the priority and fairness key that every model call, tool
 * call and child start carries. Temporal's matching service orders the tasks by them; Deputy only says which is which.
 * Deterministic code only (workflows import it).
 */
import type { Priority } from '@temporalio/common';
import { prefixWithin, utf8Bytes } from './payloads.js';

/**
 * Priority keys, lower first. A person waits on a conversation's turn; a run's own turns come next; children run in
 * the background of someone's run and yield to both. 3, Temporal's default, stays for work Deputy did not start.
 */
export const PRIORITY_KEYS = { conversation: 1, run: 2, child: 4 } as const;

/** The longest fairness key Temporal takes, in UTF-8 bytes. */
const FAIRNESS_KEY_BYTES = 64;

/** What decides a run's place: its kind, and whose work it is. */
export interface RunPlace {
  mode: 'task' | 'conversation';
  depth: number;
  tenant: string | undefined;
  rootId: string;
}

/**
 * The priority a run's calls and children's starts carry: its kind's key, and its tenant as fairness key (its tree's
 * root without one), so one tenant's burst of runs waits its turn behind the others' instead of filling the queue.
 */
export function runPriority(place: RunPlace): Priority {
  const priorityKey =
    place.depth > 0
      ? PRIORITY_KEYS.child
      : place.mode === 'conversation'
        ? PRIORITY_KEYS.conversation
        : PRIORITY_KEYS.run;
  return { priorityKey, fairnessKey: fairnessKey(place.tenant ?? place.rootId) };
}

/** The priority a run gives the children it starts: theirs is a child's, and their fairness key the same as its own. */
export function childPriority(parent: Priority): Priority {
  return { ...parent, priorityKey: PRIORITY_KEYS.child };
}

/**
 * `key` as Temporal takes it: as it is when it fits in 64 bytes; else a prefix and a hash of the whole, so two long
 * ids that share their first bytes stay apart.
 */
export function fairnessKey(key: string): string {
  if (utf8Bytes(key) <= FAIRNESS_KEY_BYTES) return key;
  const hash = fnv1a64(key);
  return `${prefixWithin(key, FAIRNESS_KEY_BYTES - hash.length - 1)}~${hash}`;
}

/** FNV-1a, 64 bits, as 16 hex digits: a short stable name for a long key (not a secret). */
function fnv1a64(text: string): string {
  let hash = 0xcbf29ce484222325n;
  for (const char of text) {
    hash ^= BigInt(char.codePointAt(0)!);
    hash = (hash * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return hash.toString(16).padStart(16, '0');
}
