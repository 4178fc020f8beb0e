/**
 * `npm run demo`: runs a sample task end to end. Starts an embedded Temporal dev server (persisted under .deputy/)
 * unless TEMPORAL_ADDRESS is set, starts a worker, shows the run's progress, then prints the answer, usage, cost
 * and the run's Temporal UI URL. Offline (scripted model) unless OPENAI_API_KEY or OPENAI_BASE_URL is set.
 * `npm run demo -- --chat`: a conversation in the terminal instead (chat.ts); `-- --mcp`: a run that reads the
 * docs through an MCP server (mcp.ts).
 */
import { DeputyError } from '../contract/errors.js';
import { scriptArgs } from '../ops/script-args.js';
import { safeStrings, terminalStyle } from '../cli/style.js';
import { LiveBlock } from './live-block.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { terminalSafe } from '../rules/terminal.js';

import type { SessionEvent } from '../contract/session.js';
import { loadTree } from '../client/inspect.js';
import { renderTree } from '../client/tree.js';
import { labelledUsage } from '../rules/usage.js';
import { runChat } from './chat.js';
import { runMcpDemo } from './mcp.js';
import { runUrl, settledTree, withDemoEnvironment } from './environment.js';
import { DEMO_SCRIPT, DEMO_TASK } from './script.js';
import { untilInterrupted } from './ui.js';
import type { DeputyConfig } from '../config/schema.js';

const clip = (text: string, max = 90) => (text.length > max ? `${text.slice(0, max - 1)}…` : text).replace(/\n/g, ' ');

function describeEvent(event: SessionEvent): string | null {
  switch (event.type) {
    case 'message/assistant':
      return event.toolCalls.length > 0
        ? event.toolCalls.map((c) => `  model → ${c.name}(${clip(c.arguments, 60)})`).join('\n')
        : `  model → answer${event.synthesisFor ? ` (synthesis: ${event.synthesisFor})` : ''}`;
    case 'tool/result':
      return `  ${event.name} ← ${event.isError ? 'error: ' : ''}${clip(event.content)}`;
    default:
      return null;
  }
}

