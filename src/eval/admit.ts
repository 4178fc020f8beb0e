/**
 * `deputy eval admit`: an exported session of a failed single-agent run becomes a capability scenario — its
 * task and the messages before it, the notes its tools returned, the tools it used — with secrets and personal data
 * redacted in every text it keeps (see `redact.ts`). Each redaction is listed in the scenario (`admittedFrom.redactions`) so a reviewer can check it; the
 * owner then writes `score.expect` (what a good answer holds) and the offline scripts, if any. Pure.
 */
import { parse, stringify } from 'yaml';
import { InputError } from '../contract/errors.js';
import { parseSessionExport } from '../rules/sessions.js';
import type { Scenario } from '../config/scenario.js';
import { Redactor } from './redact.js';

/** The capability scenario for an exported session, as YAML, and its id. */
export async function admitSession(raw: unknown, source: string): Promise<{ id: string; yaml: string }> {
  const parsed = parseSessionExport(raw);
  if (!parsed.ok) throw new InputError(source, parsed.problems);
  const { session } = parsed;
  const ended = session.events.findLast((e) => e.type === 'run/ended');
  const status = ended?.type === 'run/ended' ? ended.status : 'failed';
  const redactor = await Redactor.keeping(sessionIds(session));
  const redact = (text: string, where: string) => redactor.redact(text, where);
  const users = session.events.flatMap((e, i) => (e.type === 'message/user' && !e.inherited ? [{ e, i }] : []));
  const first = users[0];
  if (!first) throw new InputError(source, ['events: the session has no user message to make a task of']);
  // The task is the run's first own user message; what came before it (restored or seeded turns) stays as messages.
  const before: Scenario['messages'] = [];
  for (const e of session.events.slice(0, first.i)) {
    if (e.type === 'message/user') before.push({ role: 'user', content: await redact(e.content, 'messages') });
    else if (e.type === 'message/assistant' && e.content) {
      before.push({ role: 'assistant', content: await redact(e.content, 'messages') });
    }
  }
  const task = await redact(first.e.content, 'task');
  const used = [
    ...new Set(session.events.flatMap((e) => (e.type === 'message/assistant' ? e.toolCalls.map((c) => c.name) : []))),
  ];
  // What its look-ups returned becomes the scenario's notes, so a re-run sees the same facts.
  const found = session.events.flatMap((e) =>
    e.type === 'tool/result' && e.name === 'search_notes' && !e.isError
      ? e.content
          .split('\n')
          .map((line) => /^([^:]{1,80}): (.+)$/.exec(line))
          .filter((m): m is RegExpExecArray => m !== null)
      : [],
  );
  const notes: Scenario['notes'] = [];
  for (const m of found) notes.push({ title: await redact(m[1]!, 'notes.title'), text: await redact(m[2]!, 'notes') });
  // An id a caller chose may hold a name or an address: redacted like the rest unless it is plainly an id.
  const sessionId = await redact(session.sessionId, 'sessionId');
  const id = `admitted-${sessionId.replace(/[^a-z0-9-]/gi, '-').toLowerCase()}`.slice(0, 60);
  const scenario: Omit<Scenario, 'offline'> = {
    id,
    kind: 'capability',
    description: `Admitted from session ${sessionId} (${status}); review the redactions, then write score.expect.`,
    task,
    messages: before,
    preset: session.composition.preset.id,
    scopes: ['tools.calc', 'tools.notes'],
    notes: [...new Map(notes.map((n) => [n.title, n])).values()],
    limits: {},
    runs: 3,
    score: { expect: ['TODO: a fact a correct answer holds'], requiredTools: used.filter((t) => t === 'search_notes') },
    policy: { forbiddenTools: [], injected: [] },
    admittedFrom: { sessionId, status, exportedAt: session.exportedAt, redactions: redactor.redactions },
  };
  return { id, yaml: `# Capability scenario admitted by \`deputy eval admit ${source}\`.\n${stringify(scenario)}` };
}

/**
 * A two-arm case's scenario (its YAML text) as a capability case admitted from the run `origin` names: the same task,
 * notes, facts and offline script, for a failure that case's single-agent arm produced (the demo's own, and tests').
 */
export function asCapability(
  twoArm: string,
  origin: { sessionId: string; status: string; exportedAt: string },
  over: { id?: string; description?: string } = {},
): string {
  const scenario = parse(twoArm) as Record<string, unknown>;
  return stringify({ ...scenario, ...over, kind: 'capability', admittedFrom: { ...origin, redactions: [] } });
}

/** The workflow ids a session names: its own, its parent's and every other its events hold (children, roots). */
export function sessionIds(session: {
  sessionId: string;
  parentId: string | null;
  events: readonly unknown[];
}): string[] {
  const ids = new Set<string>([session.sessionId, ...(session.parentId ? [session.parentId] : [])]);
  const visit = (value: unknown, key: string): void => {
    if (typeof value === 'string' && /(?:^|[a-z])(?:Id|WorkflowId)$/.test(key)) ids.add(value);
    else if (Array.isArray(value)) for (const item of value) visit(item, key);
    else if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) visit(v, k);
  };
  visit(session.events, '');
  return [...ids].filter((id) => id.length > 0);
}
