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
import type { PayloadCodec } from '@temporalio/common';
import { AesGcmCodec } from '../src/codec/aes-gcm.js';
import { DeflateCodec } from '../src/codec/compress.js';
import { codecHandler } from '../src/codec/server.js';
import { forTask } from '../src/testing/script.js';
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

/** A worker and a client that share `codec` (or codecs, in the order they encode), on a task queue of their own. */
async function encrypted(codec: PayloadCodec | PayloadCodec[] | undefined) {
  const h = await createHarness();
  harnesses.push(h);
  const payloadCodecs = codec && [codec].flat();
  await h.startWorker({ ...(payloadCodecs && { workerOptions: { dataConverter: { payloadCodecs } } }) });
  return { h, deputy: await clientWith(codec, h.taskQueue) };
}
async function clientWith(codec: PayloadCodec | PayloadCodec[] | undefined, taskQueue: string) {
  const connection = await Connection.connect({ address: inject('temporalAddress') });
  connections.push(connection);
  const payloadCodecs = codec && [codec].flat();
  return new DeputyClient(new Client({ connection, ...(payloadCodecs && { dataConverter: { payloadCodecs } }) }), {
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
      codecHandler([codec], { token: 'tok-123-long-enough-0', origin: 'http://localhost:8233' }),
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

  it('R6.3 compression on (alone or before encryption): the history holds deflated payloads, smaller; runs and the codec server read them', async () => {
    const long = `${SECRET_TASK} ${'Quote the page back. '.repeat(100)}`;
    const sizes: Record<string, number> = {};
    for (const [name, codec] of [
      ['plain', undefined],
      ['compressed', [new DeflateCodec()]],
      ['both', [new DeflateCodec(), new AesGcmCodec([['k1', K1]])]],
    ] as const) {
      const { h, deputy } = await encrypted(codec && [...codec]);
      h.model.add({ when: forTask(long), reply: { text: SECRET_ANSWER } });
      const id = h.id(`zip-${name}`);
      await deputy.startRun({ task: long }, { workflowId: id });
      expect(await deputy.result(id)).toMatchObject({ status: 'completed', output: SECRET_ANSWER });
      const raw = await rawHistory(h, id);
      const started = raw.history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!;
      sizes[name] = started.data!.length;
      const encoding = Buffer.from(started.metadata!.encoding!).toString();
      expect(encoding).toBe({ plain: 'json/plain', compressed: 'binary/zlib', both: 'binary/encrypted' }[name]);
      expect(raw.holds('Quote the page back. Quote the page back.')).toBe(name === 'plain');
      if (name === 'both') {
        // The codec server, given both, undoes both: Temporal UI shows the run's input as it was sent.
        const server = createServer(
          codecHandler([...codec], { token: 'tok-123-long-enough-0', origin: 'http://localhost:8233' }),
        );
        await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
        try {
          const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/decode`;
          const toBase64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');
          const body = JSON.stringify({
            payloads: [
              {
                metadata: Object.fromEntries(Object.entries(started.metadata!).map(([k, v]) => [k, toBase64(v)])),
                data: toBase64(started.data!),
              },
            ],
          });
          const reply = await fetch(url, {
            method: 'POST',
            body,
            headers: { authorization: 'Bearer tok-123-long-enough-0' },
          });
          expect(reply.status).toBe(200);
          const decoded = (await reply.json()) as { payloads: { data: string }[] };
          expect(JSON.parse(Buffer.from(decoded.payloads[0]!.data, 'base64').toString())).toMatchObject({ task: long });
        } finally {
          server.close();
        }
      }
    }
    expect(sizes.compressed).toBeLessThan(sizes.plain! / 3);
    expect(sizes.both).toBeLessThan(sizes.plain! / 3);
  });
});
