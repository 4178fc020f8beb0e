/**
 * The worker's log: one line per entry, as a terminal and a log collector read it. The SDK's own format prints an
 * entry's context and a failure's whole stack over dozens of lines; a failed model call retried ten times would
 * bury everything else.
 */
import { DefaultLogger, type LogEntry, type LogLevel } from '@temporalio/worker';

/** Context keys shown on an entry's line, in this order; an error's message ends the line. */
const SHOWN = ['activityType', 'workflowType', 'workflowId', 'attempt', 'taskQueue', 'state', 'durationMs'] as const;

/** An error's message on one line, its stack left out. */
function errorText(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.replace(/\s+/g, ' ').trim();
}

/** One entry as one line: time, level, message, its context (`key=value`), and its error's message. */
function formatEntry({ level, message, meta, timestampNanos }: LogEntry): string {
  const time = new Date(Number(timestampNanos / 1_000_000n)).toISOString();
  const context = SHOWN.flatMap((key) => {
    const value: unknown = meta?.[key];
    // Deputy retries a model call as new activities, each its attempt 1: the run's details count the attempts.
    if (key === 'attempt' && value === 1) return [];
    return typeof value === 'string' || typeof value === 'number' ? [`${key}=${value}`] : [];
  });
  const error = meta?.error === undefined ? '' : ` — ${errorText(meta.error)}`;
  return `${time} [${level}] ${message}${context.length > 0 ? ` (${context.join(' ')})` : ''}${error}`;
}

/**
 * A model call a worker could not answer from its cached dialogue is sent again whole: how a fleet works when a
 * conversation moves between workers, not a failure a person should look at.
 */
function asked(entry: LogEntry): boolean {
  const error = entry.meta?.error as { type?: unknown } | undefined;
  return entry.message === 'Activity failed' && error?.type === 'ModelCall.ContextUnknown';
}

/** A logger for `Runtime.install` that writes each entry at `level` or above as one line to stderr. */
export function oneLineLogger(level: LogLevel = 'INFO'): DefaultLogger {
  return new DefaultLogger(level, (entry) => {
    if (asked(entry)) {
      if (level === 'TRACE' || level === 'DEBUG')
        process.stderr.write(
          `${formatEntry({ ...entry, level: 'DEBUG', message: 'Model call asked for the whole dialogue', meta: { ...entry.meta, error: undefined } })}\n`,
        );
      return;
    }
    process.stderr.write(`${formatEntry(entry)}\n`);
  });
}
