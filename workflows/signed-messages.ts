/**
 * Messages between runs, signed and checked by workers (see `src/contract/signals.ts`): a sender asks a local activity
 * to sign its envelope; a receiver parses the payload, checks it is addressed to this run and not a repeat, and asks
 * a local activity whether a worker signed it. Anything else is dropped, logged and counted; the run goes on.
 * Deterministic code only: no key ever enters workflow code or history.
 */
import {
  getExternalWorkflowHandle,
  log,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  workflowInfo,
  type SignalDefinition,
} from '@temporalio/workflow';
import type { DeputyActivities } from '../activities/index.js';
import type { SignedMessage } from '../src/contract/signals.js';
import type { SchemaChecker } from '../src/contract/checks/json-schema.js';
import { countSignalDropped } from './metrics.js';

const MESSAGE_OPTIONS = { startToCloseTimeout: '10 seconds', retry: { maximumAttempts: 5 } } as const;
const { signMessage } = proxyLocalActivities<DeputyActivities>(MESSAGE_OPTIONS);
const { verifyMessage } = proxyActivities<DeputyActivities>(MESSAGE_OPTIONS);

/** How many accepted message ids a run remembers to refuse repeats (oldest forgotten first). */
const SEEN_MESSAGES_KEPT = 512;

/**
 * Sends `body` to the run `to`, signed as coming from this run. A run's message is signed only with the grant of its
 * tree; a tenant's admission workflow has none.
 */
export async function sendSigned<B>(
  signal: SignalDefinition<[SignedMessage<B>]>,
  { to, id, body, grant }: { to: string; id: string; body: B; grant: string | undefined },
): Promise<void> {
  const from = workflowInfo().workflowId;
  const sig = await signMessage.executeWithOptions({ summary: `sign ${signal.name} for ${to}` }, [
    { message: { signal: signal.name, from, to, id, body }, grant },
  ]);
  await getExternalWorkflowHandle(to).signal(signal, { from, to, id, body, sig });
}

/**
 * Registers `accept` for the signed messages of `signal`: it runs only for a payload that fits `schema`, is addressed
 * to this run, was not accepted before (`seen`: `<from> <id>`, kept by the caller across continue-as-new) and was
 * signed by a worker. `accept` returns why it refuses a message it cannot take (not from the run it must come from).
 */
export function onSigned<B>(
  signal: SignalDefinition<[SignedMessage<B>]>,
  checker: SchemaChecker,
  seen: Set<string>,
  accept: (from: string, body: B) => string | void,
): void {
  setHandler(signal, async (payload: unknown) => {
    const drop = (reason: string) => {
      log.warn(`dropped a ${signal.name} signal: ${reason}`, { signal: signal.name, reason });
      countSignalDropped(signal.name, reason);
    };
    if (!checker.check(payload).ok) return drop('malformed');
    const { from, to, id, body, sig } = payload as SignedMessage<B>;
    if (to !== workflowInfo().workflowId) return drop('addressed to another run');
    const key = `${from} ${id}`;
    if (seen.has(key)) return drop('repeated');
    const verdict = await verifyMessage.executeWithOptions({ summary: `verify ${signal.name} from ${from}` }, [
      { message: { signal: signal.name, from, to, id, body }, sig },
    ]);
    if (!verdict.ok) return drop(verdict.reason);
    if (seen.has(key)) return drop('repeated');
    seen.add(key);
    if (seen.size > SEEN_MESSAGES_KEPT) seen.delete(seen.values().next().value!);
    const refused = accept(from, body);
    if (refused) drop(refused);
  });
}
