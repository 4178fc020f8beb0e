/**
 * A delegation tree as text that fits a terminal: per run a line of its name, status and the tree's spend, then its
 * own calls, composition, id and notes wrapped beneath, and a failed run's reason. Pure; colour is the caller's.
 */
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
  /** Why it failed, when it did. */
  error?: string;
  /** Its model call is being retried: where, which attempt of how many, and when the next is. */
  retrying?: string;
  /** No worker answered for it: its figures are what Temporal recorded. */
  unanswered?: boolean;
}

/** How a tree is drawn: its width in columns, and a painter for a status (colour on a terminal). */
export interface TreeStyle {
  width?: number;
  paint?: (status: string, text: string) => string;
}

const pad = (text: string, width: number) => (text.length >= width ? text : text + ' '.repeat(width - text.length));

/** `text` in at most `max` characters, its middle elided: an id keeps its start and its end. */
export function elide(text: string, max: number): string {
  if (text.length <= max) return text;
  const tail = Math.floor((max - 1) / 2);
  return `${text.slice(0, max - 1 - tail)}…${text.slice(text.length - tail)}`;
}

/** `text` cut to `max` characters at its end. */
const cut = (text: string, max: number) => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);

/** `parts` joined by ` · `, wrapped into lines of at most `width` characters, each starting with `indent`. */
export function wrapParts(parts: readonly string[], indent: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const part of parts.map((p) => cut(p, width - indent.length))) {
    const joined = line === '' ? part : `${line} · ${part}`;
    if (indent.length + joined.length <= width) line = joined;
    else {
      lines.push(indent + line);
      line = part;
    }
  }
  if (line !== '') lines.push(indent + line);
  return lines;
}

/** `text` wrapped at spaces into lines of at most `width` characters, each starting with `indent`. */
export function wrapText(text: string, indent: string, width: number): string[] {
  const room = Math.max(20, width - indent.length);
  const lines: string[] = [];
  let line = '';
  for (const word of text.replace(/\s+/g, ' ').trim().split(' ')) {
    for (let rest = word; rest !== '';) {
      const joined = line === '' ? rest : `${line} ${rest}`;
      if (joined.length <= room) {
        line = joined;
        rest = '';
      } else if (line === '') {
        lines.push(indent + rest.slice(0, room));
        rest = rest.slice(room);
      } else {
        lines.push(indent + line);
        line = '';
      }
    }
  }
  if (line !== '') lines.push(indent + line);
  return lines;
}

/** A tree's rows in order, each with the branch drawn before it and the indent its further lines take. */
export function treeLayout<T>(
  roots: readonly T[],
  childrenOf: (node: T) => readonly T[],
): { node: T; head: string; under: string }[] {
  const out: { node: T; head: string; under: string }[] = [];
  const walk = (node: T, prefix: string, last: boolean | null) => {
    const branch = last === null ? '' : last ? '└─ ' : '├─ ';
    const below = last === null ? '' : last ? '   ' : '│  ';
    const kids = childrenOf(node);
    out.push({ node, head: prefix + branch, under: prefix + below + (kids.length > 0 ? '│  ' : '   ') });
    kids.forEach((kid, i) => walk(kid, prefix + below, i === kids.length - 1));
  };
  for (const root of roots) walk(root, '', null);
  return out;
}

/** The columns of a run's first line: its name, its status, its figures. */
export const COLUMNS = { name: 30, status: 20 };

/** A run's first line: name (elided to its column), status, figures; within `width`. */
export function headLine(
  head: string,
  name: string,
  status: string,
  figures: string,
  { width = 80, paint = (_s, t) => t }: TreeStyle,
): string {
  const label = pad(`${head}${elide(name, Math.max(8, COLUMNS.name - head.length))}`, COLUMNS.name);
  const shown = pad(status, COLUMNS.status);
  const room = width - COLUMNS.name - COLUMNS.status - 2;
  return `${label} ${paint(status, shown)} ${cut(figures, room)}`.trimEnd();
}

/** Renders nodes as a tree under each root (a node whose parent is not among them), within `style.width` columns. */
export function renderTree(nodes: readonly TreeNode[], style: TreeStyle = {}): string {
  const width = style.width ?? 80;
  const ids = new Set(nodes.map((n) => n.workflowId));
  const byId = (a: TreeNode, b: TreeNode) => a.workflowId.localeCompare(b.workflowId);
  const roots = nodes.filter((n) => n.parentId === null || !ids.has(n.parentId)).sort(byId);
  const childrenOf = (node: TreeNode) => nodes.filter((n) => n.parentId === node.workflowId).sort(byId);
  const lines: string[] = [];
  for (const { node, head, under } of treeLayout(roots, childrenOf)) {
    const usage = node.usage;
    const labelled = usage && labelledUsage(usage);
    const cost = usage ? microToUsd(usage.costMicroUsd) : node.costUsd;
    // Tokens and cost are the tree's (the run and its joined children), calls the run's own: labelled so.
    const figures = labelled ? labelled.tree : cost === null ? '' : `tree $${cost.toFixed(6)}`;
    lines.push(headLine(head, node.taskName ?? node.workflowId, node.status, figures, style));
    lines.push(...wrapParts(details(node), under, width));
    if (node.error) {
      const why = cut(`${under}why: ${flat(node.error)}`, width);
      lines.push(style.paint ? style.paint('failed', why) : why);
    }
  }
  return lines.join('\n');
}

const flat = (text: string) => text.replace(/\s+/g, ' ').trim();
const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;

/** What a tree says of a run beneath its first line: its own calls, composition, id and notes. */
function details(node: TreeNode): string[] {
  const usage = node.usage;
  const labelled = usage && labelledUsage(usage);
  return [
    labelled ? labelled.own : '',
    // What the endpoints billed is shown where it differs from the debit (an endpoint that reported less).
    usage && billedDiffers(usage) ? labelled!.billed : '',
    node.preset
      ? `[${[node.preset, node.contextMode && `context ${node.contextMode}`].filter(Boolean).join(', ')}]`
      : '',
    node.taskName ? elide(node.workflowId, 30) : '',
    node.unanswered ? 'as recorded (no worker answered)' : '',
    node.retrying ?? '',
    node.background ? 'background' : '',
    node.interjections ? plural(node.interjections, 'interjection') : '',
    node.queuedMs ? `its model call waits in the queue (${Math.round(node.queuedMs / 1000)} s)` : '',
    node.fallback ? `answered by ${node.fallback.model} (${node.fallback.reason})` : '',
    node.openQuestion ? `asks ${node.openQuestion}` : '',
    node.artifacts ? `saved ${plural(node.artifacts, 'artifact')}` : '',
    node.overrun
      ? `overran its ${node.parentId ? 'reservation' : 'limits'} by ${node.overrun.tokens} tok $${microToUsd(node.overrun.costMicroUsd).toFixed(6)}`
      : '',
  ].filter(Boolean);
}
