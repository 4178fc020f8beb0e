/**
 * Two bare workflows that differ only in search-attribute upserts, for `bench/server-cost.ts`. Deterministic code
 * only; bundled apart from Deputy's workflows.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { sleep, upsertSearchAttributes } from '@temporalio/workflow';

const STATUS = defineSearchAttributeKey('DeputyStatus', SearchAttributeType.KEYWORD);

/** `steps` workflow tasks, each ended by a 1 ms timer. */
export async function timersOnly(steps: number): Promise<void> {
  for (let i = 0; i < steps; i++) await sleep(1);
}

/** The same workflow tasks, each also upserting one search attribute (as a run's status changes do). */
export async function timersAndUpserts(steps: number): Promise<void> {
  for (let i = 0; i < steps; i++) {
    upsertSearchAttributes([{ key: STATUS, value: `step-${i}` }]);
    await sleep(1);
  }
}
