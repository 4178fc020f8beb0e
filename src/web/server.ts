/**
 * `npm run web`: a small web view of delegation trees. `/runs/<id>` shows a run's live tree with cost
 * roll-ups, each run's transcript (its session, untrusted envelopes shown as such), questions waiting for an answer,
 * calls waiting for approval (approve or deny them, with a reason), and links into Temporal UI. Live updates are
 * Server-Sent Events fed by `DeputyClient.watch`; each run's status and own calls are read as `deputy tree` reads them
 * (a `state` query of each live run, at most once a second, every 3 s while no event comes), so the page and the CLI
 * agree; a transcript is the run's `state` query, read when a person opens it.
 *
 * Every request needs the access token (`DEPUTY_WEB_TOKEN`; one is generated and printed when unset): once as
 * `?token=` (it becomes an HttpOnly cookie) or as `Authorization: Bearer <token>`. Listens on `DEPUTY_WEB_PORT`
 * (8787), loopback unless `DEPUTY_WEB_HOST` says otherwise. Links go to `TEMPORAL_UI_URL` (http://localhost:8233).
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { scriptArgs } from '../ops/script-args.js';
import { DeputyClient } from '../client/client.js';
import type { ApprovalRequest } from '../contract/approvals.js';
import { ConfigError } from '../contract/errors.js';
import { describeWatchEvent, TreeView } from '../client/watch-view.js';
import type { WatchEvent } from '../client/watch-events.js';
import { page, escapeHtml } from './page.js';
import { indexPage } from './index-page.js';
import { TreeRows } from './tree-rows.js';
import { findRun, transcript } from './lookups.js';
import { z } from 'zod';
import { describeIssues } from '../rules/zod-issues.js';

export interface WebOptions {
  deputy: DeputyClient;
  token: string;
  /** Temporal UI's base URL, for links. */
  uiBase: string;
  port?: number;
  host?: string;
  /** Live event streams served at once; one more is refused with 503. @default 32 */
  maxStreams?: number;
}

/** Shortest access token the web view accepts: a short or empty one would let anyone in. */
export const MIN_TOKEN_LENGTH = 16;

const COOKIE = 'deputy_web';
/** SSE comment sent this often, so proxies keep an idle stream open. */
const KEEPALIVE_MS = 15_000;
/** How often a followed tree's statuses are read again while no event arrives. */
const REREAD_MS = 3000;

/** Refuses a token anyone could guess: empty (which would match an empty cookie) or short. */
function checkToken(token: string): void {
  if (token.length >= MIN_TOKEN_LENGTH) return;
  throw new ConfigError(
    [
      `DEPUTY_WEB_TOKEN: ${token.length} characters; the web view needs at least ${MIN_TOKEN_LENGTH} (leave it unset to have one generated)`,
    ],
    'environment',
  );
}

