/**
 * A real OpenAI-compatible server for the real-model suite: llama-cpp-python's server serving SmolLM2-135M-Instruct
 * on loopback (both installed by scripts/install-real-model.sh). Deputy's own authors did not write it: it ignores
 * `max_completion_tokens`, sends no usage when it streams, and writes a real (small) model's tool calls.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { freePort } from '../../src/testing/ports.js';
import { PROJECT_ROOT } from '../../src/testing/temporal-cli.js';

const DIR = join(PROJECT_ROOT, '.deputy', 'real-model');
/** The model's name as runs ask for it (the server serves one model whatever the name). */
export const REAL_MODEL = 'smollm2-135m-instruct';

/** A running llama-cpp-python server. */
export interface LlamaServer {
  /** Base URL for the `openai` client (ends in `/v1`). */
  url: string;
  stop(): Promise<void>;
}

/** Starts the server and resolves once it answers; fails with the command to run when it is not installed. */
export async function startLlamaServer(): Promise<LlamaServer> {
  const python = join(DIR, 'venv', 'bin', 'python');
  const model = join(DIR, 'model.gguf');
  if (!existsSync(python) || !existsSync(model)) {
    throw new Error(
      'the real model is not installed: run `bash scripts/install-real-model.sh` (npm run test:real-model does)',
    );
  }
  const port = await freePort();
  const child: ChildProcess = spawn(
    python,
    [
      '-m',
      'llama_cpp.server',
      '--model',
      model,
      '--model_alias',
      REAL_MODEL,
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--n_ctx',
      '8192',
      '--n_threads',
      '2',
      '--chat_format',
      'chatml-function-calling',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  const url = `http://127.0.0.1:${port}/v1`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the llama-cpp-python server exited (${child.exitCode}): ${stderr}`);
    const ok = await fetch(`${url}/models`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the llama-cpp-python server did not answer within 120 s: ${stderr}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return {
    url,
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await new Promise((resolve) => {
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
        child.once('exit', () => resolve(clearTimeout(timer)));
      });
    },
  };
}

/**
 * A pass-through proxy in front of the server that sets `tool_choice` to `delegate` when it is offered, else to the
 * first tool, as an operator's gateway might: the small model then always answers with a real, grammar-constrained
 * tool call, streamed the way this server streams them (its arguments in pieces, its name repeated in every piece).
 */
export async function startToolForcingProxy(upstream: string): Promise<{ url: string; stop: () => Promise<void> }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      void (async () => {
        let body = Buffer.concat(chunks).toString('utf8');
        try {
          const json = JSON.parse(body) as { tools?: { function: { name: string } }[]; tool_choice?: unknown };
          const tools = json.tools ?? [];
          const chosen = tools.find((tool) => tool.function.name === 'delegate') ?? tools[0];
          if (chosen) json.tool_choice = { type: 'function', function: { name: chosen.function.name } };
          body = JSON.stringify(json);
        } catch {
          // not JSON: passed on as it came
        }
        const abort = new AbortController();
        res.on('close', () => abort.abort());
        try {
          const answer = await fetch(`${upstream}${(req.url ?? '').replace(/^\/v1/, '')}`, {
            method: req.method,
            headers: { 'content-type': 'application/json' },
            ...(req.method !== 'GET' && { body }),
            signal: abort.signal,
          });
          res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' });
          for await (const piece of answer.body ?? []) res.write(piece);
          res.end();
        } catch {
          res.destroy();
        }
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
