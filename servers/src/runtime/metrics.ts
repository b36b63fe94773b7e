import type { NextFunction, Request, Response } from 'express';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Per-service Prometheus registry: several services share one process under `npm start`. */
export function createMetrics(serviceId: string) {
  const registry = new Registry();
  registry.setDefaultLabels({ service: serviceId });
  collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests by route, method and status',
    labelNames: ['route', 'method', 'status'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by route and method',
    labelNames: ['route', 'method'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const payments = new Counter({
    name: 'payment_quotes_total',
    help: 'Payment-required answers (402) by route',
    labelNames: ['route'],
    registers: [registry],
  });

  function middleware(req: Request, res: Response, next: NextFunction) {
    const stop = duration.startTimer();
    res.on('finish', () => {
      // Label by the route template, never the raw URL: ids in paths would explode the series count.
      const route = (req as Request & { tsRestRoute?: { path: string } }).tsRestRoute?.path ?? (req.route?.path as string) ?? 'unmatched';
      requests.inc({ route, method: req.method, status: String(res.statusCode) });
      stop({ route, method: req.method });
    });
    next();
  }

  return { registry, middleware, payments };
}
