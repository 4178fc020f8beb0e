/**
 * The offline chat's scripted model: a conversation layer (`concierge`) that dispatches a researcher in the
 * background, keeps talking, relays the researcher's question to the person, answers it and interjects a change,
 * and, once the person approves the researcher's request to save its findings, reports the result when it arrives. Anything off the script gets a short note on what the script knows.
 */
import { lastMessage, toolMessages, type RecordedRequest, type ScriptRule } from '../testing/script.js';

/** The lines the script follows, in order (docs/chat.md's transcript and the chat test type them). */
export const CHAT_LINES = {
  order: 'Price my order: 3 notebooks at $12.50 and 2 pens at $1.20, shipped to Springfield.',
  meanwhile: 'How is it going?',
  answer: 'Standard, and gift-wrap it please.',
} as const;

const FINDINGS =
  '# Findings\n\n- Springfield sales tax: 8%\n- Standard shipping: $4.99 per order\n- Gift wrap: requested';

const RESEARCH =
  'Find the sales tax rate in Springfield and the cost of the shipping the customer wants, in the notes.';

const isConcierge = (r: RecordedRequest) => (r.body.messages[0]?.content ?? '').includes("You are Deputy's concierge");
const isResearcher = (r: RecordedRequest) => !isConcierge(r) && JSON.stringify(r.body.messages).includes(RESEARCH);
const said = (text: string) => (r: RecordedRequest) => isConcierge(r) && lastMessage(r) === text;
const researcherAt = (toolResults: number) => (r: RecordedRequest) =>
  isResearcher(r) && toolMessages(r).length === toolResults;

/** The chat's script. */
export const CHAT_SCRIPT: ScriptRule[] = [
  {
    when: said(CHAT_LINES.order),
    reply: {
      text: "I'll have a researcher look up Springfield's sales tax and the shipping in the background.",
      // No `context`: the concierge preset forks its dialogue by default, so the researcher sees the order.
      toolCalls: [
        {
          name: 'delegate',
          arguments: { briefs: [{ task_name: 'research', role: 'researcher', message: RESEARCH, wait: false }] },
        },
      ],
    },
  },
  {
    when: (r) => isConcierge(r) && lastMessage(r).startsWith('Dispatched in the background'),
    reply: { text: 'The researcher is on it. Ask me anything meanwhile.' },
  },
  {
    when: said(CHAT_LINES.meanwhile),
    reply: { text: "The researcher is still working; I'll tell you as soon as it reports." },
  },
  {
    when: (r) => isConcierge(r) && lastMessage(r).startsWith('[question from child research]'),
    reply: { text: 'The researcher asks: standard or express shipping?' },
  },
  {
    when: said(CHAT_LINES.answer),
    reply: {
      toolCalls: [
        { name: 'answer_child', arguments: { task_name: 'research', answer: 'Standard shipping.' } },
        {
          name: 'interject',
          arguments: { task_name: 'research', message: 'The customer also wants the order gift-wrapped.' },
        },
      ],
    },
  },
  {
    // The two calls run in parallel: their results come in either order.
    when: (r) => {
      const results = r.body.messages.slice(-2).map((m) => (m.role === 'tool' ? (m.content ?? '') : ''));
      return (
        isConcierge(r) &&
        results.some((c) => c.startsWith('answer to')) &&
        results.some((c) => c.startsWith('delivered to'))
      );
    },
    reply: { text: 'Passed on: standard shipping, gift-wrapped.' },
  },
  {
    when: (r) => isConcierge(r) && lastMessage(r).startsWith('[approval requested below child research]'),
    reply: { text: 'The researcher asks to save its findings as findings.md: type /approve, or /deny with a reason.' },
  },
  {
    when: (r) => isConcierge(r) && lastMessage(r).startsWith('[background child research ended]'),
    reply: {
      text: 'The research is in: 8% Springfield sales tax and $4.99 standard shipping. Your order: $39.90 + 8% tax = $43.09, plus $4.99 shipping = $48.08, gift-wrapped.',
    },
  },
  {
    name: 'off script',
    when: (r) => isConcierge(r) && r.body.messages.at(-1)?.role === 'user',
    times: Infinity,
    reply: {
      text: `(offline demo: I follow a script) Try "${CHAT_LINES.order}", then answer the researcher's question. Ctrl-C ends the conversation.`,
    },
  },
  {
    when: researcherAt(0),
    delayMs: 1500,
    reply: { toolCalls: [{ name: 'ask_parent', arguments: { question: 'Standard or express shipping?' } }] },
  },
  {
    when: researcherAt(1),
    delayMs: 800,
    reply: { toolCalls: [{ name: 'search_notes', arguments: { query: 'sales tax' } }] },
  },
  {
    when: researcherAt(2),
    delayMs: 800,
    reply: { toolCalls: [{ name: 'search_notes', arguments: { query: 'shipping' } }] },
  },
  {
    // Saving a file needs the person's approval (the chat's config): the request climbs to the conversation.
    when: researcherAt(3),
    reply: {
      toolCalls: [
        {
          name: 'save_artifact',
          arguments: { name: 'findings.md', media_type: 'text/markdown', content: FINDINGS },
        },
      ],
    },
  },
  {
    when: researcherAt(4),
    reply: {
      text: 'Springfield sales tax is 8% (note "Sales tax"); standard shipping is $4.99 per order (note "Shipping"); gift wrapping noted; findings saved.',
    },
  },
];
