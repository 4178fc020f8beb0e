/** Search attributes every run carries, so a person can find and follow runs in Temporal UI. */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const DEPUTY_ROOT_ID = defineSearchAttributeKey('DeputyRootId', SearchAttributeType.KEYWORD);
export const DEPUTY_PARENT_ID = defineSearchAttributeKey('DeputyParentId', SearchAttributeType.KEYWORD);
export const DEPUTY_DEPTH = defineSearchAttributeKey('DeputyDepth', SearchAttributeType.INT);
export const DEPUTY_TASK_NAME = defineSearchAttributeKey('DeputyTaskName', SearchAttributeType.KEYWORD);
export const DEPUTY_PRESET = defineSearchAttributeKey('DeputyPreset', SearchAttributeType.KEYWORD);
export const DEPUTY_STATUS = defineSearchAttributeKey('DeputyStatus', SearchAttributeType.KEYWORD);
export const DEPUTY_CONTEXT_MODE = defineSearchAttributeKey('DeputyContextMode', SearchAttributeType.KEYWORD);
export const DEPUTY_COST_USD = defineSearchAttributeKey('DeputyCostUsd', SearchAttributeType.DOUBLE);
/** The tenant a run belongs to (activation and admission are per tenant). */
export const DEPUTY_TENANT = defineSearchAttributeKey('DeputyTenant', SearchAttributeType.KEYWORD);

/** The visibility query of every run of the tree `rootId` heads. */
export function treeQuery(rootId: string): string {
  return `DeputyRootId = '${rootId.replace(/'/g, "\\'")}'`;
}

/** Every Deputy search attribute, for registering them with a server. */
export const DEPUTY_SEARCH_ATTRIBUTES = [
  DEPUTY_ROOT_ID,
  DEPUTY_PARENT_ID,
  DEPUTY_DEPTH,
  DEPUTY_TASK_NAME,
  DEPUTY_PRESET,
  DEPUTY_STATUS,
  DEPUTY_CONTEXT_MODE,
  DEPUTY_COST_USD,
  DEPUTY_TENANT,
] as const;

/** The `temporal` CLI's name for each attribute type, for `temporal operator search-attribute create`. */
export const CLI_TYPE_NAMES: Record<string, string> = {
  KEYWORD: 'Keyword',
  INT: 'Int',
  DOUBLE: 'Double',
};
