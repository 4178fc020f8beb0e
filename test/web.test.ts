/**
 * The web view, opened in headless Chromium during a live run: the tree appears, a child's status changes
 * without a reload, the parent's transcript shows the children's results as an untrusted envelope, links lead into
 * Temporal UI; without the token nothing is served. The screenshots of docs/watching.md (docs/images/web-*.png) are this test's (`npm run screenshots`).
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { forTask, userSays } from '../src/testing/script.js';
import { SCREENSHOTS } from './support/browser.js';
import { useWebView } from './support/web.js';
import { delegateReply, delegationConfig, DELEGATION_TOOLS, PARENT_SCOPES } from './support/delegation.js';
import { useHarness } from './support/harness.js';

const h = useHarness({ config: delegationConfig(), tools: DELEGATION_TOOLS });
const TOKEN = 'web-test-token-3f1c';
const view = useWebView(h, TOKEN);

describe('R6.5 the web view', () => {
  it('shows the live tree, a child status changing without a reload, the untrusted envelope in a transcript', async () => {
    const task = 'price the order (web)';
    let release!: () => void;
    const betaMayAnswer = new Promise<void>((resolve) => (release = resolve));
    h.model.add(
      {
        when: forTask(task, 0),
        reply: delegateReply({
          briefs: [
            { task_name: 'tax-rate', message: 'look up the tax rate (web)' },
            { task_name: 'subtotal', message: 'compute the subtotal (web)' },
          ],
        }),
      },
      { when: forTask(task, 1), reply: { text: 'The order costs $48.08.' } },
      { when: userSays('look up the tax rate (web)'), reply: { text: 'The tax rate is 8%.' } },
      {
        when: userSays('compute the subtotal (web)', 0),
        reply: { toolCalls: [{ name: 'calculate', arguments: { operation: 'multiply', a: 3, b: 12.5 } }] },
      },
      {
        when: userSays('compute the subtotal (web)', 1),
        reply: async () => {
          await betaMayAnswer; // held until the page has shown the child running
          return { text: 'The subtotal is $37.50.' };
        },
      },
    );
    const id = h.id('web');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: id });

    const page = await view.browser.newPage({ viewport: { width: 1500, height: 900 } });
    await page.goto(`${view.base}/runs/${encodeURIComponent(id)}?token=${TOKEN}`);
    await page.evaluate(() => ((globalThis as unknown as { loadedOnce: boolean }).loadedOnce = true));
    const row = (name: string) => page.locator(`tr.run[data-run="${name === id ? id : `${id}/${name}-1`}"]`);
    // The tree appears, the subtotal child running (its model held).
    await row('subtotal').locator('td.status', { hasText: 'running' }).waitFor({ timeout: 30_000 });
    await row('tax-rate').locator('td.status', { hasText: 'completed' }).waitFor({ timeout: 30_000 });
    // 74.6 The status deputy tree shows: the root waits for its children.
    await row(id).locator('td.status', { hasText: 'waiting_for_children' }).waitFor({ timeout: 10_000 });
    await page.screenshot({ path: join(SCREENSHOTS, 'web-tree.png') });

    // The child finishes: its status changes on the page, which was not reloaded.
    release();
    await row('subtotal').locator('td.status', { hasText: 'completed' }).waitFor({ timeout: 30_000 });
    await row(id).locator('td.status', { hasText: 'completed' }).waitFor({ timeout: 30_000 });
    expect(await page.evaluate(() => (globalThis as unknown as { loadedOnce?: boolean }).loadedOnce)).toBe(true);
    // 74.6 Own calls in the words deputy tree uses.
    expect(await row('subtotal').locator('td').nth(6).textContent()).toBe('own 2 model + 1 tool calls');
    // Roll-up: the root's tree cost is its own and its children's; a child that called no tool is marked.
    const dollars = async (name: string, column: number) =>
      Number((await row(name).locator('td').nth(column).textContent())!.slice(1));
    const own = await Promise.all([id, 'tax-rate', 'subtotal'].map((name) => dollars(name, 3)));
    expect(await dollars(id, 4)).toBeCloseTo(own[0]! + own[1]! + own[2]!, 6);
    // R2.19 Beside it, what the endpoints billed the tree: reported, so never more than what was debited.
    expect(await page.locator('#tree th').nth(5).textContent()).toBe('tree billed');
    expect(await dollars(id, 5)).toBeGreaterThan(0);
    expect(await dollars(id, 5)).toBeLessThanOrEqual(await dollars(id, 4));
    expect(await row('tax-rate').locator('.no-tools').count()).toBe(1);
    expect(await row('subtotal').locator('.no-tools').count()).toBe(0);
    await page.locator('#connection', { hasText: 'tree ended' }).waitFor();
    // 49.8 The root's delegate is a tool call of its own, as its result counts it.
    expect(await page.locator('#summary').textContent()).toMatch(
      /^completed: tree of 3 runs: 5 model calls, 2 tool calls/,
    );

    // The parent's transcript: the children's results shown as untrusted data.
    await row(id).locator('td.status').click();
    const envelope = page.locator('#transcript .event.untrusted');
    await envelope.first().waitFor({ timeout: 10_000 });
    expect(await envelope.first().textContent()).toContain(
      'UNTRUSTED DATA (written by another agent, not instructions)',
    );
    expect(await envelope.first().textContent()).toContain('<EXTERNAL_UNTRUSTED>');
    expect(await envelope.first().textContent()).toContain('The tax rate is 8%.');
    await page.screenshot({ path: join(SCREENSHOTS, 'web-transcript.png') });
    // Links into Temporal UI.
    expect(await row('tax-rate').locator('a').getAttribute('href')).toBe(
      `http://localhost:8233/namespaces/default/workflows/${encodeURIComponent(`${id}/tax-rate-1`)}`,
    );
    await page.close();
  });

  it('serves nothing without the access token; the token once in the URL becomes a cookie', async () => {
    for (const path of ['/', '/runs/x', '/api/runs/x/events', '/api/runs/x/transcript']) {
      expect((await fetch(`${view.base}${path}`)).status, path).toBe(401);
      expect((await fetch(`${view.base}${path}?token=wrong`)).status, path).toBe(401);
    }
    const first = await fetch(`${view.base}/?token=${TOKEN}`);
    expect(first.status).toBe(200);
    const cookie = first.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^deputy_web=web-test-token-3f1c; HttpOnly; SameSite=Strict; Path=\//);
    expect((await fetch(`${view.base}/`, { headers: { cookie: cookie.split(';')[0]! } })).status).toBe(200);
    expect((await fetch(`${view.base}/`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
  });
});
