/**
 * A scripted OpenAI-compatible Chat Completions server on loopback: the only fake in Deputy's tests and the offline
 * demo's model. The real `openai` client talks to it over HTTP. It records every request (so tests assert on what a
 * run actually sent), injects faults on demand, and fails loudly when a request matches no rule.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { encodingFor, loadEncoding } from '../../activities/tokens.js';
import { billedUsage, capAnswer, countedUsage, PromptCache, streamPieces, worstUsage } from './script-usage.js';
import { setTimeout as sleep } from 'node:timers/promises';
import type {
  ChatRequestBody,
  ProviderBehaviour,
  RecordedRequest,
  ScriptReply,
  ScriptRule,
  ScriptUsage,
} from './script.js';

import { DEFAULT_USAGE, lastMessage } from './script.js';

export class ScriptedModelServer {
  /** Every request received, in arrival order. */
  readonly requests: RecordedRequest[] = [];
  /** Requests that matched no rule (each was answered with a 400 that names the problem). */
  readonly unmatched: RecordedRequest[] = [];
  private readonly rules: (ScriptRule & { used: number })[] = [];
  private readonly waiters = new Set<() => void>();
  /** The provider's prompt cache, when its behaviour has one. */
  private readonly promptCache = new PromptCache();

  /** How the server behaves as a provider; tests may change it between runs. */
  behaviour: Required<Pick<ProviderBehaviour, 'reads' | 'reportsUsage' | 'usage'>> & ProviderBehaviour;

  private constructor(
    private readonly server: Server,
    /** Base URL to give the `openai` client (ends in `/v1`). */
    readonly url: string,
    private readonly quiet: boolean,
    behaviour: ProviderBehaviour,
  ) {
    this.behaviour = { reads: 'both', reportsUsage: true, usage: 'fixed', ...behaviour };
  }

  /** Starts a server on 127.0.0.1 with an ephemeral port. */
  static async start(
    rules: ScriptRule[] = [],
    options: { quiet?: boolean; behaviour?: ProviderBehaviour } = {},
  ): Promise<ScriptedModelServer> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const instance = new ScriptedModelServer(
      server,
      `http://127.0.0.1:${port}/v1`,
      options.quiet ?? false,
      options.behaviour ?? {},
    );
    server.on('request', (req: IncomingMessage, res: ServerResponse) => void instance.handle(req, res));
    instance.add(...rules);
    return instance;
  }

  /** Appends rules to the script. */
  add(...rules: ScriptRule[]): this {
    for (const rule of rules) this.rules.push({ ...rule, used: 0 });
    return this;
  }

  /** Names (or indexes) of rules that still expect requests; infinite rules are not counted. */
  pendingRules(): string[] {
    return this.rules
      .map((rule, i) => ({ rule, i }))
      .filter(({ rule }) => Number.isFinite(rule.times ?? 1) && rule.used < (rule.times ?? 1))
      .map(({ rule, i }) => rule.name ?? `#${i}`);
  }

  /** Resolves once `predicate` holds over the recorded requests; rejects after `timeoutMs`. */
  async waitFor(predicate: (requests: RecordedRequest[]) => boolean, timeoutMs = 20_000): Promise<void> {
    if (predicate(this.requests)) return;
    await new Promise<void>((resolve, reject) => {
      const check = () => {
        if (!predicate(this.requests)) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(
          new Error(`scripted model: condition not met within ${timeoutMs} ms (${this.requests.length} requests)`),
        );
      }, timeoutMs);
      this.waiters.add(check);
    });
  }

  /** Stops the server and drops open connections. */
  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private notify(): void {
    for (const waiter of [...this.waiters]) waiter();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // The list of models, as an OpenAI-compatible endpoint serves it (a worker checks its endpoint with it).
    if (req.method === 'GET' && req.url?.replace(/\?.*/, '').endsWith('/models')) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: [] }));
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    let body: ChatRequestBody;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ChatRequestBody;
    } catch {
      this.sendError(res, 400, 'scripted model: the request body is not JSON');
      return;
    }
    const record: RecordedRequest = {
      index: this.requests.length,
      body,
      headers: req.headers,
      rule: undefined,
      aborted: false,
      receivedAt: Date.now(),
    };
    res.on('close', () => {
      if (res.writableFinished) {
        record.answeredAt = Date.now();
      } else {
        record.aborted = true;
        record.abortedAt = Date.now();
        this.notify();
      }
    });
    this.requests.push(record);

    const rule = this.rules.find((r) => r.used < (r.times ?? 1) && (r.when?.(record) ?? true));
    if (!rule) {
      this.unmatched.push(record);
      const message = `scripted model: out of script: no rule matches request #${record.index} (last message: ${JSON.stringify(lastMessage(record).slice(0, 120))})`;
      if (!this.quiet) console.error(message);
      this.notify();
      this.sendError(res, 400, message);
      return;
    }
    rule.used += 1;
    record.rule = rule.name ?? `#${this.rules.indexOf(rule)}`;
    this.notify();
    const delayMs = typeof rule.delayMs === 'function' ? rule.delayMs() : (rule.delayMs ?? 0);
    if (delayMs > 0) await sleep(delayMs);
    if (res.destroyed) return;
    if (this.behaviour.billsWithoutAnswer?.(record)) {
      rule.used -= 1; // the script answers the retry
      await this.send(res, record, { toolCalls: [], usage: 'counted' }, true);
      return;
    }
    const reply = typeof rule.reply === 'function' ? await rule.reply(record) : rule.reply;
    if (res.destroyed) return;
    await this.send(res, record, reply);
  }

  private async send(
    res: ServerResponse,
    record: RecordedRequest,
    reply: ScriptReply,
    noAnswer = false,
  ): Promise<void> {
    if ('hang' in reply) return;
    if ('reset' in reply) {
      res.socket?.destroy();
      return;
    }
    if ('raw' in reply) {
      res.writeHead(reply.status ?? 200, { 'content-type': reply.contentType ?? 'application/json' }).end(reply.raw);
      return;
    }
    if ('events' in reply) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }).flushHeaders();
      for (const event of reply.events) {
        if (event.afterMs) await sleep(event.afterMs);
        if (res.destroyed) return;
        if (event.comment !== undefined) res.write(`: ${event.comment}\n\n`);
        else res.write(`data: ${typeof event.data === 'string' ? event.data : JSON.stringify(event.data)}\n\n`);
      }
      if (!reply.hold && !res.destroyed) res.end('data: [DONE]\n\n');
      return;
    }
    if ('status' in reply) {
      this.sendError(res, reply.status, reply.message ?? `scripted error ${reply.status}`, reply.headers);
      return;
    }
    const cap = this.readCap(record.body);
    if (cap !== null) await loadEncoding(record.body.model);
    const answer = capAnswer(
      'text' in reply ? (reply.text ?? null) : null,
      'toolCalls' in reply
        ? reply.toolCalls.map((call, i) => ({
            id: call.id ?? `call_${record.index}_${i}`,
            type: 'function',
            function: {
              name: call.name,
              arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
            },
          }))
        : undefined,
      cap,
      encodingFor(record.body.model).count,
    );
    const { text, toolCalls, capped } = answer;
    const finishReason = capped ? 'length' : toolCalls ? 'tool_calls' : 'stop';
    const { bill } = this.behaviour;
    const asked = bill ? 'counted' : (reply.usage ?? (this.behaviour.usage === 'counted' ? 'counted' : DEFAULT_USAGE));
    if (asked === 'worst' || asked === 'counted') await loadEncoding(record.body.model);
    const counted = () =>
      countedUsage(
        record.body,
        text ?? '',
        (toolCalls ?? []).flatMap((c) => [c.function.name, c.function.arguments]),
      );
    let usage =
      asked === 'worst'
        ? worstUsage(record.body)
        : asked === 'counted'
          ? (bill ?? ((_, c) => c))(record, counted())
          : asked;
    if (this.behaviour.promptCache) {
      await loadEncoding(record.body.model);
      const cached = this.promptCache.serve(record.body, usage.prompt_tokens);
      if (cached > 0) usage = { ...usage, prompt_tokens_details: { cached_tokens: cached } };
    }
    const fullUsage = { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens };
    if (record.body.stream === true) {
      const chunkDelayMs = 'chunkDelayMs' in reply ? (reply.chunkDelayMs ?? 0) : 0;
      const stallAfterChars = 'stallAfterChars' in reply ? reply.stallAfterChars : undefined;
      const cutAfterChars = 'cutAfterChars' in reply ? reply.cutAfterChars : undefined;
      const stallAfterUsage = 'stallAfterUsage' in reply && reply.stallAfterUsage === true;
      await this.stream(res, record, {
        text,
        toolCalls: noAnswer ? undefined : toolCalls,
        finishReason: noAnswer ? null : finishReason,
        usage: fullUsage,
        chunkDelayMs,
        stallAfterChars,
        cutAfterChars,
        stallAfterUsage,
      });
      return;
    }
    const payload = {
      id: `chatcmpl-${record.index}`,
      object: 'chat.completion',
      created: 0,
      model: record.body.model,
      choices: [
        { index: 0, message: { role: 'assistant', content: text, tool_calls: toolCalls }, finish_reason: finishReason },
      ],
      ...(this.behaviour.reportsUsage && { usage: fullUsage }),
    };
    // A provider bills what it answers: a request whose client left before the answer was written is not billed.
    if (this.behaviour.reportsUsage && !res.destroyed) record.billed = usage;
    record.sentChars = text?.length ?? 0;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
  }

  /** The answer cap this provider reads from a request, or `null` when it reads none. */
  private readCap(body: ChatRequestBody): number | null {
    const { reads } = this.behaviour;
    const value =
      reads === 'none'
        ? undefined
        : reads === 'max_tokens'
          ? body.max_tokens
          : (body.max_completion_tokens ?? body.max_tokens);
    return typeof value === 'number' ? value : null;
  }

  /** The answer as Server-Sent Events, as OpenAI streams it: text in pieces, each tool call whole, then usage. */
  private async stream(
    res: ServerResponse,
    record: RecordedRequest,
    answer: {
      text: string | null;
      toolCalls: { id: string; type: string; function: { name: string; arguments: string } }[] | undefined;
      /** `null`: no answer at all, only the usage report. */
      finishReason: string | null;
      usage: ScriptUsage & { total_tokens: number };
      chunkDelayMs: number;
      stallAfterChars?: number | undefined;
      cutAfterChars?: number | undefined;
      stallAfterUsage?: boolean;
    },
  ): Promise<void> {
    const base = {
      id: `chatcmpl-${record.index}`,
      object: 'chat.completion.chunk',
      created: 0,
      model: record.body.model,
    };
    const write = (chunk: object) => !res.destroyed && res.write(`data: ${JSON.stringify({ ...base, ...chunk })}\n\n`);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    record.sentChars = 0;
    if (answer.finishReason === null) {
      if (this.behaviour.reportsUsage && !res.destroyed) {
        write({ choices: [], usage: answer.usage });
        record.billed = billedUsage(answer.usage);
      }
      res.end('data: [DONE]\n\n');
      return;
    }
    write({ choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] });
    let at = 0;
    for (const piece of streamPieces(answer.text ?? '')) {
      if (answer.chunkDelayMs > 0) await sleep(answer.chunkDelayMs);
      if (res.destroyed) return;
      if (answer.stallAfterChars !== undefined && at >= answer.stallAfterChars) return; // silent, connection open
      if (answer.cutAfterChars !== undefined && at >= answer.cutAfterChars) {
        res.socket?.destroy();
        return;
      }
      write({ choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] });
      record.sentChars += piece.length;
      at += piece.length;
    }
    for (const [index, call] of (answer.toolCalls ?? []).entries()) {
      write({ choices: [{ index: 0, delta: { tool_calls: [{ index, ...call }] }, finish_reason: null }] });
    }
    write({ choices: [{ index: 0, delta: {}, finish_reason: answer.finishReason }] });
    const options = record.body.stream_options as { include_usage?: boolean } | undefined;
    // Billed only when the report goes out: a client that left (a cancelled call) is sent nothing and billed nothing.
    if (options?.include_usage && this.behaviour.reportsUsage && !res.destroyed) {
      write({ choices: [], usage: answer.usage });
      record.billed = billedUsage(answer.usage);
    }
    if (answer.stallAfterUsage) return; // silent, connection open
    if (!res.destroyed) res.end('data: [DONE]\n\n');
  }

  private sendError(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
    res
      .writeHead(status, { 'content-type': 'application/json', ...headers })
      .end(JSON.stringify({ error: { message, type: 'scripted_error', code: status } }));
  }
}
