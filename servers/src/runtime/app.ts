import { subscribe } from 'node:diagnostics_channel';
import { Stream } from 'node:stream';
import {
  TsRestResponseError,
  isAppRouteNoBody,
  isAppRouteOtherResponse,
  type AppRoute,
  type AppRouter,
} from '@ts-rest/core';
import type { createExpressEndpoints } from '@ts-rest/express';
import {
  PAYMENT_RESPONSE_HEADER,
  PAYMENT_SIGNATURE_HEADER,
  SIGN_IN_WITH_X_HEADER,
  buildAgentCard,
  listRoutes,
  namedSchemaOf,
  routeMeta,
  usdToAtomic,
  withPrices,
  type PaymentMeta,
  type ServiceDefinition,
} from '@agent-economy/contracts';
import { buildOpenApiDocument } from '@agent-economy/openapi-generator';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { docsRouter } from './docs';
import { buildLlmsTxt, withPayee } from './llms';
import { HttpError, envelope } from './errors';
import { createMetrics, type ServiceMetrics } from './metrics';
import { facilitatorClient, type FacilitatorClient } from './facilitator-client';
import { facilitatorProbe, probe, type Probe } from './reachability';
import { healthReporter, sendHealth, useHealthReporter, type UpstreamReport } from './health';
import {
  SpanKind,
  currentTrace,
  currentTraceparent,
  endSpan,
  parseTraceparent,
  randomHex,
  runInTrace,
  startSpan,
  tracingActive,
  type TraceContext,
} from '../http/tracing';
import { setAmbientTraceContext } from '@agent-economy/sdk';
import type { ServiceContext } from './context';
import type { Wallet } from '../solana/keys';
import {
  buildQuote,
  buildRequirements,
  collectPayment,
  paymentMigrations,
  priceOf,
  quotePaidRequest,
  unsettledHeader,
  type PaywallConfig,
  type PriceResolver,
} from './paywall';
import { createVault, type Vault } from './vault';
import { createSessionPaywall, sessionPayment, type SessionPaywall } from './paywall-session';
import { runtimeMigrations, verifySiwx } from './siwx';
import { summarizeIssues, validateRequest, type ParsedRequest, type RouteRequest } from './validation';
import { migrate, type SharedDb } from '../db';

/** The facilitator client with each /settle call timed into payment_settlement_duration_seconds, by outcome. */
function timedSettle(client: FacilitatorClient, histogram: ServiceMetrics['settleDuration']): FacilitatorClient {
  return {
    ...client,
    settle: async (request) => {
      const stop = histogram.startTimer();
      try {
        const settlement = await client.settle(request);
        stop({ outcome: settlement.success ? 'settled' : 'failed' });
        return settlement;
      } catch (error) {
        stop({ outcome: 'error' });
        throw error;
      }
    },
  };
}

// A service calling another through the SDK continues the trace of the request it serves (http/tracing.ts).
setAmbientTraceContext(currentTraceparent);

/** A service's handlers, typed by its contract (ts-rest does not export this type). */
export type RouterImplementation<R extends AppRouter> = Parameters<typeof createExpressEndpoints<R>>[1];

const vaults = new WeakMap<ServiceContext, Promise<Vault>>();
/** The service's vault (its own wallet), made once per context: refunds of settle-first routes go through it. */
export function vaultOf(context: ServiceContext): () => Promise<Vault> {
  return () => {
    let vault = vaults.get(context);
    if (!vault) {
      vault = createVault(context);
      // A failed start (the database down) is tried again by the next refund.
      vault.catch(() => vaults.delete(context));
      vaults.set(context, vault);
    }
    return vault;
  };
}

/** What every service passes on from its context to createServiceApp. */
export function fromContext(
  context: ServiceContext,
): Pick<ServiceAppOptions<AppRouter>, 'publicUrl' | 'db' | 'logger' | 'paywall' | 'prices' | 'signer' | 'vault'> {
  return {
    vault: vaultOf(context),
    publicUrl: context.publicUrl,
    db: context.db,
    logger: context.logger,
    paywall: context.paywall,
    signer: context.wallet,
    ...(context.prices ? { prices: context.prices } : {}),
  };
}

