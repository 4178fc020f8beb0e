// Type-checked (tsc --noEmit) against the declarations the tarball ships: the public types a service writes against.
import { DeputyClient, RunInput, RunResult, type RunState } from 'deputy';
import { deputyPlugin, parseConfig, type DeputyPluginOptions } from 'deputy/worker';
import { ScriptedModelServer, type ScriptRule } from 'deputy/testing';

const input: RunInput = { task: 'Summarise the notes', limits: { maxCostUsd: 0.05, maxTurns: 4 }, mode: 'task' };

export async function runAndWait(deputy: DeputyClient): Promise<RunResult> {
  const handle = await deputy.startRun(RunInput.parse(input));
  const state: RunState = await deputy.getState(handle.workflowId);
  const spent: number = state.usage.costMicroUsd;
  void spent;
  return RunResult.parse(await deputy.result(handle.workflowId));
}

export function plugin(client: DeputyPluginOptions['client']) {
  return deputyPlugin({
    config: parseConfig({}),
    model: { apiKey: process.env.OPENAI_API_KEY, baseURL: undefined },
    childTaskQueue: 'deputy',
    client,
  });
}

export const rules: ScriptRule[] = [{ reply: { text: 'ok', usage: 'worst' } }];
export const start = () => ScriptedModelServer.start(rules);
