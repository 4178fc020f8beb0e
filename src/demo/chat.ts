/**
 * `npm run demo -- --chat`: a conversation with a run in the terminal. The person types; the run (preset
 * `concierge`, delegation on) answers while its background children work; what happens in the tree shows up as it
 * happens: children dispatched, their questions, the answers and interjections sent to them, their results, and the
 * live tree. `/answer <text>` answers the oldest open question directly (the client update); `/approve` and `/deny
 * <reason>` decide the oldest call waiting for approval in the tree (`decideApproval`); Ctrl-C (or Ctrl-D) ends
 * the conversation cleanly and prints its usage and tree.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { terminalSafe } from '../rules/terminal.js';
import { clearLine, createInterface, cursorTo } from 'node:readline';
import { loadTree } from '../client/inspect.js';
import { renderTree } from '../client/tree.js';
import type { RunState } from '../contract/run.js';
import type { SessionEvent } from '../contract/session.js';
import { failureMessage } from '../rules/failure-message.js';
import { labelledUsage } from '../rules/usage.js';
import { argumentsWords, previewOf } from '../rules/approvals.js';
import { CHAT_SCRIPT } from './chat-script.js';
import { runUrl, settledTree, withDemoEnvironment, type DemoEnvironment } from './environment.js';
import type { DeputyConfig } from '../config/schema.js';

const POLL_MS = 250;

/** What a tool call of the conversation's model looks like on screen. */
function describeCall(name: string, rawArguments: string): string {
  let args: Record<string, unknown> = {};
  try {
    args = JSON.parse(rawArguments) as Record<string, unknown>;
  } catch {
    // shown raw below
  }
  switch (name) {
    case 'delegate':
      return ((args.briefs as { task_name?: string; wait?: boolean }[] | undefined) ?? [])
        .map((b) => `  ↳ delegates "${b.task_name}"${b.wait === false ? ' in the background' : ''}`)
        .join('\n');
    case 'interject':
      return `  → interjection to "${String(args.task_name)}": ${String(args.message)}`;
    case 'answer_child':
      return `  → answer to "${String(args.task_name)}": ${String(args.answer)}`;
    case 'wait':
      return `  … waits for its background children`;
    default:
      return `  · ${name}(${rawArguments})`;
  }
}

/** The lines an event of the conversation's session adds to the screen (the person's own messages add none). */
function describeEvent(event: SessionEvent, state: RunState): string[] {
  const entry = (taskName: string) => state.delegations.findLast((e) => e.taskName === taskName);
  switch (event.type) {
    case 'message/assistant':
      return [
        ...(event.content ? [`deputy> ${event.content}`] : []),
        ...event.toolCalls.map((c) => describeCall(c.name, c.arguments)),
      ];
    case 'tool/result':
      return event.isError ? [`  ! ${event.name}: ${event.content}`] : [];
    case 'subagent/question': {
      const question = entry(event.taskName)?.questions?.find((q) => q.id === event.questionId)?.question;
      return [`  ? "${event.taskName}" asks (${event.questionId}): ${question ?? '(see the session)'}`];
    }
    case 'subagent/answered':
      return [`  → "${event.taskName}" was answered directly: ${event.answer}`];
    case 'subagent/approval': {
      const asked = noticeOf(event.content);
      return [`  ⚑ "${event.taskName}" waits for approval (${event.requestId}): ${asked} — /approve or /deny <reason>`];
    }
    case 'subagent/result':
      return [
        `  ✓ "${event.taskName}" ended: ${entry(event.taskName)?.status ?? 'ended'} (its result is untrusted data)`,
      ];
    default:
      return [];
  }
}

/** What an approval notice says was asked (its untrusted JSON line): the tool and its arguments. */
function noticeOf(content: string): string {
  try {
    const { tool, arguments: args } = JSON.parse(content.split('\n')[2] ?? '') as { tool?: string; arguments?: string };
    return `${tool ?? '?'} ${args ?? ''}`;
  } catch {
    return '(see the session)';
  }
}

/** Requests whose arguments the chat has printed whole (`<run> <requestId>`). */
const shownWhole = new Set<string>();

/**
 * `/approve [reason]` or `/deny [reason]`: decides the oldest request open in the tree, as the person. The notice
 * line shows a call's arguments on one line, cut; when that was not all of them, the first `/approve` or `/deny`
 * prints them whole and the person says it again to decide on exactly those.
 */
async function decideOldest(deputy: DemoEnvironment['deputy'], workflowId: string, line: string): Promise<string> {
  const decision = line.startsWith('/approve') ? 'approve' : 'deny';
  const reason = line.replace(/^\/(approve|deny)\s*/, '');
  const [open] = await deputy.approvals(workflowId);
  if (!open) return '  (no call is waiting for approval)';
  const key = `${open.run} ${open.requestId}`;
  if (previewOf(open.arguments) !== open.arguments && !shownWhole.has(key)) {
    shownWhole.add(key);
    return `  ${open.requestId} (${open.tool}) ${argumentsWords(open)}\n  say /${decision} again to ${decision} exactly these`;
  }
  await deputy.decideApproval(workflowId, open.requestId, decision, reason ? { reason } : {});
  const where = open.run === workflowId ? '' : ` in "${open.path.split('/').at(-1)}"`;
  return `  ✓ you ${decision === 'approve' ? 'approved' : 'denied'} ${open.requestId} (${open.tool}${where})`;
}

