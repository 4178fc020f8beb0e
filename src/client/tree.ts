/** A delegation tree as text: one line per run, children indented under their parent. Pure. */
import type { Usage } from '../contract/run.js';
import { billedDiffers, labelledUsage, microToUsd } from '../rules/usage.js';

/** One run in a delegation tree. */
export interface TreeNode {
  workflowId: string;
  parentId: string | null;
  taskName: string | null;
  /** Deputy's status (`running`, `waiting_for_children`, `completed` …) or Temporal's, lower-cased. */
  status: string;
  preset: string | null;
  /** A child's context mode (`none`, `all`, N, `summary`); `null` for a root. */
  contextMode: string | null;
  /** Tokens and cost include the run's children once they have been joined. */
  usage: Usage | null;
  costUsd: number | null;
  /** Dispatched in the background (its parent goes on); known while the parent runs. */
  background?: boolean;
  /** The question it asked that waits for an answer (`q1.1: Which city?`); known while its parent runs. */
  openQuestion?: string | null;
  /** Interjections delivered to it; known while its parent runs. */
  interjections?: number;
  /** How far its spend passed its reservation (a root: its limits), when an endpoint billed past the cap. */
  overrun?: { tokens: number; costMicroUsd: number };
  /** How long its model call has waited to be taken from its queue (a provider's rate limit, a busy fleet). */
  queuedMs?: number;
  /** Its calls went on to another model than its own: which, and why ("gpt-4.1 was rate limited 3 times"). */
  fallback?: { model: string; reason: string };
  /** Artifacts the run saved itself; known once it has ended with a result. */
  artifacts?: number;
}

const pad = (text: string, width: number) => (text.length >= width ? text : text + ' '.repeat(width - text.length));

/** Renders nodes as a tree under each root (a node whose parent is not among them). */
export function renderTree(nodes: readonly TreeNode[]): string {
  const ids = new Set(nodes.map((n) => n.workflowId));
  const childrenOf = (id: string | null) =>
    nodes
      .filter((n) => (id === null ? n.parentId === null || !ids.has(n.parentId) : n.parentId === id))
      .sort((a, b) => a.workflowId.localeCompare(b.workflowId));
  const lines: string[] = [];
  const walk = (node: TreeNode, prefix: string, branch: string) => {
    const label = node.taskName ?? node.workflowId;
    const usage = node.usage;
    const cost = usage ? microToUsd(usage.costMicroUsd) : node.costUsd;
    // Tokens and cost are the tree's (the run and its joined children), calls the run's own: labelled so.
    const labelled = usage && labelledUsage(usage);
    // What the endpoints billed is shown where it differs from the debit (an endpoint that reported less).
    const billed = usage && billedDiffers(usage) ? `  (${labelled!.billed})` : '';
    const figures = labelled
      ? `${labelled.tree}${billed}  ${labelled.own}`
      : cost === null
        ? ''
        : `tree $${cost.toFixed(6)}`;
    const head = pad(`${prefix}${branch}${label}`, 34);
    const notes = [
      node.background ? 'background' : '',
      node.interjections ? `${node.interjections} interjection${node.interjections === 1 ? '' : 's'}` : '',
      node.queuedMs ? `its model call waits in the queue (${Math.round(node.queuedMs / 1000)} s)` : '',
      node.fallback ? `answered by ${node.fallback.model} (${node.fallback.reason})` : '',
      node.openQuestion ? `asks ${node.openQuestion}` : '',
      node.artifacts ? `saved ${node.artifacts} artifact${node.artifacts === 1 ? '' : 's'}` : '',
      node.overrun
        ? `overran its ${node.parentId ? 'reservation' : 'limits'} by ${node.overrun.tokens} tok $${microToUsd(node.overrun.costMicroUsd).toFixed(6)}`
        : '',
    ].filter(Boolean);
    lines.push(
      `${head} ${pad(node.status, 21)} ${pad(figures, 58)} ${node.preset ? `[${[node.preset, node.contextMode && `context ${node.contextMode}`].filter(Boolean).join(', ')}] ` : ''}${node.taskName ? node.workflowId : ''}${notes.length > 0 ? `  · ${notes.join(' · ')}` : ''}`.trimEnd(),
    );
    const kids = childrenOf(node.workflowId);
    const nextPrefix = prefix + (branch === '' ? '' : branch === '└─ ' ? '   ' : '│  ');
    kids.forEach((kid, i) => walk(kid, nextPrefix, i === kids.length - 1 ? '└─ ' : '├─ '));
  };
  for (const root of childrenOf(null)) walk(root, '', '');
  return lines.join('\n');
}
