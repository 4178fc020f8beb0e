// The peer's workflows, written the way @temporalio/ai-sdk's README and samples show: the AI SDK's `generateText` in
// the workflow, its model calls made by the plugin's activity, tools as activities, subagents as tools.
import { temporalProvider } from '@temporalio/ai-sdk/workflow';
import { proxyActivities } from '@temporalio/workflow';
import { generateText, stepCountIs, tool } from 'ai';
import { z } from 'zod';

const { fetchPage } = proxyActivities({ startToCloseTimeout: '30 seconds' });
const model = () => temporalProvider.languageModel('bench-model');

const pageTool = () =>
  tool({
    description: 'Fetch one page.',
    inputSchema: z.object({ page: z.number() }),
    execute: ({ page }) => fetchPage(page),
  });

/** One agent calls a tool `turns` times (each result 2,000 bytes), then answers. */
export async function peerLongRun(task, turns) {
  const result = await generateText({
    model: model(),
    system: 'You read pages.',
    prompt: task,
    tools: { fetch_page: pageTool() },
    stopWhen: stepCountIs(turns + 5),
  });
  return result.text;
}

/** A parent agent with three subagents as tools, each calling one tool. */
export async function peerTree(task) {
  const part = (n) =>
    tool({
      description: `Do part ${n} of the work.`,
      inputSchema: z.object({ input: z.string() }),
      execute: async ({ input }) => {
        const { text } = await generateText({
          model: model(),
          system: `You do part ${n}.`,
          prompt: input,
          tools: { fetch_page: pageTool() },
          stopWhen: stepCountIs(10),
        });
        return text;
      },
    });
  const result = await generateText({
    model: model(),
    system: 'You split the work.',
    prompt: task,
    tools: { part_1: part(1), part_2: part(2), part_3: part(3) },
    stopWhen: stepCountIs(10),
  });
  return result.text;
}
