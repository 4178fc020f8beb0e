/**
 * Large payloads (issue 15): with an external payload store, a 5 MB tool result goes to the store and the run
 * completes; history holds a reference of a few hundred bytes, not the bytes; the model reads its usual view (R1.8);
 * the whole result is read back from the store through the reference. A store that lost or damaged a payload is a
 * clear error, not garbage; a bad DEPUTY_PAYLOAD_STORE stops at start with one line per problem.
 */
import { mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { ExternalStorage, StorageDriverClaim, type Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { builtinTools } from '../activities/builtin-tools.js';
import { DeputyClient } from '../src/client/client.js';
import { defineTool } from '../src/contract/tools.js';
import { externalStorageFromEnv, FileStorageDriver } from '../src/ops/storage.js';
import { forTask, toolMessages } from '../src/testing/scripted-model.js';
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

const store = mkdtempSync(join(tmpdir(), 'deputy-store-'));
const driver = new FileStorageDriver(store);
const dataConverter = { externalStorage: new ExternalStorage({ drivers: [driver] }) };
let h: Harness;
let connection: Connection;
let deputy: DeputyClient;
beforeAll(async () => {
  h = await createHarness();
  await h.startWorker({
    config: testConfig({ presets: [{ id: 'assistant', persona: 'You report.', tools: ['big_report'] }] }),
    tools: [...builtinTools(), bigTool],
    workerOptions: { dataConverter },
  });
  connection = await Connection.connect({ address: inject('temporalAddress') });
  deputy = new DeputyClient(new Client({ connection, dataConverter }), { taskQueue: h.taskQueue });
});
afterAll(async () => {
  await h?.close();
  await connection?.close();
});

/** Every payload of a history, wherever it sits in its events. */
function payloadsOf(value: unknown, found: Payload[] = []): Payload[] {
  if (value && typeof value === 'object') {
    if ('metadata' in value && 'data' in value) found.push(value as Payload);
    else for (const inner of Object.values(value)) payloadsOf(inner, found);
  }
  return found;
}

describe('issue 15 large payloads', () => {
  it('a 5 MB tool result goes to the store; the run completes; history holds a reference, not the bytes', async () => {
    const task = 'summarise the big report';
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

    // The store holds it whole; read back through the reference's claim, it is the tool's whole result.
    const files = readdirSync(store, { recursive: true, withFileTypes: true }).filter((f) => f.isFile());
    expect(files.some((f) => statSync(join(f.parentPath, f.name)).size > MB5)).toBe(true);
    // The store is content-addressed: the large file's name is its claim.
    const large = files.find((f) => statSync(join(f.parentPath, f.name)).size > MB5)!;
    const [stored] = await driver.retrieve({}, [new StorageDriverClaim({ key: large.name })]);
    const result = JSON.parse(Buffer.from(stored!.data!).toString()) as { content: string; whole?: string };
    expect(result.whole?.startsWith(MARKER)).toBe(true);
    expect(result.whole?.endsWith('END-OF-REPORT')).toBe(true);

    // The model read its usual view: the first 20,000 characters and a marker saying how much there was.
    const [seen] = toolMessages(h.model.requests.filter(forTask(task))[1]!);
    expect(seen!.length).toBeLessThan(21_000);
    expect(seen).toContain('[truncated: 5.0 MB');
    expect(result.content).toBe(seen);
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
      /DEPUTY_PAYLOAD_STORE: "relative\/dir" is not an absolute path/,
    );
    expect(() =>
      externalStorageFromEnv({ DEPUTY_PAYLOAD_STORE: store, DEPUTY_PAYLOAD_STORE_THRESHOLD: '1MB' }),
    ).toThrow(/DEPUTY_PAYLOAD_STORE_THRESHOLD: "1MB" is not a size in bytes/);
    expect(externalStorageFromEnv({ DEPUTY_PAYLOAD_STORE: `file://${store}` })?.payloadSizeThreshold).toBe(256 * 1024);
  });
});
