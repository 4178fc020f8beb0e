/**
 * R6.7 MCP servers as the config names them: a reload lists them again, a pinned source this worker does not know
 * fails clearly, and a server's config is checked before anything starts.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { builtinTools } from '../activities/builtin-tools.js';
import { listMcpTools } from '../activities/mcp.js';
import { createRunTool } from '../activities/run-tool.js';
import { pinnedToolKey } from '../src/contract/tools.js';
import { parseConfig } from '../src/config/schema.js';
import { forTask, offeredTools, toolMessages, userSays } from '../src/testing/script.js';
import { delegateReply } from './support/delegation.js';
import { useMcpServers } from './support/mcp-servers.js';

const { h, proxy, logged, scratch, reload } = useMcpServers();

const SCOPES = ['tools.calc', 'tools.files', 'tools.everything', 'run.delegate'];

describe('R6.7 MCP servers follow the config', () => {
  it('R6.7 after a reload the worker lists the servers again: a tool now allowed is offered to new runs', async () => {
    const task = 'r6.7 after reload';
    h.model.add({ name: task, when: forTask(task, 0), times: Infinity, reply: { text: 'seen' } });
    const before = h.id('mcp-before');
    await h.deputy.startRun({ task, scopes: SCOPES }, { workflowId: before });
    await h.deputy.result(before);
    const offered = () => offeredTools(h.model.requests.filter((r) => r.rule === task).at(-1)!);
    expect(offered()).not.toContain('files_get_file_info');
    logged.length = 0;
    reload(['read_text_file', 'list_directory', 'get_file_info']);
    await expect
      .poll(() => logged.find((line) => line.includes('MCP server "files"')), { timeout: 20_000 })
      .toBe('deputy: MCP server "files": 3 tools (files_read_text_file, files_list_directory, files_get_file_info)');
    const after = h.id('mcp-after');
    await h.deputy.startRun({ task, scopes: SCOPES }, { workflowId: after });
    await h.deputy.result(after);
    expect(offered()).toContain('files_get_file_info');
  });

  it('R6.7 50.6 a live run and the child inheriting its preset keep the source they were offered after a reload drops the tool', async () => {
    // A run offered the tool, which a reload stops offering before the run calls it: the run keeps its source's
    // revision (the server's entry as it was), and so does a child that inherits its preset after the reload.
    reload(['read_text_file', 'list_directory', 'get_file_info']);
    await expect
      .poll(() => logged.some((line) => line.includes('MCP server "files": 3 tools')), { timeout: 20_000 })
      .toBe(true);
    const kept = 'r6.7 kept after reload';
    const note = join(scratch, 'files', 'note.txt');
    let reach!: () => void;
    const reached = new Promise<void>((ok) => (reach = ok));
    let release!: () => void;
    const released = new Promise<void>((ok) => (release = ok));
    h.model.add(
      {
        name: kept,
        when: forTask(kept, 0),
        reply: async () => {
          reach();
          await released;
          return { toolCalls: [{ name: 'files_get_file_info', arguments: { path: note } }] };
        },
      },
      {
        name: `${kept}:2`,
        when: forTask(kept, 1),
        reply: delegateReply({ briefs: [{ task_name: 'heir', message: 'mcp inherited file info' }] }),
      },
      {
        name: `${kept}:child`,
        when: userSays('mcp inherited file info', 0),
        reply: { toolCalls: [{ name: 'files_get_file_info', arguments: { path: note } }] },
      },
      { name: `${kept}:child-2`, when: userSays('mcp inherited file info', 1), reply: { text: 'the child saw it' } },
      { name: `${kept}:3`, when: forTask(kept, 2), reply: { text: 'it is kept' } },
    );
    const keptId = h.id('mcp-kept');
    await h.deputy.startRun({ task: kept, scopes: SCOPES }, { workflowId: keptId });
    await reached;
    logged.length = 0;
    reload();
    await expect
      .poll(() => logged.some((line) => line.includes('MCP server "files": 2 tools')), { timeout: 20_000 })
      .toBe(true);
    release();
    expect(await h.deputy.result(keptId)).toMatchObject({ status: 'completed', output: 'it is kept' });
    const [info] = toolMessages(h.model.requests.find((r) => r.rule === `${kept}:2`)!);
    expect(info).toMatch(/size: 36/);
    const child = h.model.requests.find((r) => r.rule === `${kept}:child`)!;
    expect(offeredTools(child)).toContain('files_get_file_info');
    const [childInfo] = toolMessages(h.model.requests.find((r) => r.rule === `${kept}:child-2`)!);
    expect(childInfo).toMatch(/size: 36/);
    // A run started after the reload is not offered it.
    const fresh = 'r6.7 fresh after reload';
    h.model.add({ name: fresh, when: forTask(fresh, 0), reply: { text: 'fresh' } });
    const freshId = h.id('mcp-fresh');
    await h.deputy.startRun({ task: fresh, scopes: SCOPES }, { workflowId: freshId });
    await h.deputy.result(freshId);
    expect(offeredTools(h.model.requests.find((r) => r.rule === fresh)!)).not.toContain('files_get_file_info');
  });
});

describe('R6.7 50.6 a pinned source this worker does not know', () => {
  it('R6.7 50.6 a call pinned to a revision this worker does not have is a tool error naming the revision', async () => {
    const [calc] = builtinTools();
    const tools = new Map([['files_get_file_info', { ...calc!, name: 'files_get_file_info', source: 'aaaaaaaaaaaa' }]]);
    const runTool = createRunTool(tools);
    const call = { id: 'c1', name: 'files_get_file_info', arguments: '{}' };
    const input = { grant: 'g', runId: 'r', call, allowedTools: [call.name], scopes: ['tools.calc'] };
    expect(await runTool({ ...input, source: 'bbbbbbbbbbbb' })).toEqual({
      isError: true,
      content:
        'tool "files_get_file_info" is no longer offered by its source (revision bbbbbbbbbbbb is not configured on this worker); use the other tools',
    });
    // Pinned to the revision it has now, or to one it keeps under the pinned key, the tool is found (and reads the
    // arguments, which these are not).
    const bad = { ...input, call: { ...call, arguments: 'not json' } };
    const found = /^arguments for "files_get_file_info" are not valid JSON/;
    expect((await runTool({ ...bad, source: 'aaaaaaaaaaaa' })).content).toMatch(found);
    tools.set(pinnedToolKey(call.name, 'bbbbbbbbbbbb'), tools.get(call.name)!);
    expect((await runTool({ ...bad, source: 'bbbbbbbbbbbb' })).content).toMatch(found);
  });
});

describe('R6.7 MCP server config', () => {
  it('R6.7 bad server entries are refused at start, one line each', () => {
    expect(() =>
      parseConfig({
        mcpServers: {
          'bad name!': { command: 'x' },
          nowhere: { url: 'ftp://example.com/mcp' },
          both: { command: 'x', url: 'http://example.com' },
        },
      }),
    ).toThrow(/mcpServers/);
  });

  it('R6.7 a secret comes from the environment; one that is not set is a line naming it, not a crash', async () => {
    const listing = await listMcpTools(
      {
        echo: parseConfig({
          mcpServers: { echo: { url: proxy.url, headers: { authorization: { env: 'NOPE_TOKEN' } } } },
        }).mcpServers.echo!,
      },
      { env: {} },
    );
    expect(listing.tools).toEqual([]);
    expect(listing.lines).toEqual([
      'MCP server "echo" did not answer: MCP server "echo" needs NOPE_TOKEN, which is not set',
    ]);
  });
});
