/**
 * The web view as a person opens it: a tree with demo-length ids and a failed child at 1,024 and 1,920 px (the
 * screenshots go to `.deputy/screenshots/web-1024.png` and `web-1920.png`), the same statuses and counts as
 * `deputy tree`, why the child failed, an unknown run and an unreachable Temporal said within 5 s, a styled index.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeputyClient } from '../../src/client/client.js';
import { loadTree } from '../../src/client/inspect.js';
import { labelledUsage } from '../../src/rules/usage.js';
import { forTask, userSays } from '../../src/testing/script.js';
import { startWebServer } from '../../src/web/server.js';
import { launchChromium, SCREENSHOTS } from '../support/browser.js';
import { delegateReply, delegationConfig, DELEGATION_TOOLS, PARENT_SCOPES } from '../support/delegation.js';
import { createHarness, type Harness } from '../support/harness.js';

const TOKEN = 'web-journey-token-8c2d';
let h: Harness;
let browser: Browser;
const servers: Server[] = [];
let base = '';
let nowhere = '';

async function serve(deputy: DeputyClient): Promise<string> {
  const server = await startWebServer({ deputy, token: TOKEN, uiBase: 'http://localhost:8233', port: 0 });
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  h = await createHarness([
    {
      when: forTask('price the order for the springfield customer (web journey)', 0),
      reply: delegateReply({
        briefs: [
          { task_name: 'tax-rate-for-the-customer-in-springfield', message: 'look up the tax rate (web journey)' },
          { task_name: 'shipping-cost-from-the-warehouse', message: 'look up the shipping (web journey)' },
        ],
      }),
    },
    {
      when: forTask('price the order for the springfield customer (web journey)', 1),
      reply: { text: 'The order costs $48.08, shipping unknown.' },
    },
    { when: userSays('look up the tax rate (web journey)'), reply: { text: 'The tax rate is 8%.' } },
    {
      when: userSays('look up the shipping (web journey)'),
      reply: { raw: '<html>Sign in</html>', status: 400, contentType: 'text/html' },
      times: 5,
    },
  ]);
  await h.startWorker({ config: delegationConfig(), tools: DELEGATION_TOOLS });
  base = await serve(h.deputy);
  // A client of a Temporal that is not there: connected lazily, so the web view starts and its pages say so.
  nowhere = await serve(
    new DeputyClient(new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) }), { taskQueue: 'none' }),
  );
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  for (const server of servers) server.close();
  await h?.close();
});

/** The page of `id` at `width` px, once its tree has ended. */
async function opened(id: string, width: number): Promise<Page> {
  const page = await browser.newPage({ viewport: { width, height: 800 } });
  await page.goto(`${base}/runs/${encodeURIComponent(id)}?token=${TOKEN}`);
  await page.locator('#connection', { hasText: 'tree ended' }).waitFor({ timeout: 30_000 });
  return page;
}

describe('74.6 the web view at parity with the CLI, and a layout that holds', () => {
  it('74.6 at 1,024 and 1,920 px: no wrapped id, no hidden column, the CLI’s statuses and counts, why a child failed', async () => {
    const id = `demo-${new Date().toISOString().replace(/[:.]/g, '-')}`;
    await h.deputy.startRun(
      { task: 'price the order for the springfield customer (web journey)', scopes: PARENT_SCOPES },
      { workflowId: id },
    );
    expect((await h.deputy.result(id)).status).toBe('completed');
    const nodes = await loadTree(h.client, id);
    for (const width of [1024, 1920]) {
      const page = await opened(id, width);
      const rows = page.locator('#tree tbody tr.run');
      expect(await rows.count()).toBe(3);
      for (const node of nodes) {
        const row = page.locator(`tr.run[data-run="${node.workflowId}"]`);
        // The status and own calls `deputy tree` shows, in its words.
        expect(await row.locator('td.status').textContent()).toBe(node.status);
        expect(await row.locator('td.calls').textContent()).toBe(labelledUsage(node.usage!).own);
        // The name on one line, elided in its middle; the whole id in its title.
        const name = row.locator('td.name a');
        const box = (await name.boundingBox())!;
        expect(box.height, `${node.workflowId} at ${width} px`).toBeLessThan(24);
        expect(await name.getAttribute('title')).toBe(`${node.workflowId} in Temporal UI`);
      }
      const failed = page.locator(`tr.run[data-run="${id}/shipping-cost-from-the-warehouse-1"]`);
      expect(await failed.locator('td.status').textContent()).toBe('failed');
      expect(await failed.locator('.why').textContent()).toMatch(/^why: .*answered 400/);
      // Every column inside its card, the last ("latest") included.
      const right = async (selector: string) => {
        const box = (await page.locator(selector).last().boundingBox())!;
        return box.x + box.width;
      };
      expect(await right('#tree'), `${width} px`).toBeLessThanOrEqual(await right('section:has(#tree)'));
      expect(await right('#tree th'), `${width} px`).toBeLessThanOrEqual(width);
      await page.screenshot({ path: join(SCREENSHOTS, `web-${width}.png`), fullPage: true });
      await page.close();
    }
  });

  it('74.6 an unknown run and an unreachable Temporal are said within 5 s, never "connecting…"', async () => {
    for (const [at, id, said] of [
      [base, 'no-such-run-74', 'no run "no-such-run-74" in namespace "default"'],
      [nowhere, 'any-run', 'Temporal does not answer at'],
    ] as const) {
      const page = await browser.newPage();
      const begun = Date.now();
      await page.goto(`${at}/runs/${id}?token=${TOKEN}`);
      await page.locator('#summary', { hasText: said }).waitFor({ timeout: 5000 });
      expect(Date.now() - begun).toBeLessThan(5000);
      expect(await page.locator('header').textContent()).not.toContain('connecting');
      await page.close();
    }
  });

  it('74.6 the index is a styled page that lists the latest runs, or says Temporal does not answer', async () => {
    const page = await browser.newPage();
    await page.goto(`${base}/?token=${TOKEN}`);
    expect(await page.locator('style').count()).toBe(1);
    expect(await page.locator('h2', { hasText: 'Latest runs' }).count()).toBe(1);
    expect(await page.locator('table a').count()).toBeGreaterThan(0);
    await page.goto(`${nowhere}/?token=${TOKEN}`);
    expect(await page.locator('.error').textContent()).toMatch(/^Temporal does not answer at/);
    await page.close();
  });
});
