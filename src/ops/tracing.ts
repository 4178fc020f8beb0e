/**
 * Tracing: OpenTelemetry through Temporal's own interceptors (`@temporalio/interceptors-opentelemetry`),
 * so one trace follows a run from the service that starts it through the parent workflow, every child workflow and
 * every activity; the model and tool calls inside those activities add GenAI spans (`./genai.ts`).
 *
 * Nothing is traced unless asked: `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) exports
 * with OTLP over HTTP; a service or a test may pass its own span processor instead.
 */
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OpenTelemetryPlugin } from '@temporalio/interceptors-opentelemetry';
import { tracingWanted } from './wanted.js';

/** Tracing set up for a process: the plugin for its client and workers, and the provider to flush at exit. */
export interface DeputyTracing {
  /** Add to `Client` (`plugins`), `Worker.create` (`plugins`) and the workflow bundle (`bundleDeputyWorkflows`). */
  readonly plugin: OpenTelemetryPlugin;
  readonly provider: BasicTracerProvider;
  /** Exports what is buffered and stops. */
  shutdown(): Promise<void>;
}

export interface DeputyTracingOptions {
  /** Where spans go. @default OTLP over HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, else tracing is off */
  spanProcessor?: SpanProcessor;
  /** `service.name` of the spans. @default `OTEL_SERVICE_NAME`, else `deputy` */
  serviceName?: string;
  env?: NodeJS.ProcessEnv;
}

let installed: DeputyTracing | undefined;

/**
 * Sets up tracing for this process, or returns `undefined` when nothing asks for it. The provider is registered
 * globally (with an AsyncLocalStorage context manager and W3C propagation): the activity interceptor's span is the
 * parent of the GenAI spans Deputy's activities open. Called again, it returns the first setup.
 */
export function deputyTracing(options: DeputyTracingOptions = {}): DeputyTracing | undefined {
  if (installed) return installed;
  const env = options.env ?? process.env;
  const spanProcessor =
    options.spanProcessor ?? (tracingWanted(env) ? new BatchSpanProcessor(new OTLPTraceExporter()) : undefined);
  if (!spanProcessor) return undefined;
  const resource = new Resource({ 'service.name': options.serviceName ?? env.OTEL_SERVICE_NAME ?? 'deputy' });
  const provider = new BasicTracerProvider({ resource, spanProcessors: [spanProcessor] });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(
    new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }),
  );
  trace.setGlobalTracerProvider(provider);
  const plugin = new OpenTelemetryPlugin({ resource, spanProcessor, tracer: provider.getTracer('deputy') });
  installed = {
    plugin,
    provider,
    shutdown: async () => {
      await provider.forceFlush();
      await provider.shutdown();
    },
  };
  return installed;
}
