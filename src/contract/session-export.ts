/** A session exported as JSON: the file a run's session is saved to and restored from. */
import { z } from 'zod';
import { Preset } from './preset.js';
import { SessionEvent } from './session.js';

/** Marks an exported session file. */
export const SESSION_FORMAT = 'deputy.session';

/** A session exported as JSON. */
export const SessionExport = z.strictObject({
  format: z.literal(SESSION_FORMAT),
  version: z.number().int().positive(),
  sessionId: z.string().min(1),
  parentId: z.string().nullable(),
  exportedAt: z.iso.datetime(),
  /** The composition the run ran with: its preset definition and revision, and its model. */
  composition: z.strictObject({
    preset: Preset,
    revision: z.string(),
    model: z.string(),
  }),
  events: z.array(SessionEvent),
});
export type SessionExport = z.infer<typeof SessionExport>;
