/**
 * Sessions as data: the versioned export format, reading it back with one clear error per problem, and
 * the rule that decides how a restored session gets its composition. Pure; shared by the client and the workflow.
 */
import { type SessionEvent } from '../contract/session.js';
import { SESSION_VERSION } from '../contract/dialogue.js';
import { SESSION_FORMAT, SessionExport } from '../contract/session-export.js';
import { describeIssues } from './zod-issues.js';

export { SESSION_FORMAT, SessionExport };

/** Reads an exported session, or explains every problem (a newer version first, since nothing else can be trusted). */
export function parseSessionExport(
  raw: unknown,
): { ok: true; session: SessionExport } | { ok: false; problems: string[] } {
  const version = (raw as { version?: unknown } | null)?.version;
  if (typeof version === 'number' && version > SESSION_VERSION) {
    return {
      ok: false,
      problems: [
        `version: this session is version ${version}, newer than this Deputy reads (${SESSION_VERSION}); upgrade Deputy to import it`,
      ],
    };
  }
  const parsed = SessionExport.safeParse(raw);
  return parsed.success ? { ok: true, session: parsed.data } : { ok: false, problems: describeIssues(parsed.error) };
}

/** How a restored session gets its composition. */
export type Restoration =
  /** A selection recorded before the first own descriptor: resolve that preset in the registry now, or fail. */
  | { kind: 'independent'; presetId: string; revision: string }
  /** Anything else: join the composition of whoever restores it (its parent, or the exported composition). */
  | { kind: 'implicit' };

/**
 * Skip the inherited (forked) prefix; then a selection before the first own `subagent/descriptor` makes the
 * session independent. A preset id in the header, a selection in the inherited prefix, or one recorded after the
 * descriptor (older logs) does not.
 */
export function decideRestoration(events: readonly SessionEvent[]): Restoration {
  // A fork writes its own header first and the copied events after it: inherited events are skipped wherever they
  // stand, not only as a leading prefix.
  const own = events.filter((e) => !e.inherited);
  const descriptor = own.findIndex((e) => e.type === 'subagent/descriptor');
  if (descriptor === -1) return { kind: 'implicit' };
  const selection = own.slice(0, descriptor).find((e) => e.type === 'agent-preset/selected');
  return selection?.type === 'agent-preset/selected'
    ? { kind: 'independent', presetId: selection.presetId, revision: selection.revision }
    : { kind: 'implicit' };
}

/** A fork's copy of its source: every event marked as the inherited prefix. */
export function forkEvents(events: readonly SessionEvent[]): SessionEvent[] {
  return events.filter((e) => e.type !== 'run/ended').map((e) => ({ ...e, inherited: true }));
}
