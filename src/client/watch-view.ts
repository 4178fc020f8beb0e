/**
 * A watched tree as a person reads it: per run its status, tokens, cost and latest event, folded from
 * `DeputyClient.watch` events. `deputy watch` prints it; the web view receives the same events and folds them alike.
 */
import type { WatchEvent } from './watch-events.js';
import { elide, headLine, treeLayout, wrapText, type TreeStyle } from './tree.js';

/** One run of the tree as the events so far describe it. */
export interface RunView {
  id: string;
  parent: string | null;
  name: string;
  status: string;
  /** Debited tokens and cost of the run's own model calls. */
  tokens: number;
  costUsd: number;
  /** What the endpoints billed for them (their reports; Deputy's count where none). */
  billedTokens: number;
  billedCostUsd: number;
  modelCalls: number;
  toolCalls: number;
  latest: string;
  /** Why it failed, once it ended failing. */
  error: string | null;
  children: string[];
}

const clip = (text: string, max = 60) => {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
};
const usd = (value: number) => `$${value.toFixed(6)}`;

/** One line saying what an event was. */
export function describeWatchEvent(event: WatchEvent): string {
  switch (event.type) {
    case 'run/started':
      return `started: ${clip(event.task)}`;
    case 'run/ended':
      return `${event.status}${event.limit ? ` (${event.limit}${event.synthesis ? ', synthesised' : ''})` : ''}`;
    case 'run/moved':
      return `moved from ${event.from} to ${event.to}`;
    case 'model/started':
      return `${event.activity === 'callModel' ? 'calling' : event.activity} ${event.model}${event.fallback ? ` (fallback: ${event.fallback})` : ''}`;
    case 'model/finished': {
      const cost = event.costUsd === null ? '' : `, ${usd(event.costUsd)}`;
      const calls = event.toolCalls.length > 0 ? ` → ${event.toolCalls.join(', ')}` : '';
      return `${event.model} answered (${event.inputTokens + event.outputTokens} tokens${cost})${calls}`;
    }
    case 'model/progress':
      return `writing (${event.outputTokens} tokens): ${clip(event.partial.slice(-80).replace(/\s+/g, ' '))}`;
    case 'model/failed':
      // Whole: it is what a person needs to fix the endpoint.
      return `${event.model} failed: ${event.error.replace(/\s+/g, ' ').trim()}`;
    case 'model/retrying':
      return event.status;
    case 'tool/called':
      return `running ${event.name}`;
    case 'tool/result':
      return `${event.name} ${event.ok ? 'ok' : 'failed'} (${event.bytes} B)`;
    case 'artifact/saved':
      return `saved artifact ${event.id} "${clip(event.name)}" (${event.mediaType}, ${event.size} B)`;
    case 'delegation/started': {
      const { maxTokens, maxCostUsd } = event.reserved;
      const reserved = [maxTokens !== null && `${maxTokens} tokens`, maxCostUsd !== null && usd(maxCostUsd)]
        .filter(Boolean)
        .join(', ');
      return `delegated ${event.taskName}${reserved ? ` (reserved ${reserved})` : ''}`;
    }
    case 'delegation/refused':
      return `delegation refused: ${clip(event.reason)}`;
    case 'delegation/joined': {
      // A child that answered without calling a tool looked nothing up.
      const unverified = event.status === 'completed' && event.usage?.toolCalls === 0 ? ' (no tool calls)' : '';
      const overran = event.overrun
        ? `; overran its reservation by ${event.overrun.tokens} tok $${event.overrun.costUsd.toFixed(6)}`
        : '';
      return `${event.child.slice(event.child.lastIndexOf('/') + 1)} joined: ${event.status}${unverified}${overran}`;
    }
    case 'question/asked':
      return `question ${event.questionId}: ${clip(event.question)}`;
    case 'question/answered':
      return `answer to ${event.questionId} (from ${event.from})`;
    case 'interjection':
      return `interjection from ${event.from}`;
    case 'message/received':
      return 'message received';
    case 'approval/requested':
      return `approval ${event.requestId} requested: ${event.tool} ${clip(event.preview)} (until ${event.deadline})`;
    case 'approval/decided':
      return event.decision === 'expired'
        ? `approval ${event.requestId} expired (no decision by its deadline)`
        : `approval ${event.requestId} ${event.decision === 'approve' ? 'approved' : 'denied'} by ${event.by}`;
  }
}

