/** Payloads of the updates a person or service sends a live run (besides steering and approvals). */
import { z } from 'zod';

/** Payload of the `sendMessage` update. */
export const SendMessageInput = z.strictObject({
  message: z.string().min(1, 'message must not be empty'),
});
export type SendMessageInput = z.infer<typeof SendMessageInput>;

/** Payload of the `endConversation` update. */
export const EndConversationInput = z.strictObject({ reason: z.string().optional() });
export type EndConversationInput = z.infer<typeof EndConversationInput>;
