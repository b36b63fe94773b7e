import type {
  AppRoute,
  AppRouter,
  ClientInferResponseBody,
  PartialClientInferRequest,
  SuccessfulHttpStatusCode,
} from '@ts-rest/core';
import { isAppRoute } from '@ts-rest/core';
import type { AxiosInstance } from 'axios';
import {
  DEFAULT_PORTS,
  PAYMENT_SIGNATURE_HEADER,
  SIGN_IN_WITH_X_HEADER,
  envPrefix,
  services,
  type RouteMeta,
  type Service,
  type ServiceDefinition,
} from '@agent-economy/contracts';
import { createSiwxHeader } from './auth/siwx';
import { resolveDeployment, type Deployment } from './deployment';
import { AgentEconomyError } from './errors';
import { send, type HttpResponse, type RequestOptions, type TransportSettings } from './http';
import { reportCall, type ClientMetric, type MetricHook } from './metrics';
import { traceCall } from './tracing';
import { SpendLog, type PaymentOptions, type Payments } from './payments/spend-log';
import { sendPaying } from './payments/pay';
import { closeSessions, enableSessions, payWithSessions } from './payments/session';
import type { Signer } from './wallet';

/** What a route takes: its path params, query, body and declared headers, typed from the contract. */
export type RouteArgs<R extends AppRoute> = Omit<
  PartialClientInferRequest<R>,
  'extraHeaders' | 'fetchOptions' | 'overrideClientOptions' | 'cache' | 'next'
>;

/** What a route returns on success. */
export type RouteResult<R extends AppRoute> = ClientInferResponseBody<
  R,
  Extract<keyof R['responses'], SuccessfulHttpStatusCode>
>;

type ArgsTuple<R extends AppRoute> =
  {} extends RouteArgs<R>
    ? [args?: RouteArgs<R>, options?: RequestOptions]
    : [args: RouteArgs<R>, options?: RequestOptions];

/**
 * The `action` values of a route whose body and success responses are both unions on `action` (education quiz:
 * generate | grade); never for any other route.
 */
type ActionOf<R extends AppRoute> =
  RouteArgs<R> extends { body: { action: infer A extends string } }
    ? RouteResult<R> extends { action: string }
      ? A
      : never
    : never;

/** The result for the action sent: Extract narrows `Quiz | QuizResult` to the one that action answers. */
type ActionResult<R extends AppRoute, A> = Extract<RouteResult<R>, { action: A }>;

/** One SDK method: resolves to the response body, or throws a typed error. `withResponse` adds status and headers. */
export type RouteMethod<R extends AppRoute> = [ActionOf<R>] extends [never]
  ? ((...args: ArgsTuple<R>) => Promise<RouteResult<R>>) & {
      withResponse(...args: ArgsTuple<R>): Promise<HttpResponse<RouteResult<R>>>;
    }
  : // The result type follows the request's `action`, inferred from the body literal (a union action gives the union).
    (<A extends ActionOf<R>>(
      args: RouteArgs<R> & { body: { action: A } },
      options?: RequestOptions,
    ) => Promise<ActionResult<R, A>>) & {
      withResponse<A extends ActionOf<R>>(
        args: RouteArgs<R> & { body: { action: A } },
        options?: RequestOptions,
      ): Promise<HttpResponse<ActionResult<R, A>>>;
    };

export type ServiceClient<R extends AppRouter> = {
  [K in keyof R]: R[K] extends AppRoute ? RouteMethod<R[K]> : R[K] extends AppRouter ? ServiceClient<R[K]> : never;
};

type CamelCase<S extends string> = S extends `${infer Head}-${infer Tail}`
  ? `${Head}${Capitalize<CamelCase<Tail>>}`
  : S;

/**
 * One typed sub-client per service: `client.education.lesson(...)`, `client.btcMetrics...`; and
 * `client.payments`, the spend log and budgets (no service is named payments).
 */
