/**
 * A run's own questions to its parent: each open until its answer arrives and the asking call reads it.
 * Deterministic code only.
 */

/** This run's questions to its parent, by id; `undefined` until the answer arrives. */
export class ParentQuestions {
  readonly #open = new Map<string, string | undefined>();

  /** A question this run asked its parent: open until its answer arrives. */
  ask(questionId: string): void {
    this.#open.set(questionId, undefined);
  }

  /** Whether `questionId` is asked and still waits for its answer. */
  awaits(questionId: string): boolean {
    return this.#open.has(questionId) && this.#open.get(questionId) === undefined;
  }

  /** The answer to an open question, kept until the asking call reads it. */
  answer(questionId: string, answer: string): void {
    this.#open.set(questionId, answer);
  }

  /** The answer to `questionId`, if it has arrived. */
  answerTo(questionId: string): string | undefined {
    return this.#open.get(questionId);
  }

  /** The question is closed, answered or not. */
  close(questionId: string): void {
    this.#open.delete(questionId);
  }

  /** True while a question of this run to its parent is open. */
  get anyOpen(): boolean {
    return this.#open.size > 0;
  }
}
