/**
 * `npm run replay-gate:time`: how long the replay gate (`deputy replay`) takes on this machine, for the committed
 * fixtures and for 1,000 histories made from them (each fixture again, under a run id of its own), against one
 * bundle made first. docs/performance.md shows what it printed.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { exportedHistories, replayGate } from '../src/testing/replay-gate.js';
import { PROJECT_ROOT } from '../src/testing/temporal-cli.js';
import { bundleDeputyWorkflows } from '../src/worker/bundle.js';

type Started = { events: { workflowExecutionStartedEventAttributes?: Record<string, unknown> }[] };

Runtime.install({ logger: new DefaultLogger('WARN') });
const fixtures = exportedHistories(join(PROJECT_ROOT, 'test', 'fixtures', 'histories'));
const bundling = performance.now();
const bundle = { code: (await bundleDeputyWorkflows()).code };
const bundleMs = performance.now() - bundling;
const generated = Array.from({ length: 1000 }, (_, i) => {
  const { workflowId, history } = fixtures[i % fixtures.length]!;
  const copy = structuredClone(history as Started);
  const started = copy.events[0]!.workflowExecutionStartedEventAttributes!;
  const runId = randomUUID();
  started.originalExecutionRunId = runId;
  started.firstExecutionRunId = runId;
  return { workflowId, history: copy };
});
const line = (what: string, report: Awaited<ReturnType<typeof replayGate>>) =>
  `${what}: ${report.replayed} histories in ${(report.ms / 1000).toFixed(1)} s (${(report.ms / report.replayed).toFixed(1)} ms each), ${report.breaking.length} would break`;
const small = await replayGate(fixtures, bundle);
const large = await replayGate(generated, bundle);
console.log(`bundling the workflow code: ${(bundleMs / 1000).toFixed(1)} s`);
console.log(line('the fixtures', small));
console.log(line('1,000 generated', large));
console.log(`max RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`);
process.exit(small.breaking.length + large.breaking.length > 0 ? 1 : 0);
