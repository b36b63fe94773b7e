import { trace } from '@opentelemetry/api';
import type { Logger } from 'pino';

/**
 * With OTEL_EXPORTER_OTLP_ENDPOINT set, registers a tracer provider exporting spans over OTLP/HTTP (batched),
 * so the spans of http/tracing.ts and the SDK are recorded. Its packages are optional dependencies: without them
 * the process says how to install them and runs untraced. Off (the default), nothing is loaded.
 */
export async function startOtlpTracing(
  logger: Logger,
  env: NodeJS.ProcessEnv = process.env,
): Promise<(() => Promise<void>) | undefined> {
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return undefined;
  // Names in variables: the packages are optional, so the type checker must not require them.
  const sdkName = '@opentelemetry/sdk-trace-base';
  const exporterName = '@opentelemetry/exporter-trace-otlp-http';
  // The two modules' shapes as used below (their types are not installed by default).
  let sdk: {
    BasicTracerProvider: new (options: { spanProcessors: unknown[] }) => { shutdown(): Promise<void> };
    BatchSpanProcessor: new (exporter: unknown) => unknown;
  };
  let otlp: { OTLPTraceExporter: new () => unknown };
  try {
    [sdk, otlp] = await Promise.all([import(sdkName), import(exporterName)]);
  } catch {
    logger.warn(
      `OTEL_EXPORTER_OTLP_ENDPOINT is set but ${sdkName} and ${exporterName} are not installed (npm install ${sdkName} ${exporterName}); spans are not exported`,
    );
    return undefined;
  }
  // The exporter reads OTEL_EXPORTER_OTLP_ENDPOINT, _HEADERS and the rest of the standard variables itself.
  const provider = new sdk.BasicTracerProvider({
    spanProcessors: [new sdk.BatchSpanProcessor(new otlp.OTLPTraceExporter())],
  });
  trace.setGlobalTracerProvider(provider as unknown as Parameters<typeof trace.setGlobalTracerProvider>[0]);
  logger.info(
    { endpoint: env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT },
    'exporting traces over OTLP',
  );
  return () => provider.shutdown();
}
