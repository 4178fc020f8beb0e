/** Reading payloads recorded in history outside a worker (a run's start input, a watched event), codecs included. */
import { arrayFromPayloads, type LoadedDataConverter, type Payload } from '@temporalio/common';

/** The values of `payloads` as the data converter wrote them: its codecs undone, last applied first. */
export async function decodePayloads(
  converter: LoadedDataConverter,
  payloads: Payload[] | null | undefined,
): Promise<unknown[]> {
  let decoded = payloads ?? [];
  for (const codec of [...converter.payloadCodecs].reverse()) decoded = await codec.decode(decoded);
  return arrayFromPayloads(converter.payloadConverter, decoded);
}