export type AgentEconomyClient = { [S in Service as CamelCase<S['id']>]: ServiceClient<S['router']> } & {
  readonly payments: Payments;
  /** Settles the client's open payment sessions (payments.sessions); the client stays usable. */
  close(): Promise<void>;
};

export type ServiceKey = Service['id'];

export interface ClientOptions {
  /** Base address per service id; else AGENT_ECONOMY_<ID>_URL, else `host` with the service's default port. */
  baseUrls?: Partial<Record<ServiceKey, string>>;
  /** Scheme and host of a one-machine deployment; default http://127.0.0.1. */
  host?: string;
  /** Per attempt, in milliseconds; default 60 000. */
  timeoutMs?: number;
  /** Retries after the first attempt where retrying is safe; default 2. */
  maxRetries?: number;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
  /** A preconfigured axios instance (proxies, agents, interceptors). */
  axios?: AxiosInstance;
  /**
   * Your wallet: proves who calls on routes that need it (SIGN-IN-WITH-X) and pays x402 quotes within
   * the `payments` budgets. Without a wallet a 402 is thrown as PaymentRequiredError.
   */
  wallet?: Signer;
  /**
   * How the wallet pays: budgets, networks, assets, prepaying, RPC (see PaymentOptions; defaults: at
   * most 1 USD per call, USDC on `network`). A `createPayments()` object shares one spend log and
   * budget between clients; `false` never pays (the wallet only signs in).
   */
  payments?: PaymentOptions | Payments | false;
  /** CAIP-2 id of the Solana network the services run on; default the deployment's, else devnet's. */
  network?: string;
  /**
   * The deployment to talk to: the services.json `npm start` writes (`.data/services.json`), as the object
   * (`await loadDeployment(pathOrUrl)`) or the path of its file. Its services' addresses (under `baseUrls`),
   * its network (unless `network`) and its Solana RPC (unless `payments.rpcUrl`) become the client's.
   */
  deployment?: Deployment | string;
  /**
   * Called with what each call did with money: a payment made (`payment`), a payment the service refused
   * (`payment_refused`, with its code and x402 reason), a call your budgets refused (`budget_refused`), a payment
   * of unknown outcome. Its exceptions are ignored. See ClientMetric.
   */
  onMetric?: (metric: ClientMetric) => void;
}

interface Identity {
  /** The service's id, for budgets and receipts. */
  service: string;
  wallet?: Signer;
  network?: string;
  /** Set when the wallet pays. */
  spendLog?: SpendLog;
  onMetric?: MetricHook;
}

const camelCase = (id: string) => id.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());

function serializeQuery(query: unknown): string {
  const parts: string[] = [];
  const add = (key: string, value: unknown) => {
    if (value === undefined || value === null) return;
    if (Array.isArray(value)) value.forEach((v) => add(key, v));
    else if (value instanceof Date) parts.push(`${encodeURIComponent(key)}=${encodeURIComponent(value.toISOString())}`);
    else if (typeof value === 'object') for (const [k, v] of Object.entries(value)) add(`${key}[${k}]`, v);
    else parts.push(`${encodeURIComponent(key)}=${encodeURIComponent(String(value))}`);
  };
  for (const [key, value] of Object.entries((query ?? {}) as Record<string, unknown>)) add(key, value);
  return parts.join('&');
}

/** Fills path parameters, URL-encoded; an empty or missing one is an error rather than a silently shorter path. */
export function buildUrl(baseUrl: string, route: AppRoute, args: { params?: unknown; query?: unknown }): string {
  const params = (args.params ?? {}) as Record<string, unknown>;
  const path = route.path.replace(/\/:([A-Za-z0-9_]+)(\?)?/g, (_, name: string, optional?: string) => {
    const value = params[name];
    if (value === undefined || value === null || String(value) === '') {
      if (optional) return '';
      throw new AgentEconomyError(`path parameter "${name}" of ${route.method} ${route.path} is missing or empty`);
    }
    return `/${encodeURIComponent(String(value))}`;
  });
  const query = serializeQuery(args.query);
  return `${baseUrl.replace(/\/+$/, '')}${path}${query ? `?${query}` : ''}`;
}

