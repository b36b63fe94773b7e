import { PerformanceObserver, constants as perf, type PerformanceEntry } from 'node:perf_hooks';
import type { Request, Response } from 'express';
import { Counter, Histogram, Registry, collectDefaultMetrics, type Metric } from 'prom-client';
import { PAYMENT_RESPONSE_HEADER, decodeX402Header } from '@agent-economy/contracts';

// Metric names follow Prometheus conventions: snake_case, `_total` on counters, base units in the name
// (`_seconds`, `_atomic`: atomic units of the 6-decimal stablecoin, `_lamports`). Money is counted in integer
// atomic units, never as a float of dollars: a Prometheus sample is a float64, exact for integers up to 2^53
// atomic units (about 9 billion USD per series), far beyond what one process counts between restarts.
// README "Operating: metrics, traces, logs, health" lists them.

/** Settle-call buckets: a local ledger confirms in under a second, a cluster in up to 30 s. */
export const SETTLEMENT_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 45];

const GC_DURATION = 'nodejs_gc_duration_seconds';
const GC_KINDS: Record<number, string> = {
  [perf.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [perf.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [perf.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [perf.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};
let gcDuration: Histogram<'kind'> | undefined;

/**
 * The process's collections, one histogram that every service's registry shows (GC is the process's, whatever
 * service it serves). prom-client's own counts only the first of the collections its observer is handed at once: a
 * scavenge every few milliseconds under load came out as a handful a minute, so it is replaced.
 */
function gcDurationOnce(): Histogram<'kind'> {
  if (gcDuration) return gcDuration;
  const histogram = new Histogram({
    name: GC_DURATION,
    help: 'Garbage collection duration by kind, one of major, minor, incremental or weakcb.',
    labelNames: ['kind'],
    buckets: [0.001, 0.01, 0.1, 1, 2, 5],
    registers: [],
  });
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const detail = (entry as PerformanceEntry & { detail?: { kind?: number } }).detail;
      const kind = GC_KINDS[detail?.kind ?? -1] ?? 'unknown';
      histogram.observe({ kind }, entry.duration / 1000);
    }
  }).observe({ entryTypes: ['gc'] });
  return (gcDuration = histogram);
}

/** The event loop's delay gauges are read (and their histogram started afresh) at most this often. */
const EVENT_LOOP_WINDOW_MS = 10_000;
let processMetrics: Metric[] | undefined;

/**
 * prom-client's default metrics (CPU, memory, heap, handles, event-loop delay) and the GC histogram, made once for the
 * process and shown by every service's registry under its own `service` label. Made per service, each of the twenty
 * services of `npm start` ran its own event-loop delay monitor (a timer every 10 ms and a 350 KB histogram: 4 to 5 ms
 * a second of an idle process's event loop, measured) and its own GC observer. prom-client starts the delay histogram
 * afresh at every read, so that with one monitor a service's scrape would only see the time since another's: the
 * delay gauges are read over windows of at least EVENT_LOOP_WINDOW_MS, each read shown by every service until the next.
 */
function processMetricsOnce(): Metric[] {
  if (processMetrics) return processMetrics;
  const defaults = new Registry();
  collectDefaultMetrics({ register: defaults });
  defaults.removeSingleMetric(GC_DURATION);
  defaults.registerMetric(gcDurationOnce());
  const lag = defaults.getSingleMetric('nodejs_eventloop_lag_seconds') as { collect?: () => unknown } | undefined;
  const read = lag?.collect;
  if (lag && read) {
    let readAt = -Infinity;
    lag.collect = function (this: unknown) {
      if (performance.now() - readAt < EVENT_LOOP_WINDOW_MS) return undefined;
      readAt = performance.now();
      return read.call(this);
    };
  }
  return (processMetrics = defaults.getMetricsAsArray() as unknown as Metric[]);
}

/**
 * Per-service Prometheus registry: several services share one process under `npm start`. A service that adds
 * metrics of its own (the facilitator's) passes its registry in.
 */
export function createMetrics(serviceId: string, registry = new Registry()) {
  registry.setDefaultLabels({ service: serviceId });
  for (const metric of processMetricsOnce()) registry.registerMetric(metric);
  // Requests are counted and timed here, by series, and handed to the registry when it is read: prom-client's own
  // inc() and observe() check and hash their labels on every call, which every request paid twice.
  type RequestSeries = { labels: { route: string; method: string; status: string }; pending: number };
  const requestSeries = new Map<string, RequestSeries>();
  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests by route, method and status',
    labelNames: ['route', 'method', 'status'],
    registers: [registry],
    collect() {
      for (const series of requestSeries.values()) {
        if (series.pending === 0) continue;
        this.inc(series.labels, series.pending);
        series.pending = 0;
      }
    },
  });
  const duration = batchedHistogram(registry, {
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by route and method',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  });
  const payments = new Counter({
    name: 'payment_quotes_total',
    help: 'Payment-required answers (402 with a quote) to requests that carried no payment, by route',
    labelNames: ['route'],
    registers: [registry],
  });
  const settlements = new Counter({
    name: 'payment_settlements_total',
    help: 'Paid requests served with a settled payment, by route',
    labelNames: ['route'],
    registers: [registry],
  });
  const revenue = new Counter({
    name: 'payment_revenue_atomic_total',
    help: 'Settled payments in atomic units of the asset (integers; 1 USD = 1000000), by route, seller (payTo) and asset',
    labelNames: ['route', 'pay_to', 'asset'],
    registers: [registry],
  });
  const refusals = new Counter({
    name: 'payment_refusals_total',
    help: 'Payments refused or failed (402 or 503 to a request that carried one), by route, error code and x402 reason',
    labelNames: ['route', 'code', 'reason'],
    registers: [registry],
  });
  const settleDuration = new Histogram({
    name: 'payment_settlement_duration_seconds',
    help: "Time of the facilitator's /settle call as this service saw it, by outcome (settled, failed, error)",
    labelNames: ['outcome'],
    buckets: SETTLEMENT_BUCKETS,
    registers: [registry],
  });

  /** The route template a request matched, never the raw URL: ids in paths would explode the series count. */
  const routeOf = (req: Request) =>
    (req as Request & { tsRestRoute?: { path: string } }).tsRestRoute?.path ??
    (req.route?.path as string) ??
    'unmatched';

  /** Counts an answered request that took `seconds` (app.ts calls it once the response is sent). */
  function record(req: Request, res: Response, seconds: number) {
    const route = routeOf(req);
    const method = req.method;
    const status = res.statusCode;
    const key = `${route} ${method} ${status}`;
    let series = requestSeries.get(key);
    if (!series) {
      series = { labels: { route, method, status: String(status) }, pending: 0 };
      requestSeries.set(key, series);
    }
    series.pending++;
    duration.observe(route, method, seconds);
    // A paid request (app.ts keeps its requirements) was settled when it answered a success with a
    // successful PAYMENT-RESPONSE; a refusal leaves its code and reason (paywall.ts).
    const quoted = res.locals.paymentQuoted as { amount: string; payTo: string; asset: string } | undefined;
    const refused = res.locals.paymentRefusal as { code: string; reason?: string } | undefined;
    if (!quoted && !refused) return;
    const receipt =
      quoted && res.statusCode < 400
        ? (decodeX402Header(String(res.getHeader(PAYMENT_RESPONSE_HEADER) ?? '')) as { success?: unknown } | undefined)
        : undefined;
    if (quoted && receipt?.success === true) {
      const settled = quoted;
      settlements.inc({ route });
      revenue.inc({ route, pay_to: settled.payTo, asset: settled.asset }, Number(settled.amount));
    } else if (refused && refused.code !== 'payment_required') {
      refusals.inc({ route, code: refused.code, reason: refused.reason ?? 'none' });
    }
  }

  return { registry, record, payments, settleDuration };
}

export type ServiceMetrics = ReturnType<typeof createMetrics>;

/**
 * A Prometheus histogram by route and method whose observation is a map lookup and a bucket count, formatted only when
 * the registry is read; it reads as prom-client's Histogram does (the same series, buckets, _sum and _count).
 */
function batchedHistogram(registry: Registry, options: { name: string; help: string; buckets: number[] }) {
  const { name, help, buckets } = options;
  const series = new Map<string, { labels: { route: string; method: string }; counts: number[]; sum: number }>();
  const values = () =>
    [...series.values()].flatMap(({ labels, counts, sum }) => {
      let cumulative = 0;
      const rows = buckets.map((le, i) => {
        cumulative += counts[i] ?? 0;
        return { labels: { le }, sharedLabels: labels, value: cumulative, metricName: `${name}_bucket` };
      });
      const count = cumulative + (counts[buckets.length] ?? 0);
      return [
        ...rows,
        { labels: { le: '+Inf' }, sharedLabels: labels, value: count, metricName: `${name}_bucket` },
        { labels: {}, sharedLabels: labels, value: sum, metricName: `${name}_sum` },
        { labels: {}, sharedLabels: labels, value: count, metricName: `${name}_count` },
      ];
    });
  const metric = {
    name,
    help,
    type: 'histogram',
    aggregator: 'sum',
    get: () => Promise.resolve({ name, help, type: 'histogram', aggregator: 'sum', values: values() }),
    reset: () => series.clear(),
  };
  registry.registerMetric(metric as unknown as Metric);
  return {
    observe(route: string, method: string, seconds: number) {
      const key = `${route} ${method}`;
      let s = series.get(key);
      if (!s) {
        s = { labels: { route, method }, counts: new Array<number>(buckets.length + 1).fill(0), sum: 0 };
        series.set(key, s);
      }
      // The first bucket the value fits in, else the last slot (+Inf only), as prom-client counts.
      let i = buckets.findIndex((le) => seconds <= le);
      if (i < 0) i = buckets.length;
      s.counts[i] = (s.counts[i] ?? 0) + 1;
      s.sum += seconds;
    },
  };
}
