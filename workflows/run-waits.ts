/**
 * What a run waits on from other runs: the answers to its questions to its parent and its children's admission
 * slots; and the shapes of what reaches it between turns. Deterministic code only.
 */
import type { CancellationScope } from '@temporalio/workflow';
import type { LedgerEntry } from '../src/contract/run.js';
import type { ChildOutcome } from '../src/rules/children.js';
import { RunAccount } from './run-account.js';

/** A user message, an interjection or a background child's result waiting to join the dialogue between turns. */
export type InboxItem =
  | { from: 'user'; content: string }
  | { from: string; content: string; interjection: true }
  | { from: string; content: string; subagent: { taskName: string; childWorkflowId: string } }
  | {
      from: string;
      content: string;
      /** A child's question, or (`answered`) news that a person answered one directly. */
      question: { taskName: string; childWorkflowId: string; questionId: string; answered?: boolean };
    }
  | {
      from: string;
      content: string;
      /** A request for approval somewhere below the run: news, never something the model decides. */
      approval: { taskName: string; childWorkflowId: string; requestId: string; run: string };
    };

/** A child dispatched with `wait: false`, as its parent follows it. */
export interface DetachedChild {
  entry: LedgerEntry;
  /** Cancelled when the parent ends first; cancelling the parent cancels it too. */
  scope: CancellationScope;
  /** Resolves once the child has ended and been settled (never rejects). */
  settled: Promise<void>;
  /** How it ended, once it has; `null` when it was cancelled with its parent (nothing to report). */
  outcome?: ChildOutcome | null;
  /** Its result has reached the model: as a `subagent/result` event, or through the `wait` tool. */
  reported: boolean;
}

/** A run's account, with the answers and slots it waits on from other runs. */
export class RunWaits extends RunAccount {
  /** This run's questions to its parent that wait for an answer (`undefined` until it arrives). */
  readonly #openQuestions = new Map<string, string | undefined>();
  /** Children the tenant's admission workflow has given a slot to. */
  readonly #admitted = new Set<string>();

  /** Whether the tenant's admission workflow has given this child a slot. */
  isAdmitted(childWorkflowId: string): boolean {
    return this.#admitted.has(childWorkflowId);
  }

  /** The tenant's admission workflow gave this child a slot. */
  grantSlot(childWorkflowId: string): void {
    this.#admitted.add(childWorkflowId);
  }

  /** A question this run asked its parent: open until its answer arrives. */
  askQuestion(questionId: string): void {
    this.#openQuestions.set(questionId, undefined);
  }

  /** Whether `questionId` is asked and still waits for its answer. */
  awaitsAnswer(questionId: string): boolean {
    return this.#openQuestions.has(questionId) && this.#openQuestions.get(questionId) === undefined;
  }

  /** The answer to an open question, kept until the asking call reads it. */
  answerQuestion(questionId: string, answer: string): void {
    this.#openQuestions.set(questionId, answer);
  }

  /** The answer to `questionId`, if it has arrived. */
  answerTo(questionId: string): string | undefined {
    return this.#openQuestions.get(questionId);
  }

  /** The question is closed, answered or not. */
  closeQuestion(questionId: string): void {
    this.#openQuestions.delete(questionId);
  }

  /** True while a question of this run to its parent is open. */
  asksParent(): boolean {
    return this.#openQuestions.size > 0;
  }
}
