/**
 * Proof that a tool call came from a model answer in this run. `callModel` seals each call it returns with the
 * workers' message key, bound to the chain of the run Temporal reports as its caller (`caller-chain.ts`); `runTool`,
 * and the check a run makes before a steering call, take a call only with a seal of their own run's chain. An answer
 * a client completes by hand (`temporal activity complete`) carries no seal a client could make, so the calls it
 * invents never run.
 */
import type { ToolCall } from '../src/contract/session.js';
import type { MessageKeys } from '../src/ops/message-keys.js';
import type { MessageToSign } from '../src/contract/signals.js';
import { knownCallerChain, type Chain } from './caller-chain.js';

/** What a seal is made over: the call, and the chain of runs it was made in. */
function sealed(call: ToolCall, chain: Chain): MessageToSign {
  return {
    signal: 'tool-call',
    from: chain.workflowId,
    to: chain.firstRunId,
    id: call.id,
    body: { name: call.name, arguments: call.arguments },
  };
}

export function toolCallSeals(keys: MessageKeys) {
  return {
    /** The seal of `call`, made in the activity that received it from the model. */
    seal: (call: ToolCall, chain = knownCallerChain()): string | undefined => chain && keys.sign(sealed(call, chain)),
    /** Whether `call` carries a seal made in this chain of runs for exactly this call. */
    verify: (call: ToolCall, chain = knownCallerChain()): boolean =>
      chain !== undefined && call.seal !== undefined && keys.verify(sealed(call, chain), call.seal).ok,
  };
}
