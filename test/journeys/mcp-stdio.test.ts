/**
 * Deputy as an MCP server over stdio, started the way docs/mcp.md shows: stdout carries the protocol and nothing
 * else, since a strict client reads every line of it as a JSON-RPC message.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/testing/temporal-cli.js';
import { run, type Command } from './support.js';

const DOCUMENTED = 'npm run --silent deputy -- mcp';
let server: Command | undefined;
afterAll(() => server?.kill());

describe('49 deputy mcp over stdio as documented', () => {
  it('49.10 docs/mcp.md starts it with a command whose stdout is only JSON-RPC messages', async () => {
    expect(readFileSync(join(PROJECT_ROOT, 'docs', 'mcp.md'), 'utf8')).toContain(DOCUMENTED);
    const [command, ...args] = DOCUMENTED.split(' ');
    const stdout: string[] = [];
    server = run(command!, args, {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      DEPUTY_MCP_TOKEN: 'journey-mcp-token-0123456789',
    });
    let buffered = '';
    server.child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      stdout.push(...lines);
    });
    const send = (message: object) => server!.child.stdin!.write(`${JSON.stringify(message)}\n`);
    const answered = async (id: number) => {
      const deadline = Date.now() + 60_000;
      while (!stdout.some((line) => line.includes(`"id":${id}`))) {
        if (Date.now() > deadline) throw new Error(`no answer to request ${id}; it printed:\n${server!.output()}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    send({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'journey', version: '1' } },
    });
    await answered(1);
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    await answered(2);
    for (const line of stdout) expect(() => JSON.parse(line) as unknown, `stdout line: ${line}`).not.toThrow();
    expect(stdout.join('\n')).toContain('"name":"run"');
  });
});
