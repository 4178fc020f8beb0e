/**
 * Headless Chromium from Debian's package (`apt-get install chromium`), driven by playwright-core: the UI and web
 * view tests open pages in it as a person would. Flags as this machine needs them: no sandbox (root), and no
 * background networking (the closed network refuses it).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { expect } from 'vitest';
import { PROJECT_ROOT } from '../../src/testing/temporal-cli.js';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/**
 * Where the browser tests write their screenshots: under .deputy/, never over committed files; `npm run screenshots`
 * points it at docs/images, the README's.
 */
export const SCREENSHOTS = process.env.DEPUTY_SCREENSHOTS_DIR ?? join(PROJECT_ROOT, '.deputy', 'screenshots');
mkdirSync(SCREENSHOTS, { recursive: true });

export async function launchChromium(): Promise<Browser> {
  expect(existsSync(CHROMIUM), `this test needs Chromium at ${CHROMIUM} (apt-get install chromium)`).toBe(true);
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
