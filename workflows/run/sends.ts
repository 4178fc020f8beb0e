/**
 * Messages a run sends without stopping for them (news for its parent of the approvals below it): each is kept until
 * it is through, a failure is logged rather than lost, and the run waits for them before it ends or continues as
 * new. Deterministic code only.
 */
import { isCancellation, log } from '@temporalio/workflow';
import { failureMessage } from '../../src/rules/failure-message.js';

/** The sends of one run still under way. */
export class PendingSends {
  readonly #pending = new Map<object, Promise<void>>();

  /** Keeps `sending` until it is through; `what` names it in the log if it fails. */
  track(what: string, sending: Promise<void>): void {
    const key = {};
    this.#pending.set(key, this.#through(key, what, sending));
  }

  async #through(key: object, what: string, sending: Promise<void>): Promise<void> {
    try {
      await sending;
    } catch (err) {
      if (!isCancellation(err)) log.warn(`${what} failed: ${failureMessage(err)}`);
    } finally {
      this.#pending.delete(key);
    }
  }

  /** Resolves once every send tracked so far (and any tracked meanwhile) is through. */
  async allThrough(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all(this.#pending.values());
  }
}
