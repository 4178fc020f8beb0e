/** Reading how a run failed, as a backend calling Temporal directly sees it. */
import { ApplicationFailure, WorkflowFailedError, type Client } from '@temporalio/client';
import { expect } from 'vitest';

/** Waits for `workflowId` to fail and returns its `ApplicationFailure` (the chain is asserted on the way). */
export async function failureOf(client: Client, workflowId: string): Promise<ApplicationFailure> {
  const err = await client.workflow
    .getHandle(workflowId)
    .result()
    .then(
      () => expect.fail('the run should fail'),
      (e: unknown) => e,
    );
  expect(err).toBeInstanceOf(WorkflowFailedError);
  const cause = (err as WorkflowFailedError).cause;
  expect(cause).toBeInstanceOf(ApplicationFailure);
  return cause as ApplicationFailure;
}