export interface ServiceAppOptions<R extends AppRouter> {
  service: ServiceDefinition<R>;
  handlers: RouterImplementation<R>;
  /** The public base address callers use (descriptor, documents, payment resource URLs). */
  publicUrl: string;
  db: SharedDb;
  logger: Logger;
  paywall: PaywallConfig;
  /** Route prices of this deployment that differ from the contract's, by route key. */
  prices?: Record<string, PaymentMeta>;
  /** Price resolvers for routes whose price depends on the request (tiered or adaptive), by route key. */
  pricing?: { [K in keyof R & string]?: PriceResolver<RouteRequest<R[K]>> };
  /**
   * Checks that can fail a request before it is priced, by route key (unknown ids, out-of-scope
   * questions): they throw an HttpError, so nobody pays for a request that was bound to fail. On an
   * `auth: 'siwx'` route, `caller` is the wallet the request proved (checks such as "not about yourself").
   */
  preflight?: { [K in keyof R & string]?: (request: RouteRequest<R[K]>, caller?: string) => void | Promise<void> };
  /** Largest JSON body accepted; larger ones get 413. */
  bodyLimit?: string;
  /**
   * The upstream providers the service reads (its UpstreamTracker): /health lists them, and is degraded while
   * one is failing (health.ts).
   */
  upstream?: UpstreamReport;
  /** A Prometheus registry holding the service's own metrics, served at /metrics with the runtime's. */
  registry?: Registry;
  /** The deployment's id where it differs from the service's (btc-metrics-2): /health and /metrics name it. */
  deploymentId?: string;
  /**
   * Error bodies for routes that speak another wire format than the envelope (the facilitator's x402
   * routes), by route key: given the error and the request body, returns the body to send.
   */
  wireErrors?: Partial<Record<keyof R & string, (error: ErrorReply, body: unknown) => unknown>>;
  /**
   * Dependencies /health reports besides the database and the facilitator, by name (the facilitator's chain):
   * each resolves when the dependency answers. Checked at most every few seconds.
   */
  dependencies?: Record<string, () => Promise<void>>;
  /**
   * The service's vault: settle-first routes (RouteMeta.settle 'first') refund a failed request through it.
   * fromContext(context) provides it; a service with a settle-first route must have one.
   */
  vault?: () => Promise<Vault>;
  /** The clock of the paywall's claim leases (tests move it). */
  now?: () => Date;
  /** The service's wallet: it signs the calls to the facilitator, which settles for registered resource servers. */
  signer?: Wallet;
}

/** An error as the runtime would put it in the envelope, for a route that renders errors its own way. */
export interface ErrorReply {
  status: number;
  code: string;
  message: string;
  details?: unknown;
}

type RouteHandler = (request: {
  params: unknown;
  body: unknown;
  query: unknown;
  headers: unknown;
  req: Request;
  res: Response;
}) => Promise<{ status: number; body: unknown }>;

/** The handler of the route at `key` (dotted for a nested router), a function or ts-rest's `{ handler }`. */
function handlerAt(handlers: unknown, key: string): RouteHandler {
  const found = key
    .split('.')
    .reduce<unknown>((at, part) => (at as Record<string, unknown> | undefined)?.[part], handlers);
  const handler = typeof found === 'function' ? found : (found as { handler?: unknown } | undefined)?.handler;
  if (typeof handler !== 'function') throw new Error(`route ${key} has no handler`);
  return handler as RouteHandler;
}

type RoutedRequest = Request & { tsRestRoute?: AppRoute; requestId: string; trace?: TraceContext; started?: number };

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
// Express matches paths without regard to case.
const DOCS_PATH = /^\/docs(\/|$)/i;

/**
 * A router reached only by requests to the paths of its routes (a router's own walk through its layers would cost
 * every request otherwise), matched as Express matches them: any case, a trailing slash allowed. A router holding
 * more than plain routes with fixed paths is used as it is.
 */
function onlyOnItsRoutes(router: express.Router): express.RequestHandler {
  const paths = (router.stack as { route?: { path?: unknown } }[]).map((layer) => layer.route?.path);
  if (!paths.every((p): p is string => typeof p === 'string' && /^[\w./-]+$/.test(p))) return router;
  const wanted = new Set(paths.map((p) => p.toLowerCase().replace(/\/$/, '')));
  const lengths = new Set([...wanted].flatMap((p) => [p.length, p.length + 1]));
  return (req, res, next) => {
    const path = req.path;
    if (lengths.has(path.length) && wanted.has(path.toLowerCase().replace(/\/$/, ''))) return router(req, res, next);
    next();
  };
}

