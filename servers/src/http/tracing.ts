import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import {
  ProxyTracerProvider,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Span,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';

// W3C trace context across the economy: every request a service serves runs inside a trace context (its
// trace id, and the span id outgoing calls name as their parent), read from the caller's `traceparent` or
// started here. Calls a request makes (to the facilitator, the chain's JSON-RPC, other services) carry it on,
// and every log line written while it runs names its trace id (logger.ts).
//
// OpenTelemetry spans are made through @opentelemetry/api only: with no tracer provider registered (the
// default) its tracer is a no-op and the ids below are our own, so tracing costs a few random bytes per
// request. An operator (OTEL_EXPORTER_OTLP_ENDPOINT, main.ts) or a test registers a provider to record spans.

export interface TraceContext {
  /** 32 lowercase hex digits. */
  traceId: string;
  /** The current span's id, 16 lowercase hex digits: the parent of calls made from here. */
  spanId: string;
  /** W3C trace flags (01: sampled). */
  flags: number;
  /** The recording OpenTelemetry span, when a tracer provider is registered. */
  span?: Span;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** A `traceparent` header's trace id, parent span id and flags; undefined when absent or malformed (W3C rules). */
export function parseTraceparent(value: string | undefined | null): Omit<TraceContext, 'span'> | undefined {
  if (!value || value.length > 512) return undefined;
  const match = TRACEPARENT.exec(value.trim().toLowerCase());
  if (!match) return undefined;
  const [, version, traceId, spanId, flags, rest] = match as unknown as [
    string,
    string,
    string,
    string,
    string,
    string | undefined,
  ];
  // Version ff is invalid; version 00 has exactly four fields; a later version may append some.
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId, flags: parseInt(flags, 16) & 0xff };
}

export function formatTraceparent(context: Pick<TraceContext, 'traceId' | 'spanId' | 'flags'>): string {
  return `00-${context.traceId}-${context.spanId}-${context.flags.toString(16).padStart(2, '0')}`;
}

const storage = new AsyncLocalStorage<TraceContext>();

/** The trace context of the request being served, if any. */
export function currentTrace(): TraceContext | undefined {
  return storage.getStore();
}

/** `traceparent` for a call made now: the current request's trace, its current span as parent. */
export function currentTraceparent(): string | undefined {
  const current = storage.getStore();
  return current ? formatTraceparent(current) : undefined;
}

/** Runs `fn` inside `context` (and everything it awaits). */
export function runInTrace<T>(context: TraceContext, fn: () => T): T {
  return storage.run(context, fn);
}

// The API's no-op provider: its global proxy delegates to it until a provider is registered (an unregistered proxy's
// delegate is that one object).
const NOOP_PROVIDER = new ProxyTracerProvider().getDelegate();
let tracerOf: { provider: TracerProvider; tracer: Tracer } | undefined;
/**
 * The registered provider's tracer, or undefined while none is registered: no span could record, so a request skips
 * the API (which made a tracer, a context and a span per request only to learn that).
 */
function activeTracer(): Tracer | undefined {
  const global = trace.getTracerProvider();
  const provider = global instanceof ProxyTracerProvider ? global.getDelegate() : global;
  if (provider === NOOP_PROVIDER) return undefined;
  if (tracerOf?.provider !== provider) tracerOf = { provider, tracer: provider.getTracer('@agent-economy/servers') };
  return tracerOf.tracer;
}

/** Whether spans may record now (a tracer provider is registered): attributes are worth building only then. */
export function tracingActive(): boolean {
  return activeTracer() !== undefined;
}

// Random bytes drawn 4 KB at a time: a request's id and its span's ids take 36 of them, and a draw each was a tenth of
// a free request's CPU. Ids, not secrets.
let randomPool = Buffer.alloc(0);
let randomOffset = 0;
/** `bytes` random bytes as hex, from the pool. */
export function randomHex(bytes: number): string {
  if (randomOffset + bytes > randomPool.length) {
    randomPool = randomBytes(4096);
    randomOffset = 0;
  }
  randomOffset += bytes;
  return randomPool.toString('hex', randomOffset - bytes, randomOffset);
}

/**
 * A new span under `parent` (a remote caller's, or the current one): recorded when a tracer provider is
 * registered, else ids of our own on the parent's trace (a new trace without a parent).
 */
export function startSpan(
  name: string,
  kind: SpanKind,
  parent: TraceContext | undefined,
  attributes: Attributes = {},
): TraceContext {
  const tracer = activeTracer();
  if (!tracer) return ownSpan(parent);
  const parentContext = parent?.span
    ? trace.setSpan(ROOT_CONTEXT, parent.span)
    : parent
      ? trace.setSpanContext(ROOT_CONTEXT, {
          traceId: parent.traceId,
          spanId: parent.spanId,
          traceFlags: parent.flags,
          isRemote: true,
        })
      : ROOT_CONTEXT;
  const span = tracer.startSpan(name, { kind, attributes }, parentContext);
  if (span.isRecording()) {
    const { traceId, spanId, traceFlags } = span.spanContext();
    return { traceId, spanId, flags: traceFlags, span };
  }
  return ownSpan(parent);
}

/** A span that does not record: ids of our own on the parent's trace (a new trace without a parent). */
function ownSpan(parent: TraceContext | undefined): TraceContext {
  // Sampled unless the caller said otherwise, so a service that records spans records this trace.
  return {
    traceId: parent?.traceId ?? randomHex(16),
    spanId: randomHex(8),
    flags: parent?.flags ?? 1,
  };
}

/** Ends a span started by startSpan (nothing to do for one that does not record). */
export function endSpan(context: TraceContext, error?: unknown, attributes: Attributes = {}): void {
  const span = context.span;
  if (!span) return;
  span.setAttributes(attributes);
  if (error !== undefined) {
    span.recordException(error instanceof Error ? error : String(error));
    span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
  }
  span.end();
}

/**
 * Runs `fn` as a child span of the current trace (a call to the facilitator, the chain, another service):
 * `currentTraceparent()` inside it names this span. Without a current trace, `fn` just runs.
 */
export async function inSpan<T>(
  name: string,
  kind: SpanKind,
  attributes: Attributes,
  fn: () => Promise<T>,
): Promise<T> {
  const parent = storage.getStore();
  if (!parent) return fn();
  const child = startSpan(name, kind, parent, attributes);
  try {
    const value = await storage.run(child, fn);
    endSpan(child);
    return value;
  } catch (error) {
    endSpan(child, error);
    throw error;
  }
}

export { SpanKind };

/**
 * fetch as a client span (`name`) of the request being served, carrying its `traceparent`: every direct HTTP call
 * a service makes while serving a request (another service of the economy, the chain's JSON-RPC) goes through here.
 * A third party's API (market data) gets the span but not the header (`propagate: false`): our trace ids are ours.
 * Outside a request (timers, start-up) it is plain fetch. A traceparent the caller set itself is kept.
 */
export async function tracedFetch(
  name: string,
  url: string | URL,
  init: RequestInit = {},
  options: { propagate?: boolean } = {},
): Promise<Response> {
  if (!storage.getStore()) return await fetch(url, init);
  // Without the query: an upstream's key may travel in it.
  const target = new URL(url);
  const attributes = {
    'http.request.method': init.method ?? 'GET',
    'url.full': `${target.origin}${target.pathname}`,
  };
  return await inSpan(name, SpanKind.CLIENT, attributes, async () => {
    const headers = new Headers(init.headers);
    const traceparent = currentTraceparent();
    if (options.propagate !== false && traceparent && !headers.has('traceparent'))
      headers.set('traceparent', traceparent);
    const response = await fetch(url, { ...init, headers });
    storage.getStore()?.span?.setAttribute('http.response.status_code', response.status);
    return response;
  });
}
