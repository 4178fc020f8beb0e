/**
 * R6.7 tools from MCP servers no one here wrote, installed from the registry by `npm ci`: the reference filesystem
 * server (stdio), the memory server (stdio, stateful) and the "everything" server (Streamable HTTP, behind a proxy
 * that records every message it carries, so a cancellation can be seen arriving at the server).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { forTask, offeredTools, toolMessages, userSays } from '../src/testing/script.js';
import { delegateReply } from './support/delegation.js';
import { useMcpServers } from './support/mcp-servers.js';
import { scheduledActivities } from './support/history.js';

const { h, proxy, logged, scratch, memoryFile, recordedPayloads } = useMcpServers();

const SCOPES = ['tools.calc', 'tools.files', 'tools.everything', 'run.delegate'];

describe('R6.7 MCP servers as tool sources', () => {
  it('R6.7 the worker says what each server offers, and which did not answer', () => {
    expect(logged).toContainEqual('deputy: MCP server "files": 2 tools (files_read_text_file, files_list_directory)');
    expect(logged).toContainEqual('deputy: MCP server "memory": 2 tools (mem_create_entities, mem_read_graph)');
    expect(logged.some((line) => line.startsWith('deputy: MCP server "gone" did not answer:'))).toBe(true);
    expect(logged.find((line) => line.includes('"everything":'))).toMatch(/: 4 tools \(ev_echo, /);
  });

  it('R6.7 a run reads a file through the filesystem server; the composition records what it was offered', async () => {
    const task = 'r6.7 read the note';
    h.model.add(
      {
        name: `${task}:1`,
        when: forTask(task, 0),
        reply: {
          toolCalls: [{ name: 'files_read_text_file', arguments: { path: join(scratch, 'files', 'note.txt') } }],
        },
      },
      { name: `${task}:2`, when: forTask(task, 1), reply: { text: 'the word is PERIWINKLE' } },
    );
    const workflowId = h.id('mcp-read');
    await h.deputy.startRun({ task, scopes: SCOPES }, { workflowId });
    const result = await h.deputy.result(workflowId);
    expect(result).toMatchObject({ status: 'completed', output: 'the word is PERIWINKLE' });
    const first = h.model.requests.find((r) => r.rule === `${task}:1`)!;
    expect(offeredTools(first)).toEqual(expect.arrayContaining(['files_read_text_file', 'files_list_directory']));
    expect(offeredTools(first)).not.toContain('gone_anything');
    const spec = first.body.tools!.find((t) => t.function.name === 'files_read_text_file')!.function;
    expect(spec.parameters).toMatchObject({ type: 'object', required: ['path'] });
    const [read] = toolMessages(h.model.requests.find((r) => r.rule === `${task}:2`)!);
    expect(read).toContain('The launch code word is PERIWINKLE.');
    // What the run was offered is in its recorded composition, description and schema included.
    const composition = (await recordedPayloads(workflowId)).find(
      (value): value is { tools: { name: string; description?: string; parameters?: unknown }[] } =>
        typeof value === 'object' && value !== null && 'presetRevision' in value,
    );
    expect(composition?.tools.find((tool) => tool.name === 'files_read_text_file')).toMatchObject({
      description: expect.stringMatching(/^Read the complete contents of a file/) as unknown,
      parameters: { type: 'object', required: ['path'] },
    });
  });

  it('R6.7 a 3 MB file read through MCP reaches the model bounded; an image is named, not inlined', async () => {
    const task = 'r6.7 read the big file';
    h.model.add(
      {
        name: `${task}:1`,
        when: forTask(task, 0),
        reply: {
          toolCalls: [
            { name: 'files_read_text_file', arguments: { path: join(scratch, 'files', 'big.txt') } },
            { name: 'ev_get-tiny-image', arguments: {} },
          ],
        },
      },
      { name: `${task}:2`, when: forTask(task, 2), reply: { text: 'read' } },
    );
    const workflowId = h.id('mcp-big');
    await h.deputy.startRun({ task, scopes: SCOPES }, { workflowId });
    expect(await h.deputy.result(workflowId)).toMatchObject({ status: 'completed', output: 'read' });
    const results = toolMessages(h.model.requests.find((r) => r.rule === `${task}:2`)!);
    const big = results.find((text) => text.includes('lorem'));
    const image = results.find((text) => !text.includes('lorem'));
    expect(big!.startsWith('lorem ipsum dolor sit amet')).toBe(true);
    expect(big).toMatch(/\[truncated: 3\.1 MB → 20 KB\]$/);
    expect(image).toMatch(/\[image image\/png, \d+ bytes, not shown\]/);
    expect(image).not.toMatch(/iVBOR/);
  });

  it('R6.7 an error result and a refused call are tool errors the model reads; the run goes on', async () => {
    const task = 'r6.7 bad calls';
    h.model.add(
      {
        name: `${task}:1`,
        when: forTask(task, 0),
        reply: {
          toolCalls: [
            { name: 'ev_echo', arguments: {} },
            { name: 'files_read_text_file', arguments: { path: '/etc/passwd' } },
          ],
        },
      },
      { name: `${task}:2`, when: forTask(task, 2), reply: { text: 'noted the errors' } },
    );
    const workflowId = h.id('mcp-errors');
    await h.deputy.startRun({ task, scopes: SCOPES }, { workflowId });
    expect(await h.deputy.result(workflowId)).toMatchObject({ status: 'completed', output: 'noted the errors' });
    // Results join the session as they arrive: find each by its server.
    const results = toolMessages(h.model.requests.find((r) => r.rule === `${task}:2`)!);
    expect(results).toHaveLength(2);
    const echo = results.find((text) => text.includes('"everything"'));
    const passwd = results.find((text) => text.includes('"files"'));
    expect(echo).toMatch(/^MCP server "everything", tool "echo": /);
    expect(passwd).toMatch(/^MCP server "files", tool "read_text_file": .*(denied|outside)/i);
    expect(passwd).not.toContain('root:');
  });

  it('49.10 a server that dies on every call is a tool error the model reads within seconds, after its retry policy', async () => {
    const task = '49.10 dying server';
    h.model.add(
      { name: `${task}:1`, when: forTask(task, 0), reply: { toolCalls: [{ name: 'dying_crash', arguments: {} }] } },
      { name: `${task}:2`, when: forTask(task, 1), reply: { text: 'the tool is down' } },
    );
    const workflowId = h.id('mcp-dying');
    const t0 = Date.now();
    await h.deputy.startRun({ task, scopes: SCOPES }, { workflowId });
    expect(await h.deputy.result(workflowId)).toMatchObject({ status: 'completed', output: 'the tool is down' });
    const elapsed = Date.now() - t0;
    const [error] = toolMessages(h.model.requests.find((r) => r.rule === `${task}:2`)!);
    expect(error).toMatch(/^tool "dying_crash" failed: /);
    // The default policy: three attempts, 1 s and 2 s apart; the run's own backoff would take minutes.
    const { events } = await h.client.workflow.getHandle(workflowId).fetchHistory();
    const scheduled = events!.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'runTool');
    const attempts = events!
      .filter((e) => Number(e.activityTaskStartedEventAttributes?.scheduledEventId) === Number(scheduled?.eventId))
      .map((e) => e.activityTaskStartedEventAttributes?.attempt);
    expect(attempts).toEqual([3]);
    expect(scheduled?.activityTaskScheduledEventAttributes?.retryPolicy?.maximumAttempts).toBe(3);
    expect(elapsed).toBeLessThan(60_000);
  });

  it('R6.7 a long tool reports progress as heartbeats; cancelling the run cancels the request at the server', async () => {
    const task = 'r6.7 long operation';
    h.model.add({
      name: `${task}:1`,
      when: forTask(task, 0),
      reply: { toolCalls: [{ name: 'ev_trigger-long-running-operation', arguments: { duration: 60, steps: 60 } }] },
    });
    const workflowId = h.id('mcp-long');
    await h.deputy.startRun({ task, scopes: SCOPES }, { workflowId });
    let details: unknown;
    for (let i = 0; i < 100 && details === undefined; i++) {
      await new Promise((ok) => setTimeout(ok, 100));
      const described = await h.client.workflow.getHandle(workflowId).describe();
      const pending = described.raw.pendingActivities?.find((a) => a.activityType?.name === 'runTool');
      const payload = pending?.heartbeatDetails?.payloads?.[0];
      const decoded = payload
        ? defaultPayloadConverter.fromPayload<{ progress?: number } | undefined>(payload)
        : undefined;
      if (decoded?.progress !== undefined && decoded.progress >= 2) details = decoded;
    }
    expect(details).toMatchObject({ progress: expect.any(Number) as unknown, total: 60 });
    const call = proxy.sent.find(
      (m) => m.method === 'tools/call' && m.params?.name === 'trigger-long-running-operation',
    );
    expect(call).toBeDefined();
    const cancelledAt = Date.now();
    await h.deputy.cancel(workflowId);
    expect((await h.deputy.result(workflowId)).status).toBe('cancelled');
    expect(Date.now() - cancelledAt).toBeLessThan(10_000);
    const cancelled = proxy.sent.find(
      (m) => m.method === 'notifications/cancelled' && m.params?.requestId === call!.id,
    );
    expect(cancelled).toBeDefined();
  });

  it('R6.7 a stateful server keeps state across the calls of a run, all sent to the worker that holds its session', async () => {
    const task = 'r6.7 remember';
    const read = { toolCalls: [{ name: 'mem_read_graph', arguments: {} }] };
    h.model.add(
      {
        name: `${task}:1`,
        when: forTask(task, 0),
        reply: {
          toolCalls: [
            {
              name: 'mem_create_entities',
              arguments: { entities: [{ name: 'Periwinkle', entityType: 'codeword', observations: ['launch'] }] },
            },
          ],
        },
      },
      { name: `${task}:read`, when: forTask(task, 1), reply: read },
      { name: `${task}:done`, when: forTask(task, 2), reply: { text: 'remembered' } },
    );
    const workflowId = h.id('mcp-memory');
    await h.deputy.startRun({ task, scopes: SCOPES }, { workflowId });
    expect(await h.deputy.result(workflowId)).toMatchObject({ status: 'completed', output: 'remembered' });
    const [, graph] = toolMessages(h.model.requests.find((r) => r.rule === `${task}:done`)!);
    expect(graph).toContain('"name": "Periwinkle"');
    const scheduled = await scheduledActivities(h.client, workflowId);
    expect(scheduled.filter((a) => a.type === 'openMcpSession')).toHaveLength(1);
    const calls = scheduled.filter((a) => a.type === 'runTool');
    expect(calls.map((c) => c.taskQueue)).toEqual([calls[0]!.taskQueue, calls[0]!.taskQueue]);
    expect(calls[0]!.taskQueue).toMatch(new RegExp(`^${h.taskQueue}-mcp-`));
    expect(readFileSync(memoryFile, 'utf8').match(/"name":"Periwinkle"/g)).toHaveLength(1);
  });

  it('R6.7 R2.3 a child narrowed to one MCP tool is not offered the other, and a call to it is refused', async () => {
    const task = 'r6.7 narrowed child';
    h.model.add(
      {
        name: `${task}:parent`,
        when: forTask(task, 0),
        reply: delegateReply({
          briefs: [{ task_name: 'reader', message: 'mcp narrowed reader', allowed_tools: ['files_read_text_file'] }],
        }),
      },
      {
        name: `${task}:child`,
        when: userSays('mcp narrowed reader', 0),
        reply: { toolCalls: [{ name: 'files_list_directory', arguments: { path: join(scratch, 'files') } }] },
      },
      { name: `${task}:child-2`, when: userSays('mcp narrowed reader', 1), reply: { text: 'could not list' } },
      { name: `${task}:parent-2`, when: forTask(task, 1), reply: { text: 'done' } },
    );
    const workflowId = h.id('mcp-narrow');
    await h.deputy.startRun({ task, scopes: SCOPES }, { workflowId });
    expect(await h.deputy.result(workflowId)).toMatchObject({ status: 'completed', output: 'done' });
    const child = h.model.requests.find((r) => r.rule === `${task}:child`)!;
    expect(offeredTools(child)).toContain('files_read_text_file');
    expect(offeredTools(child)).not.toContain('files_list_directory');
    const [refused] = toolMessages(h.model.requests.find((r) => r.rule === `${task}:child-2`)!);
    expect(refused).toMatch(/files_list_directory/);
    expect(refused).not.toContain('note.txt');
  });
});
