/**
 * Large payloads: with an external payload store — a directory, or an S3-compatible bucket (moto's S3 server
 * here, MinIO in the compose stack) — a 5 MB tool result goes to the store and the run completes; history holds a
 * reference of a few hundred bytes, not the bytes; the model reads its usual view (R1.8); the whole result is read
 * back from the store through the reference. A store that lost or damaged a payload is a clear error, not garbage; a
 * bad DEPUTY_PAYLOAD_STORE stops at start with one line per problem.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { Client, Connection } from '@temporalio/client';
import { ExternalStorage, StorageDriverClaim, type DataConverter, type StorageDriver } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { builtinTools } from '../activities/builtin-tools.js';
import { DeputyClient } from '../src/client/client.js';
import { defineTool } from '../src/contract/tools.js';
import { externalStorageFromEnv, FileStorageDriver, S3StorageDriver } from '../src/ops/storage.js';
import { freePort } from '../src/testing/ports.js';
import { forTask, toolMessages } from '../src/testing/script.js';
import { PROJECT_ROOT } from '../src/testing/temporal-cli.js';
import { createHarness, testConfig, type Harness } from './support/harness.js';

const MB5 = 5 * 1024 * 1024;
const MARKER = 'FIVE-MEGABYTE-RESULT-d41c';
const bigTool = defineTool({
  name: 'big_report',
  description: 'Returns a 5 MB report.',
  parameters: z.strictObject({}),
  scopes: ['tools.calc'],
  async execute() {
    return `${MARKER} `.padEnd(MB5, 'row of the report, ') + ' END-OF-REPORT';
  },
});

const closers: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

/** A worker and a client that share `dataConverter`, on a task queue of their own. */
async function deputyWith(dataConverter: DataConverter) {
  const h: Harness = await createHarness();
  closers.push(() => h.close());
  await h.startWorker({
    config: testConfig({ presets: [{ id: 'assistant', persona: 'You report.', tools: ['big_report'] }] }),
    tools: [...builtinTools(), bigTool],
    workerOptions: { dataConverter },
  });
  const connection = await Connection.connect({ address: inject('temporalAddress') });
  closers.push(() => connection.close());
  return { h, deputy: new DeputyClient(new Client({ connection, dataConverter }), { taskQueue: h.taskQueue }) };
}

/** Every payload of a history, wherever it sits in its events. */
function payloadsOf(value: unknown, found: temporal.api.common.v1.IPayload[] = []) {
  if (value && typeof value === 'object') {
    if ('metadata' in value && 'data' in value) found.push(value as temporal.api.common.v1.IPayload);
    else for (const inner of Object.values(value)) payloadsOf(inner, found);
  }
  return found;
}

/**
 * Runs a task whose tool returns 5 MB through a worker with `driver` as its store; checks history holds a reference
 * and the model read its view; returns the whole result read back from the store under `key` (the store's only
 * payload past 5 MB, found by `largeKey`).
 */
async function bigRun(driver: StorageDriver, largeKey: () => Promise<string>) {
  const { h, deputy } = await deputyWith({ externalStorage: new ExternalStorage({ drivers: [driver] }) });
  const task = `summarise the big report (${driver.name})`;
  h.model.add(
    { when: forTask(task, 0), reply: { toolCalls: [{ name: 'big_report', arguments: {} }] } },
    { when: forTask(task, 1), reply: { text: 'the report is long' } },
  );
  const id = h.id('big');
  await deputy.startRun({ task, scopes: ['tools.calc'] }, { workflowId: id });
  expect(await deputy.result(id)).toMatchObject({ status: 'completed', output: 'the report is long' });

  // History: small, without the report's tail (the model's 20,000-character view is all of it there), with a
  // reference to a payload of more than 5 MB.
  const history = await h.client.workflow.getHandle(id).fetchHistory();
  const bytes = Buffer.from(temporal.api.history.v1.History.encode(history).finish());
  expect(bytes.length).toBeLessThan(200 * 1024);
  expect(bytes.includes(Buffer.from('END-OF-REPORT'))).toBe(false);
  const references = payloadsOf(history.events).filter((p) => (p.externalPayloads?.length ?? 0) > 0);
  expect(references).toHaveLength(1);
  expect(Number(references[0]!.externalPayloads![0]!.sizeBytes)).toBeGreaterThan(MB5);

  // The model read its usual view: the first 20,000 characters and a marker saying how much there was.
  const [seen] = toolMessages(h.model.requests.filter(forTask(task))[1]!);
  expect(seen!.length).toBeLessThan(21_000);
  expect(seen).toContain('[truncated: 5.0 MB');

  // The store holds it whole; read back through its claim (content-addressed: the key is the claim).
  const [stored] = await driver.retrieve({}, [new StorageDriverClaim({ key: await largeKey() })]);
  const result = JSON.parse(Buffer.from(stored!.data!).toString()) as { content: string; whole?: string };
  expect(result.content).toBe(seen);
  expect(result.whole?.startsWith(MARKER)).toBe(true);
  expect(result.whole?.endsWith('END-OF-REPORT')).toBe(true);

  // A watcher reads the tree whole: the stored result is a reference to it, and its event still comes.
  const events = [];
  for await (const event of deputy.watch(id)) events.push(event);
  expect(events.map((e) => e.type)).toContain('tool/result');
  expect(events.at(-1)).toMatchObject({ type: 'run/ended', status: 'completed' });
}

