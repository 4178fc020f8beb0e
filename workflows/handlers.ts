/**
 * The `state` query, the `sendMessage` / `endConversation` / `interject` / `answerChild` updates and the signals
 * between parent and child runs (interjections, questions and answers), registered from a run's state. Update validators reject bad payloads naming the field, and any update
 * once the run has ended. Deterministic code only.
 */
import { ApplicationFailure, getCurrentDetails, setHandler } from '@temporalio/workflow';
import { FAILURE } from '../src/contract/failures.js';
import {
  admittedSignal,
  answerChildUpdate,
  answerSignal,
  checkVersionSignal,
  endConversationUpdate,
  questionSignal,
  interjectionSignal,
  interjectUpdate,
  sendMessageUpdate,
  stateQuery,
} from '../src/contract/messages.js';
import { CONTRACT, steeringChecker } from '../src/contract/checks/contract-checks.js';
import { admissionWorkflowId } from '../src/rules/children.js';
import { cutText, formatBytes, utf8Bytes } from '../src/rules/payloads.js';
import type { AnswerChildArgs, InterjectArgs } from '../src/contract/delegation.js';
import type { RunState, SendMessageInput } from '../src/contract/run.js';
import { remaining } from '../src/rules/budget.js';
import { failureMessage } from '../src/rules/failure-message.js';
import type { SchemaChecker } from '../src/contract/checks/json-schema.js';
import { deliverInterjection } from './delegation/steering.js';
import { answerQuestion, findQuestion, receiveAnswer, receiveQuestion } from './delegation/questions.js';
import type { Run } from './run/run.js';
import { onSigned } from './signed-messages.js';

/** Registers every handler of `agentRun` on `run`. */
export function registerHandlers(run: Run): void {
  registerVersionCheck(run);
  setHandler(stateQuery, () => stateOf(run));
  setHandler(
    sendMessageUpdate,
    (message) => {
      run.inbox.receive({ type: 'user', content: message.message });
      return { accepted: true as const };
    },
    {
      validator: (message: SendMessageInput) => {
        validateUpdate(CONTRACT.sendMessage, message, 'sendMessage', run.isEnded());
        checkMessageSize(run, 'sendMessage', 'message', message.message);
      },
    },
  );
  setHandler(
    endConversationUpdate,
    () => {
      run.requestEnd();
      return { accepted: true as const };
    },
    {
      validator: (payload) => {
        validateUpdate(CONTRACT.endConversation, payload, 'endConversation', run.isEnded());
        if (run.input.mode !== 'conversation') {
          throw new Error('endConversation: this run is in task mode; cancel it instead');
        }
      },
    },
  );
  // Messages from other runs: signed by a worker, and each from the one run that may send it.
  onSigned(interjectionSignal, CONTRACT.signedInterjection, run.seenMessages, (from, { content }) => {
    if (from !== run.origin?.parentId) return "an interjection not from this run's parent";
    run.inbox.receive({ type: 'interjection', from, content: cutText(content, run.payloads.maxTextBytes) });
  });
  // A child's question (checked against this run's ledger), and the answer to this run's own question.
  onSigned(questionSignal, CONTRACT.signedQuestion, run.seenMessages, (from, body) => receiveQuestion(run, from, body));
  onSigned(answerSignal, CONTRACT.signedAnswer, run.seenMessages, (from, body) => receiveAnswer(run, from, body));
  // A slot for a child this run waits to start, from its tenant's admission workflow.
  onSigned(admittedSignal, CONTRACT.signedAdmitted, run.seenMessages, (from, { childWorkflowId }) => {
    const admission = run.resolvedComposition?.delegation?.admission;
    if (!admission || from !== admissionWorkflowId(admission.tenant)) return "not from this run's admission workflow";
    const child = run.children.byId(childWorkflowId);
    if (child?.entry.status !== 'reserved') return 'no child of this run waits for that slot';
    child.admit();
  });
  setHandler(
    answerChildUpdate,
    async (args) => {
      const answered = await delivered(answerQuestion(run, args, 'client'), FAILURE.AnswerNotDelivered);
      return { delivered: true as const, childWorkflowId: answered.childWorkflowId, questionId: answered.questionId };
    },
    {
      validator: (args: AnswerChildArgs) => {
        validateUpdate(steeringChecker('answer_child'), args, 'answerChild', run.isEnded());
        checkMessageSize(run, 'answerChild', 'answer', args.answer);
        const found = findQuestion(run, args);
        if (!found.ok) throw new Error(`answerChild: ${found.error}`);
      },
    },
  );
  setHandler(
    interjectUpdate,
    async (args) => {
      const sent = await delivered(deliverInterjection(args, run), FAILURE.InterjectNotDelivered);
      return { delivered: true as const, childWorkflowId: sent.childWorkflowId };
    },
    {
      validator: (args: InterjectArgs) => {
        validateUpdate(steeringChecker('interject'), args, 'interject', run.isEnded());
        checkMessageSize(run, 'interject', 'message', args.message);
        const entry = run.children.lastNamed(args.task_name);
        if (entry?.status !== 'running') {
          throw new Error(`interject: no running child named "${args.task_name}" (status ${entry?.status ?? 'none'})`);
        }
      },
    },
  );
}

