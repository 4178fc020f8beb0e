/**
 * GenAI spans: each model call and tool call inside Deputy's activities is a span under the activity's own
 * span (Temporal's OpenTelemetry interceptor opens that one), named and attributed after OpenTelemetry's GenAI
 * semantic conventions. Spans carry names, counts, sizes, cost and outcomes, never prompt or output text, unless the
 * operator opts in with `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`. Without a registered tracer
 * provider these are no-op spans.
 */
import { SpanKind, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';
import { cutText } from '../src/rules/payloads.js';

const tracer = () => trace.getTracer('deputy');
/** Longest text an opted-in span attribute carries. */
const MAX_CAPTURED_BYTES = 16 * 1024;

/** Whether spans may carry prompt and output text (off unless the operator turns it on). */
export function captureContent(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT === 'true';
}

/** Text for an opted-in attribute, bounded. */
export function captured(value: unknown): string {
  return cutText(typeof value === 'string' ? value : JSON.stringify(value), MAX_CAPTURED_BYTES);
}

/** Runs `work` in a span named `name`; its error marks the span failed and is rethrown. */
async function inSpan<T>(name: string, kind: SpanKind, attributes: Attributes, work: (span: Span) => Promise<T>) {
  return tracer().startActiveSpan(name, { kind, attributes }, async (span) => {
    try {
      return await work(span);
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message?.slice(0, 500) });
      span.setAttribute('error.type', (err as { type?: string }).type ?? (err as Error).name ?? 'Error');
      throw err;
    } finally {
      span.end();
    }
  });
}

/** A `chat {model}` span (client kind) around one model call. */
export function modelCallSpan<T>(model: string, operation: string, work: (span: Span) => Promise<T>): Promise<T> {
  return inSpan(
    `${operation} ${model}`,
    SpanKind.CLIENT,
    { 'gen_ai.operation.name': operation, 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': model },
    work,
  );
}

/** What a finished model call adds to its span. */
export interface ModelCallOutcome {
  responseModel?: string;
  inputTokens: number;
  outputTokens: number;
  costUsd: number | undefined;
  finishReason: string | null;
  toolCalls: number;
  maxCompletionTokens: number | null;
}

export function recordModelCall(span: Span, outcome: ModelCallOutcome): void {
  span.setAttributes({
    ...(outcome.responseModel && { 'gen_ai.response.model': outcome.responseModel }),
    'gen_ai.usage.input_tokens': outcome.inputTokens,
    'gen_ai.usage.output_tokens': outcome.outputTokens,
    ...(outcome.finishReason && { 'gen_ai.response.finish_reasons': [outcome.finishReason] }),
    ...(outcome.maxCompletionTokens !== null && { 'gen_ai.request.max_tokens': outcome.maxCompletionTokens }),
    ...(outcome.costUsd !== undefined && { 'deputy.cost_usd': outcome.costUsd }),
    'deputy.tool_calls': outcome.toolCalls,
  });
}

/** An `execute_tool {name}` span (internal kind) around one tool call. */
export function toolCallSpan<T>(tool: string, work: (span: Span) => Promise<T>): Promise<T> {
  return inSpan(
    `execute_tool ${tool}`,
    SpanKind.INTERNAL,
    { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': tool },
    work,
  );
}

export function recordToolCall(span: Span, outcome: { ok: boolean; bytes: number; content?: string }): void {
  span.setAttributes({ 'deputy.tool.outcome': outcome.ok ? 'ok' : 'error', 'deputy.tool.result_bytes': outcome.bytes });
  if (!outcome.ok) span.setStatus({ code: SpanStatusCode.ERROR });
  if (outcome.content !== undefined && captureContent())
    span.setAttribute('gen_ai.tool.result', captured(outcome.content));
}

/** A `request_approval {tool}` span (internal kind): a call recorded as waiting for a decision. */
export function approvalRequestSpan<T>(tool: string, requestId: string, work: (span: Span) => Promise<T>): Promise<T> {
  return inSpan(
    `request_approval ${tool}`,
    SpanKind.INTERNAL,
    { 'gen_ai.tool.name': tool, 'deputy.approval.request_id': requestId },
    work,
  );
}

/** A `check_approval` span: a decision's proof checked, with its outcome (never the proof or a key). */
export function approvalCheckSpan<T extends { ok: boolean }>(
  requestId: string,
  decision: string,
  work: () => Promise<T>,
): Promise<T> {
  return inSpan(
    'check_approval',
    SpanKind.INTERNAL,
    { 'deputy.approval.request_id': requestId, 'deputy.approval.decision': decision },
    async (span) => {
      const checked = await work();
      span.setAttribute('deputy.approval.proof', checked.ok ? 'valid' : 'refused');
      return checked;
    },
  );
}