/** Runs the terminal chat. */
export function runChat(): Promise<void> {
  return withDemoEnvironment(CHAT_SCRIPT, chat, console.log, withChatApprovals);
}

/**
 * The chat's researcher may save its findings as a file, which waits for the person's approval: the request climbs
 * from the child to the conversation, and the person decides it.
 */
function withChatApprovals(config: DeputyConfig): DeputyConfig {
  const presets = config.presets.map((p) =>
    // A child gets only tools its parent holds: the concierge holds the tool it passes on.
    ['researcher', 'concierge'].includes(p.id) && !p.tools.includes('save_artifact')
      ? { ...p, tools: [...p.tools, 'save_artifact'] }
      : p,
  );
  const tools = { ...config.approvals?.tools, save_artifact: 'always' as const };
  return {
    ...config,
    presets,
    grantableScopes: [...new Set([...(config.grantableScopes ?? config.defaultScopes), 'artifacts.write'])],
    approvals: { timeoutSeconds: 3600, onTimeout: 'deny', ...config.approvals, tools },
  };
}

async function chat(demo: DemoEnvironment): Promise<void> {
  const { deputy } = demo;
  const workflowId = `chat-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  const rl = createInterface({ input: process.stdin, output: process.stdout, prompt: 'you> ' });
  const print = (text: string) => {
    clearLine(process.stdout, 0);
    cursorTo(process.stdout, 0);
    console.log(terminalSafe(text));
    if (!ending) rl.prompt(true);
  };
  console.log(
    `\nchat ${workflowId}: type a message and press Enter; "/answer <text>" answers a child's open question yourself;`,
  );
  console.log('"/approve" or "/deny <reason>" decides the oldest call waiting for approval;');
  console.log('Ctrl-C ends the conversation.\n');
  rl.prompt();

  let started = false;
  let ending = false;
  let shown = 0;
  let lastShape = '';
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));

  const follow = async () => {
    const result = deputy.result(workflowId);
    let over = false;
    void result.finally(() => (over = true));
    while (!over) {
      const state = await deputy.getState(workflowId).catch(() => null);
      if (state) {
        for (const event of state.session.slice(shown)) for (const line of describeEvent(event, state)) print(line);
        shown = state.session.length;
        if (state.delegations.length > 0) {
          // Shown again when a run's status, place or notes change, not for every token.
          const nodes = await loadTree(deputy.temporal, workflowId);
          const shape = JSON.stringify(
            nodes.map((n) => [n.workflowId, n.status, n.background, n.openQuestion, n.interjections]),
          );
          if (shape !== lastShape) print(`tree:\n${renderTree(nodes)}`);
          lastShape = shape;
        }
      }
      await Promise.race([result, sleep(POLL_MS)]);
    }
    await summarise(demo, workflowId, await result);
    rl.close();
    finish();
  };

  const end = async () => {
    if (ending) return;
    ending = true;
    if (!started) {
      rl.close();
      finish();
      return;
    }
    print('(ending the conversation …)');
    await deputy.endConversation(workflowId).catch((err: unknown) => print(`  ! ${failureMessage(err)}`));
  };

  rl.on('SIGINT', () => void end());
  rl.on('close', () => void end());
  rl.on('line', (raw) => {
    const line = raw.trim();
    if (!line || ending) return rl.prompt();
    void (async () => {
      try {
        if (/^\/(approve|deny)\b/.test(line)) return print(await decideOldest(deputy, workflowId, line));
        if (line.startsWith('/answer ')) {
          const [open] = await deputy.openQuestions(workflowId);
          if (!open) return print('  (no question is waiting for an answer)');
          await deputy.answer(open.childWorkflowId, line.slice('/answer '.length), open.questionId);
          return print(`  → you answered "${open.taskName}" (${open.questionId}) directly`);
        }
        if (!started) {
          started = true;
          await deputy.startRun(
            {
              task: line,
              mode: 'conversation',
              preset: 'concierge',
              scopes: ['tools.calc', 'tools.notes', 'run.delegate', 'artifacts.write'],
              limits: { maxTurns: 30, maxCostUsd: 0.5 },
            },
            { workflowId },
          );
          void follow();
        } else {
          await deputy.sendMessage(workflowId, line);
        }
      } catch (err) {
        print(`  ! ${failureMessage(err)}`);
      }
    })();
  });
  await finished;
}

/** What the conversation used, its tree and where to look at it. */
async function summarise(
  demo: DemoEnvironment,
  workflowId: string,
  result: Awaited<ReturnType<DemoEnvironment['deputy']['result']>>,
) {
  const usage = labelledUsage(result.usage);
  console.log(terminalSafe(`\nstatus: ${result.status}${result.error ? ` (${result.error})` : ''}`));
  console.log(
    `usage:  ${usage.own}; ${usage.tree} debited, ${usage.billed}${demo.live ? '' : ' (offline: the scripted model bills what Deputy counts)'}`,
  );
  console.log(
    `\ndelegation tree (npm run deputy -- tree ${workflowId}):\n${await settledTree(demo.deputy, workflowId)}`,
  );
  console.log(`\nui:     ${runUrl(demo, workflowId)}`);
}
