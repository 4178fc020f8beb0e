/**
 * The MCP servers the MCP tests use, none written here: the reference filesystem server (stdio) over a scratch
 * directory with a note and a 3 MB file in it, the memory server (stdio, stateful) and the "everything" server
 * (Streamable HTTP, behind a proxy that records every message it carries, so a cancellation can be seen arriving at
 * the server), started before a test file's tests with a worker whose config a test can reload.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { afterAll, beforeAll } from 'vitest';
import { builtinTools } from '../../activities/builtin-tools.js';
import { ConfigStore } from '../../src/config/store.js';
import { freePort } from '../../src/testing/ports.js';
import { createHarness, testConfig, type Harness } from './harness.js';

const serverScript = (name: string) => resolve(`node_modules/@modelcontextprotocol/server-${name}/dist/index.js`);

/** Every JSON-RPC message a client sends through it, in order. */
class RecordingProxy {
  readonly sent: { method?: string; params?: Record<string, unknown>; id?: unknown }[] = [];
  #server?: Server;
  url = '';

  async start(target: string): Promise<void> {
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        if (body.length > 0) {
          const parsed = JSON.parse(body.toString('utf8')) as unknown;
          this.sent.push(...((Array.isArray(parsed) ? parsed : [parsed]) as RecordingProxy['sent']));
        }
        const out = request(new URL(req.url ?? '/', target), { method: req.method, headers: req.headers }, (reply) => {
          res.writeHead(reply.statusCode ?? 502, reply.headers);
          reply.pipe(res);
        });
        out.on('error', () => res.destroy());
        out.end(body);
      });
    });
    await new Promise<void>((ok) => this.#server!.listen(0, '127.0.0.1', ok));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/mcp`;
  }

  async close(): Promise<void> {
    this.#server?.closeAllConnections();
    await new Promise((ok) => this.#server?.close(ok));
  }
}

/** The "everything" server over Streamable HTTP on a free port, answering once it listens. */
async function startEverything(): Promise<{ process: ChildProcess; url: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, [serverScript('everything'), 'streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  await new Promise<void>((ok, fail) => {
    let text = '';
    child.stderr.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes('listening')) ok();
    });
    child.on('exit', (code) => fail(new Error(`everything server exited (${code}): ${text}`)));
  });
  return { process: child, url: `http://127.0.0.1:${port}` };
}

/** Starts the servers and a worker before the calling file's tests, and stops them after. */
export function useMcpServers() {
  /** A scratch directory the filesystem server is given, with a note and a 3 MB file in it. */
  const scratch = mkdtempSync(join(tmpdir(), 'deputy-mcp-'));
  mkdirSync(join(scratch, 'files'));
  writeFileSync(join(scratch, 'files', 'note.txt'), 'The launch code word is PERIWINKLE.\n');
  writeFileSync(join(scratch, 'files', 'big.txt'), 'lorem ipsum dolor sit amet '.repeat(120_000));
  const memoryFile = join(scratch, 'memory.jsonl');

  /** Every payload recorded in a workflow's history, decoded. */
  async function recordedPayloads(workflowId: string): Promise<unknown[]> {
    const history = await h.client.workflow.getHandle(workflowId).fetchHistory();
    const found: unknown[] = [];
    const visit = (node: unknown) => {
      if (typeof node !== 'object' || node === null) return;
      if ('payloads' in node && Array.isArray(node.payloads)) {
        for (const payload of node.payloads as Payload[]) found.push(defaultPayloadConverter.fromPayload(payload));
        return;
      }
      for (const value of Object.values(node)) visit(value);
    };
    visit(history.events);
    return found;
  }

  const h = {} as Harness;
  const proxy = new RecordingProxy();
  let everything: ChildProcess;

  const mcpServers = () => ({
    files: {
      command: process.execPath,
      args: [serverScript('filesystem'), join(scratch, 'files')],
      scopes: ['tools.files'],
      tools: ['read_text_file', 'list_directory'],
    },
    memory: {
      command: process.execPath,
      args: [serverScript('memory')],
      env: { MEMORY_FILE_PATH: memoryFile },
      stateful: true,
      prefix: 'mem_',
      tools: ['create_entities', 'read_graph'],
    },
    everything: {
      url: proxy.url,
      scopes: ['tools.everything'],
      prefix: 'ev_',
      tools: ['echo', 'trigger-long-running-operation', 'get-tiny-image', 'get-structured-content'],
    },
    gone: { command: process.execPath, args: ['-e', 'process.exit(3)'] },
    dying: { command: process.execPath, args: ['--import', 'tsx', resolve('test/support/dying-mcp-server.ts')] },
  });

  const config = (files: string[] = ['read_text_file', 'list_directory']) =>
    testConfig({
      presets: [
        {
          id: 'assistant',
          persona: 'You use MCP tools.',
          tools: [
            'calculate',
            'files_read_text_file',
            'files_list_directory',
            'mem_create_entities',
            'mem_read_graph',
            'ev_echo',
            'ev_trigger-long-running-operation',
            'ev_get-tiny-image',
            'ev_get-structured-content',
            'gone_anything',
            'dying_crash',
            'files_get_file_info',
          ],
        },
      ],
      defaultScopes: ['tools.calc', 'tools.files', 'tools.everything'],
      grantableScopes: ['tools.calc', 'tools.files', 'tools.everything', 'run.delegate'],
      delegation: {
        enabled: true,
        activation: 'unconditional',
        childDefaults: { maxTurns: 4, maxTokens: 40_000, maxCostUsd: 0.2 },
      },
      mcpServers: { ...mcpServers(), files: { ...mcpServers().files, tools: files } },
    });

  const logged: string[] = [];
  const log = console.log;
  /** The worker's config, which a test reloads. */
  let store: ConfigStore;

  beforeAll(async () => {
    const started = await startEverything();
    everything = started.process;
    await proxy.start(started.url);
    store = new ConfigStore(config());
    Object.assign(h, await createHarness());
    console.log = (...args: unknown[]) => void logged.push(args.join(' '));
    await h.startWorker({ config: store, tools: builtinTools() });
  }, 60_000);

  afterAll(async () => {
    console.log = log;
    await h.close?.();
    await proxy.close();
    everything?.kill();
    rmSync(scratch, { recursive: true, force: true });
  });
  return {
    h,
    proxy,
    logged,
    scratch,
    memoryFile,
    config,
    recordedPayloads,
    /** Gives the worker a new config, with the filesystem server's tools narrowed to `files`. */
    reload: (files?: string[]) => store.set(config(files)),
  };
}
