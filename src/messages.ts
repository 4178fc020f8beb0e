/** Queries and updates of `agentRun`, beside the schemas of their payloads. */
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { EndConversationInput, RunState, SendMessageInput } from './run-schema.js';

/** Reads the run's status, usage, remaining limits and effective dialogue. */
export const stateQuery = defineQuery<RunState>('state');

/** Puts a user message into a live run; resolves once the message is in the session. */
export const sendMessageUpdate = defineUpdate<{ accepted: true }, [SendMessageInput]>('sendMessage');

/** Ends a conversation-mode run after its current turn. */
export const endConversationUpdate = defineUpdate<{ accepted: true }, [EndConversationInput]>('endConversation');
