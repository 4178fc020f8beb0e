/** The benchmark's result format and its Markdown table. */

/** One scenario's figures: Deputy's, the baseline's (or `null` when it has none), their ratio and the target. */
export interface ScenarioResult {
  id: string;
  title: string;
  runs: number;
  deputy: Record<string, unknown>;
  baseline: Record<string, unknown> | null;
  ratio: number;
  target:
    | { ratioAtMost: number; bytesPerTurnAtMost?: number }
    | { ratioAtLeast: number }
    /** A bound on Deputy's own figure (`ratio` then holds that figure). */
    | { atMost: number }
    | null;
  met: boolean | null;
}

/** What bench/results.json holds. */
export interface BenchReport {
  date: string;
  machine: { cpus: number; cpuModel: string; memoryGiB: number };
  versions: Record<string, string>;
  scenarios: ScenarioResult[];
}

const kib = (bytes: number | undefined) => `${((bytes ?? NaN) / 1024).toFixed(1)} KiB`;

function targetText(result: ScenarioResult): string {
  if (!result.target) return '—';
  const { target } = result;
  const bound =
    'ratioAtMost' in target
      ? `≤ ${target.ratioAtMost}${target.bytesPerTurnAtMost ? ` and ≤ ${kib(target.bytesPerTurnAtMost)} a turn` : ''}`
      : 'atMost' in target
        ? `≤ ${target.atMost}`
        : `≥ ${target.ratioAtLeast}`;
  return `${bound} ${result.met ? '✅' : '❌'}`;
}

type Row = string[];
type Numbers = Record<string, number>;

/** A scenario's flat figures (history growth's nested ones are read apart). */
const figures = (s: ScenarioResult): { d: Numbers; b: Numbers } => ({
  d: s.deputy as Numbers,
  b: (s.baseline ?? {}) as Numbers,
});

/** A row of wall times, both sides. */
function wallRow(s: ScenarioResult, target: string): Row {
  const { d, b } = figures(s);
  return [`${s.title} (wall time, ${s.runs} runs)`, `${d.medianMs} ms`, `${b.medianMs} ms`, `${s.ratio}`, target];
}

/** A row of history sizes, both sides. */
function historyRow(title: string, s: ScenarioResult, ratio: string, target: string): Row {
  const { d, b } = figures(s);
  return [title, `${d.events} events, ${kib(d.bytes)}`, `${b.events} events, ${kib(b.bytes)}`, ratio, target];
}

function growthRows(s: ScenarioResult): Row[] {
  const on = s.deputy.compactionOn as Record<
    string,
    { bytesPerTurn: number; segments: number; actionsPerTurn?: number }
  >;
  const off = s.deputy.compactionOff as Record<string, { bytesPerTurn: number; segments: number }>;
  const rows = Object.keys(on).map((turns) => [
    `History per turn, ${turns} turns (2 KB tool result a turn)`,
    `compaction on: ${kib(on[turns]!.bytesPerTurn)} (${on[turns]!.segments} segments; ${on[turns]!.actionsPerTurn ?? '?'} actions a turn)`,
    `compaction off: ${kib(off[turns]!.bytesPerTurn)} (${off[turns]!.segments} segments)`,
    '',
    '',
  ]);
  rows.at(-1)![3] = `${s.ratio} (last ÷ first, on)`;
  rows.at(-1)![4] = targetText(s);
  return rows;
}

function replayRows(s: ScenarioResult): Row[] {
  const { d, b } = figures(s);
  return [
    [
      `${s.title} (${s.runs} paired replays; ratio: median of the pairs')`,
      `${d.medianMs} ms (${d.histories} histories, ${d.events} events)`,
      `${b.medianMs} ms (${b.histories} histories, ${b.events} events)`,
      d.ratioQ1 === undefined ? `${s.ratio}` : `${s.ratio} (pairs' quartiles ${d.ratioQ1}–${d.ratioQ3})`,
      targetText(s),
    ],
  ];
}

function peerTreeRows(s: ScenarioResult): Row[] {
  const { d, b } = figures(s);
  return [
    [
      `${s.title}: history (wall time); peer ${Object.entries(
        (b as unknown as { versions: Record<string, string> }).versions ?? {},
      )
        .map(([name, version]) => `${name} ${version}`)
        .join(', ')}`,
      `${d.events} events, ${kib(d.bytes)} in 4 workflows (${d.medianMs} ms; ${d.actions} actions)`,
      `peer: ${b.events} events, ${kib(b.bytes)} in 1 workflow (${b.medianMs} ms; ${b.actions} actions)${b.ended ? ` ${b.ended}` : ''}; children are activities: no budget, crash isolation or cancellation of their own`,
      `${s.ratio}`,
      '—',
    ],
  ];
}

function peerGrowthRows(s: ScenarioResult): Row[] {
  const deputy = s.deputy.bytesPerTurn as Record<string, number>;
  const peer = (s.baseline as { long: Record<string, { bytesPerTurn: number; ended?: string }> }).long;
  const rows = Object.keys(peer).map((turns) => [
    `${s.title.split(':')[0]}: history per turn, ${turns} turns (2 KB tool result a turn)`,
    `${kib(deputy[turns])} (compaction on)`,
    `peer: ${kib(peer[turns]!.bytesPerTurn)}${peer[turns]!.ended ? ` (${peer[turns]!.ended})` : ''}`,
    '',
    '',
  ]);
  rows.at(-1)![3] = `${s.ratio} (at ${s.title.split(' at ')[1]})`;
  rows.at(-1)![4] = targetText(s);
  return rows;
}

