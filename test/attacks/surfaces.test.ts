/**
 * Attacks on the surfaces around runs (items 4, 8, 9, 11 and 12 of the threat model, docs/security.md; item 10 is
 * in evidence.test.ts): the web view's and codec server's tokens, terminal control sequences in what runs write,
 * redaction of what leaves a run, the compose stack's exposure, and resources a stranger could exhaust.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { parse } from 'yaml';
import { deflateRawSync } from 'node:zlib';
import proto from '@temporalio/proto';
import { AesGcmCodec } from '../../src/codec/aes-gcm.js';
import { DeflateCodec } from '../../src/codec/compress.js';
import { codecHandler, startCodecServer } from '../../src/codec/server.js';
import { admitSession } from '../../src/eval/admit.js';
import { userSays } from '../../src/testing/script.js';
import { PROJECT_ROOT } from '../../src/testing/temporal-cli.js';
import { startWebServer } from '../../src/web/server.js';
import { testConfig, useHarness } from '../support/harness.js';

const h = useHarness({ config: testConfig({ tenants: undefined }) });
const servers: Server[] = [];
afterAll(() => {
  for (const server of servers) server.close();
});

/** Runs the `deputy` CLI against the test server (asynchronously: this process's worker answers its queries). */
function cli(...args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'src/cli/main.ts'), ...args], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, TEMPORAL_ADDRESS: inject('temporalAddress'), DEPUTY_CODEC_KEYS: '' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/** A GET whose status comes back as soon as the headers do (an event stream never ends by itself). */
function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; close: () => void }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers }, (res) => resolve({ status: res.statusCode!, close: () => req.destroy() }));
    req.on('error', reject);
    req.end();
  });
}

// What a terminal obeys: C0 controls but tab and newline, DEL and C1 controls.
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

