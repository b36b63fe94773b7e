import { randomBytes } from 'node:crypto';
import type { AppRoute, AppRouter } from '@ts-rest/core';
import { createExpressEndpoints } from '@ts-rest/express';
import { PAYMENT_RESPONSE_HEADER, PAYMENT_SIGNATURE_HEADER, SIGN_IN_WITH_X_HEADER, buildAgentCard, listRoutes, routeMeta, usdToAtomic, withPrices, type PaymentMeta, type ServiceDefinition } from '@agent-economy/contracts';
import { buildOpenApiDocument } from '@agent-economy/openapi';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { Logger } from 'pino';
import { docsRouter } from './docs';
import { buildLlmsTxt, withPayee } from './llms';
import { HttpError, envelope } from './errors';
import { createMetrics } from './metrics';
import { facilitatorClient } from './facilitator-client';
import { facilitatorProbe, probe, type Probe } from './reachability';
import type { ServiceContext } from './context';
import type { Wallet } from './wallet';
import { buildQuote, buildRequirements, collectPayment, paymentMigrations, priceOf, quotePaidRequest, unsettledHeader, type PaywallConfig, type PriceResolver } from './paywall';
import { createVault, type Vault } from './vault';
import { runtimeMigrations, verifySiwx } from './siwx';
import { summarizeIssues, validateRequest, type ParsedRequest } from './validation';
import { migrate } from '../db';

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
export function fromContext(context: ServiceContext): Pick<ServiceAppOptions<AppRouter>, 'publicUrl' | 'db' | 'logger' | 'paywall' | 'prices' | 'signer' | 'vault'> {
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
  db: Kysely<any>;
  logger: Logger;
  paywall: PaywallConfig;
  /** Route prices of this deployment that differ from the contract's, by route key. */
  prices?: Record<string, PaymentMeta>;
  /** Price resolvers for routes whose price depends on the request (tiered or adaptive), by route key. */
  pricing?: Partial<Record<keyof R & string, PriceResolver>>;
  /**
   * Checks that can fail a request before it is priced, by route key (unknown ids, out-of-scope
   * questions): they throw an HttpError, so nobody pays for a request that was bound to fail. On an
   * `auth: 'siwx'` route, `caller` is the wallet the request proved (checks such as "not about yourself").
   */
  preflight?: Partial<Record<keyof R & string, (request: ParsedRequest, caller?: string) => void | Promise<void>>>;
  /** Largest JSON body accepted; larger ones get 413. */
  bodyLimit?: string;
  /**
   * The body of the default /health route (a service whose contract declares no health route but reads
   * upstream providers: its UpstreamTracker's health). It throws an HttpError when the service is unhealthy.
   */
  health?: () => Promise<unknown>;
  /**
   * Error bodies for routes that speak another wire format than the envelope (the facilitator's x402
   * routes), by route key: given the error and the request body, returns the body to send.
   */
  wireErrors?: Partial<Record<keyof R & string, (error: WireError, body: unknown) => unknown>>;
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
export interface WireError {
  status: number;
  code: string;
  message: string;
  details?: unknown;
}

type RoutedRequest = Request & { tsRestRoute?: AppRoute; requestId: string };

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

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
  const metrics = createMetrics(service.id);
  const routeKeys = new Map(listRoutes(service.router).map(({ key, route }) => [route, key]));
  const declares = (method: string, path: string) =>
    [...routeKeys.keys()].some((route) => route.method === method && route.path === path);
  const log = logger.child({ service: service.id });
  const settlesFirst = listRoutes(service.router).filter(({ route }) => routeMeta(route).settle === 'first');
  if (settlesFirst.length && !options.vault) {
    throw new Error(`${service.id}: route ${settlesFirst[0]!.key} settles first and so may refund, but the service has no vault (pass fromContext(context))`);
  }
  const facilitator = options.paywall.facilitatorUrl ? facilitatorClient(options.paywall.facilitatorUrl, options.signer ? { sign: options.signer } : {}) : undefined;
  const wireErrors = (options.wireErrors ?? {}) as Record<string, (error: WireError, body: unknown) => unknown>;
  // No price is quoted while the facilitator that would settle it does not answer (reachability.ts).
  const payments = options.paywall.facilitatorUrl ? facilitatorProbe(options.paywall.facilitatorUrl) : undefined;
  const probes: Record<string, Probe> = {
    ...(payments ? { facilitator: payments } : {}),
    ...Object.fromEntries(Object.entries(options.dependencies ?? {}).map(([name, check]) => [name, probe(check, { what: name })])),
  };
  /** Each dependency's state, the database first (the caller has checked it). */
  const dependencies = async () => ({
    database: 'ok',
    ...Object.fromEntries(await Promise.all(Object.entries(probes).map(async ([name, p]) => [name, await p.state()] as const))),
  });
  /** Sends an error in the envelope, or in the route's own wire format where it declares one. */
  // A body that is not JSON fails before a route is matched: its path still names the route's wire format.
  const byPath = new Map([...routeKeys.keys()].filter((r) => !r.path.includes(':')).map((r) => [`${r.method} ${r.path}`, r]));
  const sendError = (req: Request, res: Response, error: WireError, headers: Record<string, string> = {}) => {
    const route = (req as RoutedRequest).tsRestRoute ?? byPath.get(`${req.method} ${req.path}`);
    const render = route ? wireErrors[routeKeys.get(route) ?? ''] : undefined;
    for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
    // A payment sent with a request that failed before the paywall took it up was not settled: say so.
    if (req.header(PAYMENT_SIGNATURE_HEADER) && !res.locals.paymentTaken && !res.getHeader(PAYMENT_RESPONSE_HEADER)) {
      for (const [name, value] of Object.entries(unsettledHeader(error.status, options.paywall.network))) res.setHeader(name, value);
    }
    res.status(error.status).json(render ? render(error, req.body) : envelope((req as RoutedRequest).requestId, error.code, error.message, error.details));
  };

  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', true);

  app.use((req, res, next) => {
    const incoming = req.header('x-request-id');
    const requestId = incoming && REQUEST_ID.test(incoming) ? incoming : `req_${randomBytes(12).toString('hex')}`;
    (req as RoutedRequest).requestId = requestId;
    res.setHeader('x-request-id', requestId);
    // A malformed percent-encoding (%E2%82, %ZZ) would throw URIError deep in the router: refuse it here.
    try {
      decodeURIComponent(req.path);
    } catch {
      res.status(400).json(envelope(requestId, 'invalid_path', 'The request path holds a malformed percent-encoding (such as %ZZ or a cut UTF-8 sequence)'));
      return;
    }
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      log.info({ requestId, method: req.method, path: req.path, status: res.statusCode, ms: Math.round(ms * 10) / 10 }, 'request');
    });
    next();
  });
  app.use(metrics.middleware);
  app.use((req, res, next) => {
    // Browsers may call services directly: allow the payment headers in and let the receipts out.
    res.setHeader('access-control-allow-origin', '*');
    res.setHeader('access-control-expose-headers', 'payment-required, payment-response, x-request-id, retry-after');
    if (req.method !== 'OPTIONS') return next();
    res.setHeader('access-control-allow-methods', 'GET, POST, PATCH, PUT, DELETE, OPTIONS');
    res.setHeader('access-control-allow-headers', 'content-type, payment-signature, sign-in-with-x, x-request-id, idempotency-key, access-control-expose-headers');
    res.status(204).end();
  });
  // The body's bytes are kept for routes that check a signature over them (the facilitator's resource servers).
  app.use(express.json({ limit: options.bodyLimit ?? '256kb', verify: (req, _res, buffer) => void ((req as Request & { rawBody?: Buffer }).rawBody = buffer) }));

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
    res.type('text/markdown; charset=utf-8').send((llms ??= buildLlmsTxt(service, { publicUrl, paywall: options.paywall })));
  });
  app.use(docsRouter(service.title));
  app.get('/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
  if (!declares('GET', '/health')) {
    const started = Date.now();
    app.get('/health', async (req, res) => {
      try {
        const own = options.health ? await options.health() : undefined;
        if (!options.health) await sql`select 1`.execute(db);
        const states = await dependencies();
        if (Object.values(states).some((state) => state !== 'ok')) {
          const down = Object.keys(states).filter((name) => states[name as keyof typeof states] !== 'ok');
          res.setHeader('retry-after', '5');
          res.status(503).json(envelope((req as RoutedRequest).requestId, 'dependency_unavailable', `Unreachable: ${down.join(', ')}`, { dependencies: states }));
          return;
        }
        if (own !== undefined) {
          res.json(own);
          return;
        }
        res.json({ status: 'ok', service: service.id, version: '1.0.0', uptimeSeconds: Math.round((Date.now() - started) / 1000), database: 'ok', dependencies: states });
      } catch (error) {
        log.error({ err: error, requestId: (req as RoutedRequest).requestId }, 'health check: database unreachable');
        res.setHeader('retry-after', '5');
        res.status(503).json(envelope((req as RoutedRequest).requestId, 'database_unavailable', 'The database does not answer'));
      }
    });
  }

  // Validation and preflight checks run before the paywall, so nobody is asked to pay for a request that would fail.
  const validate = (req: Request, res: Response, next: NextFunction) => {
    const routed = req as RoutedRequest;
    const result = validateRequest(routed.tsRestRoute!, req);
    if (!result.ok) {
      sendError(req, res, { status: 400, code: 'invalid_request', message: summarizeIssues(result.issues), details: { fields: result.issues } });
      return;
    }
    res.locals.parsed = result.parsed;
    next();
  };
  const authenticate = async (req: Request, res: Response, next: NextFunction) => {
    try {
      if (routeMeta((req as RoutedRequest).tsRestRoute!).auth !== 'siwx') return next();
      res.locals.caller = await verifySiwx(req.header(SIGN_IN_WITH_X_HEADER), { origin: publicUrl, network: options.paywall.network, db });
      next();
    } catch (error) {
      next(error);
    }
  };
  const paywall = async (req: Request, res: Response, next: NextFunction) => {
    try {
      const routed = req as RoutedRequest;
      const route = routed.tsRestRoute!;
      const key = routeKeys.get(route)!;
      const parsed = res.locals.parsed as ParsedRequest;
      await (options.preflight as Record<string, (request: ParsedRequest, caller?: string) => unknown> | undefined)?.[key]?.(parsed, res.locals.caller as string | undefined);
      const resolver = (options.pricing as Record<string, PriceResolver> | undefined)?.[key];
      const price = await priceOf(route, parsed, resolver);
      if (usdToAtomic(price.usd) === 0n) return next();
      metrics.payments.inc({ route: route.path });
      const requirements = buildRequirements(options.paywall, price);
      const paid = req.header(PAYMENT_SIGNATURE_HEADER);
      const quote = buildQuote(requirements, publicUrl + req.originalUrl, route, paid ? 'Payment refused' : 'Payment required');
      // A HEAD delivers no content, so it is quoted, never charged.
      if (!paid || req.method === 'HEAD') await payments?.ensure();
      if (!paid || req.method === 'HEAD') return quotePaidRequest(res, routed.requestId, quote, price.usd);
      res.locals.paymentTaken = true;
      const settleFirst = routeMeta(route).settle === 'first';
      // A refund comes from the service's own wallet, so a settle-first route is paid to it, not to a third party.
      if (settleFirst && requirements.payTo !== options.paywall.payTo) throw new Error(`route ${key} settles first but is priced to pay ${requirements.payTo}, not the service`);
      await collectPayment(res, () => next(), {
        db, facilitator, logger: log, requestId: routed.requestId, requirements, quote, header: paid, settleFirst,
        ...(options.vault ? { vault: options.vault } : {}),
        ...(options.now ? { now: options.now } : {}),
        ...(options.paywall.fault ? { fault: options.paywall.fault } : {}),
      });
    } catch (error) {
      next(error);
    }
  };

  createExpressEndpoints(service.router, options.handlers, app, {
    globalMiddleware: [validate, authenticate, paywall],
    responseValidation: false,
    logInitialization: false,
    jsonQuery: false,
    requestValidationErrorHandler: (err, req, res) => {
      // Not reached in practice (validate runs first); kept so ts-rest never answers with a raw ZodError.
      res.status(400).json(envelope((req as unknown as RoutedRequest).requestId, 'invalid_request', err.message));
    },
  });

  app.use((req, res) => {
    sendError(req, res, { status: 404, code: 'route_not_found', message: `No route ${req.method} ${req.path}` });
  });

  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const requestId = (req as RoutedRequest).requestId;
    if (error instanceof HttpError) {
      sendError(req, res, { status: error.status, code: error.code, message: error.message, details: error.details }, error.headers);
      return;
    }
    const type = (error as { type?: string }).type;
    if (type === 'entity.too.large') {
      sendError(req, res, { status: 413, code: 'payload_too_large', message: `The request body is larger than ${options.bodyLimit ?? '256kb'}` });
      return;
    }
    if (type === 'entity.parse.failed') {
      sendError(req, res, { status: 400, code: 'invalid_json', message: 'The request body is not valid JSON' });
      return;
    }
    if (error instanceof URIError) {
      sendError(req, res, { status: 400, code: 'invalid_path', message: 'The request holds a malformed percent-encoding' });
      return;
    }
    if (type === 'encoding.unsupported' || type === 'charset.unsupported') {
      sendError(req, res, { status: 415, code: 'unsupported_media_type', message: 'The request body encoding is not supported' });
      return;
    }
    log.error({ err: error, requestId, method: req.method, path: req.path }, 'unhandled error');
    sendError(req, res, { status: 500, code: 'internal_error', message: 'An unexpected error occurred; it has been logged with this request id' });
  });

  return app;
}
