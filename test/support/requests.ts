/** Which recorded model request is which, for scripted replies, and a gate a reply can wait on. */
import { forTask, lastMessage, type RecordedRequest } from '../../src/testing/script.js';

/** A gate a scripted reply waits on, opened by the test. */
export function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/** A child's request: its task message is `## Your task\n<message>` (first user message after any background). */
export const childTask = (message: string, toolResults?: number) => (r: RecordedRequest) =>
  r.body.messages.some((m) => m.role === 'user' && (m.content ?? '').endsWith(`## Your task\n${message}`)) &&
  (toolResults === undefined || r.body.messages.filter((m) => m.role === 'tool').length === toolResults);

/** The parent's request right after the results of its last tool calls. */
export const afterTools = (task: string) => (r: RecordedRequest) =>
  forTask(task)(r) && r.body.messages.at(-1)?.role === 'tool';

/** The parent's request that ends with the given user message. */
export const said = (task: string, text: string) => (r: RecordedRequest) => forTask(task)(r) && lastMessage(r) === text;

/** The parent's request that ends with a background child's result. */
export const heardFrom = (task: string) => (r: RecordedRequest) =>
  forTask(task)(r) && lastMessage(r).startsWith('[background child ');
