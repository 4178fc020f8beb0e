/**
 * Approvals in the web view (R7.3, R7.4), in headless Chromium: a child's two calls waiting for approval show with
 * their tool, arguments and deadline; the person denies one with a reason and approves the other with the buttons;
 * the run goes on with exactly that. A decision reaches the run only with the token, as JSON, for a request of the
 * tree the page shows.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { lastMessage, toolMessages, userSays } from '../src/testing/script.js';
import { SCREENSHOTS } from './support/browser.js';
import { useWebView } from './support/web.js';
import { delegateReply, PARENT_SCOPES } from './support/delegation.js';
import { effects, until, useApprovalHarness } from './support/approvals.js';

const { h } = useApprovalHarness();
const TOKEN = 'web-approvals-token-7d2e';
const view = useWebView(h, TOKEN);

describe('R7.3 R7.4 approvals in the web view', () => {
  it('R7.3 R7.4 the page lists a child’s waiting calls; Deny with a reason and Approve decide them; the run goes on with exactly that', async () => {
    const task = 'web approvals: mail the list';
    const brief = 'web approvals mailer: send both';
    h.model.add(
      {
        when: (r) => lastMessage(r) === task,
        reply: delegateReply({ briefs: [{ task_name: 'mailer', message: brief }] }),
      },
      {
        when: (r) => lastMessage(r).endsWith(brief),
        reply: {
          toolCalls: [
            { name: 'send_email', arguments: { to: 'friend@example.com', body: 'hello' } },
            { name: 'send_email', arguments: { to: 'everyone@example.com', body: 'hello all' } },
          ],
        },
      },
      {
        when: (r) => userSays(brief)(r) && toolMessages(r).length === 2,
        reply: (r) => ({ text: toolMessages(r).join(' | ') }),
      },
      { when: (r) => userSays(task)(r) && r.body.messages.at(-1)?.role === 'tool', reply: { text: 'mailing done' } },
    );
    const id = h.id('web-approvals');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: id });
    const open = await until(
      () => h.deputy.approvals(id),
      (list) => list.length === 2,
      'both requests',
    );
    const friend = open.find((r) => r.preview.includes('friend'))!;
    const everyone = open.find((r) => r.preview.includes('everyone'))!;

    const page = await view.browser.newPage({ viewport: { width: 1500, height: 900 } });
    await page.goto(`${view.base}/runs/${encodeURIComponent(id)}?token=${TOKEN}`);
    const item = (requestId: string) => page.locator(`#approvals .approval[data-request="${requestId}"]`);
    await item(everyone.requestId).waitFor({ timeout: 30_000 });
    expect(await item(everyone.requestId).textContent()).toContain(`mailer asks (${everyone.requestId}): send_email`);
    // The arguments whole, as the model wrote them: what would run.
    expect(await item(everyone.requestId).locator('pre.arguments').textContent()).toBe(
      '{"to":"everyone@example.com","body":"hello all"}',
    );
    expect(await item(everyone.requestId).textContent()).toContain('arguments, whole (48 characters):');
    expect(await page.locator(`tr.run[data-run="${friend.run}"] td.status`).textContent()).toBe('waiting_for_approval');
    await page.screenshot({ path: join(SCREENSHOTS, 'web-approvals.png') });

    await item(everyone.requestId).locator('input').fill('not to the whole list');
    await item(everyone.requestId).getByRole('button', { name: 'Deny' }).click();
    // The decision is in history, and the page's next update takes the request away.
    await item(everyone.requestId).waitFor({ state: 'detached', timeout: 10_000 });
    expect(await item(friend.requestId).count()).toBe(1);
    await item(friend.requestId).getByRole('button', { name: 'Approve' }).click();
    await page.locator('#approvals em', { hasText: 'none' }).waitFor({ timeout: 30_000 });

    expect((await h.deputy.result(id)).output).toBe('mailing done');
    expect(effects.filter((e) => e.runId === friend.run).map((e) => (e.args as { to: string }).to)).toEqual([
      'friend@example.com',
    ]);
    const childSaw = h.model.requests.find((r) => userSays(brief)(r) && toolMessages(r).length === 2)!;
    expect(toolMessages(childSaw)).toContain(
      `not run: client denied approval request ${everyone.requestId} for send_email: not to the whole list. Do not try the same call again unless asked to.`,
    );
    await page.close();
  });

  it('R7.4 a decision needs the token, JSON, a well-formed body and a request open in the tree the page shows', async () => {
    const post = (body: unknown, headers: Record<string, string> = {}) =>
      fetch(`${view.base}/api/runs/nobody/approvals`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
    const unauthorised = await fetch(`${view.base}/api/runs/nobody/approvals`, { method: 'POST', body: '{}' });
    expect(unauthorised.status).toBe(401);
    const form = await post('run=x&requestId=a1.1&decision=approve', {
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(form.status).toBe(415);
    const bad = await post({ run: 'x', requestId: 'a1.1', decision: 'maybe' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toMatch(/^invalid decision: decision: /);
    const task = 'web approvals: one email';
    h.model.add({
      when: (r) => lastMessage(r) === task,
      reply: { toolCalls: [{ name: 'send_email', arguments: { to: 'x@example.com', body: 'x' } }] },
    });
    const id = h.id('web-approvals-b');
    await h.deputy.startRun({ task }, { workflowId: id });
    await until(
      () => h.deputy.approvals(id),
      (list) => list.length === 1,
      'the request',
    );
    // The request is open, but not in the tree this page shows.
    const elsewhere = await fetch(`${view.base}/api/runs/${encodeURIComponent(h.id('other-root'))}/approvals`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ run: id, requestId: 'a1.1', decision: 'approve' }),
    });
    expect(elsewhere.status).not.toBe(200);
    expect(effects.filter((e) => e.runId === id)).toEqual([]);
    await h.deputy.cancel(id);
  });
});
