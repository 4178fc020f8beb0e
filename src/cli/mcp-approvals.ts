/**
 * `deputy mcp`'s approvals: the calls waiting in a caller's run tree, and its decisions on them (the run's own tree
 * only: a request is found from the root the caller started).
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { DeputyClient } from '../client/client.js';
import { refusal, reply, RunId } from './mcp-runs.js';

export function registerApprovalTools(
  server: McpServer,
  deputy: DeputyClient,
  onOwn: (runId: string, work: () => Promise<CallToolResult>) => Promise<CallToolResult>,
): void {
  server.registerTool(
    'approvals',
    {
      description:
        "The calls waiting for approval anywhere in the run's tree: each request's id, the run it waits in, its tool, arguments and deadline.",
      inputSchema: z.strictObject({ run_id: RunId }),
    },
    async ({ run_id }) =>
      onOwn(run_id, async () => reply({ runId: run_id, approvals: await deputy.approvals(run_id) })),
  );

  server.registerTool(
    'decide',
    {
      description:
        "Approve or deny a call waiting in the run's tree. Approve runs it once, with the arguments it was asked with; deny tells its model who denied it and why. Where the server's config names approvers, give approver and proof.",
      inputSchema: z.strictObject({
        run_id: RunId,
        request_id: z.string().min(1).max(100).describe('the request id `approvals` lists'),
        decision: z.enum(['approve', 'deny']),
        reason: z.string().max(2000).optional().describe('why: the model reads it with a denial'),
        approver: z.string().min(1).max(100).optional(),
        proof: z.string().optional().describe("HMAC-SHA256 by the approver's key (docs/approvals.md)"),
      }),
    },
    async ({ run_id, request_id, decision, reason, approver, proof }) =>
      onOwn(run_id, async () => {
        try {
          const options = { ...(reason && { reason }), ...(approver && { approver }), ...(proof && { proof }) };
          return reply({ runId: run_id, ...(await deputy.decideApproval(run_id, request_id, decision, options)) });
        } catch (err) {
          return refusal(err);
        }
      }),
  );
}
