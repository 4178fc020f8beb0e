/**
 * R3.7: the continued block an interjection carries is exactly what the parent's dialogue gained since the child last
 * saw it — after a compaction too, which moves what a parent heard of its children ahead of the summary and folds
 * turns the child never saw into it.
 */
import { describe, expect, it } from 'vitest';
import { COMPACTION_SYSTEM_PROMPT } from '../src/rules/compaction.js';
import { userSays, type RecordedRequest } from '../src/testing/script.js';
import { DELEGATION_TOOLS, PARENT_SCOPES } from './support/delegation.js';
import { testConfig, useHarness } from './support/harness.js';

const h = useHarness({
  config: testConfig({
    presets: [{ id: 'assistant', persona: 'You are the parent.', tools: ['search_notes'] }],
    limits: {
      maxTurns: 30,
      maxTokens: 1_000_000,
      maxCostUsd: 5,
      maxToolCalls: 40,
      maxDurationSeconds: 600,
      synthesisReserve: false,
    },
    delegation: {
      enabled: true,
      activation: 'unconditional',
      childDefaults: { maxTurns: 5, maxTokens: 20_000, maxCostUsd: 0.05, maxToolCalls: 5 },
    },
    compaction: { thresholdTokens: 3000, keepRecentTurns: 1, continueAsNewAfterEvents: 10_000 },
  }),
  tools: DELEGATION_TOOLS,
});

const isCompaction = (r: RecordedRequest) => r.body.messages[0]?.content === COMPACTION_SYSTEM_PROMPT;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const until = async (ready: () => boolean) => {
  for (let i = 0; i < 300 && !ready(); i++) await sleep(100);
};
const isParent = (r: RecordedRequest) =>
  !isCompaction(r) && !r.body.messages.some((m) => m.role === 'user' && m.content?.includes('## Your task'));
let parentTurns = 0;
let parentInterjected = false;
const toolResults = (r: RecordedRequest) => r.body.messages.filter((m) => m.role === 'tool').length;

describe('R3.7 the continued block after a compaction', () => {
  it('R3.7 R1.6 an interjection after the parent compacted sends the summary and what came after it, never what the child already saw', async () => {
    const task = 'continued block: compact, then interject';
    const padding = 'The parent keeps working on its own part of the order. '.repeat(60);
    h.model.add(
      { name: 'compact', when: isCompaction, times: Infinity, reply: { text: 'COMPACTED: the parent read notes.' } },
      {
        name: 'ctx first',
        when: (r) =>
          userSays('ctx child: work')(r) && !r.body.messages.some((m) => m.content?.includes('[interjection')),
        // Busy until the parent has interjected, so the interjection arrives while it works.
        reply: async () => {
          await until(() => parentInterjected);
          await sleep(500);
          return { text: 'working' };
        },
      },
      { name: 'ctx interjected', when: userSays('ctx child: work'), reply: { text: 'ctx done' } },
      { name: 'early', when: userSays('early child: go'), reply: { text: 'EARLY-RESULT-7' } },
      {
        name: 'parent',
        when: isParent,
        times: Infinity,
        reply: async () => {
          const turn = ++parentTurns;
          if (turn === 1) return delegate({ task_name: 'early', message: 'early child: go', wait: false });
          if (turn === 2) {
            // Goes on once the early child has ended, so its result is in the dialogue before the next delegation.
            await until(() => h.model.requests.some((x) => x.rule === 'early' && x.answeredAt !== undefined));
            await sleep(1000);
            return { toolCalls: [{ name: 'search_notes', arguments: { query: 'tax' } }] };
          }
          if (turn === 3)
            return delegate({ task_name: 'ctx', message: 'ctx child: work', context: 'all', wait: false });
          if (turn <= 7) {
            return {
              text: `PAD-${turn} ${padding}`,
              toolCalls: [{ name: 'search_notes', arguments: { query: 'shipping' } }],
            };
          }
          if (turn === 8) {
            return {
              toolCalls: [{ name: 'interject', arguments: { task_name: 'ctx', message: 'Mind the 8% rate.' } }],
            };
          }
          parentInterjected = true;
          return { text: 'done' };
        },
      },
    );
    const id = h.id('compact-interject');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: id });
    const result = await h.deputy.result(id);
    expect(result.status).toBe('completed');
    expect(h.model.requests.filter((r) => r.rule === 'compact').length).toBeGreaterThan(0);
    const after = h.model.requests.filter((r) => r.rule === 'parent')[8]!;
    expect(after.body.messages.at(-1)!.content).toBe(`delivered to ${id}/ctx-2`);

    const first = h.model.requests.find((r) => r.rule === 'ctx first')!;
    expect(JSON.stringify(first.body.messages)).toContain('EARLY-RESULT-7'); // in its snapshot
    const interjected = h.model.requests.find((r) => r.rule === 'ctx interjected')!;
    const block = interjected.body.messages.map((m) => m.content ?? '').find((c) => c.startsWith('[interjection'))!;
    expect(block.startsWith(`[interjection from ${id}]\n## Parent Chat Context (continued)\n`)).toBe(true);
    // What it already saw is not sent again; the turns it never saw come as the summary that replaced them, then the
    // turn kept after it.
    expect(block).not.toContain('EARLY-RESULT-7');
    expect(block).not.toContain(task);
    expect(block).toContain('COMPACTED: the parent read notes.');
    expect(block).toContain('PAD-6');
    expect(block).not.toContain('PAD-3');
    expect(block.endsWith('## Message from your parent\nMind the 8% rate.')).toBe(true);
    expect(toolResults(interjected)).toBe(0);
  });
});

function delegate(brief: Record<string, unknown>) {
  return { toolCalls: [{ name: 'delegate', arguments: { briefs: [brief] } }] };
}
