/**
 * Where a test file's worker logs go: a file under `.deputy/test-logs/`, one per test process, so a test run prints
 * results instead of the warnings its tests cause on purpose. A failing test shows what was logged while it ran
 * (test/support/show-logs.ts).
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DefaultLogger, type LogEntry } from '@temporalio/worker';
import { PROJECT_ROOT } from '../../src/testing/temporal-cli.js';

const DIR = join(PROJECT_ROOT, '.deputy', 'test-logs');

/** This test process's log file. */
export const TEST_LOG_PATH = join(DIR, `process-${process.pid}.log`);

function write({ level, message, meta, timestampNanos }: LogEntry): void {
  const at = new Date(Number(timestampNanos / 1_000_000n)).toISOString();
  const details = meta && Object.keys(meta).length > 0 ? ` ${JSON.stringify(meta)}` : '';
  appendFileSync(TEST_LOG_PATH, `${at} ${level} ${message}${details}\n`);
}

/** The Temporal runtime's logger for tests: warnings and errors, to this process's log file. */
export function testLogger(): DefaultLogger {
  mkdirSync(DIR, { recursive: true });
  return new DefaultLogger('WARN', write);
}