function peerActionsRows(s: ScenarioResult): Row[] {
  const { d, b } = figures(s);
  return [[s.title, `${d.actionsPerTurn}`, `peer: ${b.actionsPerTurn}`, `${s.ratio}`, targetText(s)]];
}

function throughputRow(s: ScenarioResult): Row[] {
  const { d, b } = figures(s);
  const title = `${s.title} (a warm-up, then ${s.runs} paired rounds; ratio: median of the rounds')`;
  const ratio = `${s.ratio} (rounds ${d.ratioMin}–${d.ratioMax})`;
  // CPU a run, when the bench could read the dev server's (Linux).
  const cpu = (f: Numbers) =>
    !Number.isFinite(f.serverCpuMsPerRun)
      ? ''
      : `; CPU a run: dev server ${f.serverCpuMsPerRun} ms, worker ${f.workerCpuMsPerRun} ms`;
  return [
    [title, `${d.runsPerMinute} runs/min${cpu(d)}`, `${b.runsPerMinute} runs/min${cpu(b)}`, ratio, targetText(s)],
  ];
}

/** A cache share as the table shows it: the share, and of how many input tokens. */
const shareText = (c: { share?: number; inputTokens?: number; cachedTokens?: number } | undefined) =>
  c?.share === undefined ? '—' : `${(c.share * 100).toFixed(1)}% (${c.cachedTokens} of ${c.inputTokens} input tokens)`;

function cacheRows(s: ScenarioResult): Row[] {
  const d = s.deputy as Record<string, { share?: number; inputTokens?: number; cachedTokens?: number } | undefined>;
  const deputy = `compaction on: ${shareText(d.compactionOn)}; off: ${shareText(d.compactionOff)}`;
  const other = s.baseline ? `peer: ${shareText(s.baseline)}` : '—';
  return [[s.title, deputy, other, `${s.ratio}`, '—']];
}

/** The table's rows of each scenario, by its id; the replay scenarios are the rest. */
const ROWS: Record<string, (s: ScenarioResult) => Row[]> = {
  'delegation-overhead': (s) => [wallRow(s, targetText(s))],
  'workflow-bundle': (s) => {
    const { d, b } = figures(s);
    return [[s.title, kib(d.bytes), kib(b.bytes), `${s.ratio}`, targetText(s)]];
  },
  'tree-history': (s) => [historyRow(s.title, s, `${s.ratio}`, targetText(s))],
  'wide-tree': (s) => {
    const { d, b } = figures(s);
    const title = `Same wide tree: history of all ${d.workflows} workflows`;
    return [wallRow(s, '—'), historyRow(title, s, `${(d.bytes! / b.bytes!).toFixed(2)}`, '—')];
  },
  'watch-cost': (s) => {
    const { d, b } = figures(s);
    const title = `${s.title}: worker CPU (${s.runs} runs; wall ${d.medianMs} vs ${b.medianMs} ms)`;
    return [[title, `watched: ${d.workerCpuMs} ms`, `not watched: ${b.workerCpuMs} ms`, `${s.ratio}`, targetText(s)]];
  },
  'watch-delay': (s) => {
    const { d } = figures(s);
    const delay = `median ${d.medianMs} ms, p95 ${d.p95Ms} ms`;
    return [[`${s.title} (${d.events} events a run)`, delay, '—', `${s.ratio} (wall, watched ÷ not)`, '—']];
  },
  'history-growth': growthRows,
  'prompt-cache': cacheRows,
  'peer-cache': cacheRows,
  'ts-peer-cache': cacheRows,
  'tree-actions': (s) => {
    const { d, b } = figures(s);
    return [[s.title, `${d.actions} (${d.recorded})`, `${b.actions} (${b.recorded})`, `${s.ratio}`, targetText(s)]];
  },
  'streamed-call': (s) => {
    const { d } = figures(s);
    return [[s.title, `${d.heartbeats} heartbeats (${d.actions} actions in all)`, '—', `${s.ratio}`, targetText(s)]];
  },
  throughput: throughputRow,
  'throughput-cluster': throughputRow,
  'peer-tree': peerTreeRows,
  'ts-peer-tree': peerTreeRows,
  'peer-growth': peerGrowthRows,
  'ts-peer-growth': peerGrowthRows,
  'peer-actions': peerActionsRows,
  'ts-peer-actions': peerActionsRows,
  'tree-history-compressed': (s) => {
    const { d, b } = figures(s);
    const deputy = `${kib(d.bytes)} (uncompressed: ${kib(d.uncompressedBytes)})`;
    return [[s.title, deputy, `${kib(b.bytes)} (nothing to compress)`, `${s.ratio}`, '—']];
  },
  'throughput-rss': (s) => {
    const { d, b } = figures(s);
    return [[s.title, `${d.peakRssMiB} MiB`, `${b.peakRssMiB} MiB`, `${s.ratio}`, targetText(s)]];
  },
};

/** The Markdown table docs/performance.md shows; medians throughout. */
export function renderTable(report: BenchReport): string {
  const rows = report.scenarios.flatMap((s) => (ROWS[s.id] ?? replayRows)(s));
  const header = ['Scenario', 'Deputy', 'Bare Temporal', 'Ratio', 'Target'];
  const lines = [header, header.map(() => '---'), ...rows].map((row) => `| ${row.join(' | ')} |`);
  const m = report.machine;
  return [
    `Measured ${report.date} with \`npm run bench\` on ${m.cpus} × ${m.cpuModel}, ${m.memoryGiB} GiB RAM; Node ${report.versions.node}, Temporal SDK ${report.versions.temporalSdk}, ${report.versions.temporalCli}. Medians.`,
    '',
    ...lines,
  ].join('\n');
}