async function main(): Promise<void> {
  const flags = scriptArgs({
    name: 'demo',
    does: 'a sample task end to end: an embedded Temporal dev server (unless TEMPORAL_ADDRESS is set), a worker, the run live, then its answer, usage, tree and Temporal UI link',
    options: {
      chat: 'a conversation in the terminal instead',
      mcp: 'a run that reads the docs through an MCP server instead',
      ui: 'keep the server, Temporal UI and worker up after the run, until Ctrl-C',
    },
    environment: {
      TEMPORAL_ADDRESS: 'a Temporal server to use instead of the embedded one',
      OPENAI_BASE_URL: 'a real model endpoint (OPENAI_API_KEY its key); offline scripted model without',
      DEPUTY_STATE_DIR: 'where the embedded server persists (default .deputy/state)',
      DEPUTY_CODEC_KEYS: 'encrypt the runs in history',
    },
  });
  if (flags.chat) return runChat();
  if (flags.mcp) return runMcpDemo();
  await withDemoEnvironment(
    DEMO_SCRIPT,
    async (demo) => {
      const { deputy, env, live, uiBase } = demo;
      const workflowId = `demo-${new Date().toISOString().replace(/[:.]/g, '-')}`;
      console.log(`\nrun ${workflowId}\ntask: ${DEMO_TASK}\n`);
      await deputy.startRun(
        {
          task: DEMO_TASK,
          scopes: ['tools.calc', 'tools.notes', 'run.delegate'],
          limits: { maxTurns: 8, maxCostUsd: 0.5 },
        },
        { workflowId },
      );
      const done = deputy.result(workflowId);
      let finished = false;
      void done.finally(() => (finished = true));
      let shown = 0;
      let lastTree = '';
      let lastRetry = '';
      // On a terminal the tree is redrawn where it stands while nothing else was printed below it.
      const block = new LiveBlock(process.stdout);
      const approved = new Set<string>();
      const showProgress = async () => {
        // A call waiting for approval: the demo is its own person, and says what it does.
        for (const request of await deputy.approvals(workflowId).catch(() => [])) {
          if (approved.has(`${request.run} ${request.requestId}`)) continue;
          approved.add(`${request.run} ${request.requestId}`);
          block.print(terminalSafe(`  approval ${request.requestId} asked: ${request.tool}: ${request.why}`));
          block.print(
            `  the demo approves it as its person (DeputyClient.decideApproval; from a shell: npm run deputy -- approve ${request.run} ${request.requestId})`,
          );
          const decided = await deputy.decideApproval(request.run, request.requestId, 'approve', {
            reason: 'the demo approves its own example',
          });
          block.print(`  approval ${decided.requestId}: approved by ${decided.by}`);
        }
        const state = await deputy.getState(workflowId).catch(() => null);
        for (const event of state?.session.slice(shown) ?? []) {
          const line = describeEvent(event);
          if (line) block.print(terminalSafe(line));
        }
        shown = state?.session.length ?? shown;
        // Between attempts of a model call: which attempt failed, of how many, and when the next is.
        const retry = state?.details.match(/retrying: .*/)?.[0] ?? '';
        if (retry !== lastRetry && retry !== '') block.print(terminalSafe(`  ${retry}`));
        lastRetry = retry;
        if (!finished && state && state.delegations.length > 0) {
          const tree = renderTree(safeStrings(await loadTree(deputy.temporal, workflowId)), terminalStyle());
          if (tree !== lastTree && tree.includes('\n')) block.draw(tree);
          lastTree = tree;
        }
      };
      while (!finished) {
        await showProgress();
        await Promise.race([done, sleep(300)]);
      }
      await showProgress();
      const result = await done;
      console.log(`\nstatus: ${result.status}${result.limit ? ` (${result.limit})` : ''}`);
      if (result.status === 'failed') console.log(`error:  ${terminalSafe(result.error ?? '(no reason recorded)')}`);
      else console.log(`answer: ${terminalSafe(result.output ?? '(none)')}`);
      const u = result.usage;
      const { own, tree: whole, billed } = labelledUsage(u);
      console.log(`usage:  ${own}; ${whole} debited, ${billed}`);
      console.log(
        `        (${u.inputTokens} tokens in + ${u.outputTokens} out, ${u.costMicroUsd} micro-USD${live ? '' : '; offline: the scripted model bills what Deputy counts'})`,
      );
      const tree = await settledTree(deputy, workflowId);
      console.log(`\ndelegation tree (npm run deputy -- tree ${workflowId}):\n${tree}`);
      console.log(`\nui:     ${runUrl(demo, workflowId)}`);
      console.log(
        `        children: ${uiBase}/namespaces/${env.temporalNamespace}/workflows?query=${encodeURIComponent(`DeputyRootId="${workflowId}"`)}`,
      );
      if (result.status !== 'completed') process.exitCode = 1;
      if (flags.ui) {
        // The links above stay live (server, UI, worker, codec server) until Ctrl-C.
        console.log(`\nTemporal UI stays up at ${uiBase}; press Ctrl-C to stop`);
        await untilInterrupted();
      } else if (!process.env.TEMPORAL_ADDRESS) {
        console.log(
          '        the server stops now: `npm run ui` serves these runs again (and `npm run deputy -- tree` reaches them ' +
            'while it runs); `npm run demo -- --ui` keeps this one up',
        );
      }
    },
    console.log,
    withDemoApprovals,
  );
}

/**
 * The demo asks approval of a delegation that reserves more than $0.10 for its children (unless the config says
 * otherwise): its three children reserve $0.15, so the run waits until the demo approves.
 */
function withDemoApprovals(config: DeputyConfig): DeputyConfig {
  if (config.approvals) return config;
  return { ...config, approvals: { tools: {}, delegationAboveUsd: 0.1, timeoutSeconds: 600, onTimeout: 'deny' } };
}

main().catch((err: unknown) => {
  // Deputy's own errors say what went wrong and what to do, in a line: no stack.
  console.error(err instanceof DeputyError ? `demo: ${err.message}` : err);
  process.exit(1);
});
