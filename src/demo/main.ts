/**
 * `npm run demo`: runs a sample task end to end. Starts an embedded Temporal dev server (persisted under .deputy/)
 * unless TEMPORAL_ADDRESS is set, starts a worker, shows the run's progress, then prints the answer, usage, cost
 * and the run's Temporal UI URL. Offline (scripted model) unless OPENAI_API_KEY or OPENAI_BASE_URL is set.
 * `npm run demo -- --chat`: a conversation in the terminal instead (chat.ts); `-- --mcp`: a run that reads the
 * docs through an MCP server (mcp.ts).
 */
import { ConfigError, StateInUseError } from '../contract/errors.js';
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
  if (process.argv.includes('--chat')) return runChat();
  if (process.argv.includes('--mcp')) return runMcpDemo();
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
      const approved = new Set<string>();
      const showProgress = async () => {
        // A call waiting for approval: the demo is its own person, and says what it does.
        for (const request of await deputy.approvals(workflowId).catch(() => [])) {
          if (approved.has(`${request.run} ${request.requestId}`)) continue;
          approved.add(`${request.run} ${request.requestId}`);
          console.log(terminalSafe(`  approval ${request.requestId} asked: ${request.tool}: ${request.why}`));
          console.log(
            `  the demo approves it as its person (DeputyClient.decideApproval; from a shell: npm run deputy -- approve ${request.run} ${request.requestId})`,
          );
          const decided = await deputy.decideApproval(request.run, request.requestId, 'approve', {
            reason: 'the demo approves its own example',
          });
          console.log(`  approval ${decided.requestId}: approved by ${decided.by}`);
        }
        const state = await deputy.getState(workflowId).catch(() => null);
        for (const event of state?.session.slice(shown) ?? []) {
          const line = describeEvent(event);
          if (line) console.log(terminalSafe(line));
        }
        shown = state?.session.length ?? shown;
        if (!finished && state && state.delegations.length > 0) {
          const tree = renderTree(await loadTree(deputy.temporal, workflowId));
          if (tree !== lastTree && tree.includes('\n')) console.log(`\n${terminalSafe(tree)}\n`);
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
      console.log(`answer: ${terminalSafe(result.output ?? result.error ?? '(none)')}`);
      const u = result.usage;
      const { own, tree: whole, billed } = labelledUsage(u);
      console.log(`usage:  ${own}; ${whole} debited, ${billed}`);
      console.log(
        `        (${u.inputTokens} tokens in + ${u.outputTokens} out, ${u.costMicroUsd} micro-USD${live ? '' : '; offline: the scripted model bills what Deputy counts'})`,
      );
      const tree = await settledTree(deputy, workflowId);
      console.log(`\ndelegation tree (npm run deputy -- tree ${workflowId}):\n${terminalSafe(tree)}`);
      console.log(`\nui:     ${runUrl(demo, workflowId)}`);
      console.log(
        `        children: ${uiBase}/namespaces/${env.temporalNamespace}/workflows?query=${encodeURIComponent(`DeputyRootId="${workflowId}"`)}`,
      );
      if (result.status !== 'completed') process.exitCode = 1;
      if (process.argv.includes('--ui')) {
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
  console.error(err instanceof ConfigError || err instanceof StateInUseError ? `demo: ${err.message}` : err);
  process.exit(1);
});