/** A question a child asked that nobody has answered yet. */
export interface WaitingQuestion {
  questionId: string;
  child: string;
  taskName: string;
  question: string;
}

/** A run in tree order: its depth and its subtree's roll-up (debited tokens and cost, billed cost). */
export type TreeRow = RunView & { depth: number; treeTokens: number; treeCostUsd: number; treeBilledCostUsd: number };

/** A call waiting for approval: where (the run and its name), what, and until when. */
export interface WaitingApproval {
  run: string;
  taskName: string;
  requestId: string;
  tool: string;
  preview: string;
  deadline: string;
}

/** The tree so far. */
export class TreeView {
  readonly runs = new Map<string, RunView>();
  readonly questions = new Map<string, WaitingQuestion>();
  /** Calls waiting for approval, by `<run> <requestId>`. */
  readonly approvals = new Map<string, WaitingApproval>();
  root: string | undefined;

  apply(event: WatchEvent): void {
    const run = this.#run(event.run, event.parent);
    run.latest = describeWatchEvent(event);
    switch (event.type) {
      case 'question/asked':
        this.questions.set(event.questionId, {
          questionId: event.questionId,
          child: event.child,
          taskName: this.runs.get(event.child)?.name ?? event.child,
          question: event.question,
        });
        this.#run(event.child, event.run).status = 'waiting_for_answer';
        break;
      case 'question/answered': {
        const asker = this.runs.get(this.questions.get(event.questionId)?.child ?? '');
        if (asker?.status === 'waiting_for_answer') asker.status = 'running';
        this.questions.delete(event.questionId);
        break;
      }
      case 'approval/requested': {
        const { requestId, tool, preview, deadline } = event;
        this.approvals.set(`${event.run} ${requestId}`, {
          run: event.run,
          taskName: run.name,
          requestId,
          tool,
          preview,
          deadline,
        });
        run.status = 'waiting_for_approval';
        break;
      }
      case 'approval/decided':
        this.approvals.delete(`${event.run} ${event.requestId}`);
        if (run.status === 'waiting_for_approval' && ![...this.approvals.values()].some((a) => a.run === event.run)) {
          run.status = 'running';
        }
        break;
      case 'run/started':
        if (event.taskName) run.name = event.taskName;
        run.status = 'running';
        break;
      case 'model/finished':
        // Every model call is the run's own spend; only its turns count as model calls, and the tools they called
        // (those run in the workflow, `delegate` among them, too) as tool calls, as the run's usage counts them.
        run.tokens += event.inputTokens + event.outputTokens;
        run.costUsd += event.costUsd ?? 0;
        run.billedTokens += event.billed.inputTokens + event.billed.outputTokens;
        run.billedCostUsd += event.billed.costUsd ?? 0;
        if (event.activity === 'callModel') {
          run.modelCalls += 1;
          run.toolCalls += event.toolCalls.length;
        }
        break;
      case 'delegation/started':
        this.#run(event.child, event.run).name = event.taskName;
        break;
      case 'run/ended':
        run.status = event.status;
        run.error = event.error ?? null;
        // A run that ended has nothing waiting any more (a cancelled request leaves no decision behind).
        for (const [key, waiting] of this.approvals) if (waiting.run === event.run) this.approvals.delete(key);
        // The run's own count is the last word (a call refused by maxToolCalls was asked for, never run).
        if (event.usage) {
          run.modelCalls = event.usage.modelCalls;
          run.toolCalls = event.usage.toolCalls;
        }
        break;
      default:
        break;
    }
  }

