/**
 * Encrypted history (R6.3): with the codec on, a run's raw history holds no plaintext of its task or answer; a client
 * without the key, or with the wrong one, gets a clear error, not garbage; a rotation keeps old runs readable; the
 * codec server decodes for Temporal UI only with its token and only for the UI's origin.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { DeputyClient } from '../src/client/client.js';
import { AesGcmCodec } from '../src/codec/aes-gcm.js';
import { codecHandler } from '../src/codec/server.js';
import { forTask } from '../src/testing/scripted-model.js';
import { createHarness, type Harness } from './support/harness.js';

const key = () => randomBytes(32);
const K1 = key();
const K2 = key();
const SECRET_TASK = 'PLAINTEXT-TASK-7f3a: what is the vault code?';
const SECRET_ANSWER = 'PLAINTEXT-ANSWER-9c1e';

const harnesses: Harness[] = [];
const connections: Connection[] = [];
afterAll(async () => {
  for (const h of harnesses) await h.close();
  for (const c of connections) await c.close();
});

/** A worker and a client that share `codec`, on a task queue of their own. */
async function encrypted(codec: AesGcmCodec | undefined) {
  const h = await createHarness();
  harnesses.push(h);
  await h.startWorker({ ...(codec && { workerOptions: { dataConverter: { payloadCodecs: [codec] } } }) });
  return { h, deputy: await clientWith(codec, h.taskQueue) };
}
async function clientWith(codec: AesGcmCodec | undefined, taskQueue: string) {
  const connection = await Connection.connect({ address: inject('temporalAddress') });
  connections.push(connection);
  return new DeputyClient(new Client({ connection, ...(codec && { dataConverter: { payloadCodecs: [codec] } }) }), {
    taskQueue,
  });
}
/** The run's history as Temporal stores it, and whether its bytes contain `text`. */
async function rawHistory(h: Harness, id: string) {
  const history = await h.client.workflow.getHandle(id).fetchHistory();
  const bytes = Buffer.from(temporal.api.history.v1.History.encode(history).finish());
  return { history, holds: (text: string) => bytes.includes(Buffer.from(text)) };
}

describe('R6.3 encrypted history', () => {
  it('R6.3 with the codec on, the raw history holds neither the task nor the answer; without it, it does (the search works)', async () => {
    for (const [codec, expected] of [
      [new AesGcmCodec([['k1', K1]]), false],
      [undefined, true],
    ] as const) {
      const { h, deputy } = await encrypted(codec);
      h.model.add({ when: forTask(SECRET_TASK), reply: { text: SECRET_ANSWER } });
      const id = h.id('codec');
      await deputy.startRun({ task: SECRET_TASK }, { workflowId: id });
      expect(await deputy.result(id)).toMatchObject({ status: 'completed', output: SECRET_ANSWER });
      const raw = await rawHistory(h, id);
      expect(raw.holds('PLAINTEXT-TASK-7f3a'), codec ? 'encrypted' : 'plain').toBe(expected);
      expect(raw.holds(SECRET_ANSWER)).toBe(expected);
      if (codec) {
        const started = raw.history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!;
        expect(Buffer.from(started.metadata!.encoding!).toString()).toBe('binary/encrypted');
        expect(Buffer.from(started.metadata!['encryption-key-id']!).toString()).toBe('k1');
      }
    }
  });

  it('R6.3 a wrong or missing key is a clear error; a rotation keeps old runs readable and encrypts new ones with the new key', async () => {
    const { h, deputy } = await encrypted(new AesGcmCodec([['k1', K1]]));
    h.model.add({ when: forTask('codec rotation: old run'), reply: { text: 'old answer' } });
    const old = h.id('codec-old');
    await deputy.startRun({ task: 'codec rotation: old run' }, { workflowId: old });
    await deputy.result(old);

    const missing = await clientWith(new AesGcmCodec([['k2', K2]]), h.taskQueue);
    await expect(missing.result(old)).rejects.toThrow(
      /encrypted with key "k1", which is not among this process's keys \(k2\)/,
    );
    const wrong = await clientWith(new AesGcmCodec([['k1', K2]]), h.taskQueue);
    await expect(wrong.result(old)).rejects.toThrow(/does not decrypt with the key held under that id/);

    // Rotation: the new key first, the old one kept.
    await h.stopWorkers();
    const rotated = new AesGcmCodec([
      ['k2', K2],
      ['k1', K1],
    ]);
    await h.startWorker({ workerOptions: { dataConverter: { payloadCodecs: [rotated] } } });
    const after = await clientWith(rotated, h.taskQueue);
    expect(await after.result(old)).toMatchObject({ output: 'old answer' });
    h.model.add({ when: forTask('codec rotation: new run'), reply: { text: 'new answer' } });
    const fresh = h.id('codec-new');
    await after.startRun({ task: 'codec rotation: new run' }, { workflowId: fresh });
    expect(await after.result(fresh)).toMatchObject({ output: 'new answer' });
    const raw = await rawHistory(h, fresh);
    const input = raw.history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!;
    expect(Buffer.from(input.metadata!['encryption-key-id']!).toString()).toBe('k2');
  });

  it('R6.3 the codec server decodes for Temporal UI with its token and only for the UI origin', async () => {
    const codec = new AesGcmCodec([['k1', K1]]);
    const server = createServer(
      codecHandler(codec, { token: 'tok-123-long-enough-0', origin: 'http://localhost:8233' }),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const [sealed] = await codec.encode([
        { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from('"the vault code"') },
      ]);
      const body = JSON.stringify({
        payloads: [
          {
            metadata: Object.fromEntries(
              Object.entries(sealed!.metadata!).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
            ),
            data: Buffer.from(sealed!.data!).toString('base64'),
          },
        ],
      });
      const post = (headers: Record<string, string>) =>
        fetch(`${url}/decode`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
      const denied = await post({});
      expect(denied.status).toBe(401);
      expect(denied.headers.get('access-control-allow-origin')).toBe('http://localhost:8233');
      expect((await post({ authorization: 'Bearer tok-12' })).status).toBe(401);
      // The token as the endpoint's first path segment (a UI without a login has no access token to pass).
      const byPath = await fetch(`${url}/tok-123-long-enough-0/decode`, { method: 'POST', body });
      expect(byPath.status).toBe(200);
      expect((await fetch(`${url}/tok-124/decode`, { method: 'POST', body })).status).toBe(401);
      expect((await fetch(`${url}/x/tok-123-long-enough-0/decode`, { method: 'POST', body })).status).toBe(401);
      const ok = await post({ authorization: 'Bearer tok-123-long-enough-0' });
      expect(ok.status).toBe(200);
      const decoded = (await ok.json()) as { payloads: { data: string }[] };
      expect(Buffer.from(decoded.payloads[0]!.data, 'base64').toString()).toBe('"the vault code"');
      const preflight = await fetch(`${url}/decode`, { method: 'OPTIONS' });
      expect(preflight.status).toBe(204);
      expect(preflight.headers.get('access-control-allow-headers')).toContain('authorization');
    } finally {
      server.close();
    }
  });
});
