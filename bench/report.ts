/** The benchmark's result format and its Markdown table. */

/** One scenario's figures: Deputy's, the baseline's (or `null` when it has none), their ratio and the target. */
export interface ScenarioResult {
  id: string;
  title: string;
  runs: number;
  deputy: Record<string, unknown>;
  baseline: Record<string, unknown> | null;
  ratio: number;
  target: { ratioAtMost: number; bytesPerTurnAtMost?: number } | { ratioAtLeast: number } | null;
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
      : `≥ ${target.ratioAtLeast}`;
  return `${bound} ${result.met ? '✅' : '❌'}`;
}

/** The Markdown table the README shows; medians throughout. */
export function renderTable(report: BenchReport): string {
  const rows: string[][] = [];
  for (const s of report.scenarios) {
    // Flat scenarios hold numbers only; history growth's nested figures are read apart below.
    const d = s.deputy as Record<string, number>;
    const b = (s.baseline ?? {}) as Record<string, number>;
    switch (s.id) {
      case 'delegation-overhead':
        rows.push([
          `${s.title} (wall time, ${s.runs} runs)`,
          `${d.medianMs} ms`,
          `${b.medianMs} ms`,
          `${s.ratio}`,
          targetText(s),
        ]);
        break;
      case 'workflow-bundle':
        rows.push([s.title, kib(d.bytes), kib(b.bytes), `${s.ratio}`, targetText(s)]);
        break;
      case 'tree-history':
        rows.push([
          s.title,
          `${d.events} events, ${kib(d.bytes)}`,
          `${b.events} events, ${kib(b.bytes)}`,
          `${s.ratio}`,
          targetText(s),
        ]);
        break;
      case 'wide-tree':
        rows.push([
          `${s.title} (wall time, ${s.runs} runs)`,
          `${d.medianMs} ms`,
          `${b.medianMs} ms`,
          `${s.ratio}`,
          '—',
        ]);
        rows.push([
          `Same wide tree: history of all ${d.workflows} workflows`,
          `${d.events} events, ${kib(d.bytes)}`,
          `${b.events} events, ${kib(b.bytes)}`,
          `${(d.bytes! / b.bytes!).toFixed(2)}`,
          '—',
        ]);
        break;
      case 'watch-cost':
        rows.push([
          `${s.title}: worker CPU (${s.runs} runs; wall ${d.medianMs} vs ${b.medianMs} ms)`,
          `watched: ${d.workerCpuMs} ms`,
          `not watched: ${b.workerCpuMs} ms`,
          `${s.ratio}`,
          targetText(s),
        ]);
        break;
      case 'watch-delay':
        rows.push([
          `${s.title} (${d.events} events a run)`,
          `median ${d.medianMs} ms, p95 ${d.p95Ms} ms`,
          '—',
          `${s.ratio} (wall, watched ÷ not)`,
          '—',
        ]);
        break;
      case 'history-growth': {
        const on = s.deputy.compactionOn as Record<string, { bytesPerTurn: number; segments: number }>;
        const off = s.deputy.compactionOff as Record<string, { bytesPerTurn: number; segments: number }>;
        for (const turns of Object.keys(on)) {
          rows.push([
            `History per turn, ${turns} turns (2 KB tool result a turn)`,
            `compaction on: ${kib(on[turns]!.bytesPerTurn)} (${on[turns]!.segments} segments)`,
            `compaction off: ${kib(off[turns]!.bytesPerTurn)} (${off[turns]!.segments} segments)`,
            '',
            '',
          ]);
        }
        rows.at(-1)![3] = `${s.ratio} (last ÷ first, on)`;
        rows.at(-1)![4] = targetText(s);
        break;
      }
      case 'throughput':
        rows.push([
          `${s.title} (${s.runs} rounds)`,
          `${d.runsPerMinute} runs/min`,
          `${b.runsPerMinute} runs/min`,
          `${s.ratio}`,
          targetText(s),
        ]);
        break;
      case 'throughput-rss':
        rows.push([s.title, `${d.peakRssMiB} MiB`, `${b.peakRssMiB} MiB`, `${s.ratio}`, targetText(s)]);
        break;
      default:
        rows.push([
          `${s.title} (${s.runs} replays)`,
          `${d.medianMs} ms (${d.histories} histories, ${d.events} events)`,
          `${b.medianMs} ms (${b.histories} histories, ${b.events} events)`,
          `${s.ratio}`,
          targetText(s),
        ]);
    }
  }
  const header = ['Scenario', 'Deputy', 'Bare Temporal', 'Ratio', 'Target'];
  const lines = [header, header.map(() => '---'), ...rows].map((row) => `| ${row.join(' | ')} |`);
  const m = report.machine;
  return [
    `Measured ${report.date} with \`npm run bench\` on ${m.cpus} × ${m.cpuModel}, ${m.memoryGiB} GiB RAM; Node ${report.versions.node}, Temporal SDK ${report.versions.temporalSdk}, ${report.versions.temporalCli}. Medians.`,
    '',
    ...lines,
  ].join('\n');
}
