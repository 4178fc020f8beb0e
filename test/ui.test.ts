/**
 * Operations, looked at: `npm run demo -- --ui` with encryption and metrics on, as an operator would run
 * it. While it stays up: the worker's `/metrics` shows Deputy's metrics for the run; the raw history holds ciphertext;
 * Temporal UI, opened in headless Chromium (Debian's package), shows the parent, its three children linked, their
 * summaries, and the task and answer decoded through the codec server. Ctrl-C then stops everything it started.
 * The screenshots of docs/watching.md (docs/images/ui-*.png) are the ones this test takes (`npm run screenshots`).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { Browser } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../src/testing/ports.js';
import { PROJECT_ROOT } from '../src/testing/temporal-cli.js';
import { launchChromium, SCREENSHOTS } from './support/browser.js';

const TASK_TEXT = 'Price this Springfield order';
const ANSWER_TEXT = 'The order costs $48.08';

let browser: Browser | undefined;
const cleanups: (() => void)[] = [];
afterAll(async () => {
  await browser?.close();
  for (const cleanup of cleanups) cleanup();
});

const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });

describe('R6.1 R6.2 R6.3 operations, looked at', () => {
  it('demo --ui: /metrics shows Deputy metrics; history is ciphertext; Temporal UI shows the tree decoded; Ctrl-C stops it all', async () => {
    const [uiPort, metricsPort, codecPort] = [await freePort(), await freePort(), await freePort()];
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DEPUTY_STATE_DIR: mkdtempSync(join(tmpdir(), 'deputy-ui-')),
      DEPUTY_UI_PORT: String(uiPort),
      DEPUTY_CODEC_SERVER_PORT: String(codecPort),
      DEPUTY_METRICS_ADDRESS: `127.0.0.1:${metricsPort}`,
      DEPUTY_CODEC_KEYS: `ops-key-1:${randomBytes(32).toString('base64')}`,
    };
    for (const name of ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'TEMPORAL_ADDRESS', 'DEPUTY_CONFIG']) delete env[name];
    const demo = spawn(process.execPath, ['--import', 'tsx', 'src/demo/main.ts', '--ui'], {
      cwd: PROJECT_ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group: a failed test kills the demo's dev server with it
    });
    cleanups.push(() => {
      if (demo.exitCode === null) process.kill(-demo.pid!, 'SIGKILL');
    });
    let output = '';
    demo.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    demo.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => demo.once('exit', (code) => resolve(code)));
    const started = Date.now();
    while (!output.includes('press Ctrl-C to stop')) {
      if (demo.exitCode !== null || Date.now() - started > 150_000) throw new Error(`demo did not stay up:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const workflowId = /^run (\S+)$/m.exec(output)![1]!;
    const address = /dev server at (\S+),/.exec(output)![1]!;
    expect(output).toContain('codec: Temporal UI decodes payloads through a local codec server');

    // Metrics: the SDK's and Deputy's, on the worker's Prometheus endpoint.
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const value = (name: string, ...tags: string[]) =>
      metrics
        .split('\n')
        .filter((line) => line.startsWith(`${name}{`) && tags.every((tag) => line.includes(tag)))
        .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
    // The demo's run on its queue; the evaluation it ran first to record its evidence is on queues of its own.
    const demoQueue = 'taskQueue="deputy"';
    expect(value('deputy_delegations_started_total', demoQueue)).toBe(3);
    expect(value('deputy_reservations_opened_total', demoQueue)).toBe(3);
    expect(value('deputy_reservations_settled_total', demoQueue)).toBe(3);
    expect(value('deputy_delegations_ended_total', 'status="completed"', demoQueue)).toBe(3);
    expect(value('deputy_delegations_started_total', 'taskQueue="eval-delegating-')).toBe(8);
    expect(value('deputy_runs_ended_total', 'status="completed"', 'synthesis="false"', demoQueue)).toBe(1);
    expect(
      value('deputy_runs_ended_total', 'status="completed"', 'synthesis="false"', 'taskQueue="deputy-background"'),
    ).toBe(3);
    expect(value('deputy_model_calls_total')).toBeGreaterThanOrEqual(4 + 3);
    expect(value('deputy_model_tokens_total', 'direction="input"', 'model="gpt-4.1-mini"')).toBeGreaterThan(0);
    expect(value('deputy_cost_microusd_total', 'preset="researcher"')).toBeGreaterThan(0);
    expect(metrics).toMatch(/^temporal_workflow_completed_total\{/m);

    // History: ciphertext only, searched for the task's and the answer's text.
    const connection = await Connection.connect({ address });
    try {
      const history = await new Client({ connection }).workflow.getHandle(workflowId).fetchHistory();
      const bytes = Buffer.from(temporal.api.history.v1.History.encode(history).finish());
      expect(bytes.includes(Buffer.from(TASK_TEXT))).toBe(false);
      expect(bytes.includes(Buffer.from(ANSWER_TEXT))).toBe(false);
    } finally {
      await connection.close();
    }

    // Temporal UI in Chromium: what a person looks for.
    browser = await launchChromium();
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const decodes: number[] = [];
    page.on('response', (response) => {
      if (response.url().includes('/decode')) decodes.push(response.status());
    });
    const ui = `http://localhost:${uiPort}/namespaces/default/workflows`;
    await page.goto(`${ui}/${encodeURIComponent(workflowId)}`);
    // Input and result, decoded by the codec server.
    await page.getByText(TASK_TEXT).first().waitFor({ timeout: 30_000 });
    await page.getByText(ANSWER_TEXT).first().waitFor({ timeout: 10_000 });
    // The children's summaries on the timeline (static summaries are payloads too: decoded as well).
    await page.getByText('tax-rate: Find the sales tax rate').first().waitFor({ timeout: 10_000 });
    expect(decodes.length).toBeGreaterThan(0);
    expect(decodes.every((status) => status === 200)).toBe(true);
    mkdirSync(SCREENSHOTS, { recursive: true });
    await page.screenshot({ path: join(SCREENSHOTS, 'ui-run.png') });

    // The children, linked to the parent.
    await page.getByText('Relationships').first().click();
    for (const child of ['tax-rate-1', 'shipping-1', 'subtotal-1']) {
      await page.getByText(`${workflowId}/${child}`).first().waitFor({ timeout: 10_000 });
    }
    await page.screenshot({ path: join(SCREENSHOTS, 'ui-children.png') });

    // A child's page: its brief, decoded.
    await page.getByText(`${workflowId}/tax-rate-1`).first().click();
    await page.getByText('Find the sales tax rate in Springfield').first().waitFor({ timeout: 30_000 });

    // Ctrl-C: the demo stops its server, UI, worker, codec server and metrics endpoint.
    demo.kill('SIGINT');
    expect(await exited, output).toBe(0);
    const port = Number(address.split(':').pop());
    for (const open of [uiPort, metricsPort, codecPort, port]) expect(await listening(open)).toBe(false);
  });
});
