/**
 * Clarifications bubble up: a child's `ask_parent` suspends it durably until its parent answers; the question
 * reaches the parent as an untrusted `subagent/question` between turns; the parent's model answers with
 * `answer_child` (or asks its own parent, or the person), or a person answers through the `answerChild` update. An
 * unanswered question ends with the child's deadline or the parent's end. Deterministic code only.
 */
import { condition, setCurrentDetails } from '@temporalio/workflow';
import type { RunToolResult } from '../../src/contract/activities.js';
import { answerSignal, questionSignal } from '../../src/contract/messages.js';
import type { LedgerEntry } from '../../src/contract/run.js';
import type { AnswerBody, QuestionBody } from '../../src/contract/signals.js';
import type { ToolCall } from '../../src/contract/session.js';
import { bounded, renderQuestion } from '../../src/rules/children.js';
import type { AnswerChildArgs } from '../../src/contract/delegation.js';
import { cutText } from '../../src/rules/payloads.js';
import { now, type Run } from '../run/run.js';
import { parseSteeringArgs } from '../../src/contract/checks/contract-checks.js';
import { toolError } from './plan.js';
import type { Child } from './child.js';
import { sendSigned } from '../signed-messages.js';

type Question = NonNullable<LedgerEntry['questions']>[number];

/** The child's side of `ask_parent`: asks, then waits for the answer (or its deadline). */
export async function runAskParent(call: ToolCall, run: Run): Promise<RunToolResult> {
  const { origin } = run;
  if (!origin) return toolError('this run has no parent to ask (nobody delegated to it); decide yourself');
  const parsed = parseSteeringArgs('ask_parent', call.arguments);
  if (!parsed.ok) return toolError(parsed.error);
  // Unique over the run's life: a segment's counter restarts, and no question is open across continue-as-new.
  const questionId = run.nextQuestionId();
  const question = cutText(parsed.args.question, run.payloads.maxTextBytes);
  run.questions.ask(questionId);
  try {
    await sendSigned(questionSignal, {
      to: origin.parentId,
      id: `question:${questionId}`,
      body: { questionId, question },
      grant: run.treeGrant,
    });
    run.setStatus('waiting_for_answer');
    setCurrentDetails(`waiting for the answer to ${questionId}: ${bounded(question.replace(/\s+/g, ' '), 100)}`);
    // The deadline ends the wait: by the timer that cancels the loop, or here when the deadline bounds activities.
    const { deadlineMs } = run.account.limits;
    const answered = () => run.questions.answerTo(questionId) !== undefined;
    let inTime = true;
    if (run.deadlineOnActivities && deadlineMs !== null) {
      inTime = await condition(answered, Math.max(1, deadlineMs - Date.now()));
    } else {
      await condition(answered);
    }
    const answer = run.questions.answerTo(questionId);
    run.questions.close(questionId);
    run.setStatus(run.liveStatus());
    if (!inTime) return toolError(`no answer to ${questionId} arrived before this run's deadline`);
    return { content: `Answer from the run that delegated to you: ${answer}`, isError: false };
  } finally {
    run.questions.close(questionId);
  }
}

/** The child's side of the answer: kept only for a question it has open and from its own parent. */
export function receiveAnswer(run: Run, from: string, { questionId, answer }: AnswerBody): string | void {
  if (from !== run.origin?.parentId) return "an answer not from this run's parent";
  if (!run.questions.awaits(questionId)) return `no open question ${questionId}`;
  run.questions.answer(questionId, cutText(answer, run.payloads.maxTextBytes));
}

/**
 * The parent's side of a question: accepted only from a child this run started (its ledger, which Temporal's own
 * records back) that is still running; anything else is dropped. It joins the dialogue between turns.
 */
export function receiveQuestion(
  run: Run,
  childWorkflowId: string,
  { questionId, question }: QuestionBody,
): string | void {
  if (run.isEnded()) return 'the run has ended';
  const child = run.children.byId(childWorkflowId);
  if (child?.entry.status !== 'running') return 'not from a running child of this run';
  const text = cutText(question, run.payloads.maxTextBytes);
  if (!child.ask(questionId, text, now())) return `question ${questionId} was asked before`;
  const { taskName } = child;
  run.inbox.receive({
    type: 'question',
    from: childWorkflowId,
    content: renderQuestion({ taskName, questionId, question: text }),
    question: { taskName, childWorkflowId, questionId },
  });
}

