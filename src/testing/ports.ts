import { createServer } from 'node:net';

/** `preferred` when it is free on localhost, else any free port. */
export async function freePort(preferred = 0): Promise<number> {
  const tryPort = (port: number) =>
    new Promise<number | null>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(null));
      server.listen(port, '127.0.0.1', () => {
        const address = server.address();
        const chosen = typeof address === 'object' && address ? address.port : null;
        server.close(() => resolve(chosen));
      });
    });
  return (preferred ? await tryPort(preferred) : null) ?? (await tryPort(0))!;
}
