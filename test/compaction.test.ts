import { describe, expect, it } from 'vitest';
import { builtinTools } from '../activities/builtin-tools.js';
import { COMPACTION_SYSTEM_PROMPT } from '../src/rules/compaction.js';
import { RunState } from '../src/contract/run.js';
import type { RecordedRequest } from '../src/testing/script.js';
import { fetchPageTool } from '../src/testing/pages.js';
import { testConfig, useHarness } from './support/harness.js';

const TURNS = 300;

const h = useHarness({
  config: testConfig({
    presets: [{ id: 'assistant', persona: 'You read pages.', tools: ['fetch_page'] }],
    limits: {
      maxTurns: 400,
      maxTokens: 10_000_000,
      maxCostUsd: 10,
      maxToolCalls: 400,
      maxDurationSeconds: 900,
      synthesisReserve: false,
    },
    compaction: { thresholdTokens: 6000, keepRecentTurns: 3, continueAsNewAfterEvents: 600 },
  }),
  tools: [...builtinTools(), fetchPageTool],
});

const isCompaction = (r: RecordedRequest) => r.body.messages[0]?.content === COMPACTION_SYSTEM_PROMPT;
const markers = (r: RecordedRequest) =>
  [...JSON.stringify(r.body.messages).matchAll(/PAGE-(\d+)-MARK/g)].map((m) => Number(m[1]));

describe('R1.6 compaction and continue-as-new', () => {
  it(`R1.6 a ${TURNS}-turn run completes in several segments, each small, and compacted turns never come back`, async () => {
    const task = 'read every page';
    let turn = 0;
    h.model.add(
      {
        name: 'compact',
        when: isCompaction,
        times: Infinity,
        reply: { text: 'Summary: pages read so far were all lorem ipsum; keep reading the next page.' },
      },
      {
        name: 'reader',
        when: (r) => !isCompaction(r),
        times: Infinity,
        reply: () =>
          ++turn <= TURNS
            ? { toolCalls: [{ name: 'fetch_page', arguments: { page: turn } }] }
            : { text: `read ${TURNS} pages` },
      },
    );
    const workflowId = h.id('long');
    await h.deputy.startRun({ task, scopes: ['tools.notes'] }, { workflowId });
    const result = await h.deputy.result(workflowId);
    expect(result).toMatchObject({ status: 'completed', output: `read ${TURNS} pages` });
    expect(result.usage.modelCalls).toBe(TURNS + 1);
    expect(result.usage.toolCalls).toBe(TURNS);

    // Several segments (continue-as-new), none anywhere near 4 MB of history.
    const segments = [];
    for await (const info of h.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) segments.push(info);
    expect(segments.length).toBeGreaterThanOrEqual(2);
    for (const segment of segments) expect(segment.historySize ?? 0).toBeLessThan(4 * 1024 * 1024);

    // No raw compacted turn appears in any later model request.
    const requests = h.model.requests.filter((r) => r.rule === 'reader');
    expect(requests).toHaveLength(TURNS + 1);
    const gone = new Set<number>();
    let previous = new Set<number>();
    for (const request of requests) {
      const current = new Set(markers(request));
      for (const page of current) expect(gone.has(page), `page ${page} came back after compaction`).toBe(false);
      for (const page of previous) if (!current.has(page)) gone.add(page);
      expect(current.size).toBeLessThanOrEqual(12);
      previous = current;
    }
    expect(gone.size).toBeGreaterThan(TURNS - 12);
    expect(h.model.requests.filter((r) => r.rule === 'compact').length).toBeGreaterThan(10);

    const state = RunState.parse(await h.deputy.getState(workflowId));
    expect(state.session.filter((e) => e.type === 'compaction/summary')).toHaveLength(1);
    expect(state.session.filter((e) => e.type === 'tool/result').length).toBeLessThanOrEqual(12);
  });
});
