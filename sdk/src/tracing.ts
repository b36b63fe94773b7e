import { ROOT_CONTEXT, SpanKind, SpanStatusCode, context, trace, type Span } from '@opentelemetry/api';
import { randomHex } from './random';

// W3C trace context for each logical call (one method call, its retries and its payment): a `traceparent`
// the services carry on to the facilitator and the chain. The call continues the caller's trace when there
// is one (a traceparent header the caller passes, the ambient trace of a server calling another service, or
// the active OpenTelemetry span), else starts one. With a tracer provider registered it is also an
// OpenTelemetry client span; without one, @opentelemetry/api is a no-op and only the ids are made.

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

interface Parent {
  traceId: string;
  spanId: string;
  flags: number;
}

function parse(value: string | undefined): Parent | undefined {
  const match = value ? TRACEPARENT.exec(value.trim().toLowerCase()) : null;
  if (!match || /^0+$/.test(match[1]!) || /^0+$/.test(match[2]!)) return undefined;
  return { traceId: match[1]!, spanId: match[2]!, flags: parseInt(match[3]!, 16) };
}

let ambient: (() => string | undefined) | undefined;

/**
 * Where a process keeps its current trace outside OpenTelemetry: the reference servers register theirs, so a
 * service calling another through the SDK continues the trace of the request it serves.
 */
export function setAmbientTraceContext(source: (() => string | undefined) | undefined): void {
  ambient = source;
}

export interface CallTrace {
  /** The traceparent to send with the call. */
  traceparent: string;
  end(error?: unknown): void;
}

/** The trace of one logical call named `name`, under `given` (a traceparent the caller passed) if any. */
export function traceCall(name: string, given: string | undefined, attributes: Record<string, string>): CallTrace {
  const parent = parse(given) ?? parse(ambient?.());
  const parentContext = parent
    ? trace.setSpanContext(ROOT_CONTEXT, {
        traceId: parent.traceId,
        spanId: parent.spanId,
        traceFlags: parent.flags,
        isRemote: true,
      })
    : context.active();
  const span: Span = trace
    .getTracer('@agent-economy/sdk')
    .startSpan(name, { kind: SpanKind.CLIENT, attributes }, parentContext);
  let traceparent: string;
  if (span.isRecording()) {
    const own = span.spanContext();
    traceparent = `00-${own.traceId}-${own.spanId}-${own.traceFlags.toString(16).padStart(2, '0')}`;
  } else if (given && parse(given)) {
    traceparent = given.trim().toLowerCase();
  } else {
    // The caller's OpenTelemetry span (recording elsewhere), the ambient trace, or a new one; sampled by default.
    const active = parent ? undefined : trace.getSpanContext(context.active());
    const traceId = parent?.traceId ?? (active && trace.isSpanContextValid(active) ? active.traceId : randomHex(16));
    const flags = parent?.flags ?? active?.traceFlags ?? 1;
    traceparent = `00-${traceId}-${randomHex(8)}-${flags.toString(16).padStart(2, '0')}`;
  }
  return {
    traceparent,
    end(error?: unknown) {
      if (!span.isRecording()) return;
      if (error !== undefined) {
        span.recordException(error instanceof Error ? error : String(error));
        span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
      }
      span.end();
    },
  };
}
