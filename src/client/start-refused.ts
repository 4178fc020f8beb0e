import { InputError } from '../contract/errors.js';
import type { RunInput } from '../contract/run.js';

/**
 * Why the server refused to start a run, in words a caller can act on: its own reason is only in the cause
 * (`Failed to start Workflow`, then `Blob data size exceeds limit`).
 */
export function startRefused(err: unknown, input: RunInput): unknown {
  const reason = err instanceof Error && err.cause instanceof Error ? err.cause.message : undefined;
  if (reason && /blob data size exceeds limit/i.test(reason)) {
    const bytes = Buffer.byteLength(JSON.stringify(input));
    return new InputError('RunInput', [
      `the run input is ${bytes} bytes, over what the Temporal server takes in one payload (2 MB unless its ` +
        'limits.blobSize.error says otherwise): shorten the task or messages, or set DEPUTY_PAYLOAD_STORE so large ' +
        'payloads go to a store and history keeps a reference (docs/operations.md)',
    ]);
  }
  if (reason && err instanceof Error && !err.message.includes(reason)) err.message = `${err.message}: ${reason}`;
  return err;
}
