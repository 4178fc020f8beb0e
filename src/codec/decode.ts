/** Reading payloads recorded in history outside a worker (a run's start input, a watched event), codecs included. */
import { arrayFromPayloads, type LoadedDataConverter, type Payload, type PayloadCodec } from '@temporalio/common';

/** `payloads` through `codecs` as a data converter writes them: in order. */
export async function encodeWith(codecs: readonly PayloadCodec[], payloads: Payload[]): Promise<Payload[]> {
  let encoded = payloads;
  for (const codec of codecs) encoded = await codec.encode(encoded);
  return encoded;
}

/** `payloads` as they were before `codecs` wrote them: the last applied is undone first. */
export async function decodeWith(codecs: readonly PayloadCodec[], payloads: Payload[]): Promise<Payload[]> {
  let decoded = payloads;
  for (const codec of [...codecs].reverse()) decoded = await codec.decode(decoded);
  return decoded;
}

/** The values of `payloads` as the data converter wrote them, its codecs undone. */
export async function decodePayloads(
  converter: LoadedDataConverter,
  payloads: Payload[] | null | undefined,
): Promise<unknown[]> {
  return arrayFromPayloads(converter.payloadConverter, await decodeWith(converter.payloadCodecs, payloads ?? []));
}
