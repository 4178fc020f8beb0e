/**
 * What the optional compressing codec (`DEPUTY_COMPRESS=1`) buys on a recorded tree: each history fetched, every
 * payload passed through the codec exactly as a worker and client with it on would write it, and the events measured
 * again. Payloads under the codec's floor (search attributes, summaries, short results) come out unchanged, as they
 * would.
 */
import type { Client } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import proto from '@temporalio/proto';
import { DeflateCodec } from '../src/codec/compress.js';

const { HistoryEvent } = proto.temporal.api.history.v1;
const codec = new DeflateCodec();

/** A payload as the history holds it: bytes of data and of metadata. */
function isPayload(value: object): value is Payload {
  return 'data' in value && value.data instanceof Uint8Array && 'metadata' in value;
}

/** `value` with each payload in it passed through the codec. */
async function compressed(value: unknown): Promise<unknown> {
  if (Array.isArray(value)) return Promise.all(value.map(compressed));
  if (!value || typeof value !== 'object' || value instanceof Uint8Array) return value;
  if (isPayload(value)) return (await codec.encode([value]))[0];
  const entries = await Promise.all(Object.entries(value).map(async ([key, inner]) => [key, await compressed(inner)]));
  return Object.fromEntries(entries);
}

/** Bytes of the histories of `ids` as recorded, and as they would be with the codec on. */
export async function compressedBytes(client: Client, ids: string[]): Promise<{ plain: number; compressed: number }> {
  let plain = 0;
  let packed = 0;
  for (const id of ids) {
    const history = await client.workflow.getHandle(id).fetchHistory();
    for (const event of history.events ?? []) {
      plain += HistoryEvent.encode(event).finish().length;
      const again = HistoryEvent.fromObject(
        (await compressed(HistoryEvent.toObject(HistoryEvent.fromObject(event)))) as object,
      );
      packed += HistoryEvent.encode(again).finish().length;
    }
  }
  return { plain, compressed: packed };
}