describe('R6.4 large payloads in a directory', () => {
  const store = mkdtempSync(join(tmpdir(), 'deputy-store-'));
  const driver = new FileStorageDriver(store);

  it('a 5 MB tool result goes to the store; the run completes; history holds a reference, not the bytes', async () => {
    await bigRun(driver, async () => {
      const files = readdirSync(store, { recursive: true, withFileTypes: true }).filter((f) => f.isFile());
      return files.find((f) => statSync(join(f.parentPath, f.name)).size > MB5)!.name;
    });
  });

  it('a payload the store lost or damaged is a clear error; a bad DEPUTY_PAYLOAD_STORE is refused at start', async () => {
    const [claim] = await driver.store({}, [{ metadata: {}, data: Buffer.from('"kept"') }]);
    const elsewhere = new FileStorageDriver(mkdtempSync(join(tmpdir(), 'deputy-store-empty-')));
    await expect(elsewhere.retrieve({}, [claim!])).rejects.toThrow(
      /is not in the store .*every worker and client needs the same DEPUTY_PAYLOAD_STORE/,
    );
    const key = claim!.claimData.key!;
    writeFileSync(join(store, key.slice(0, 2), key), 'tampered');
    await expect(driver.retrieve({}, [claim!])).rejects.toThrow(/is damaged \(its SHA-256 differs\)/);
    await expect(driver.retrieve({}, [new StorageDriverClaim({ key: '../../etc/passwd' })])).rejects.toThrow(
      /not a payload key/,
    );

    expect(() => externalStorageFromEnv({ DEPUTY_PAYLOAD_STORE: 'relative/dir' })).toThrow(
      /DEPUTY_PAYLOAD_STORE: "relative\/dir" is not an absolute path, file:\/\/ or s3:\/\/ URL/,
    );
    expect(() => externalStorageFromEnv({ DEPUTY_PAYLOAD_STORE: 's3://' })).toThrow(/names no bucket/);
    expect(() =>
      externalStorageFromEnv({ DEPUTY_PAYLOAD_STORE: store, DEPUTY_PAYLOAD_STORE_THRESHOLD: '1MB' }),
    ).toThrow(/DEPUTY_PAYLOAD_STORE_THRESHOLD: "1MB" is not a size in bytes/);
    expect(externalStorageFromEnv({ DEPUTY_PAYLOAD_STORE: `file://${store}` })?.payloadSizeThreshold).toBe(256 * 1024);
  });
});

/** moto's S3 server on a free loopback port (installed by `npm test`'s pretest: scripts/install-moto.sh). */
async function startS3(): Promise<string> {
  const server = process.env.MOTO_SERVER ?? join(PROJECT_ROOT, '.deputy', 'bin', 'moto_server');
  expect(existsSync(server), `${server} (bash scripts/install-moto.sh)`).toBe(true);
  const port = await freePort();
  const child: ChildProcess = spawn(server, ['-H', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  closers.push(() => void child.kill('SIGKILL'));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    if (
      await fetch(url).then(
        () => true,
        () => false,
      )
    )
      return url;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`moto's S3 server did not answer at ${url}`);
}

describe('R6.4 large payloads in an S3-compatible bucket', () => {
  it('a 5 MB tool result goes to the bucket through DEPUTY_PAYLOAD_STORE=s3://…; a lost or damaged object is a clear error', async () => {
    const endpoint = await startS3();
    const env = {
      DEPUTY_PAYLOAD_STORE: 's3://deputy-payloads/runs',
      DEPUTY_PAYLOAD_STORE_S3_ENDPOINT: endpoint,
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      AWS_REGION: 'us-east-1',
    };
    const storage = externalStorageFromEnv(env)!;
    const driver = storage.drivers[0] as S3StorageDriver;
    expect(driver).toBeInstanceOf(S3StorageDriver);
    expect(driver.prefix).toBe('runs/');
    const s3 = new S3Client({
      endpoint,
      forcePathStyle: true,
      region: 'us-east-1',
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    });
    closers.push(() => s3.destroy());
    await s3.send(new CreateBucketCommand({ Bucket: 'deputy-payloads' }));

    await bigRun(driver, async () => {
      const listed = await s3.send(new ListObjectsV2Command({ Bucket: 'deputy-payloads', Prefix: 'runs/' }));
      const large = listed.Contents!.find((object) => (object.Size ?? 0) > MB5)!;
      return large.Key!.slice('runs/'.length);
    });

    const [claim] = await driver.store({}, [{ metadata: {}, data: Buffer.from('"kept"') }]);
    const key = `runs/${claim!.claimData.key}`;
    await s3.send(new PutObjectCommand({ Bucket: 'deputy-payloads', Key: key, Body: 'tampered' }));
    await expect(driver.retrieve({}, [claim!])).rejects.toThrow(/is damaged \(its SHA-256 differs\)/);
    await s3.send(new DeleteObjectCommand({ Bucket: 'deputy-payloads', Key: key }));
    await expect(driver.retrieve({}, [claim!])).rejects.toThrow(
      /is not in the store s3:\/\/deputy-payloads\/runs\/ \(NoSuchKey\)/,
    );
  });
});