/**
 * Each app's handler of its answered requests. Node tells of every response finished, on any server of the process,
 * through one diagnostics channel: cheaper than a 'finish' listener added to each response (a /health request 183 →
 * 171 µs of CPU, the two taking turns in one process). A response carries its Express app on its prototype; the
 * ledger's responses have none.
 */
const answeredBy = new WeakMap<express.Express, (res: Response) => void>();
subscribe('http.server.response.finish', (message) => {
  const res = (message as { response: Response }).response;
  const app = res.app as express.Express | undefined;
  if (app) answeredBy.get(app)?.(res);
});

const staticBodies = new WeakSet<object>();
/**
 * A response body that never changes (a catalog built at start), as a deeply frozen copy: a handler answering with it
 * sends JSON serialized once, with its ETag computed once, instead of on every request.
 */
export function staticBody<T extends object>(body: T): T {
  const freeze = (value: unknown): void => {
    if (value === null || typeof value !== 'object') return;
    Object.freeze(value);
    for (const item of Object.values(value)) freeze(item);
  };
  const copy = structuredClone(body);
  freeze(copy);
  staticBodies.add(copy);
  return copy;
}
const serialized = new WeakMap<object, { bytes: Buffer; etag?: string }>();
/** Methods whose answers an ETag serves (conditional requests), and statuses Express sends without a body. */
const conditional = new Set(['GET', 'HEAD']);
const bodiless = new Set([204, 205, 304]);

/** The wallet a request to an `auth: 'siwx'` route proved, for its handler. */
export function callerOf(res: Response): string {
  const caller = res.locals.caller as string | undefined;
  if (!caller) throw new Error('callerOf() used on a route without auth: siwx');
  return caller;
}

/**
 * One service as an Express app: request ids and logs, metrics, CORS, the descriptor, documents,
 * health, then the contract's routes: input validated first, then the caller's proof, then payment.
 */
