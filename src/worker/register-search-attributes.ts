/**
 * Registers Deputy's search attributes on a Temporal server (idempotent), waiting for the server to come up.
 *
 *   TEMPORAL_ADDRESS=host:7233 TEMPORAL_NAMESPACE=default npm run register-search-attributes
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { DEPUTY_SEARCH_ATTRIBUTES } from '../contract/search-attributes.js';
import { TemporalUnreachableError } from '../contract/errors.js';
import { probe } from '../client/connect.js';
import { scriptArgs } from '../ops/script-args.js';

// The proto package is CommonJS: Node's ESM loader sees only its default export.
const { temporal } = proto;

async function connectWithRetry(address: string, deadlineMs: number): Promise<Connection> {
  for (let waited = false; ; waited = true) {
    try {
      await probe(address, 2000);
      return await Connection.connect({ address, connectTimeout: '5 seconds' });
    } catch (err) {
      if (Date.now() > deadlineMs) throw new TemporalUnreachableError(address, err);
      if (!waited)
        console.log(`waiting for Temporal at ${address} (up to ${Math.round((deadlineMs - Date.now()) / 1000)} s) …`);
      await sleep(1000);
    }
  }
}

async function main(): Promise<void> {
  const { wait } = scriptArgs({
    name: 'register-search-attributes',
    does: "registers Deputy's search attributes on the namespace (idempotent), waiting for the server to come up",
    options: { 'wait <seconds>': 'how long to wait for the server (default 5; the compose stack waits 120)' },
    environment: {
      TEMPORAL_ADDRESS: 'the Temporal server (default localhost:7233)',
      TEMPORAL_NAMESPACE: 'its namespace (default default)',
    },
  });
  const waitSeconds = wait === undefined ? 5 : Number(wait);
  if (!Number.isFinite(waitSeconds) || waitSeconds < 0) {
    console.error(`npm run register-search-attributes: --wait takes seconds, not "${String(wait)}"`);
    process.exit(2);
  }
  const address = process.env.TEMPORAL_ADDRESS ?? 'localhost:7233';
  const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
  const deadline = Date.now() + waitSeconds * 1000;
  const connection = await connectWithRetry(address, deadline);
  try {
    for (;;) {
      try {
        const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
        const missing = DEPUTY_SEARCH_ATTRIBUTES.filter((key) => !(key.name in (customAttributes ?? {})));
        if (missing.length > 0) {
          await connection.operatorService.addSearchAttributes({
            namespace,
            searchAttributes: Object.fromEntries(
              missing.map((key) => [
                key.name,
                temporal.api.enums.v1.IndexedValueType[`INDEXED_VALUE_TYPE_${key.type}`],
              ]),
            ),
          });
        }
        console.log(
          `search attributes on ${address}/${namespace}: ${missing.length} added, all ${DEPUTY_SEARCH_ATTRIBUTES.length} present`,
        );
        return;
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await sleep(2000); // the namespace may not exist yet
      }
    }
  } finally {
    await connection.close();
  }
}

main().catch((err: unknown) => {
  console.error(`register-search-attributes: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