/** Starts the web view; resolves once it listens. */
export async function startWebServer(options: WebOptions): Promise<Server> {
  checkToken(options.token);
  const expected = Buffer.from(options.token);
  const maxStreams = options.maxStreams ?? 32;
  let streams = 0;
  const same = (given: string | undefined) => {
    const bytes = Buffer.from(given ?? '');
    return bytes.length === expected.length && timingSafeEqual(bytes, expected);
  };
  const namespace = options.deputy.temporal.options.namespace;

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const fromQuery = url.searchParams.get('token') ?? undefined;
    const fromCookie = /(?:^|;\s*)deputy_web=([^;]+)/.exec(req.headers.cookie ?? '')?.[1];
    const fromHeader = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!same(fromQuery) && !same(fromCookie) && !same(fromHeader)) {
      return void res.writeHead(401, { 'content-type': 'text/plain' }).end('missing or wrong access token');
    }
    const headers = {
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      ...(same(fromQuery) && { 'set-cookie': `${COOKIE}=${options.token}; HttpOnly; SameSite=Strict; Path=/` }),
    };
    void route(url, req, res, headers).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end((err as Error).message);
    });
  });

  async function route(url: URL, req: IncomingMessage, res: ServerResponse, headers: Record<string, string>) {
    const parts = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    if (req.method === 'POST' && parts[0] === 'api' && parts[1] === 'runs' && parts[3] === 'approvals') {
      return decide(options.deputy, parts[2]!, req, res, headers);
    }
    if (req.method !== 'GET') return void res.writeHead(405, headers).end();
    if (parts.length === 0) {
      const html = await indexPage(options.deputy);
      res.writeHead(200, { ...headers, 'content-type': 'text/html; charset=utf-8' });
      return void res.end(html);
    }
    if (parts[0] === 'runs' && parts.length === 2) {
      res.writeHead(200, {
        ...headers,
        'content-type': 'text/html; charset=utf-8',
        'content-security-policy': "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'",
      });
      return void res.end(page(parts[1]!, options.uiBase, namespace));
    }
    if (parts[0] === 'api' && parts[1] === 'runs' && parts.length === 3) {
      const found = await findRun(options.deputy.temporal, parts[2]!);
      res.writeHead(found.status, { ...headers, 'content-type': 'application/json' });
      return void res.end(JSON.stringify(found));
    }
    if (parts[0] === 'api' && parts[1] === 'runs' && parts.length === 4) {
      const id = parts[2]!;
      if (parts[3] === 'transcript') return transcript(options.deputy, id, res, headers);
      if (parts[3] === 'events') return events(id, req, res, headers);
    }
    res.writeHead(404, { ...headers, 'content-type': 'text/plain' }).end(`not found: ${escapeHtml(url.pathname)}`);
  }

  /** The tree's events as SSE `update`s: each carries the event and the whole folded tree, so a page only draws. */
  async function events(id: string, req: IncomingMessage, res: ServerResponse, headers: Record<string, string>) {
    if (streams >= maxStreams) {
      res.writeHead(503, { ...headers, 'content-type': 'text/plain', 'retry-after': '10' });
      return void res.end(`this web view already serves ${maxStreams} live streams; close one and try again`);
    }
    // Counted before anything is awaited: requests arriving together must not all pass the check above.
    streams += 1;
    res.once('close', () => (streams -= 1));
    // A run that does not exist is a 404, which ends a browser's EventSource instead of making it reconnect forever.
    const found = await findRun(options.deputy.temporal, id);
    if (found.status !== 200) {
      return void res.writeHead(found.status, { ...headers, 'content-type': 'text/plain' }).end(found.error);
    }
    res.writeHead(200, { ...headers, 'content-type': 'text/event-stream', connection: 'keep-alive' });
    res.write(': deputy\n\n');
    const stop = new AbortController();
    req.on('close', () => stop.abort());
    const keepalive = setInterval(() => res.write(': keepalive\n\n'), KEEPALIVE_MS);
    const view = new TreeView();
    const waiting = new WaitingCalls(options.deputy, id);
    const records = new TreeRows(options.deputy.temporal, id);
    const send = (event: WatchEvent | null) => {
      if (!res.writableEnded)
        res.write(`event: update\ndata: ${JSON.stringify(update(event, view, records, waiting))}\n\n`);
    };
    // Read beside the stream, never in its way: an event is sent at once, a status read later follows it.
    const reread = (force = false) =>
      void records.refresh(force).then((changed) => changed && view.root !== undefined && send(null));
    // A status no event announces (a conversation waiting for its person) still reaches the page.
    const rereading = setInterval(reread, REREAD_MS);
    try {
      for await (const event of options.deputy.watch(id, { signal: stop.signal })) {
        view.apply(event);
        if (event.type === 'approval/requested') await waiting.read();
        send(event);
        reread();
      }
      clearInterval(rereading);
      await records.refresh(true);
      send(null);
      res.write('event: end\ndata: {}\n\n');
    } catch (err) {
      if (!stop.signal.aborted)
        res.write(`event: failed\ndata: ${JSON.stringify({ error: (err as Error).message })}\n\n`);
    } finally {
      clearInterval(keepalive);
      clearInterval(rereading);
      res.end();
    }
  }

  await new Promise<void>((resolve) => server.listen(options.port ?? 8787, options.host ?? '127.0.0.1', resolve));
  return server;
}

/** What a page is sent after an event (or a status read again): the event, and the whole tree as it now stands. */
function update(event: WatchEvent | null, view: TreeView, records: TreeRows, waiting: WaitingCalls) {
  return {
    event: event && { ...event, text: describeWatchEvent(event) },
    runs: records.rows(view),
    summary: view.summary(),
    questions: [...view.questions.values()],
    approvals: waiting.shown(view),
  };
}

