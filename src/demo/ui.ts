/**
 * `npm run ui`: Temporal UI on the runs the demos persisted (`.deputy/state/temporal.db`), until Ctrl-C.
 * With DEPUTY_CODEC_KEYS (or DEPUTY_COMPRESS=1) set, the UI reads encrypted (or compressed) payloads through a codec
 * server this process starts.
 * Also what `npm run demo -- --ui` keeps open after its run.
 */
import { DeputyError } from '../contract/errors.js';
import { scriptArgs } from '../ops/script-args.js';
import { mkdirSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { startCodecServer } from '../codec/server.js';
import { codecsFromEnv } from '../codec/aes-gcm.js';
import { startDevServer, type DevServer } from '../testing/dev-server.js';
import { freePort } from '../testing/ports.js';
import { holdDatabase } from './state-lock.js';
import { PROJECT_ROOT } from '../testing/temporal-cli.js';

/** Where the demos keep their state: the dev server's database, the evidence recorded on it (`DEPUTY_STATE_DIR`, default `.deputy/state`). */
export function demoStateDir(): string {
  const stateDir = process.env.DEPUTY_STATE_DIR ?? join(PROJECT_ROOT, '.deputy', 'state');
  mkdirSync(stateDir, { recursive: true });
  return stateDir;
}

/** Where the demos persist their dev server. */
export function persistedDatabase(): string {
  return join(demoStateDir(), 'temporal.db');
}

/** A dev server with its UI, and the codec server the UI decodes through when a codec is configured. */
export interface ServedUi {
  server: DevServer;
  uiBase: string;
  /** The codec endpoint given to the UI (its token is the first path segment), when a codec is configured. */
  codecEndpoint: string | undefined;
  close(): Promise<void>;
}

/**
 * Starts the persisted dev server with its UI (and a codec server for it when a codec is configured), holding the
 * state directory's lock while it serves.
 */
export async function serveUi(
  env: NodeJS.ProcessEnv = process.env,
  say: (line: string) => void = console.log,
): Promise<ServedUi> {
  const release = await holdDatabase(persistedDatabase(), say);
  let codec: Server | undefined;
  let codecEndpoint: string | undefined;
  try {
    const uiPort = await freePort(Number(env.DEPUTY_UI_PORT ?? 8233));
    const uiBase = `http://localhost:${uiPort}`;
    if (codecsFromEnv(env).length > 0) {
      const token = env.DEPUTY_CODEC_SERVER_TOKEN ?? randomBytes(18).toString('base64url');
      codec = await startCodecServer({
        ...env,
        DEPUTY_CODEC_SERVER_TOKEN: token,
        DEPUTY_UI_ORIGIN: uiBase,
        DEPUTY_CODEC_SERVER_PORT: String(await freePort(Number(env.DEPUTY_CODEC_SERVER_PORT ?? 8888))),
      });
      codecEndpoint = `http://127.0.0.1:${(codec.address() as AddressInfo).port}/${token}`;
    }
    // Temporal's own port when it is free, so the CLI's default address reaches these runs.
    const port = await freePort(Number(env.DEPUTY_TEMPORAL_PORT ?? 7233));
    const server = await startDevServer({
      dbFilename: persistedDatabase(),
      uiPort,
      port,
      codecEndpoint,
      logLevel: 'error',
    });
    return {
      server,
      uiBase,
      codecEndpoint,
      close: async () => {
        await server.env.teardown();
        codec?.close();
        await release();
      },
    };
  } catch (err) {
    codec?.close();
    await release();
    throw err;
  }
}

/** What a CLI command needs in front of it to reach the server at `address` (nothing at the CLI's default port). */
function cliPrefix(address: string): string {
  return /^(localhost|127\.0\.0\.1):7233$/.test(address) ? '' : `TEMPORAL_ADDRESS=${address} `;
}

/**
 * Resolves on the first Ctrl-C (SIGINT) or SIGTERM. A signal handler alone does not keep Node alive: the dev server
 * is a child process, so without the timer the process would exit as soon as its own work ran out.
 */
export function untilInterrupted(): Promise<void> {
  return new Promise((resolve) => {
    const alive = setInterval(() => {}, 1 << 30);
    const stop = () => {
      clearInterval(alive);
      resolve();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}

async function main(): Promise<void> {
  scriptArgs({
    name: 'ui',
    does: 'Temporal UI on the runs the demos persisted, with the embedded dev server behind it, until Ctrl-C',
    environment: {
      DEPUTY_STATE_DIR: 'where the demos persist their server (default .deputy/state)',
      DEPUTY_UI_PORT: 'the UI port (default 8233, or the next free one)',
      DEPUTY_CODEC_KEYS: 'decode encrypted runs for the UI through a local codec server',
    },
  });
  const ui = await serveUi();
  console.log(`Temporal UI: ${ui.uiBase}  (runs persisted in ${persistedDatabase()})`);
  if (ui.codecEndpoint) console.log('codec: encrypted payloads are decoded for the UI by a local codec server');
  console.log(`temporal: ${ui.server.address}; press Ctrl-C to stop`);
  console.log(
    `look at a run from another terminal: ${cliPrefix(ui.server.address)}npm run deputy -- tree <workflowId>`,
  );
  await untilInterrupted();
  await ui.close();
  console.log('Temporal UI stopped');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err: unknown) => {
    console.error(err instanceof DeputyError ? `ui: ${err.message}` : err);
    process.exit(1);
  });
}
