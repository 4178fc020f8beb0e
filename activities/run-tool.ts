import { Context } from '@temporalio/activity';
import type { RunToolInput, RunToolResult } from '../src/activity-types.js';
import { holdsScopes, type ToolDefinition } from '../src/tools.js';
import { describeIssues } from '../src/zod-issues.js';

/** Longest tool result the model is shown; the rest is cut with a note. */
export const MAX_TOOL_RESULT_CHARS = 20_000;

const toolError = (content: string): RunToolResult => ({ content, isError: true });

/**
 * Builds the `runTool` activity. Bad arguments (invalid JSON, schema failures) and refused tools become a tool error
 * the model sees (R1.7); an exception thrown by the tool itself is left to Temporal's retry policy.
 */
export function createRunTool(tools: ReadonlyMap<string, ToolDefinition>) {
  return async function runTool(input: RunToolInput): Promise<RunToolResult> {
    const { call } = input;
    const tool = tools.get(call.name);
    if (!tool || !input.allowedTools.includes(call.name) || !holdsScopes(input.scopes, tool.scopes)) {
      return toolError(`tool "${call.name}" is not available to this run; use only the tools you were given`);
    }
    let raw: unknown;
    try {
      raw = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
    } catch (err) {
      return toolError(
        `arguments for "${call.name}" are not valid JSON (${(err as Error).message}); send one JSON object that matches the tool's parameters`,
      );
    }
    const parsed = tool.parameters.safeParse(raw);
    if (!parsed.success) {
      return toolError(`invalid arguments for "${call.name}": ${describeIssues(parsed.error).join('; ')}`);
    }
    const context = Context.current();
    context.heartbeat();
    const value = await tool.execute(parsed.data, { runId: input.runId, signal: context.cancellationSignal });
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    return {
      content:
        text.length > MAX_TOOL_RESULT_CHARS
          ? `${text.slice(0, MAX_TOOL_RESULT_CHARS)}\n[cut: ${text.length - MAX_TOOL_RESULT_CHARS} more characters]`
          : text,
      isError: false,
    };
  };
}
