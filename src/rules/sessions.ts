/**
 * Sessions as data: the versioned export format and reading it back with one clear error per problem (zod; the
 * client.s). What a restored session takes from it is in restoration.ts, zod-free for the workflow.
 */
import { SESSION_VERSION } from '../contract/dialogue.js';
import { SessionExport } from '../contract/session-export.js';
import { describeIssues } from './zod-issues.js';

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
