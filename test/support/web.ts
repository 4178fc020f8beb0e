/**
 * The web view under test: started on a free port over the harness's client with `token`, and a headless Chromium
 * to open it in; both stopped after the calling file's tests.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { startWebServer } from '../../src/web/server.js';
import { launchChromium } from './browser.js';
import type { Harness } from './harness.js';

/** Filled in before the tests run: the view's base URL and the browser. */
export interface WebView {
  base: string;
  browser: Browser;
}

export function useWebView(h: Harness, token: string): WebView {
  const view = {} as WebView;
  let server: Server | undefined;
  beforeAll(async () => {
    server = await startWebServer({ deputy: h.deputy, token, uiBase: 'http://localhost:8233', port: 0 });
    view.base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    view.browser = await launchChromium();
  });
  afterAll(async () => {
    await view.browser?.close();
    server?.close();
  });
  return view;
}