function routeMethod(
  route: AppRoute,
  baseUrl: string,
  settings: TransportSettings,
  baseHeaders: Record<string, string>,
  identity: Identity,
) {
  const needsProof = (route.metadata as RouteMeta | undefined)?.auth === 'siwx';
  const label = `${route.method} ${route.path}`;
  // One trace per logical call, its retries and payment included (tracing.ts), continuing a traceparent the
  // caller passes; and what the call did with money, for onMetric (metrics.ts).
  const call = async (args: Partial<RouteArgs<AppRoute>> = {}, options: RequestOptions = {}) => {
    const given = Object.entries({
      ...baseHeaders,
      ...(args as { headers?: Record<string, string> }).headers,
      ...options.headers,
    }).find(([name]) => name.toLowerCase() === 'traceparent')?.[1];
    const traced = traceCall(label, given, {
      'agent_economy.service': identity.service,
      'http.request.method': route.method,
    });
    const headers = Object.fromEntries(
      Object.entries(options.headers ?? {}).filter(([name]) => name.toLowerCase() !== 'traceparent'),
    );
    const started = Date.now();
    try {
      const response = await attempt(args, { ...options, headers: { ...headers, traceparent: traced.traceparent } });
      traced.end();
      reportCall(identity.onMetric, identity.service, label, started, { response });
      return response;
    } catch (error) {
      traced.end(error);
      reportCall(identity.onMetric, identity.service, label, started, { error });
      throw error;
    }
  };
  // async, so that a bad path parameter rejects the returned promise rather than throwing synchronously
  const attempt = async (args: Partial<RouteArgs<AppRoute>> = {}, options: RequestOptions = {}) => {
    const { params, query, body, headers } = args as {
      params?: unknown;
      query?: unknown;
      body?: unknown;
      headers?: Record<string, string>;
    };
    const url = buildUrl(baseUrl, route, { params, query });
    const { wallet, network, spendLog } = identity;
    // A fresh proof for every attempt: the service accepts each nonce once.
    const proof =
      needsProof && wallet
        ? async () => ({
            [SIGN_IN_WITH_X_HEADER]: await createSiwxHeader(wallet, { url, ...(network ? { chainId: network } : {}) }),
          })
        : undefined;
    const request = {
      method: route.method,
      url,
      body: route.method === 'GET' ? undefined : (body ?? {}),
      headers: { ...baseHeaders, ...headers },
    };
    // A caller who sends their own PAYMENT-SIGNATURE pays by hand.
    const manual = Object.keys({ ...request.headers, ...options.headers }).some(
      (name) => name.toLowerCase() === PAYMENT_SIGNATURE_HEADER,
    );
    if (!wallet || !spendLog || manual) return send(request, options, settings, proof);
    return payWithSessions(
      spendLog,
      { service: identity.service, route, request, options, settings, perAttempt: proof, wallet },
      sendPaying,
    );
  };
  const method = async (args?: Partial<RouteArgs<AppRoute>>, options?: RequestOptions) =>
    (await call(args, options)).data;
  return Object.assign(method, { withResponse: call });
}

function buildServiceClient(
  router: AppRouter,
  baseUrl: string,
  settings: TransportSettings,
  headers: Record<string, string>,
  identity: Identity,
): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(router).map(([key, value]) => [
      key,
      isAppRoute(value)
        ? routeMethod(value, baseUrl, settings, headers, identity)
        : buildServiceClient(value as AppRouter, baseUrl, settings, headers, identity),
    ]),
  );
}

/** The spend log the options name, or a new one from their payment options. */
function paymentsOf(options: Pick<ClientOptions, 'payments' | 'network'>): SpendLog {
  const { payments } = options;
  if (payments instanceof SpendLog) return payments;
  if (payments && 'receipts' in payments)
    throw new AgentEconomyError('payments: pass PaymentOptions or an object from createPayments()');
  return new SpendLog((payments || {}) as PaymentOptions, options.network);
}

