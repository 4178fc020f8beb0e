/** Search attributes every run carries, so a person can find and follow runs in Temporal UI. */
import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';
import type { LiveStatus } from './run.js';

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

/** Where a run sits in its tree: a child names its parent, its task and the context it was given. */
export interface TreePlace {
  rootId: string;
  depth: number;
  tenant: string | undefined;
  preset: string;
  child?: { parentId: string; taskName: string; contextMode: string };
}

/** The search attributes that place a run in its tree, and its status when it starts running. */
export function treeAttributes(place: TreePlace): SearchAttributePair[] {
  const { child } = place;
  return [
    { key: DEPUTY_ROOT_ID, value: place.rootId },
    ...(child ? [{ key: DEPUTY_PARENT_ID, value: child.parentId }] : []),
    { key: DEPUTY_DEPTH, value: place.depth },
    ...(child
      ? [
          { key: DEPUTY_TASK_NAME, value: child.taskName },
          { key: DEPUTY_CONTEXT_MODE, value: child.contextMode },
        ]
      : []),
    { key: DEPUTY_PRESET, value: place.preset },
    { key: DEPUTY_STATUS, value: 'running' },
    ...(place.tenant ? [{ key: DEPUTY_TENANT, value: place.tenant }] : []),
  ];
}

/**
 * What a starter of a root run knows of its place: the run's own id as its root, depth 0, status running, and the
 * tenant and preset its input names. The run writes only what differs (a preset its config resolved otherwise).
 */
export function rootStartAttributes(
  workflowId: string,
  input: { tenant?: string; preset?: string },
): SearchAttributePair[] {
  return treeAttributes({ rootId: workflowId, depth: 0, tenant: input.tenant, preset: input.preset ?? '' }).filter(
    ({ key, value }) => key !== DEPUTY_PRESET || value !== '',
  );
}

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

/**
 * What `DeputyStatus` shows for a live status: a wait on someone outside the run (its person, its parent's answer, an
 * approver) as itself, the end as itself, anything else the run does as `running`.
 */
export function listedStatus(status: LiveStatus): LiveStatus {
  return status === 'starting' || status === 'waiting_for_children' ? 'running' : status;
}
