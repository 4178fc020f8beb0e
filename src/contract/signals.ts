/**
 * Messages between runs (a parent's interjection and answer, a child's question, tenant admission), as signals.
 * Any client of the namespace can send a signal, so each message travels in an envelope that names its sender, its
 * receiver and its id and carries a signature made by a worker with a key only workers hold; a receiver drops what
 * does not parse, is not addressed to it, or is not signed. Must stay importable from workflow code.
 */
import { z } from 'zod';
import { ApprovalsBody } from './approvals.js';

/** Longest id (workflow id, message id) an envelope may carry; Temporal's own workflow ids are far shorter. */
const ID = z.string().min(1).max(1000);

/** A parent's interjection to its live child. */
export const InterjectionBody = z.strictObject({ content: z.string().min(1) });
/** A child's question to its parent. */
export const QuestionBody = z.strictObject({ questionId: z.string().min(1).max(100), question: z.string() });
/** A parent's answer to its child's open question. */
export const AnswerBody = z.strictObject({ questionId: z.string().min(1).max(100), answer: z.string() });
/** A parent asks its tenant's admission workflow for a live-child slot (the cap is the admission's own config). */
export const AdmissionAcquireBody = z.strictObject({ childWorkflowId: ID });
/** A parent gives a child's slot back. */
export const AdmissionReleaseBody = z.strictObject({ childWorkflowId: ID });
/** The admission workflow tells a parent its child may start. */
export const AdmittedBody = z.strictObject({ childWorkflowId: ID });

/** The envelope of a message whose body is `body`. */
function signedMessage<B extends z.ZodType>(body: B) {
  return z.strictObject({
    /** Workflow id of the sender. */
    from: ID,
    /** Workflow id of the receiver: a message sent to one run is refused by every other. */
    to: ID,
    /** Unique per sender: a receiver accepts each id once. */
    id: ID,
    body,
    /** `<keyId>.<HMAC-SHA256, base64url>` over the signal's name, `from`, `to`, `id` and a digest of `body`. */
    sig: z.string().min(1).max(200),
  });
}

/** What a worker signs and checks: the envelope without its signature, with the signal's name. */
export interface MessageToSign {
  signal: string;
  from: string;
  to: string;
  id: string;
  body: unknown;
}

/** An envelope as it travels. */
export interface SignedMessage<B> {
  from: string;
  to: string;
  id: string;
  body: B;
  sig: string;
}

export type InterjectionBody = z.infer<typeof InterjectionBody>;
export type QuestionBody = z.infer<typeof QuestionBody>;
export type AnswerBody = z.infer<typeof AnswerBody>;
export type AdmissionAcquireBody = z.infer<typeof AdmissionAcquireBody>;
export type AdmissionReleaseBody = z.infer<typeof AdmissionReleaseBody>;
export type AdmittedBody = z.infer<typeof AdmittedBody>;

export const SignedInterjection = signedMessage(InterjectionBody);
export const SignedQuestion = signedMessage(QuestionBody);
export const SignedAnswer = signedMessage(AnswerBody);
export const SignedAdmissionAcquire = signedMessage(AdmissionAcquireBody);
export const SignedAdmissionRelease = signedMessage(AdmissionReleaseBody);
export const SignedAdmitted = signedMessage(AdmittedBody);
/** A child's report of the open approval requests of its subtree. */
export const SignedApprovals = signedMessage(ApprovalsBody);

/** Input of the `verifyMessage` local activity. */
export interface VerifyMessageInput {
  message: MessageToSign;
  sig: string;
}
/** Its result: whether a key this worker holds made the signature, and if not, why. */
export type VerifyMessageResult = { ok: true } | { ok: false; reason: string };
