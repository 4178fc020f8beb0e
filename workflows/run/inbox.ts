/**
 * What waits for a run's next turn: messages, interjections, children's results, questions and news of approvals,
 * each told apart by its `type`. They join the dialogue only between turns. Deterministic code only.
 */
import type { RunResume } from '../../src/contract/run.js';
import { utf8Bytes } from '../../src/rules/payloads.js';

/** The child an item is about. */
interface About {
  taskName: string;
  childWorkflowId: string;
}

/** One item waiting for the run's next turn. */
export type InboxItem =
  | { type: 'user'; content: string }
  | { type: 'interjection'; from: string; content: string }
  | { type: 'child-result'; from: string; content: string; child: About }
  /** A child's question, or (`answered`) news that a person answered one directly. */
  | { type: 'question'; from: string; content: string; question: About & { questionId: string; answered?: boolean } }
  /** A request for approval somewhere below the run: news, never something the model decides. */
  | { type: 'approval'; from: string; content: string; approval: About & { requestId: string; run: string } };

type Carried = RunResume['inbox'][number];

/** The items waiting, in the order they arrived. */
export class Inbox {
  readonly #items: InboxItem[] = [];

  get items(): readonly InboxItem[] {
    return this.#items;
  }

  get size(): number {
    return this.#items.length;
  }

  /** The UTF-8 bytes of everything waiting. */
  get bytes(): number {
    return this.#items.reduce((sum, item) => sum + utf8Bytes(item.content), 0);
  }

  receive(item: InboxItem): void {
    this.#items.push(item);
  }

  /** Everything waiting, taken for the turn that reads it. */
  takeAll(): InboxItem[] {
    return this.#items.splice(0);
  }

  /** A waiting item taken back before any turn read it (a detached child's result a `wait` returned instead). */
  withdraw(item: InboxItem): void {
    const at = this.#items.indexOf(item);
    if (at >= 0) this.#items.splice(at, 1);
  }

  /** The items as the next segment's input carries them. */
  toResume(): Carried[] {
    return this.#items.map((item): Carried => {
      switch (item.type) {
        case 'user':
          return { from: 'user', content: item.content, interjection: false };
        case 'interjection':
          return { from: item.from, content: item.content, interjection: true };
        case 'child-result':
          return { from: item.from, content: item.content, subagent: item.child, interjection: false };
        case 'question':
          return { from: item.from, content: item.content, question: item.question, interjection: false };
        case 'approval':
          return { from: item.from, content: item.content, approval: item.approval, interjection: false };
      }
    });
  }

  /** The items an earlier segment carried, in their order. */
  resume(carried: readonly Carried[]): void {
    for (const item of carried) this.#items.push(fromCarried(item));
  }
}

function fromCarried({ from, content, subagent, question, approval, interjection }: Carried): InboxItem {
  if (subagent) return { type: 'child-result', from, content, child: subagent };
  if (question) return { type: 'question', from, content, question };
  if (approval) return { type: 'approval', from, content, approval };
  return interjection ? { type: 'interjection', from, content } : { type: 'user', content };
}