/** True while a question from one of `childIds` waits in the inbox for the model (it ends a wait for them). */
export function questionWaiting(run: Run, childIds: readonly string[]): boolean {
  return run.inbox.items.some(
    (item) => item.type === 'question' && !item.question.answered && childIds.includes(item.question.childWorkflowId),
  );
}

/** Which open question `args` answers, or why none. */
export function findQuestion(
  run: Run,
  args: AnswerChildArgs,
): { ok: true; child: Child; question: Readonly<Question> } | { ok: false; error: string } {
  const entry = run.children.lastNamed(args.task_name);
  if (!entry) {
    const names = run.children.ledger.map((e) => e.taskName).join(', ') || 'none';
    return { ok: false, error: `no child named "${args.task_name}"; the children are: ${names}` };
  }
  const questions = entry.questions ?? [];
  const open = questions.filter((q) => q.status === 'open');
  // A question open is one of a child of this segment (none is open across continue-as-new).
  const child = run.children.byId(entry.childWorkflowId);
  if (args.question_id !== undefined) {
    const question = questions.find((q) => q.id === args.question_id);
    if (!question) {
      const ids = questions.map((q) => q.id).join(', ') || 'none';
      return {
        ok: false,
        error: `child "${args.task_name}" asked no question ${args.question_id}; its questions: ${ids}`,
      };
    }
    if (question.status !== 'open' || !child) return { ok: false, error: closedQuestion(args.task_name, question) };
    return { ok: true, child, question };
  }
  if (open.length === 1 && child) return { ok: true, child, question: open[0]! };
  if (open.length > 1) {
    return {
      ok: false,
      error: `child "${args.task_name}" has ${open.length} open questions (${open.map((q) => q.id).join(', ')}); give question_id`,
    };
  }
  const last = questions.at(-1);
  return {
    ok: false,
    error: last ? closedQuestion(args.task_name, last) : `child "${args.task_name}" has asked no question`,
  };
}

function closedQuestion(taskName: string, question: Readonly<Question>): string {
  return question.status === 'answered'
    ? `question ${question.id} of child "${taskName}" was already answered${question.answeredBy === 'client' ? ' directly by a person' : ''}: ${bounded(question.answer ?? '', 200)}`
    : `question ${question.id} of child "${taskName}" went unanswered: the child has ended`;
}

/**
 * Delivers an answer to the child's open question and records it in the ledger; `client` answers (the update) also
 * tell this run's model, between turns, that the question is settled.
 */
export async function answerQuestion(
  run: Run,
  args: AnswerChildArgs,
  by: 'model' | 'client',
): Promise<{ ok: true; childWorkflowId: string; questionId: string } | { ok: false; error: string }> {
  const found = findQuestion(run, args);
  if (!found.ok) return found;
  const { child, question } = found;
  const answer = cutText(args.answer, run.payloads.maxTextBytes);
  // Marked before the await, so a second answer meanwhile (the model and a person at once) is refused, not sent.
  child.answer(question.id, answer, by, now());
  try {
    await sendSigned(answerSignal, {
      to: child.id,
      id: `answer:${question.id}`,
      body: { questionId: question.id, answer },
      grant: run.treeGrant,
    });
  } catch (err) {
    child.unanswer(question.id);
    throw err;
  }
  if (by === 'client') {
    run.inbox.receive({
      type: 'question',
      from: 'client',
      content: answer,
      question: { taskName: child.taskName, childWorkflowId: child.id, questionId: question.id, answered: true },
    });
  }
  return { ok: true, childWorkflowId: child.id, questionId: question.id };
}

/** The `answer_child` tool. */
export async function runAnswerChild(call: ToolCall, run: Run): Promise<RunToolResult> {
  const parsed = parseSteeringArgs('answer_child', call.arguments);
  if (!parsed.ok) return toolError(parsed.error);
  const answered = await answerQuestion(run, parsed.args, 'model');
  return answered.ok
    ? { content: `answer to ${answered.questionId} delivered to ${answered.childWorkflowId}`, isError: false }
    : toolError(`${answered.error}; nothing was sent`);
}
