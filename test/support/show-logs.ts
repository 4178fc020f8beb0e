/**
 * A failing test shows what its process logged while it ran (the worker's warnings and errors, from
 * test/support/logs.ts); a passing one shows nothing.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { beforeEach } from 'vitest';
import { TEST_LOG_PATH } from './logs.js';

const MAX_SHOWN = 20_000;

beforeEach((context) => {
  const from = existsSync(TEST_LOG_PATH) ? statSync(TEST_LOG_PATH).size : 0;
  context.onTestFailed(() => {
    if (!existsSync(TEST_LOG_PATH)) return;
    const logged = readFileSync(TEST_LOG_PATH).subarray(from).toString();
    if (logged.length === 0) return;
    const shown = logged.length > MAX_SHOWN ? `…\n${logged.slice(-MAX_SHOWN)}` : logged;
    console.error(`worker log while "${context.task.name}" ran (${TEST_LOG_PATH}):\n${shown}`);
  });
});
