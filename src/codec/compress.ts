/**
 * Compressed history: a payload codec that deflates each payload Deputy's client and workers write to Temporal when
 * that makes it smaller (dialogue, tool results and children's inputs compress well; a short status does not and is
 * left as it is). Off by default: `DEPUTY_COMPRESS=1` turns it on for the worker, the clients and the codec server,
 * which decodes it for Temporal UI. With encryption on too, payloads are compressed first (ciphertext does not
 * compress).
 */
import { CompressionError, ConfigError } from '../contract/errors.js';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { Payload, PayloadCodec } from '@temporalio/common';
// A CommonJS package: Node's ESM loader sees only its default export.
import proto from '@temporalio/proto';

const { Payload: PayloadProto } = proto.temporal.api.common.v1;
const ENCODING = 'binary/zlib';
/** Below this a payload is left as it is: deflate's framing would eat what it saves. */
const MIN_BYTES = 256;
/**
 * A payload that would inflate past this is refused, not decoded: nothing Deputy writes is that large (Temporal
 * refuses payloads past a few MiB), so it can only be a payload made to exhaust the reader's memory.
 */
const MAX_INFLATED_BYTES = 16 * 2 ** 20;
/**
 * What the payloads of one call may inflate to together: a codec server request of 4 MiB could otherwise carry
 * hundreds of payloads each just under the single limit.
 */
const MAX_INFLATED_BYTES_A_CALL = 64 * 2 ** 20;

/** Deflate (raw, zlib's default level) over each whole payload, its metadata included. */
export class DeflateCodec implements PayloadCodec {
  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const plain = PayloadProto.encode(payload).finish();
      if (plain.length < MIN_BYTES) return payload;
      const data = deflateRawSync(plain);
      if (data.length >= plain.length) return payload;
      return { metadata: { encoding: new TextEncoder().encode(ENCODING) }, data };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    let left = MAX_INFLATED_BYTES_A_CALL;
    return payloads.map((payload) => {
      const encoding = payload.metadata?.encoding;
      if (!encoding || new TextDecoder().decode(encoding) !== ENCODING) return payload; // written uncompressed
      const limit = Math.max(1, Math.min(MAX_INFLATED_BYTES, left));
      let plain: Buffer;
      try {
        plain = inflateRawSync(payload.data ?? new Uint8Array(), { maxOutputLength: limit });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ERR_BUFFER_TOO_LARGE') {
          throw new CompressionError(
            `payload labelled ${ENCODING} does not inflate (${(err as Error).message}); it is damaged`,
          );
        }
        throw new CompressionError(
          limit === MAX_INFLATED_BYTES
            ? `payload labelled ${ENCODING} would inflate past ${MAX_INFLATED_BYTES} bytes; refused, not read`
            : `payloads labelled ${ENCODING} would inflate past ${MAX_INFLATED_BYTES_A_CALL} bytes together; refused, not read`,
        );
      }
      left -= plain.length;
      try {
        return PayloadProto.decode(plain);
      } catch {
        throw new CompressionError(
          `payload labelled ${ENCODING} inflates to something that is not a payload; it is damaged`,
        );
      }
    });
  }
}

/** The compression codec when `DEPUTY_COMPRESS` turns it on (`1`); `0` or unset leaves payloads as they are. */
export function compressionFromEnv(env: NodeJS.ProcessEnv = process.env): DeflateCodec | undefined {
  const value = env.DEPUTY_COMPRESS ?? '';
  if (value === '' || value === '0') return undefined;
  if (value === '1') return new DeflateCodec();
  throw new ConfigError(
    [`DEPUTY_COMPRESS: "${value.slice(0, 20)}" is neither 1 (compress) nor 0 (do not)`],
    'environment',
  );
}
