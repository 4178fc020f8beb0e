/** The benchmark's scripted model and Deputy configuration. Every answer is immediate. */
import { COMPACTION_SYSTEM_PROMPT } from '../src/rules/compaction.js';
import { toolResultCount, userSays, type RecordedRequest, type ScriptRule } from '../src/testing/script.js';

/** The children's assignments, for both sides. */
export const TREE_BRIEFS = ['leaf: part 1', 'leaf: part 2', 'leaf: part 3'];

const isCompaction = (request: RecordedRequest) => request.body.messages[0]?.content === COMPACTION_SYSTEM_PROMPT;

/** The wide tree: this many invocations of `delegate`, three briefs each. */
/** The streamed call of the heartbeat scenario: its length, and how often a piece of its answer arrives. */
export const STREAMED_CALL_SECONDS = 30;
export const STREAM_PIECE_MS = 250;
/** 16 characters a piece (the scripted model's), one piece every STREAM_PIECE_MS for STREAMED_CALL_SECONDS. */
const STREAMED_TEXT = 'word by word... '.repeat((STREAMED_CALL_SECONDS * 1000) / STREAM_PIECE_MS);
export const WIDE_ROUNDS = 8;
export const WIDE_WIDTH = 3;

/** A delegate call with `count` briefs (task names from `first`), context `none`. */
function delegate(count: number, first = 1) {
  const briefs = Array.from({ length: count }, (_, i) => ({
    task_name: `part-${first + i}`,
    message: `leaf: part ${first + i}`,
    context: 'none',
  }));
  return { toolCalls: [{ name: 'delegate', arguments: { briefs } }] };
}

/** The long run of the history-growth scenario: `turns` pages, then an answer. One such run at a time. */
export const growthScript = {
  turns: 0,
  done: 0,
  start(turns: number) {
    this.turns = turns;
    this.done = 0;
  },
};

/** Rules for every scenario; the last one answers anything else (the baseline's calls) with a short text. */
export function benchRules(): ScriptRule[] {
  return [
    {
      // Like a real model's summary, it keeps the task (the compaction prompt asks for that).
      name: 'compaction',
      when: isCompaction,
      times: Infinity,
      reply: (request) => ({
        text: `Summary: the task is "${/growth-run \w+ \d+/.exec(JSON.stringify(request.body.messages))?.[0] ?? ''}"; pages read so far.`,
      }),
    },
    { name: 'leaf', when: userSays('leaf:'), times: Infinity, reply: { text: 'leaf done' } },
    {
      // One answer streamed over STREAMED_CALL_SECONDS, a piece every STREAM_PIECE_MS.
      name: 'streamed',
      when: userSays('streamed-call'),
      times: Infinity,
      reply: { text: STREAMED_TEXT, chunkDelayMs: STREAM_PIECE_MS },
    },
    {
      name: 'tree',
      when: userSays('tree-run'),
      times: Infinity,
      reply: (request) => (toolResultCount(request) === 0 ? delegate(3) : { text: 'tree done' }),
    },
    {
      name: 'wide',
      when: userSays('wide-run'),
      times: Infinity,
      reply: (request) => {
        const round = toolResultCount(request);
        return round < WIDE_ROUNDS ? delegate(WIDE_WIDTH, round * WIDE_WIDTH + 1) : { text: 'wide done' };
      },
    },
    {
      name: 'throughput',
      when: userSays('tp-run'),
      times: Infinity,
      reply: (request) => (toolResultCount(request) === 0 ? delegate(2) : { text: 'tp done' }),
    },
    {
      name: 'growth',
      when: userSays('growth-run'),
      times: Infinity,
      reply: () =>
        ++growthScript.done <= growthScript.turns
          ? { toolCalls: [{ name: 'fetch_page', arguments: { page: growthScript.done } }] }
          : { text: `read ${growthScript.turns} pages` },
    },
    { name: 'baseline', times: Infinity, reply: { text: 'ok' } },
  ];
}

/**
 * Deputy's configuration for the benchmark. Compaction "off" means a threshold no run reaches: the whole dialogue
 * goes into every model call, and a run continues as new only when Temporal suggests it.
 */
export function benchConfig(compaction: boolean, turns = 0): Record<string, unknown> {
  return {
    model: 'bench-model',
    prices: { 'bench-model': { inputPerMTokUsd: 1, outputPerMTokUsd: 2 } },
    presets: [{ id: 'assistant', persona: 'You are benchmarked.', tools: ['calculate', 'search_notes', 'fetch_page'] }],
    grantableScopes: ['tools.calc', 'tools.notes', 'run.delegate'],
    limits: {
      maxTurns: turns + 10,
      maxTokens: 1_000_000_000,
      maxCostUsd: 1000,
      maxToolCalls: turns + 10,
      maxDurationSeconds: 3600,
      synthesisReserve: false,
    },
    // maxChildrenPerRun raised for the wide tree (8 invocations of 3).
    delegation: {
      enabled: true,
      activation: 'unconditional',
      maxChildrenPerRun: WIDE_ROUNDS * WIDE_WIDTH,
      childDefaults: { maxTurns: 5, maxTokens: 100_000, maxCostUsd: 1, maxToolCalls: 5 },
    },
    compaction: compaction
      ? { thresholdTokens: 6000, keepRecentTurns: 3, continueAsNewAfterEvents: 600 }
      : { thresholdTokens: 1_000_000_000, keepRecentTurns: 3, continueAsNewAfterEvents: 1_000_000_000 },
  };
}
