/**
 * Headless Chromium from Debian's package (`npm test` installs it as root: scripts/install-test-tools.sh), driven by playwright-core: the UI and web
 * view tests open pages in it as a person would. Flags as this machine needs them: no sandbox (root), and no
 * background networking (the closed network refuses it).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { expect } from 'vitest';
import { PROJECT_ROOT } from '../../src/testing/temporal-cli.js';

/** `CHROMIUM_PATH`, Debian's `/usr/bin/chromium`, or a `chromium`/`chromium-browser` on PATH, as the installer looks. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? findChromium();

function findChromium(): string {
  if (existsSync('/usr/bin/chromium')) return '/usr/bin/chromium';
  for (const name of ['chromium', 'chromium-browser']) {
    try {
      return execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim();
    } catch {
      // not on PATH
    }
  }
  return '/usr/bin/chromium';
}
/**
 * Where the browser tests write their screenshots: under .deputy/, never over committed files; `npm run screenshots`
 * points it at docs/images, the README's.
 */
export const SCREENSHOTS = process.env.DEPUTY_SCREENSHOTS_DIR ?? join(PROJECT_ROOT, '.deputy', 'screenshots');
mkdirSync(SCREENSHOTS, { recursive: true });

export async function launchChromium(): Promise<Browser> {
  expect(
    existsSync(CHROMIUM),
    `this test needs Chromium at ${CHROMIUM}: npm test installs it as root (scripts/install-test-tools.sh); else apt-get install chromium or set CHROMIUM_PATH`,
  ).toBe(true);
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
