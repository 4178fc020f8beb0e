/**
 * What a watch says of messages between runs (once a worker has checked them) and of approvals, read from the waiting run's history: the request its `requestApproval` recorded,
 * the decision its `decideApproval` update answered, and the deadline its timer (named in its summary) reached.
 */
import type { DecideApprovalResult, RequestApprovalInput, RequestApprovalResult } from '../contract/approvals.js';
import type { HistoryEvent, Payloads, Say } from './watch-events.js';
import type { MessageToSign } from '../contract/signals.js';

export class ApprovalsReading {
  /** Updates accepted as decisions on approval requests, by update id. */
  readonly #decisions = new Set<string>();
  /** The timers approval requests wait on, by timer id: their request's id. */
  readonly #timers = new Map<string, string>();

  constructor(private readonly decode: <T>(payloads: Payloads) => Promise<T | undefined>) {}

  /** A request recorded: what it is for comes from its input, the preview from its result. */
  async requested(input: RequestApprovalInput, result: Payloads, say: Say): Promise<void> {
    const recorded = await this.decode<RequestApprovalResult>(result);
    const { requestId, call, why, deadline } = input;
    await say({
      type: 'approval/requested',
      requestId,
      tool: call.name,
      why,
      preview: recorded?.preview ?? '',
      deadline,
    });
  }

  decisionAccepted(event: HistoryEvent): void {
    this.#decisions.add(event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.meta?.updateId ?? '');
  }

  /** A decision taken: the update's answer says which request, what, and who (a refused update completes nothing). */
  async updateCompleted(event: HistoryEvent, say: Say): Promise<void> {
    const attributes = event.workflowExecutionUpdateCompletedEventAttributes;
    if (!this.#decisions.has(attributes?.meta?.updateId ?? '')) return;
    const result = await this.decode<DecideApprovalResult>(attributes?.outcome?.success);
    if (result) {
      await say({ type: 'approval/decided', requestId: result.requestId, decision: result.decision, by: result.by });
    }
  }

  /** The timer a request waits on names it in its summary: `approval <id> of <tool>, <wait>`. */
  async timerStarted(event: HistoryEvent, say: Say): Promise<void> {
    const summary = event.userMetadata?.summary;
    const text = summary ? await this.decode<string>({ payloads: [summary] }) : undefined;
    // A model call's retry waits on a timer whose summary says which attempt failed and when the next is.
    if (typeof text === 'string' && text.startsWith('retrying: ')) await say({ type: 'model/retrying', status: text });
    const requestId = typeof text === 'string' ? /^approval (\S+) of /.exec(text)?.[1] : undefined;
    if (requestId) this.#timers.set(event.timerStartedEventAttributes?.timerId ?? '', requestId);
  }

  /** A request's timer fired: its deadline passed with no decision. */
  async timerFired(event: HistoryEvent, say: Say): Promise<void> {
    const requestId = this.#timers.get(event.timerFiredEventAttributes?.timerId ?? '');
    if (requestId) await say({ type: 'approval/decided', requestId, decision: 'expired', by: 'timeout' });
  }
}

/** A checked message from another run: a question, an answer or an interjection. */
export async function sayMessage(message: MessageToSign, say: Say) {
  const body = (message.body ?? {}) as Record<string, string | undefined>;
  if (message.signal === 'deputy.question') {
    await say({
      type: 'question/asked',
      child: message.from,
      questionId: body.questionId ?? '',
      question: body.question ?? '',
    });
  } else if (message.signal === 'deputy.answer') {
    await say({ type: 'question/answered', questionId: body.questionId ?? '', from: message.from });
  } else if (message.signal === 'deputy.interjection') {
    await say({ type: 'interjection', from: message.from, to: null });
  }
}
