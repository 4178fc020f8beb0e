#!/usr/bin/env node
/**
 * `npm run codec-server`: Temporal UI's remote codec endpoint, so an authorised person reads encrypted (or
 * compressed) runs in the UI. `POST /decode` and `POST /encode` take and return
 * `{ payloads: [{ metadata: { k: base64 }, data: base64 }] }`.
 * Only the UI's origin may call it (CORS, `DEPUTY_UI_ORIGIN`, default http://localhost:8233), and every request must
 * carry `Authorization: Bearer $DEPUTY_CODEC_SERVER_TOKEN`, or name it as the endpoint's first path segment
 * (`http://host:8888/<token>`, for a Temporal UI without a login whose access token it could pass). Keys and
 * compression as for the worker (DEPUTY_CODEC_KEYS[_FILE], DEPUTY_COMPRESS).
 * Listens on `DEPUTY_CODEC_SERVER_PORT` (default 8888), loopback only unless `DEPUTY_CODEC_SERVER_HOST` says otherwise.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { timingSafeEqual } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { ConfigError } from '../contract/errors.js';
import { codecsFromEnv } from './aes-gcm.js';
import { decodeWith, encodeWith } from './decode.js';

interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}

const fromJson = (p: JsonPayload): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
  data: Buffer.from(p.data ?? '', 'base64'),
});
const toJson = (p: Payload): JsonPayload => ({
  metadata: Object.fromEntries(
    Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? []).toString('base64')]),
  ),
  data: Buffer.from(p.data ?? []).toString('base64'),
});

/** Largest request body the codec server reads: Temporal's own payload limit, with room for base64. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;
/** Shortest bearer token the codec server accepts. */
export const MIN_TOKEN_LENGTH = 16;

/** The codec server's request handler: `codecs` in the order they encode (they decode in the reverse order). */
export function codecHandler(codecs: readonly PayloadCodec[], options: { token: string; origin: string }) {
  if (options.token.length < MIN_TOKEN_LENGTH) {
    throw new ConfigError(
      [`DEPUTY_CODEC_SERVER_TOKEN: ${options.token.length} characters; at least ${MIN_TOKEN_LENGTH} are needed`],
      'environment',
    );
  }
  const expected = Buffer.from(`Bearer ${options.token}`);
  const same = (given: string, wanted: Buffer) => {
    const bytes = Buffer.from(given);
    return bytes.length === wanted.length && timingSafeEqual(bytes, wanted);
  };
  const tokenSegment = Buffer.from(`/${options.token}`);
  return (req: IncomingMessage, res: ServerResponse) => {
    res.setHeader('Access-Control-Allow-Origin', options.origin);
    res.setHeader('Access-Control-Allow-Credentials', 'true');
    res.setHeader('Access-Control-Allow-Headers', 'content-type,x-namespace,authorization');
    res.setHeader('Access-Control-Allow-Methods', 'POST,OPTIONS');
    if (req.method === 'OPTIONS') return void res.writeHead(204).end();
    // The token in the path: `/<token>/decode`; else the bearer header.
    const url = (req.url ?? '').split('?')[0]!; // Temporal UI adds `?preserveStorageRefs=true`
    const cut = url.lastIndexOf('/');
    const byPath = cut > 0 && same(url.slice(0, cut), tokenSegment);
    if (!byPath && !same(req.headers.authorization ?? '', expected)) {
      return void res.writeHead(401, { 'content-type': 'text/plain' }).end('missing or wrong bearer token');
    }
    const route = byPath ? url.slice(cut) : url;
    if (req.method !== 'POST' || (route !== '/decode' && route !== '/encode')) {
      return void res.writeHead(404, { 'content-type': 'text/plain' }).end('POST /decode or /encode');
    }
    let body = '';
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        res.writeHead(413, { 'content-type': 'text/plain', connection: 'close' });
        res.end(`request body past ${MAX_BODY_BYTES} bytes`);
        req.destroy();
        return;
      }
      body += chunk.toString();
    });
    req.on('end', () => {
      if (size > MAX_BODY_BYTES) return;
      void (async () => {
        try {
          const { payloads } = JSON.parse(body) as { payloads: JsonPayload[] };
          const input = payloads.map(fromJson);
          const output = route === '/decode' ? await decodeWith(codecs, input) : await encodeWith(codecs, input);
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(JSON.stringify({ payloads: output.map(toJson) }));
        } catch (err) {
          res.writeHead(400, { 'content-type': 'text/plain' }).end((err as Error).message);
        }
      })();
    });
  };
}

/** Starts the server from the environment. */
export async function startCodecServer(env: NodeJS.ProcessEnv = process.env): Promise<Server> {
  const codecs = codecsFromEnv(env);
  const problems = [
    ...(codecs.length > 0
      ? []
      : [
          'DEPUTY_CODEC_KEYS: not set (nor DEPUTY_CODEC_KEYS_FILE), and DEPUTY_COMPRESS is not 1: there is nothing to decode',
        ]),
    ...(env.DEPUTY_CODEC_SERVER_TOKEN === undefined
      ? ['DEPUTY_CODEC_SERVER_TOKEN: not set; every request must carry it']
      : env.DEPUTY_CODEC_SERVER_TOKEN.length < MIN_TOKEN_LENGTH
        ? [`DEPUTY_CODEC_SERVER_TOKEN: at least ${MIN_TOKEN_LENGTH} characters are needed`]
        : []),
  ];
  if (problems.length > 0) throw new ConfigError(problems, 'environment');
  const server = createServer(
    codecHandler(codecs, {
      token: env.DEPUTY_CODEC_SERVER_TOKEN!,
      origin: env.DEPUTY_UI_ORIGIN ?? 'http://localhost:8233',
    }),
  );
  const port = Number(env.DEPUTY_CODEC_SERVER_PORT ?? 8888);
  await new Promise<void>((resolve) => server.listen(port, env.DEPUTY_CODEC_SERVER_HOST ?? '127.0.0.1', resolve));
  return server;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  startCodecServer().then(
    (server) => {
      const address = server.address();
      const where =
        typeof address === 'object' && address ? `http://${address.address}:${address.port}` : String(address);
      console.log(`codec server at ${where}: in Temporal UI, set the codec endpoint to it and pass the bearer token`);
    },
    (err: unknown) => {
      console.error(`codec-server: ${(err as Error).message}`);
      process.exit(1);
    },
  );
}
