/**
 * `deputy eval admit`: an exported session of a failed single-agent run becomes a capability scenario (R5.3) — its
 * task and the messages before it, the notes its tools returned, the tools it used — with secrets and personal data
 * redacted. Each redaction is listed in the scenario (`admittedFrom.redactions`) so a reviewer can check it; the
 * owner then writes `score.expect` (what a good answer holds) and the offline scripts, if any. Pure.
 */
import { stringify } from 'yaml';
import { InputError } from '../contract/errors.js';
import { parseSessionExport } from '../rules/sessions.js';
import type { Scenario } from './scenario.js';

/** What is redacted, and how it is recognised. Order matters: keys before the generic long-token rule. */
const REDACTIONS: readonly { kind: string; pattern: RegExp }[] = [
  { kind: 'api key', pattern: /\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}\b/g },
  { kind: 'bearer token', pattern: /\bBearer\s+[A-Za-z0-9._~+/-]{16,}=*/g },
  { kind: 'email address', pattern: /\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b/g },
  { kind: 'phone number', pattern: /(?<![\w$])\+?\d[\d ().-]{7,}\d(?!\w)/g },
  { kind: 'card number', pattern: /\b(?:\d[ -]?){13,19}\b/g },
  { kind: 'IBAN', pattern: /\b[A-Z]{2}\d{2}[A-Z0-9]{11,30}\b/g },
];

type Redaction = NonNullable<Scenario['admittedFrom']>['redactions'][number];

/** Replaces what `REDACTIONS` recognise in `text` with numbered placeholders; the same value gets the same one. */
function redactor() {
  const seen = new Map<string, string>();
  const redactions: Redaction[] = [];
  const redact = (text: string, where: string) => {
    let out = text;
    for (const { kind, pattern } of REDACTIONS) {
      out = out.replace(pattern, (value) => {
        let placeholder = seen.get(value);
        if (!placeholder) {
          placeholder = `[${kind.replace(/ /g, '-')}-${seen.size + 1}]`;
          seen.set(value, placeholder);
        }
        redactions.push({ kind, placeholder, where });
        return placeholder;
      });
    }
    return out;
  };
  return { redact, redactions };
}

/** The capability scenario for an exported session, as YAML, and its id. */
export function admitSession(raw: unknown, source: string): { id: string; yaml: string } {
  const parsed = parseSessionExport(raw);
  if (!parsed.ok) throw new InputError(source, parsed.problems);
  const { session } = parsed;
  const ended = session.events.findLast((e) => e.type === 'run/ended');
  const status = ended?.type === 'run/ended' ? ended.status : 'failed';
  const { redact, redactions } = redactor();
  const users = session.events.flatMap((e, i) => (e.type === 'message/user' && !e.inherited ? [{ e, i }] : []));
  const first = users[0];
  if (!first) throw new InputError(source, ['events: the session has no user message to make a task of']);
  // The task is the run's first own user message; what came before it (restored or seeded turns) stays as messages.
  const before: Scenario['messages'] = [];
  for (const e of session.events.slice(0, first.i)) {
    if (e.type === 'message/user') before.push({ role: 'user', content: redact(e.content, 'messages') });
    else if (e.type === 'message/assistant' && e.content) {
      before.push({ role: 'assistant', content: redact(e.content, 'messages') });
    }
  }
  const task = redact(first.e.content, 'task');
  const used = [
    ...new Set(session.events.flatMap((e) => (e.type === 'message/assistant' ? e.toolCalls.map((c) => c.name) : []))),
  ];
  // What its look-ups returned becomes the scenario's notes, so a re-run sees the same facts.
  const notes = session.events.flatMap((e) =>
    e.type === 'tool/result' && e.name === 'search_notes' && !e.isError
      ? e.content
          .split('\n')
          .map((line) => /^([^:]{1,80}): (.+)$/.exec(line))
          .filter((m): m is RegExpExecArray => m !== null)
          .map((m) => ({ title: m[1]!, text: redact(m[2]!, 'notes') }))
      : [],
  );
  const id = `admitted-${session.sessionId.replace(/[^a-z0-9-]/gi, '-').toLowerCase()}`.slice(0, 60);
  const scenario: Omit<Scenario, 'offline'> = {
    id,
    kind: 'capability',
    description: `Admitted from session ${session.sessionId} (${status}); review the redactions, then write score.expect.`,
    task,
    messages: before,
    preset: session.composition.preset.id,
    scopes: ['tools.calc', 'tools.notes'],
    notes: [...new Map(notes.map((n) => [n.title, n])).values()],
    limits: {},
    runs: 3,
    score: { expect: ['TODO: a fact a correct answer holds'], requiredTools: used.filter((t) => t === 'search_notes') },
    policy: { forbiddenTools: [], injected: [] },
    admittedFrom: { sessionId: session.sessionId, status, exportedAt: session.exportedAt, redactions },
  };
  return { id, yaml: `# Capability scenario admitted by \`deputy eval admit ${source}\`.\n${stringify(scenario)}` };
}
