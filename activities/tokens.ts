/**
 * Counting a model call's input with a real tokenizer, so a call's worst case is known before it is made.
 * `gpt-tokenizer` holds OpenAI's own encodings; models it does not know are counted with o200k and a wider margin.
 */
import { countTokens as countO200k } from 'gpt-tokenizer/encoding/o200k_base';
import type { ChatMessage } from '../src/contract/dialogue.js';
import { INPUT_COUNT } from '../src/rules/call-budget.js';
import type { ToolSpec } from '../src/contract/tools.js';

/** How a model's input is counted, and the margin added for what the count cannot see. */
interface Encoding {
  count: (text: string) => number;
  /** Multiplier on the count: 1.05 for OpenAI models whose encoding is known, 1.25 for any other model. */
  factor: number;
}

const O200K_MODELS = /^(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|gpt-oss|chatgpt-4o|o\d)/;
const CL100K_MODELS = /^(gpt-4|gpt-3\.5)/;

/**
 * A run's calls send the same persona, tool schemas and earlier turns again and again; each text is counted
 * once. Two generations of at most `MEMO_ENTRIES` texts and `MEMO_CHARS` characters each (a full generation becomes
 * the old one, the older is dropped), so the memory it holds stays bounded.
 */
const MEMO_ENTRIES = 20_000;
const MEMO_CHARS = 8 * 2 ** 20;
function memoized(count: (text: string) => number): (text: string) => number {
  let current = new Map<string, number>();
  let old = new Map<string, number>();
  let chars = 0;
  return (text) => {
    let tokens = current.get(text);
    if (tokens !== undefined) return tokens;
    tokens = old.get(text) ?? countText(text, count);
    if (current.size >= MEMO_ENTRIES || chars + text.length > MEMO_CHARS) {
      old = current;
      current = new Map();
      chars = 0;
    }
    if (text.length <= MEMO_CHARS / 4) {
      current.set(text, tokens);
      chars += text.length;
    }
    return tokens;
  };
}
const o200k = memoized(countO200k);
/** cl100k (gpt-4, gpt-3.5) is loaded the first time such a model is called: its tables are tens of MiB. */
let cl100k: ((text: string) => number) | undefined;

/** Loads what `encodingFor(model)` needs; call it before counting a model's input. */
export async function loadEncoding(model: string): Promise<void> {
  if (!cl100k && !O200K_MODELS.test(model) && CL100K_MODELS.test(model)) {
    cl100k = memoized((await import('gpt-tokenizer/encoding/cl100k_base')).countTokens);
  }
}

/** The encoding of `model` and the margin its count gets; its `count` remembers the texts it has counted. */
export function encodingFor(model: string): Encoding & { known: boolean } {
  if (O200K_MODELS.test(model)) return { count: o200k, factor: INPUT_COUNT.knownFactor, known: true };
  if (CL100K_MODELS.test(model)) {
    if (!cl100k) throw new Error(`the cl100k encoding of ${model} is not loaded: await loadEncoding(model) first`);
    return { count: cl100k, factor: INPUT_COUNT.knownFactor, known: true };
  }
  return { count: o200k, factor: INPUT_COUNT.unknownFactor, known: false };
}

/** Longest run of non-space the BPE sees whole: BPE is quadratic in the length of one word. */
const MAX_WORD = 256;
const PIECE = 64;

/**
 * Tokens of `text`. Runs of non-space longer than 256 characters (base64, minified code, a 3 MB answer of one
 * word) are counted in 64-character pieces: linear time, and pieces never merge into fewer tokens than the whole.
 */
export function countText(text: string, count: (text: string) => number = countO200k): number {
  let total = 0;
  let last = 0;
  for (const match of text.matchAll(new RegExp(`\\S{${MAX_WORD + 1},}`, 'g'))) {
    total += count(text.slice(last, match.index));
    for (let i = 0; i < match[0].length; i += PIECE) total += count(match[0].slice(i, i + PIECE));
    last = match.index + match[0].length;
  }
  return total + count(text.slice(last));
}

/**
 * A call's input as the model's tokenizer counts it (`counted`) and with the margin (`estimate`, an upper bound): the
 * tokenizer's factor, or `billedFactor` (the most times that count the endpoint may bill) when it is larger.
 */
export function countCallTokens(
  model: string,
  messages: readonly ChatMessage[],
  tools: readonly Pick<ToolSpec, 'name' | 'description' | 'parameters'>[],
  billedFactor = 1,
): { counted: number; estimate: number } {
  const { count, factor: margin } = encodingFor(model);
  const factor = Math.max(margin, billedFactor);
  let counted = INPUT_COUNT.perRequest;
  for (const message of messages) {
    counted += INPUT_COUNT.perMessage + count(message.role);
    if (message.content) counted += count(message.content);
    if (message.role === 'assistant' && message.tool_calls) counted += count(JSON.stringify(message.tool_calls));
    if (message.role === 'tool') counted += count(message.tool_call_id);
  }
  if (tools.length > 0) {
    const schemas = tools.map(({ name, description, parameters }) => ({ name, description, parameters }));
    counted += count(JSON.stringify(schemas));
  }
  return { counted, estimate: Math.ceil(counted * factor) + INPUT_COUNT.fixedMargin };
}
