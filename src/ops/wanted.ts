/** Whether the environment asks for tracing, without loading the OpenTelemetry SDK to find out. */
export function tracingWanted(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT);
}
