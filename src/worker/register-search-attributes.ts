/**
 * Registers Deputy's search attributes on a Temporal server (idempotent), waiting for the server to come up.
 *
 *   TEMPORAL_ADDRESS=host:7233 TEMPORAL_NAMESPACE=default npm run register-search-attributes
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { DEPUTY_SEARCH_ATTRIBUTES } from '../contract/search-attributes.js';

// The proto package is CommonJS: Node's ESM loader sees only its default export.
const { temporal } = proto;

async function connectWithRetry(address: string, deadlineMs: number): Promise<Connection> {
  for (;;) {
    try {
      return await Connection.connect({ address, connectTimeout: '5 seconds' });
    } catch (err) {
      if (Date.now() > deadlineMs) throw err;
      console.log(`waiting for Temporal at ${address} …`);
      await sleep(2000);
    }
  }
}

async function main(): Promise<void> {
  const address = process.env.TEMPORAL_ADDRESS ?? 'localhost:7233';
  const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
  const deadline = Date.now() + 120_000;
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
  console.error('register-search-attributes:', err instanceof Error ? err.message : err);
  process.exit(1);
});
