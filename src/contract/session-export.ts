/** A session exported as JSON: the file a run's session is saved to and restored from. */
import { z } from 'zod';
import { Preset } from './preset.js';
import { SessionEvent } from './session.js';
import { ArtifactRef } from './artifacts.js';

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
  /**
   * The artifacts the run could read when it was exported, for whoever reads the file; a run imported from it is
   * given none of them (a run reads only what it saved, its children handed back or a brief gave it).
   */
  artifacts: z.array(ArtifactRef).optional(),
});
export type SessionExport = z.infer<typeof SessionExport>;