/** The calls of a tree waiting for approval with their arguments whole, read when one is asked: the page decides on them. */
class WaitingCalls {
  #listed = new Map<string, ApprovalRequest>();
  constructor(
    private readonly deputy: DeputyClient,
    private readonly rootId: string,
  ) {}

  async read(): Promise<void> {
    const open = await this.deputy.approvals(this.rootId).catch(() => undefined);
    if (open) this.#listed = new Map(open.map((r) => [`${r.run} ${r.requestId}`, r]));
  }

  /** What the watch says waits, each with its arguments where they were read. */
  shown(view: TreeView) {
    return [...view.approvals.values()].map((a) => {
      const found = this.#listed.get(`${a.run} ${a.requestId}`);
      return found ? { ...a, arguments: found.arguments, argumentsChars: found.argumentsChars } : a;
    });
  }
}

/**
 * A decision from the page: JSON only (a form of another site cannot send it, and the cookie is SameSite=Strict),
 * for a request open in the tree the page shows; the run's validator has the last word.
 */
async function decide(
  deputy: DeputyClient,
  rootId: string,
  req: IncomingMessage,
  res: ServerResponse,
  headers: Record<string, string>,
) {
  const answer = (status: number, body: Record<string, unknown>) =>
    void res.writeHead(status, { ...headers, 'content-type': 'application/json' }).end(JSON.stringify(body));
  if (!/^application\/json\b/.test(req.headers['content-type'] ?? '')) {
    return answer(415, { error: 'send the decision as application/json' });
  }
  const parsed = WebDecision.safeParse(await readJson(req).catch(() => undefined));
  if (!parsed.success) return answer(400, { error: `invalid decision: ${describeIssues(parsed.error).join('; ')}` });
  const { run, requestId, decision, reason } = parsed.data;
  const open = await deputy.approvals(rootId);
  if (!open.some((r) => r.run === run && r.requestId === requestId)) {
    return answer(409, { error: `no request ${requestId} of ${run} is open in the tree of ${rootId}` });
  }
  try {
    return answer(200, { ...(await deputy.decideApproval(run, requestId, decision, reason ? { reason } : {})) });
  } catch (err) {
    return answer(409, { error: (err as Error).message });
  }
}

/** What the page sends to decide a request. */
const WebDecision = z.strictObject({
  run: z.string().min(1).max(1000),
  requestId: z.string().min(1).max(100),
  decision: z.enum(['approve', 'deny']),
  reason: z.string().max(2000).optional(),
});

/** A request's JSON body, at most 16 KiB. */
async function readJson(req: IncomingMessage): Promise<unknown> {
  let text = '';
  for await (const chunk of req) {
    text += String(chunk);
    if (text.length > 16_384) throw new Error('body too large');
  }
  return JSON.parse(text);
}

async function main(): Promise<void> {
  scriptArgs({
    name: 'web',
    does: 'a web view of runs (their tree live and their transcript) for people without Temporal UI, until Ctrl-C',
    environment: {
      TEMPORAL_ADDRESS: 'the Temporal server (default localhost:7233)',
      DEPUTY_WEB_TOKEN: 'the token its pages ask for (default: a random one, printed)',
      DEPUTY_WEB_PORT: 'its port (default 8787); DEPUTY_WEB_HOST its address (default 127.0.0.1)',
      TEMPORAL_UI_URL: "Temporal UI's address, for links (default http://localhost:8233)",
    },
  });
  // Set but empty is refused (by startWebServer, before anything listens), not taken as "no token".
  const token = process.env.DEPUTY_WEB_TOKEN ?? randomBytes(18).toString('base64url');
  checkToken(token);
  const deputy = await DeputyClient.connect();
  const server = await startWebServer({
    deputy,
    token,
    uiBase: process.env.TEMPORAL_UI_URL ?? 'http://localhost:8233',
    port: Number(process.env.DEPUTY_WEB_PORT ?? 8787),
    host: process.env.DEPUTY_WEB_HOST ?? '127.0.0.1',
  });
  const { address, port } = server.address() as AddressInfo;
  const shown = process.env.DEPUTY_WEB_TOKEN !== undefined ? '<DEPUTY_WEB_TOKEN>' : token;
  console.log(`deputy web: http://${address}:${port}/?token=${shown}  (then /runs/<workflowId>)`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  server.close();
  await deputy.temporal.connection.close();
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err: unknown) => {
    console.error(`deputy web: ${(err as Error).message}`);
    process.exit(1);
  });
}