describe('attacks on the surfaces around runs', () => {
  it('R1.12 attack 4: the web view and the codec server refuse an empty or short token, and an empty cookie opens nothing', async () => {
    const web = spawnSync(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'src/web/server.ts')], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, DEPUTY_WEB_TOKEN: '', TEMPORAL_ADDRESS: inject('temporalAddress'), DEPUTY_WEB_PORT: '0' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(web.status).toBe(1);
    expect(web.stderr).toContain(
      'DEPUTY_WEB_TOKEN: 0 characters; the web view needs at least 16 (leave it unset to have one generated)',
    );
    await expect(startWebServer({ deputy: h.deputy, token: 'short', uiBase: 'http://x', port: 0 })).rejects.toThrow(
      'DEPUTY_WEB_TOKEN: 5 characters; the web view needs at least 16',
    );
    const keys = `k1:${randomBytes(32).toString('base64')}`;
    await expect(
      startCodecServer({ DEPUTY_CODEC_KEYS: keys, DEPUTY_CODEC_SERVER_TOKEN: '', DEPUTY_CODEC_SERVER_PORT: '0' }),
    ).rejects.toThrow('DEPUTY_CODEC_SERVER_TOKEN: at least 16 characters are needed');
    const server = await startWebServer({
      deputy: h.deputy,
      token: 'a-long-enough-web-token',
      uiBase: 'http://x',
      port: 0,
    });
    servers.push(server);
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    expect((await get(`${base}/`)).status).toBe(401);
    expect((await get(`${base}/`, { cookie: 'deputy_web=' })).status).toBe(401);
    expect((await get(`${base}/?token=`)).status).toBe(401);
    expect((await get(`${base}/`, { authorization: 'Bearer ' })).status).toBe(401);
  });

  it('R1.13 attack 8: control sequences in a task and an answer reach no terminal raw (watch, tree, state, export)', async () => {
    const evil = 'clear\u001b[2J clip\u001b]52;c;ZXZpbA==\u0007 csi\u009b31m bidi\u202e';
    const task = `attack 8: ${evil}`;
    h.model.add({ name: task, when: userSays(task), reply: { text: `answer ${evil}` } });
    const id = h.id('attack-tty');
    await h.deputy.startRun({ task }, { workflowId: id });
    expect((await h.deputy.result(id)).output).toBe(`answer ${evil}`);
    for (const args of [
      ['watch', id],
      ['tree', id],
      ['state', id],
      ['export', id],
    ]) {
      const out = await cli(...args);
      expect(out.status, `${args[0]}: ${out.stderr}`).toBe(0);
      expect(CONTROL.test(out.stdout), args[0]).toBe(false);
      expect(out.stdout, args[0]).not.toContain('\u202e');
    }
    expect((await cli('watch', id)).stdout).toContain(
      'started: attack 8: clear\\u{1b}[2J clip\\u{1b}]52;c;ZXZpbA==\\u{7}',
    );
    const exported = (await cli('export', id)).stdout;
    const session = JSON.parse(exported) as { events: { output?: string }[] };
    expect(session.events.at(-1)!.output).toBe(`answer ${evil}`); // still the exact text, escaped
  });

  it('R1.13 attack 9: redaction covers titles, the session id, tool arguments and the common secret formats', async () => {
    const secrets = {
      aws: 'AKIAZ3MSJV4WQ7RTX2PD',
      github: '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',
      jwt: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
      slack: 'xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx',
      random: 'Zk3uN8qP2rT5vX7yA1bC4dE6fG9hJ0kL2mN4pQ6r',
      email: 'jürgen.müller@exämple.de',
    };
    const at = '2026-11-30T10:00:00.000Z';
    const exported = {
      format: 'deputy.session',
      version: 1,
      sessionId: 'run-jane.doe@example.com',
      parentId: null,
      exportedAt: at,
      composition: { preset: testConfig().presets[0], revision: 'r', model: 'm' },
      events: [
        { type: 'message/user', at, content: `deploy with ${secrets.aws} and ${secrets.github}` },
        {
          type: 'message/assistant',
          at,
          content: null,
          toolCalls: [{ id: 'c1', name: 'search_notes', arguments: JSON.stringify({ query: secrets.jwt }) }],
        },
        {
          type: 'tool/result',
          at,
          toolCallId: 'c1',
          name: 'search_notes',
          content: `Contact ${secrets.email}: token ${secrets.slack}\nKeys of mallory@example.com: ${secrets.random}`,
          isError: false,
        },
        { type: 'run/ended', at, status: 'failed', output: null },
      ],
    };
    const { id, yaml } = await admitSession(exported, 'crafted.json');
    for (const [kind, secret] of Object.entries({ ...secrets, session: 'jane.doe', title: 'mallory' })) {
      expect(yaml, kind).not.toContain(secret);
      expect(id, kind).not.toContain(secret);
    }
    const redactions = (parse(yaml) as { admittedFrom: { redactions: { kind: string; where: string }[] } }).admittedFrom
      .redactions;
    expect(new Set(redactions.map((r) => r.where))).toEqual(new Set(['task', 'notes', 'notes.title', 'sessionId']));

    // deputy export --redact on a live run: every string of the session, tool arguments included.
    const task = `attack 9: use ${secrets.github}`;
    h.model.add(
      {
        name: 'a9 call',
        when: (r) => userSays(task)(r) && r.body.messages.at(-1)?.role === 'user',
        reply: { toolCalls: [{ name: 'search_notes', arguments: { query: secrets.jwt } }] },
      },
      {
        name: 'a9 answer',
        when: (r) => userSays(task)(r) && r.body.messages.at(-1)?.role === 'tool',
        reply: { text: `mail ${secrets.email}` },
      },
    );
    const run = h.id('attack-redact');
    await h.deputy.startRun({ task }, { workflowId: run });
    await h.deputy.result(run);
    const plain = await cli('export', run);
    expect(plain.stdout).toContain(secrets.jwt); // without --redact, the session as it is
    const redacted = await cli('export', run, '--redact');
    expect(redacted.status, redacted.stderr).toBe(0);
    for (const secret of [secrets.github, secrets.jwt, secrets.email]) expect(redacted.stdout).not.toContain(secret);
    expect(redacted.stderr).toMatch(/redacted github at events\[\d+\]\.content: \[github-\d+\]/);
    expect(redacted.stderr).toMatch(/redacted jwt at events\[\d+\]\.toolCalls\[0\]\.arguments: \[jwt-\d+\]/);
    expect((JSON.parse(redacted.stdout) as { format: string }).format).toBe('deputy.session'); // still a session file that imports
  });

  it('R1.12 attack 11: the compose stack publishes only on loopback and has no default credentials', () => {
    const text = readFileSync(join(PROJECT_ROOT, 'docker-compose.yml'), 'utf8');
    const compose = parse(text) as { services: Record<string, { ports?: string[] }> };
    const published = Object.values(compose.services).flatMap((s) => s.ports ?? []);
    expect(published.length).toBeGreaterThan(0);
    for (const port of published) expect(port).toMatch(/^127\.0\.0\.1:\d+:\d+$/);
    expect(text).not.toMatch(/MINIO_ROOT_(USER|PASSWORD):-/);
    expect(text).not.toContain('deputy-minio-secret');
    expect(text).toMatch(/MINIO_ROOT_PASSWORD:\?/);
  });

  it('R1.12 attack 12: live streams and request bodies are capped, a missing run is a 404, a model named constructor has no price', async () => {
    const task = 'attack 12: a conversation to watch';
    h.model.add({ name: task, when: userSays(task), reply: { text: 'watch me' } });
    const id = h.id('attack-streams');
    await h.deputy.startRun({ task, mode: 'conversation', idleTimeoutSeconds: 60 }, { workflowId: id });
    const token = 'another-long-web-token';
    const server = await startWebServer({ deputy: h.deputy, token, uiBase: 'http://x', port: 0, maxStreams: 2 });
    servers.push(server);
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const auth = { authorization: `Bearer ${token}` };
    const open = [await get(`${base}/api/runs/${id}/events`, auth), await get(`${base}/api/runs/${id}/events`, auth)];
    expect(open.map((s) => s.status)).toEqual([200, 200]);
    expect((await get(`${base}/api/runs/${id}/events`, auth)).status).toBe(503);
    for (const stream of open) stream.close();
    await expect.poll(async () => (await get(`${base}/api/runs/no-such-run/events`, auth)).status).toBe(404);
    await h.deputy.endConversation(id);

    const codec = new AesGcmCodec([['k1', randomBytes(32)]]);
    const codecServer = createServer(codecHandler([codec], { token: 'codec-token-long-enough', origin: 'http://x' }));
    servers.push(codecServer);
    await new Promise<void>((resolve) => codecServer.listen(0, '127.0.0.1', resolve));
    const codecUrl = `http://127.0.0.1:${(codecServer.address() as AddressInfo).port}/decode`;
    const big = await fetch(codecUrl, {
      method: 'POST',
      headers: { authorization: 'Bearer codec-token-long-enough' },
      body: 'x'.repeat(5 * 1024 * 1024),
    }).catch((err: unknown) => err);
    // Refused before the body is read whole: a 413, or the connection closed on the sender.
    if (big instanceof Response) expect(big.status).toBe(413);
    else expect(big).toBeInstanceOf(Error);

    // Prototype keys are no config entries: a model named `constructor` finds no price, a tenant `__proto__` no cap.
    const priced: unknown = await h.client.workflow
      .start('agentRun', {
        taskQueue: h.taskQueue,
        workflowId: h.id('attack-proto'),
        args: [{ task: 'attack 12: free model', model: 'constructor', tenant: '__proto__' }],
      })
      .then((handle) => handle.result())
      .catch((err: unknown) => err);
    expect(priced).toBeInstanceOf(WorkflowFailedError);
    const chain: Error[] = [];
    for (let e: unknown = priced; e instanceof Error; e = e.cause) chain.push(e);
    const cause = chain.find((e): e is ApplicationFailure => e instanceof ApplicationFailure);
    expect(cause?.type).toBe('Config.UnknownModelPrice');
    expect(cause?.message).toContain('no price for model "constructor"');
  });
  it('R1.12 attack 21: 40 live streams asked for at once get exactly the 32 the web view serves; the other 8 a 503', async () => {
    const task = 'attack 21: a crowd of watchers';
    h.model.add({ name: task, when: userSays(task), reply: { text: 'watched by many' } });
    const id = h.id('attack-crowd');
    await h.deputy.startRun({ task, mode: 'conversation', idleTimeoutSeconds: 60 }, { workflowId: id });
    const token = 'a-crowded-web-token';
    const server = await startWebServer({ deputy: h.deputy, token, uiBase: 'http://x', port: 0 });
    servers.push(server);
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const auth = { authorization: `Bearer ${token}` };
    const crowd = await Promise.all(Array.from({ length: 40 }, () => get(`${base}/api/runs/${id}/events`, auth)));
    const statuses = crowd.map((stream) => stream.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(32);
    expect(statuses.filter((status) => status === 503)).toHaveLength(8);
    for (const stream of crowd) stream.close();
    // Closed streams are given back: a new watcher is served again.
    await expect
      .poll(async () => {
        const next = await get(`${base}/api/runs/${id}/events`, auth);
        next.close();
        return next.status;
      })
      .toBe(200);
    await h.deputy.endConversation(id);
  });
  it('R1.12 attack 15: compressed payloads that would inflate to gigabytes are refused by the codec server, not inflated', async () => {
    const codecServer = createServer(
      codecHandler([new DeflateCodec()], { token: 'codec-token-long-enough', origin: 'http://x' }),
    );
    servers.push(codecServer);
    await new Promise<void>((resolve) => codecServer.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(codecServer.address() as AddressInfo).port}/decode`;
    // 100 payloads of 15 MiB of zeros each (1.5 GiB), deflated to about 15 KiB each: a 2 MB request, under the
    // server's 4 MiB body limit, each payload under the 16 MiB a payload may inflate to.
    const plain = proto.temporal.api.common.v1.Payload.encode({
      metadata: {},
      data: Buffer.alloc(15 * 2 ** 20),
    }).finish();
    const bomb = {
      metadata: { encoding: Buffer.from('binary/zlib').toString('base64') },
      data: deflateRawSync(plain).toString('base64'),
    };
    const body = JSON.stringify({ payloads: Array(100).fill(bomb) });
    expect(body.length).toBeLessThan(4 * 1024 * 1024);
    const before = process.memoryUsage().rss;
    const reply = await fetch(url, {
      method: 'POST',
      headers: { authorization: 'Bearer codec-token-long-enough' },
      body,
    });
    expect(reply.status).toBe(400);
    expect(await reply.text()).toBe(
      'payloads labelled binary/zlib would inflate past 67108864 bytes together; refused, not read',
    );
    // It stopped at the limit: nothing near 1.5 GiB was ever held.
    expect(process.memoryUsage().rss - before).toBeLessThan(512 * 2 ** 20);
  });
});
