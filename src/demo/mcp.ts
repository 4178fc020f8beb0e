/**
 * `npm run demo -- --mcp`: a run that reads Deputy's own docs through the reference MCP filesystem server
 * (`@modelcontextprotocol/server-filesystem`, given `docs/` only), offered to a `librarian` preset as
 * `docs_list_directory` and `docs_read_text_file`. Offline unless a model endpoint is configured.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { parseConfig, type DeputyConfig } from '../config/schema.js';
import { terminalSafe } from '../rules/terminal.js';
import { microToUsd } from '../rules/usage.js';
import { forTask, type ScriptRule } from '../testing/script.js';
import { PROJECT_ROOT } from '../testing/temporal-cli.js';
import { withDemoEnvironment } from './environment.js';

const DOCS = join(PROJECT_ROOT, 'docs');

/** The config the demo adds (docs/mcp.md shows it as YAML). */
const DEMO_MCP_CONFIG = {
  mcpServers: {
    docs: {
      command: 'node',
      args: [join(PROJECT_ROOT, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js'), DOCS],
      scopes: ['tools.docs'],
      tools: ['list_directory', 'read_text_file'],
    },
  },
  /** A caller may ask for the server's scope (added to the config's). */
  grantableScopes: ['tools.docs'],
  preset: {
    id: 'librarian',
    persona: 'You answer questions about Deputy from its docs, which you read with your tools. Quote what you use.',
    tools: ['docs_list_directory', 'docs_read_text_file'],
  },
};

const DEMO_MCP_TASK = 'What may an MCP server do to a Deputy run, and what can it never do? Read the docs.';

const call = (name: string, args: unknown) => ({ toolCalls: [{ name, arguments: args }] });

/** What a good model would do offline: look at the docs, read the security page, answer from it. */
const DEMO_MCP_SCRIPT: ScriptRule[] = [
  { when: forTask(DEMO_MCP_TASK, 0), reply: call('docs_list_directory', { path: DOCS }) },
  { when: forTask(DEMO_MCP_TASK, 1), reply: call('docs_read_text_file', { path: join(DOCS, 'security.md') }) },
  {
    when: forTask(DEMO_MCP_TASK, 2),
    reply: {
      text: "Per docs/security.md: an MCP server only answers the tool calls a run makes with the tools it was offered; what it returns is untrusted data for the model, bounded like any tool result. It can never widen a run's tools, scopes or budget, see the worker's secrets beyond what its config passes, or reach a child that was not offered its tools.",
    },
  },
];

const withDemoServer = (config: DeputyConfig): DeputyConfig =>
  parseConfig({
    ...config,
    mcpServers: { ...config.mcpServers, ...DEMO_MCP_CONFIG.mcpServers },
    presets: [...config.presets, DEMO_MCP_CONFIG.preset],
    grantableScopes: [...(config.grantableScopes ?? config.defaultScopes), ...DEMO_MCP_CONFIG.grantableScopes],
  });

export async function runMcpDemo(): Promise<void> {
  await withDemoEnvironment(
    DEMO_MCP_SCRIPT,
    async ({ deputy }) => {
      const workflowId = `demo-mcp-${new Date().toISOString().replace(/[:.]/g, '-')}`;
      console.log(`\nrun ${workflowId}\ntask: ${DEMO_MCP_TASK}\n`);
      await deputy.startRun(
        { task: DEMO_MCP_TASK, preset: 'librarian', scopes: ['tools.docs'], limits: { maxTurns: 6 } },
        { workflowId },
      );
      const done = deputy.result(workflowId);
      let shown = 0;
      for (let finished = false; !finished;) {
        finished = await Promise.race([done.then(() => true), sleep(300).then(() => false)]);
        const state = await deputy.getState(workflowId).catch(() => null);
        for (const event of state?.session.slice(shown) ?? []) {
          if (event.type === 'tool/result') {
            const text = event.content.replace(/\s+/g, ' ');
            console.log(terminalSafe(`  ${event.name} ← ${text.length > 90 ? `${text.slice(0, 89)}…` : text}`));
          }
        }
        shown = state?.session.length ?? shown;
      }
      const result = await done;
      console.log(`\nstatus: ${result.status}\nanswer: ${terminalSafe(result.output ?? result.error ?? '(none)')}`);
      console.log(
        `cost:   $${microToUsd(result.usage.costMicroUsd).toFixed(6)}, ${result.usage.toolCalls} MCP tool calls`,
      );
      if (result.status !== 'completed') process.exitCode = 1;
    },
    console.log,
    withDemoServer,
  );
}
