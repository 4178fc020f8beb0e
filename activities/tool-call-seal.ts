/**
 * Proof that a tool call came from a model answer in this run. `callModel` seals each call it returns with the
 * workers' message key, bound to the run Temporal reports as its caller; `runTool` runs a call only with a seal that
 * is its own run's. An answer a client completes by hand (`temporal activity complete`) carries no seal a client could
 * make, so the calls it invents never run.
 */
import { activityInfo } from '@temporalio/activity';
import type { ToolCall } from '../src/contract/session.js';
import type { MessageKeys } from '../src/ops/message-keys.js';
import type { MessageToSign } from '../src/contract/signals.js';

/** What a seal is made over: the call, and the workflow and run it was made in. */
function sealed(call: ToolCall): MessageToSign | undefined {
  const execution = activityInfo().workflowExecution;
  if (!execution) return undefined;
  return {
    signal: 'tool-call',
    from: execution.workflowId,
    to: execution.runId,
    id: call.id,
    body: { name: call.name, arguments: call.arguments },
  };
}

export function toolCallSeals(keys: MessageKeys) {
  return {
    /** The seal of `call`, made in the activity that received it from the model. */
    seal: (call: ToolCall): string | undefined => {
      const message = sealed(call);
      return message && keys.sign(message);
    },
    /** Whether `call` carries a seal made in this run for exactly this call. */
    verify: (call: ToolCall): boolean => {
      const message = sealed(call);
      return message !== undefined && call.seal !== undefined && keys.verify(message, call.seal).ok;
    },
  };
}