/**
 * What an update delivered, or its refusal: an error on the way (a failed signal included) is the update's failure,
 * which the caller reads, never the workflow task's.
 */
async function delivered<T extends { ok: true }>(
  attempt: Promise<T | { ok: false; error: string }>,
  type: string,
): Promise<T> {
  let outcome: T | { ok: false; error: string };
  try {
    outcome = await attempt;
  } catch (err) {
    outcome = { ok: false, error: `could not deliver: ${failureMessage(err)}` };
  }
  if (!outcome.ok) throw ApplicationFailure.create({ type, message: outcome.error, nonRetryable: true });
  return outcome;
}

/** Checked against the JSON Schemas generated from the zod contract: validators run on every update. */
function validateUpdate(checker: SchemaChecker, payload: unknown, name: string, ended: boolean): void {
  if (ended) throw new Error(`${name}: the run has ended`);
  checker.assert(payload, `${name} payload`);
}

/**
 * Sizes at the door: a message past the run's text budget is refused naming the limit, and so is one that would take
 * the messages waiting for the next turn past the run's input budget; nothing already accepted is touched.
 */
function checkMessageSize(run: Run, name: string, field: string, text: string): void {
  const { maxTextBytes, maxInputBytes } = run.payloads;
  const size = utf8Bytes(text);
  if (size > maxTextBytes) {
    throw new Error(
      `${name}: ${field} is ${formatBytes(size)}, past this run's limit of ${formatBytes(maxTextBytes)} (payloads.maxTextBytes); send it in parts or as a file`,
    );
  }
  const waiting = run.inbox.bytes;
  if (waiting + size > maxInputBytes) {
    throw new Error(
      `${name}: ${formatBytes(waiting)} of messages already wait for this run's next turn; with ${formatBytes(size)} more they would pass its limit of ${formatBytes(maxInputBytes)} (payloads.maxInputBytes); send it once the run has answered`,
    );
  }
}

/** Whatever it carries, the signal only makes a waiting conversation look at what Temporal names as its target. */
function registerVersionCheck(run: Run): void {
  setHandler(checkVersionSignal, () => {
    run.versions.checkAsked = true;
  });
}

/** The reply of the `state` query. */
function stateOf(run: Run): RunState {
  const composition = run.resolvedComposition;
  const limits = run.account.resolvedLimits;
  return {
    status: run.status,
    details: getCurrentDetails(),
    model: composition?.model ?? null,
    preset: composition?.preset ?? null,
    usage: run.account.usage,
    limits: limits ?? null,
    remaining: limits ? remaining(limits, run.account.usage, Date.now()) : null,
    composition: composition
      ? { preset: composition.presetDefinition, revision: composition.presetRevision, model: composition.model }
      : null,
    activation: composition?.delegation?.enabled ? (composition.delegation.activation ?? 'evidence') : null,
    reserved: run.account.reserved,
    delegations: run.children.ledger.map((entry) => ({ ...entry })),
    session: [...run.events],
    artifacts: run.artifacts.readable,
    version: { current: run.versions.current, earlier: [...run.versions.earlier] },
  };
}