/** A client for one service only, e.g. for a deployment that is not at its default address. */
export function createServiceClient<R extends AppRouter>(
  service: ServiceDefinition<R>,
  baseUrl: string,
  options: Omit<ClientOptions, 'baseUrls' | 'host'> = {},
): ServiceClient<R> {
  if (options.deployment !== undefined) {
    const { deployment: given, ...rest } = options;
    const deployment = resolveDeployment(given);
    const network = rest.network ?? deployment.chain.network;
    const payments = rest.payments === false ? (false as const) : paymentsOf({ ...rest, network });
    if (payments) payments.useRpc(deployment.chain.rpcUrl);
    return createServiceClient(service, baseUrl, { ...rest, network, payments });
  }
  const settings: TransportSettings = {
    timeoutMs: options.timeoutMs ?? 60_000,
    maxRetries: options.maxRetries ?? 2,
    ...(options.axios ? { axios: options.axios } : {}),
  };
  const spendLog = options.payments === false ? undefined : paymentsOf(options);
  const identity: Identity = {
    service: service.id,
    ...(options.wallet ? { wallet: options.wallet } : {}),
    ...(options.network ? { network: options.network } : {}),
    ...(spendLog ? { spendLog } : {}),
    ...(options.onMetric ? { onMetric: options.onMetric } : {}),
  };
  return buildServiceClient(service.router, baseUrl, settings, options.headers ?? {}, identity) as ServiceClient<R>;
}

function envUrl(id: string): string | undefined {
  const env = typeof process === 'undefined' ? undefined : process.env;
  // An empty variable (FOO= in an env file) means unset, as in the servers' configuration.
  return env?.[`AGENT_ECONOMY_${envPrefix(id)}_URL`] || undefined;
}

/** The whole economy: one typed sub-client per service, each at its configured or default address. */
export function createClient(options: ClientOptions = {}): AgentEconomyClient {
  const host = (options.host ?? 'http://127.0.0.1').replace(/\/+$/, '');
  const { deployment: given, ...rest } = options;
  const deployment = given === undefined ? undefined : resolveDeployment(given);
  const network = options.network ?? deployment?.chain.network;
  // One spend log for every service, so budgets and the spend log span the whole client.
  const payments = paymentsOf({ ...rest, ...(network ? { network } : {}) });
  const shared = {
    ...rest,
    ...(network ? { network } : {}),
    payments: options.payments === false ? (false as const) : payments,
  };
  const deployed = new Map(deployment?.services.map((s) => [s.id, s.url]));
  let allDefault = true;
  const clients = Object.fromEntries(
    services.map((service: ServiceDefinition & { id: ServiceKey }) => {
      const configured = options.baseUrls?.[service.id] ?? deployed.get(service.id) ?? envUrl(service.id);
      if (configured !== undefined) allDefault = false;
      const baseUrl = configured ?? `${host}:${DEFAULT_PORTS[service.id]}`;
      return [camelCase(service.id), createServiceClient(service, baseUrl, shared)];
    }),
  );
  // The chain to pay on comes from the deployment. Without one, a client whose every service sits at its
  // default port on `host` is talking to one `npm start`, whose ledger listens on that host's 8899; any
  // other client has no RPC unless configured, and a payment says so before signing (never a guess).
  payments.useRpc(deployment?.chain.rpcUrl ?? (allDefault ? `${host}:8899` : undefined));
  const sessionOptions = options.payments === false ? undefined : payments.sessions;
  if (options.wallet && sessionOptions)
    enableSessions(payments, options.wallet, clients.facilitator as never, sessionOptions);
  const close = async () => void (await closeSessions(payments));
  return Object.assign(clients, { payments, close }) as unknown as AgentEconomyClient;
}