  #run(id: string, parent: string | null): RunView {
    let run = this.runs.get(id);
    if (!run) {
      const name = parent ? id.slice(id.lastIndexOf('/') + 1) : id;
      run = {
        id,
        parent,
        name,
        status: 'starting',
        tokens: 0,
        costUsd: 0,
        billedTokens: 0,
        billedCostUsd: 0,
        modelCalls: 0,
        toolCalls: 0,
        latest: '',
        error: null,
        children: [],
      };
      this.runs.set(id, run);
      if (parent) this.runs.get(parent)?.children.push(id);
      else this.root ??= id;
    }
    return run;
  }

  /** The whole tree's figures: the sum of every run's own (a parent's usage already includes its children's). */
  totals(): {
    runs: number;
    tokens: number;
    costUsd: number;
    billedTokens: number;
    billedCostUsd: number;
    modelCalls: number;
    toolCalls: number;
  } {
    const runs = [...this.runs.values()];
    const sum = (pick: (run: RunView) => number) => runs.reduce((total, run) => total + pick(run), 0);
    return {
      runs: runs.length,
      tokens: sum((r) => r.tokens),
      costUsd: sum((r) => r.costUsd),
      billedTokens: sum((r) => r.billedTokens),
      billedCostUsd: sum((r) => r.billedCostUsd),
      modelCalls: sum((r) => r.modelCalls),
      toolCalls: sum((r) => r.toolCalls),
    };
  }

  /**
   * The runs in tree order (each parent before its children), with their depth and their subtree's roll-up: tokens
   * and cost of the run and all its descendants.
   */
  rows(): TreeRow[] {
    const out: TreeRow[] = [];
    const walk = (id: string, depth: number): { tokens: number; costUsd: number; billedCostUsd: number } => {
      const run = this.runs.get(id);
      if (!run) return { tokens: 0, costUsd: 0, billedCostUsd: 0 };
      const row = {
        ...run,
        depth,
        treeTokens: run.tokens,
        treeCostUsd: run.costUsd,
        treeBilledCostUsd: run.billedCostUsd,
      };
      out.push(row);
      for (const child of run.children) {
        const below = walk(child, depth + 1);
        row.treeTokens += below.tokens;
        row.treeCostUsd += below.costUsd;
        row.treeBilledCostUsd += below.billedCostUsd;
      }
      return { tokens: row.treeTokens, costUsd: row.treeCostUsd, billedCostUsd: row.treeBilledCostUsd };
    };
    if (this.root) walk(this.root, 0);
    return out;
  }

  /**
   * The tree as `deputy tree` draws it, within `style.width` columns: per run its name, status and own spend, its
   * latest event beneath, and a failed run's reason whole.
   */
  lines(style: TreeStyle = {}): string[] {
    const width = style.width ?? 80;
    const rows = new Map(this.rows().map((row) => [row.id, row]));
    const root = this.root === undefined ? undefined : rows.get(this.root);
    const kids = (row: TreeRow) => row.children.flatMap((id) => rows.get(id) ?? []);
    return treeLayout(root ? [root] : [], kids).flatMap(({ node, head, under }) => [
      headLine(head, node.name, node.status, `own ${node.tokens} tok ${usd(node.costUsd)}`, style),
      ...(node.latest ? [elide(`${under}${node.latest}`, width)] : []),
      ...(node.error ? wrapText(`why: ${node.error}`, under, width) : []),
    ]);
  }

  /** The final summary line. */
  summary(): string {
    const t = this.totals();
    const root = this.root ? this.runs.get(this.root) : undefined;
    // What the endpoints billed, where it differs from what the budget debited (an endpoint that reported less).
    const billed =
      t.billedTokens !== t.tokens || usd(t.billedCostUsd) !== usd(t.costUsd)
        ? ` (billed ${t.billedTokens} tokens, ${usd(t.billedCostUsd)})`
        : '';
    const n = (count: number, one: string) => `${count} ${one}${count === 1 ? '' : 's'}`;
    return `${root?.status ?? 'unknown'}: tree of ${n(t.runs, 'run')}: ${n(t.modelCalls, 'model call')}, ${n(t.toolCalls, 'tool call')}, ${n(t.tokens, 'token')}, ${usd(t.costUsd)}${billed}`;
  }
}
