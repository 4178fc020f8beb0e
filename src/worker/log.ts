/**
 * The worker's log: one line per entry, as a terminal and a log collector read it. The SDK's own format prints an
 * entry's context and a failure's whole stack over dozens of lines; a failed model call retried ten times would
 * bury everything else.
 */
import { DefaultLogger, type LogEntry, type LogLevel } from '@temporalio/worker';

/** Context keys shown on an entry's line, in this order; an error's message ends the line. */
const SHOWN = ['activityType', 'workflowType', 'workflowId', 'attempt', 'taskQueue', 'durationMs'] as const;

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
    return typeof value === 'string' || typeof value === 'number' ? [`${key}=${value}`] : [];
  });
  const error = meta?.error === undefined ? '' : ` — ${errorText(meta.error)}`;
  return `${time} [${level}] ${message}${context.length > 0 ? ` (${context.join(' ')})` : ''}${error}`;
}

/** A logger for `Runtime.install` that writes each entry at `level` or above as one line to stderr. */
export function oneLineLogger(level: LogLevel = 'INFO'): DefaultLogger {
  return new DefaultLogger(level, (entry) => process.stderr.write(`${formatEntry(entry)}\n`));
}