export async function createServiceApp<R extends AppRouter>(options: ServiceAppOptions<R>): Promise<express.Express> {
  await migrate(options.db, 'runtime', { ...runtimeMigrations, ...paymentMigrations });
  const { logger, db } = options;
  const service = withPrices(options.service, options.prices ?? {});
  const publicUrl = options.publicUrl.replace(/\/+$/, '');
  const metrics = createMetrics(options.deploymentId ?? service.id, options.registry);
  const routeKeys = new Map(listRoutes(service.router).map(({ key, route }) => [route, key]));
  const declares = (method: string, path: string) =>
    [...routeKeys.keys()].some((route) => route.method === method && route.path === path);
  const log = logger.child({ service: service.id });
  const settlesFirst = listRoutes(service.router).filter(({ route }) => routeMeta(route).settle === 'first');
  if (settlesFirst.length && !options.vault) {
    throw new Error(
      `${service.id}: route ${settlesFirst[0]!.key} settles first and so may refund, but the service has no vault (pass fromContext(context))`,
    );
  }
  const facilitator = options.paywall.facilitatorUrl
    ? timedSettle(
        facilitatorClient(options.paywall.facilitatorUrl, options.signer ? { sign: options.signer } : {}),
        metrics.settleDuration,
      )
    : undefined;
  const wireErrors = (options.wireErrors ?? {}) as Record<string, (error: ErrorReply, body: unknown) => unknown>;
  // Payment sessions (vouchers) beside exact, where the deployment accepts them (paywall-session.ts).
  const sessions: SessionPaywall | undefined =
    options.paywall.sessions && options.paywall.facilitatorUrl && options.signer
      ? await createSessionPaywall({
          db,
          config: options.paywall,
          signer: options.signer,
          logger: log,
          ...(options.now ? { now: options.now } : {}),
        })
      : undefined;
  // No price is quoted while the facilitator that would settle it does not answer (reachability.ts).
  const payments = options.paywall.facilitatorUrl ? facilitatorProbe(options.paywall.facilitatorUrl) : undefined;
  const probes: Record<string, Probe> = {
    ...(payments ? { facilitator: payments } : {}),
    ...Object.fromEntries(
      Object.entries(options.dependencies ?? {}).map(([name, check]) => [name, probe(check, { what: name })]),
    ),
  };
  const health = healthReporter({
    serviceId: options.deploymentId ?? service.id,
    db,
    probes,
    ...(options.upstream ? { upstream: options.upstream } : {}),
  });
  /** Sends an error in the envelope, or in the route's own wire format where it declares one. */
  // A body that is not JSON fails before a route is matched: its path still names the route's wire format.
  const byPath = new Map(
    [...routeKeys.keys()].filter((r) => !r.path.includes(':')).map((r) => [`${r.method} ${r.path}`, r]),
  );
  const sendError = (req: Request, res: Response, error: ErrorReply, headers: Record<string, string> = {}) => {
    const route = (req as RoutedRequest).tsRestRoute ?? byPath.get(`${req.method} ${req.path}`);
    const render = route ? wireErrors[routeKeys.get(route) ?? ''] : undefined;
    for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
    // A payment sent with a request that failed before the paywall took it up was not settled: say so.
    if (req.header(PAYMENT_SIGNATURE_HEADER) && !res.locals.paymentTaken && !res.getHeader(PAYMENT_RESPONSE_HEADER)) {
      for (const [name, value] of Object.entries(unsettledHeader(error.status, options.paywall.network)))
        res.setHeader(name, value);
    }
    res
      .status(error.status)
      .json(
        render
          ? render(error, req.body)
          : envelope((req as RoutedRequest).requestId, error.code, error.message, error.details),
      );
  };

  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', true);
  // A static body (staticBody) is serialized once; any other goes through Express's res.json as always.
  const json = app.response.json;
  app.response.json = function (this: Response, body: unknown, ...rest: unknown[]) {
    if (rest.length || body === undefined || bodiless.has(this.statusCode))
      return (json as (...args: unknown[]) => Response).call(this, body, ...rest);
    const cache = body !== null && typeof body === 'object' && staticBodies.has(body);
    const etagged = conditional.has(this.req.method);
    if (etagged && !cache) return (json as (...args: unknown[]) => Response).call(this, body);
    let sent = cache ? serialized.get(body) : undefined;
    if (!sent) {
      sent = { bytes: Buffer.from(JSON.stringify(body)) };
      if (cache) serialized.set(body as object, sent);
    }
    if (!this.get('Content-Type')) this.set('Content-Type', 'application/json; charset=utf-8');
    if (!etagged) {
      // An answer to a POST (PATCH, DELETE …) gets no ETag: no request can be made conditional on it (If-None-Match
      // answers 304 to GET and HEAD only), and Express would hash every such body for one, a paid lesson's 12 KB on
      // every call.
      this.set('Content-Length', String(sent.bytes.length));
      this.end(sent.bytes);
      return this;
    }
    sent.etag ??= (app.get('etag fn') as (body: Buffer) => string)(sent.bytes);
    this.set('ETag', sent.etag);
    return this.send(sent.bytes);
  };

  useHealthReporter(app.locals, health);

  // A request's own state (its id, trace, start, route) is kept in res.locals and read through the app's request
  // prototype: a property added to an Express request grows its (dictionary) property store, about 1.3 KB of garbage
  // a property and request, measured, where res.locals takes it cheaply.
  const inLocals = (name: string, writable = false): PropertyDescriptor => ({
    configurable: true,
    get(this: Request) {
      return this.res?.locals[name] as unknown;
    },
    ...(writable
      ? {
          set(this: Request, value: unknown) {
            if (this.res) this.res.locals[name] = value;
          },
        }
      : {}),
  });
  Object.defineProperties(app.request, {
    requestId: inLocals('requestId'),
    trace: inLocals('trace'),
    started: inLocals('started'),
    // ts-rest sets it on the request, express.json() the body ({} without one).
    tsRestRoute: inLocals('tsRestRoute', true),
    body: inLocals('body', true),
  });

  // What every request pays, in one middleware and one handler of answered requests (answeredBy): its id, its span, the
  // CORS headers, then, once answered, its log line, the end of its span and its metrics.
  const answered = (res: Response) => {
    const req = res.req as RoutedRequest;
    const trace = req.trace;
    if (!trace) return;
    const route = req.tsRestRoute?.path;
    const seconds = (performance.now() - (req.started ?? 0)) / 1000;
    // A refused or failed payment says why (never the payment itself: PAYMENT-SIGNATURE is not logged).
    const refusal = res.locals.paymentRefusal as { code: string; reason?: string } | undefined;
    const refused = refusal && refusal.code !== 'payment_required';
    // The line is built only for a level that writes it (LOG_LEVEL=warn writes no request lines).
    if (log.isLevelEnabled('info') || (refused && log.isLevelEnabled('warn'))) {
      const line = {
        requestId: req.requestId,
        traceId: trace.traceId,
        method: req.method,
        path: req.path,
        status: res.statusCode,
        ms: Math.round(seconds * 10_000) / 10,
      };
      log.info(line, 'request');
      if (refused) log.warn({ ...line, code: refusal.code, reason: refusal.reason }, 'payment refused');
    }
    if (trace.span) {
      if (route) trace.span.updateName(`${req.method} ${route}`);
      endSpan(trace, res.statusCode >= 500 ? new Error(`HTTP ${res.statusCode}`) : undefined, {
        'http.response.status_code': res.statusCode,
        ...(route ? { 'http.route': route } : {}),
      });
    }
    metrics.record(req, res, seconds);
  };
  answeredBy.set(app, answered);
  app.use((req, res, next) => {
    const incoming = req.headers['x-request-id'];
    const requestId = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : `req_${randomHex(12)}`;
    const locals = res.locals;
    locals.started = performance.now();
    locals.requestId = requestId;
    res.setHeader('x-request-id', requestId);
    // The caller's W3C trace (traceparent), or a new one: this request's span, the parent of the calls it makes.
    const traceparent = req.headers.traceparent;
    const parent = parseTraceparent(typeof traceparent === 'string' ? traceparent : undefined);
    const trace = tracingActive()
      ? startSpan(req.method, SpanKind.SERVER, parent, {
          'http.request.method': req.method,
          'url.path': req.path,
          'service.name': service.id,
        })
      : startSpan(req.method, SpanKind.SERVER, parent);
    locals.trace = trace;
    // A malformed percent-encoding (%E2%82, %ZZ) would throw URIError deep in the router: refuse it here.
    if (req.path.includes('%')) {
      try {
        decodeURIComponent(req.path);
      } catch {
        res
          .status(400)
          .json(
            envelope(
              requestId,
              'invalid_path',
              'The request path holds a malformed percent-encoding (such as %ZZ or a cut UTF-8 sequence)',
            ),
          );
        return;
      }
    }
    // Browsers may call services directly: allow the payment headers in and let the receipts out.
    res.setHeader('access-control-allow-origin', '*');
    res.setHeader(
      'access-control-expose-headers',
      'payment-required, payment-response, payment-identifier-replayed, x-request-id, retry-after',
    );
    if (req.method === 'OPTIONS') {
      res.setHeader('access-control-allow-methods', 'GET, POST, PATCH, PUT, DELETE, OPTIONS');
      res.setHeader(
        'access-control-allow-headers',
        'content-type, payment-signature, sign-in-with-x, x-request-id, idempotency-key, access-control-expose-headers',
      );
      res.status(204).end();
      return;
    }
    runInTrace(trace, next);
  });
  // The body's bytes are kept for routes that check a signature over them (the facilitator's resource servers).
  app.use(
    express.json({
      limit: options.bodyLimit ?? '256kb',
      verify: (req, _res, buffer) => void ((req as Request & { rawBody?: Buffer }).rawBody = buffer),
    }),
  );
  if (sessions) app.use(onlyOnItsRoutes(sessions.router()));
  // The body is read in the socket's async context: enter the request's trace again for what follows.
  app.use((req, _res, next) => {
    const trace = (req as RoutedRequest).trace;
    if (trace && currentTrace() !== trace) runInTrace(trace, next);
    else next();
  });

  const card = () => buildAgentCard(service, { url: publicUrl });
  app.get(['/.well-known/agent-card.json', '/.well-known/agent.json'], (_req, res) => {
    res.json(card());
  });
  let document: unknown;
  app.get('/openapi.json', (_req, res) => {
    document ??= withPayee(buildOpenApiDocument(service, { serverUrl: publicUrl }), options.paywall);
    res.json(document);
  });
  let llms: string | undefined;
  app.get('/llms.txt', (_req, res) => {
    res
      .type('text/markdown; charset=utf-8')
      .send((llms ??= buildLlmsTxt(service, { publicUrl, paywall: options.paywall })));
  });
  // The reference page and its assets, all under /docs: other paths need not walk the docs router's routes.
  const docs = docsRouter(service.title);
  app.use((req, res, next) => (DOCS_PATH.test(req.path) ? docs(req, res, next) : next()));
  app.get('/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
  // One health body for every service (health.ts): /health, /health/ready for load balancers (200 only while
  // the database and the facilitator, or for the facilitator its chain, answer), and any health route the
  // contract declares with that body (a data service's own), answered here before its handler.
  const healthPaths = listRoutes(service.router)
    .filter(
      ({ route }) =>
        route.method === 'GET' &&
        ['ServiceHealth', 'DataServiceHealth'].includes(
          namedSchemaOf((route.responses as Record<number, never>)[200] ?? ({} as never))?.name ?? '',
        ),
    )
    .map(({ route }) => route.path);
  // A contract's own GET /health with another body keeps its route (none today).
  const own = declares('GET', '/health') && !healthPaths.includes('/health') ? [] : ['/health'];
  app.get([...new Set([...own, '/health/ready', ...healthPaths])], async (_req, res, next) => {
    try {
      sendHealth(res, await health.report());
    } catch (error) {
      next(error);
    }
  });

  // Validation and preflight checks run before the paywall, so nobody is asked to pay for a request that would fail.
  const validate = (req: Request, res: Response, next: NextFunction) => {
    const routed = req as RoutedRequest;
    const result = validateRequest(routed.tsRestRoute!, req);
    if (!result.ok) {
      sendError(req, res, {
        status: 400,
        code: 'invalid_request',
        message: summarizeIssues(result.issues),
        details: { fields: result.issues },
      });
      return;
    }
    res.locals.parsed = result.parsed;
    next();
  };
  // Synchronous where there is nothing to wait for: every async middleware is a promise (and its hooks) per request.
  const authenticate = (req: Request, res: Response, next: NextFunction) => {
    if (routeMeta((req as RoutedRequest).tsRestRoute!).auth !== 'siwx') return next();
    void proveCaller(req, res, next);
  };
  const proveCaller = async (req: Request, res: Response, next: NextFunction) => {
    try {
      res.locals.caller = await verifySiwx(req.header(SIGN_IN_WITH_X_HEADER), {
        origin: publicUrl,
        network: options.paywall.network,
        db,
      });
      next();
    } catch (error) {
      next(error);
    }
  };
  // Free routes without a preflight check have nothing to do here.
  const freeRoutes = new Set(
    listRoutes(service.router)
      .filter(
        ({ key, route }) =>
          routeMeta(route).payment.kind === 'free' &&
          !(options.preflight as Record<string, unknown> | undefined)?.[key],
      )
      .map(({ route }) => route),
  );
  const paywall = (req: Request, res: Response, next: NextFunction) => {
    if (freeRoutes.has((req as RoutedRequest).tsRestRoute!)) return next();
    void charge(req, res, next);
  };
  const charge = async (req: Request, res: Response, next: NextFunction) => {
    try {
      const routed = req as RoutedRequest;
      const route = routed.tsRestRoute!;
      const key = routeKeys.get(route)!;
      const parsed = res.locals.parsed as ParsedRequest;
      await (options.preflight as Record<string, (request: ParsedRequest, caller?: string) => unknown> | undefined)?.[
        key
      ]?.(parsed, res.locals.caller as string | undefined);
      const resolver = (options.pricing as Record<string, PriceResolver> | undefined)?.[key];
      const price = await priceOf(route, parsed, resolver);
      if (usdToAtomic(price.usd) === 0n) return next();
      const requirements = buildRequirements(options.paywall, price);
      const paid = req.header(PAYMENT_SIGNATURE_HEADER);
      const offered = buildQuote(
        requirements,
        publicUrl + req.originalUrl,
        route,
        paid ? 'Payment refused' : 'Payment required',
      );
      const quote = sessions ? sessions.offer(offered, requirements, routeMeta(route).settle === 'first') : offered;
      // A HEAD delivers no content, so it is quoted, never charged.
      if (!paid || req.method === 'HEAD') await payments?.ensure();
      if (!paid || req.method === 'HEAD') {
        // Only quotes are counted here: a paid request is a settlement or a refusal (metrics.ts).
        metrics.payments.inc({ route: route.path });
        return quotePaidRequest(res, routed.requestId, quote, price.usd);
      }
      res.locals.paymentTaken = true;
      res.locals.paymentQuoted = { amount: requirements.amount, payTo: requirements.payTo, asset: requirements.asset };
      const settleFirst = routeMeta(route).settle === 'first';
      // A refund comes from the service's own wallet, so a settle-first route is paid to it, not to a third party.
      if (settleFirst && requirements.payTo !== options.paywall.payTo)
        throw new Error(`route ${key} settles first but is priced to pay ${requirements.payTo}, not the service`);
      const voucher = sessions && quote !== offered ? sessionPayment(paid) : undefined;
      if (sessions && voucher) {
        return await sessions.collect(res, () => next(), {
          requirements,
          quote,
          payment: voucher,
          requestId: routed.requestId,
        });
      }
      await collectPayment(res, () => next(), {
        db,
        facilitator,
        logger: log,
        requestId: routed.requestId,
        requirements,
        quote,
        header: paid,
        settleFirst,
        ...(options.vault ? { vault: options.vault } : {}),
        ...(options.now ? { now: options.now } : {}),
        ...(options.paywall.fault ? { fault: options.paywall.fault } : {}),
      });
    } catch (error) {
      next(error);
    }
  };

  // Each contract route mounted as ts-rest's Express adapter mounts it, its handler given the request `validate`
  // parsed: the adapter would parse every part again (about 30 µs a paid POST, measured).
  for (const { key, route } of listRoutes(service.router)) {
    const handler = handlerAt(options.handlers, key);
    const responses = route.responses as Record<number, AppRoute['responses'][number]>;
    const run = async (req: Request, res: Response, next: NextFunction) => {
      try {
        const parsed = res.locals.parsed as ParsedRequest;
        let result: { status: number; body: unknown };
        try {
          result = await handler({
            // As ts-rest passes them: the path's own parameters beside those its schema parsed.
            params: route.pathParams ? { ...req.params, ...(parsed.params as object) } : req.params,
            body: parsed.body,
            query: parsed.query,
            headers: parsed.headers,
            req,
            res,
          });
        } catch (error) {
          if (!(error instanceof TsRestResponseError)) throw error;
          result = { status: error.statusCode, body: error.body };
        }
        const status = Number(result.status);
        if (result.body instanceof Stream) {
          result.body.pipe(res.status(status));
          return;
        }
        const declared = responses[status];
        if (declared != null && isAppRouteNoBody(declared)) res.status(status).end();
        else if (declared != null && isAppRouteOtherResponse(declared))
          res.status(status).setHeader('content-type', declared.contentType).send(result.body);
        else res.status(status).json(result.body);
      } catch (error) {
        next(error);
      }
    };
    const routed = (req: Request, _res: Response, next: NextFunction) => {
      (req as RoutedRequest).tsRestRoute = route;
      next();
    };
    app[route.method.toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete'](
      route.path,
      routed,
      validate,
      authenticate,
      paywall,
      run,
    );
  }

  app.use((req, res) => {
    sendError(req, res, { status: 404, code: 'route_not_found', message: `No route ${req.method} ${req.path}` });
  });

  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const requestId = (req as RoutedRequest).requestId;
    if (error instanceof HttpError) {
      sendError(
        req,
        res,
        { status: error.status, code: error.code, message: error.message, details: error.details },
        error.headers,
      );
      return;
    }
    const type = (error as { type?: string }).type;
    if (type === 'entity.too.large') {
      sendError(req, res, {
        status: 413,
        code: 'payload_too_large',
        message: `The request body is larger than ${options.bodyLimit ?? '256kb'}`,
      });
      return;
    }
    if (type === 'entity.parse.failed') {
      sendError(req, res, { status: 400, code: 'invalid_json', message: 'The request body is not valid JSON' });
      return;
    }
    if (error instanceof URIError) {
      sendError(req, res, {
        status: 400,
        code: 'invalid_path',
        message: 'The request holds a malformed percent-encoding',
      });
      return;
    }
    if (type === 'encoding.unsupported' || type === 'charset.unsupported') {
      sendError(req, res, {
        status: 415,
        code: 'unsupported_media_type',
        message: 'The request body encoding is not supported',
      });
      return;
    }
    log.error({ err: error, requestId, method: req.method, path: req.path }, 'unhandled error');
    sendError(req, res, {
      status: 500,
      code: 'internal_error',
      message: 'An unexpected error occurred; it has been logged with this request id',
    });
  });

  return app;
}
