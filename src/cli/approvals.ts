/**
 * `deputy approvals <root>`, `deputy approve|deny <run> <request>`: the open requests of a tree, one a line, and a
 * decision sent to the run that waits (found from the root). With `--key-env`, the proof is made here from a key in
 * the environment; the key is never sent.
 */
import { DeputyError, UsageError } from '../contract/errors.js';
import type { DeputyClient } from '../client/client.js';
import type { Parsed } from './usage.js';
import { argumentsWords } from '../rules/approvals.js';

export async function approvalsCommand(
  deputy: DeputyClient,
  command: 'approvals' | 'approve' | 'deny',
  [runId, requestId]: string[],
  { reason, approver, keyEnv }: Pick<Parsed, 'reason' | 'approver' | 'keyEnv'>,
): Promise<string> {
  if (command === 'approvals') {
    const open = await deputy.approvals(runId!);
    if (open.length === 0) return `no approval request is open under ${runId}`;
    // A block per request, its arguments whole: the person decides on exactly what would run.
    return open
      .map((r) =>
        [
          `${r.requestId}  ${r.tool}  in ${r.run}  until ${r.deadline}`,
          `  where: ${r.path}`,
          `  why: ${r.why}`,
          `  ${argumentsWords(r)}`,
        ].join('\n'),
      )
      .join('\n\n');
  }
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
      throw new DeputyError(`${command} ${requestId}: ${err instanceof Error ? err.message : String(err)}`);
    });
  return `${decided.requestId} ${decision === 'approve' ? 'approved' : 'denied'} by ${decided.by}`;
}
