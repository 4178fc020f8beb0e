/**
 * A parent whose turns the context tests script: a slow tool still running when it delegates, a `gate` hook function
 * and an `audit` webhook that record every call, and presets that read the parent context as a summary or as dialogue.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll } from 'vitest';
import { z } from 'zod';
import { builtinTools } from '../../activities/builtin-tools.js';
import type { HookInput } from '../../src/contract/hooks.js';
import { forTask, type RecordedRequest } from '../../src/testing/script.js';
import { defineTool } from '../../src/contract/tools.js';
import { isSummaryCall, type PARENT_USAGE } from './delegation.js';
import { testConfig, useHarness } from './harness.js';

export const SCOPES = ['tools.calc', 'tools.notes', 'run.delegate'];

export const calc = (a: number, b: number, id?: string) => ({
  name: 'calculate',
  arguments: { operation: 'add', a, b },
  ...(id && { id }),
});

export const userMessages = (r: RecordedRequest) =>
  r.body.messages.filter((m) => m.role === 'user').map((m) => m.content ?? '');

/** Starts the worker before the calling file's tests; what its hooks saw and the scripted parent it runs. */
export function useContextParent() {
  /** A tool that is still running when the delegate call is dispatched. */
  const slowLookup = defineTool({
    name: 'slow_lookup',
    description: 'A slow look-up.',
    parameters: z.strictObject({}),
    scopes: ['tools.notes'],
    async execute(_args, { signal }) {
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, 2500);
        signal.addEventListener('abort', () => (clearTimeout(timer), resolve(undefined)));
      });
      return 'slow result';
    },
  });

  /** Every hook call, to prove each ran once per dispatch. */
  const hookCalls: HookInput[] = [];
  const webhookCalls: HookInput[] = [];
  let webhook: Server | undefined;

  afterAll(() => webhook?.close());

  const h = useHarness(async () => {
    webhook = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        const input = JSON.parse(body) as HookInput;
        webhookCalls.push(input);
        if (input.task.includes('WEBHOOK-DOWN')) res.writeHead(500).end('audit service down');
        else res.writeHead(200, { 'content-type': 'application/json' }).end('{"decision": "accept"}');
      });
    });
    await new Promise<void>((resolve) => webhook!.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(webhook.address() as AddressInfo).port}/audit`;
    return {
      config: testConfig({
        presets: [
          { id: 'assistant', persona: 'You are the parent.', tools: ['calculate', 'search_notes', 'slow_lookup'] },
          { id: 'dialoguer', persona: 'You read dialogue.', tools: ['search_notes'], contextRendering: 'dialogue' },
        ],
        delegation: {
          enabled: true,
          activation: 'unconditional',
          childDefaults: { maxTurns: 5, maxTokens: 2000, maxCostUsd: 0.003, maxToolCalls: 5 },
        },
        hooks: [
          { name: 'gate', events: ['task.submitted', 'subagent.start', 'subagent.end'], function: 'gate' },
          { name: 'audit', events: ['subagent.start'], url, timeoutSeconds: 5 },
        ],
      }),
      tools: [...builtinTools(), slowLookup],
      hookFunctions: {
        async gate(input: HookInput) {
          hookCalls.push(input);
          if (input.event !== 'task.submitted') return { decision: 'accept' as const };
          await new Promise((resolve) => setTimeout(resolve, 600)); // lets the fast sibling tool finish first
          if (input.task.includes('REJECT')) return { decision: 'reject' as const, reason: 'not allowed here' };
          if (input.task.includes('REWRITE'))
            return { decision: 'rewrite' as const, task: 'Rewritten: find the shipping cost.' };
          return { decision: 'accept' as const };
        },
      },
    };
  });

  /**
   * A parent with two finished turns whose third (active) turn says something, finishes one tool call, holds one still
   * running, and delegates `briefs`.
   */
  async function parentWithActiveTurn(task: string, briefs: unknown[], usage?: typeof PARENT_USAGE) {
    const reported = usage && { usage };
    h.model.add(
      { when: (r) => forTask(task, 0)(r) && !isSummaryCall(r), reply: { toolCalls: [calc(1, 1)], ...reported } },
      {
        when: (r) => forTask(task, 1)(r) && !isSummaryCall(r),
        reply: {
          text: 'Looking at the notes.',
          toolCalls: [{ name: 'search_notes', arguments: { query: 'tax' } }],
          ...reported,
        },
      },
      {
        when: (r) => forTask(task, 2)(r) && !isSummaryCall(r),
        reply: {
          text: 'Now I split the work.',
          toolCalls: [
            calc(2, 3, `${task}-fast`),
            { name: 'slow_lookup', arguments: {}, id: `${task}-slow` },
            { name: 'delegate', arguments: { briefs }, id: `${task}-dlg` },
          ],
          ...reported,
        },
      },
      {
        name: `${task}:join`,
        when: (r) => forTask(task, 5)(r) && !isSummaryCall(r),
        reply: { text: 'parent done', ...reported },
      },
    );
    const workflowId = h.id('ctx');
    await h.deputy.startRun({ task, scopes: SCOPES }, { workflowId });
    return workflowId;
  }

  const delegateResult = (task: string) =>
    h.model.requests
      .find((r) => r.rule === `${task}:join`)!
      .body.messages.find((m) => m.tool_call_id === `${task}-dlg`)!.content!;
  return { h, hookCalls, webhookCalls, parentWithActiveTurn, delegateResult };
}
