/**
 * Activities of messages between runs: asking a tenant's admission workflow for a slot, signing and checking
 * messages with keys only workers hold, and the tenant's cap as the config says it now.
 */
import type { Client } from '@temporalio/client';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { ConfigStore } from '../src/config/store.js';
import { configEntry } from '../src/config/schema.js';
import type { AdmissionRequest, SignMessageInput } from '../src/contract/activities.js';
import { admissionAcquireSignal } from '../src/contract/messages.js';
import type { VerifyMessageInput, VerifyMessageResult } from '../src/contract/signals.js';
import type { MessageKeys } from '../src/ops/message-keys.js';
import { admissionWorkflowId, tenantOfAdmission } from '../src/rules/children.js';

/** The activities of messages between runs. */
export function createMessaging({
  keys,
  temporal,
  config,
  childTaskQueue,
}: {
  keys: MessageKeys;
  temporal: () => Client;
  config: ConfigStore;
  childTaskQueue: string;
}) {
  return {
    /**
     * Asks the tenant's admission workflow (started if it is not running) for a slot for a child. The sender is
     * the workflow this activity runs for, as Temporal records it, whatever the input says.
     */
    async requestAdmission(request: AdmissionRequest): Promise<void> {
      const parentId = Context.current().info.workflowExecution?.workflowId;
      if (!parentId) throw ApplicationFailure.nonRetryable('requestAdmission runs only for a workflow');
      const to = admissionWorkflowId(request.tenant);
      const { childWorkflowId } = request;
      const signed = keys.seal({
        signal: admissionAcquireSignal.name,
        from: parentId,
        to,
        id: `acquire:${childWorkflowId}`,
        body: { childWorkflowId },
      });
      await temporal().workflow.signalWithStart('tenantAdmission', {
        workflowId: to,
        taskQueue: childTaskQueue,
        args: [{ tenant: request.tenant, cap: request.cap, sweepSeconds: request.sweepSeconds }],
        signal: admissionAcquireSignal,
        signalArgs: [signed],
        staticSummary: `admission of tenant ${request.tenant}: at most ${request.cap} live children`,
      });
    },
    /**
     * Signs a message between runs; a local activity, so no client can have it scheduled. A run signs only messages
     * from itself, as Temporal records it.
     */
    async signMessage({ message }: SignMessageInput): Promise<string> {
      const sender = Context.current().info.workflowExecution?.workflowId;
      if (message.from !== sender) {
        throw ApplicationFailure.nonRetryable(
          `signMessage signs only messages from the run that asks (${JSON.stringify(sender)}), not from ${JSON.stringify(message.from)}`,
        );
      }
      return keys.sign(message);
    },
    /** Checks a message between runs was signed by a worker. */
    async verifyMessage({ message, sig }: VerifyMessageInput): Promise<VerifyMessageResult> {
      return keys.verify(message, sig);
    },
    /**
     * The live-child cap the configuration gives now to the tenant whose admission workflow asks: the tenant is the
     * one its workflow id names, as Temporal reports the caller, whatever its input says (a client may start that
     * workflow first, with any input). A tenant the configuration gives no cap has no slots.
     */
    async admissionCap(): Promise<{ tenant: string; cap: number }> {
      const caller = Context.current().info.workflowExecution?.workflowId ?? '';
      const tenant = tenantOfAdmission(caller);
      if (tenant === undefined) {
        throw ApplicationFailure.nonRetryable(
          `admissionCap answers only a tenant's admission workflow, not ${JSON.stringify(caller)}`,
        );
      }
      return { tenant, cap: configEntry(config.current.tenants, tenant)?.maxLiveChildren ?? 0 };
    },
  };
}
