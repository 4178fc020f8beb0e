/**
 * `deputy approvals <root>`, `deputy approve|deny <run> <request>`: the open requests of a tree, one a line, and a
 * decision sent to the run that waits (found from the root). With `--key-env`, the proof is made here from a key in
 * the environment; the key is never sent.
 */
import { DeputyError, UsageError } from '../contract/errors.js';
import type { DeputyClient } from '../client/client.js';
import type { Parsed } from './usage.js';
import { argumentsWords } from '../rules/approvals.js';
import type { ApprovalRequest } from '../contract/approvals.js';

/** The open requests of a tree: a header, then a block per request, its arguments whole. */
export function listApprovals(rootId: string, open: readonly ApprovalRequest[]): string {
  if (open.length === 0) return `no approval request is open under ${rootId}`;
  // The person decides on exactly what would run.
  const blocks = open.map((r) =>
    [
      `${r.requestId}  ${r.tool}  in ${r.run}  until ${r.deadline}`,
      `  where: ${r.path}`,
      `  why: ${r.why}`,
      `  ${argumentsWords(r)}`,
    ].join('\n'),
  );
  const count = `${open.length} approval request${open.length === 1 ? '' : 's'} open under ${rootId}`;
  return [`${count} (decide with deputy approve|deny ${rootId} <request>):`, ...blocks].join('\n\n');
}

/** `deputy approve|deny`: the decision, sent to the run that waits (found from the root). */
export async function decideCommand(
  deputy: DeputyClient,
  command: 'approve' | 'deny',
  [runId, requestId]: string[],
  { reason, approver, keyEnv }: Pick<Parsed, 'reason' | 'approver' | 'keyEnv'>,
): Promise<string> {
  let key: string | undefined;
  if (keyEnv !== undefined) {
    key = process.env[keyEnv];
    if (!key)
      throw new UsageError(`--key-env ${keyEnv}: the environment has no ${keyEnv}; export the approver's key there`);
  }
  const decision = command === 'approve' ? 'approve' : 'deny';
  const decided = await deputy
    .decideApproval(runId!, requestId!, decision, {
      ...(reason !== undefined && { reason }),
      ...(approver !== undefined && { approver }),
      ...(key !== undefined && { key }),
    })
    .catch((err: unknown) => {
      const said = err instanceof Error ? err.message : String(err);
      // A request decided already is no longer listed anywhere in the tree: say where to look.
      const hint = /^no request /.test(said)
        ? `; it may have been decided or expired already: deputy watch ${runId} shows each decision, deputy approvals ${runId} what is open`
        : '';
      throw new DeputyError(`${command} ${requestId}: ${said}${hint}`);
    });
  return `${decided.requestId} ${decision === 'approve' ? 'approved' : 'denied'} by ${decided.by}`;
}
