/**
 * Connecting to Temporal with an answer a person can act on: a server that is not there is reported within seconds,
 * naming the address tried and the variable that sets it, instead of a transport error after the SDK's deadline.
 */
import { existsSync } from 'node:fs';
import { connect as tcpConnect } from 'node:net';
import { Connection } from '@temporalio/client';
import { TemporalUnreachableError } from '../contract/errors.js';

/** Run from a checkout of Deputy (its demos' scripts beside it), not from the installed package. */
const IN_A_CHECKOUT = existsSync(new URL('../demo/ui.ts', import.meta.url));

/** How long the first TCP handshake may take before the address is reported unreachable. */
const PROBE_TIMEOUT_MS = 3_000;

/**
 * Resolves once something accepts a TCP connection at `address` (host:port). A refused port or an unknown host fails
 * at once with the system's reason, where the gRPC client would keep retrying until its deadline.
 */
export function probe(address: string, timeoutMs = PROBE_TIMEOUT_MS): Promise<void> {
  const at = address.lastIndexOf(':');
  const host = at > 0 ? address.slice(0, at).replace(/^\[|\]$/g, '') : address;
  const port = at > 0 ? Number(address.slice(at + 1)) : 7233;
  return new Promise((resolve, reject) => {
    const socket = tcpConnect({ host, port });
    socket.setTimeout(timeoutMs, () => {
      socket.destroy();
      reject(new Error(`no answer within ${timeoutMs / 1000} s`));
    });
    socket.once('connect', () => {
      socket.destroy();
      resolve();
    });
    socket.once('error', (err: NodeJS.ErrnoException) => reject(new Error(err.code ?? err.message)));
  });
}

/** A client connection to `address`; throws `TemporalUnreachableError` when nothing answers there. */
export async function connectTemporal(address: string): Promise<Connection> {
  try {
    await probe(address);
    return await Connection.connect({ address });
  } catch (err) {
    throw new TemporalUnreachableError(
      address,
      err,
      IN_A_CHECKOUT ? "npm run ui keeps the demos' server up at the address it prints" : undefined,
    );
  }
}
