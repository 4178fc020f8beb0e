/**
 * The rows the web view draws: the watch's folded tree (names, spend, latest event, live at once), with each run's
 * status, own calls and failure as `deputy tree` reads them (`loadTree`), so the page and the CLI never disagree.
 * The tree is read again at most once a second when events arrive, and every few seconds while nothing does (a
 * conversation waiting for its person makes no event).
 */
import type { Client } from '@temporalio/client';
import { loadTree } from '../client/inspect.js';
import { elide, type TreeNode } from '../client/tree.js';
import type { TreeRow, TreeView } from '../client/watch-view.js';
import { labelledUsage } from '../rules/usage.js';

/**
 * The statuses a watch cannot tell apart from its events (a run waiting for its children or its person makes none):
 * for those the run's own answer is read. Any other the events set the moment it happened, fresher than a read.
 */
const UNTOLD = new Set(['running', 'starting']);
const ENDED = new Set(['completed', 'failed', 'cancelled', 'terminated', 'timed_out', 'limit_reached']);
const READ_EVERY_MS = 1000;

export type WebRow = TreeRow & { shortName: string; calls: string };

export class TreeRows {
  #nodes = new Map<string, TreeNode>();
  #readAt = 0;

  constructor(
    private readonly client: Client,
    private readonly rootId: string,
  ) {}

  /**
   * Reads the tree again unless it was read within the last second (`force`: at once); `true` when a status or
   * count changed.
   */
  async refresh(force = false): Promise<boolean> {
    if (!force && Date.now() - this.#readAt < READ_EVERY_MS) return false;
    this.#readAt = Date.now();
    const nodes = await loadTree(this.client, this.rootId).catch(() => null);
    if (!nodes) return false;
    const before = JSON.stringify([...this.#nodes.values()].map(shown));
    this.#nodes = new Map(nodes.map((n) => [n.workflowId, n]));
    return JSON.stringify(nodes.map(shown)) !== before;
  }

  rows(view: TreeView): WebRow[] {
    return view.rows().map((row) => {
      const node = this.#nodes.get(row.id);
      // An ended run's own count is in its last event; a live one's is its worker's, as deputy tree reads it.
      const ended = ENDED.has(row.status);
      const status = UNTOLD.has(row.status) ? (node?.status ?? row.status) : row.status;
      const calls =
        !ended && node?.usage
          ? labelledUsage(node.usage).own
          : `own ${row.modelCalls} model + ${row.toolCalls} tool calls`;
      return {
        ...row,
        status,
        calls,
        error: row.error ?? node?.error ?? null,
        latest: node?.retrying ?? row.latest,
        shortName: elide(row.name, 32),
      };
    });
  }
}

const shown = (n: TreeNode) => [n.workflowId, n.status, n.usage?.modelCalls, n.usage?.toolCalls, n.error, n.retrying];
