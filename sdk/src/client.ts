import type { AppRoute, AppRouter, ClientInferResponseBody, PartialClientInferRequest, SuccessfulHttpStatusCode } from '@ts-rest/core';
import { isAppRoute } from '@ts-rest/core';
import type { AxiosInstance } from 'axios';
import { DEFAULT_PORTS, PAYMENT_SIGNATURE_HEADER, SIGN_IN_WITH_X_HEADER, envPrefix, services, type RouteMeta, type Service, type ServiceDefinition } from '@agent-economy/contracts';
import { createSiwxHeader } from './auth/siwx';
import { AgentEconomyError } from './errors';
import { send, type HttpResponse, type RequestOptions, type TransportSettings } from './http';
import { PaymentLedger, type PaymentOptions, type Payments } from './payments/ledger';
import { sendPaying } from './payments/pay';
import type { Signer } from './wallet';

/** What a route takes: its path params, query, body and declared headers, typed from the contract. */
export type RouteArgs<R extends AppRoute> = Omit<
  PartialClientInferRequest<R>,
  'extraHeaders' | 'fetchOptions' | 'overrideClientOptions' | 'cache' | 'next'
>;

/** What a route returns on success. */
export type RouteResult<R extends AppRoute> = ClientInferResponseBody<R, Extract<keyof R['responses'], SuccessfulHttpStatusCode>>;

type ArgsTuple<R extends AppRoute> = {} extends RouteArgs<R>
  ? [args?: RouteArgs<R>, options?: RequestOptions]
  : [args: RouteArgs<R>, options?: RequestOptions];

/** One SDK method: resolves to the response body, or throws a typed error. `withResponse` adds status and headers. */
export type RouteMethod<R extends AppRoute> = ((...args: ArgsTuple<R>) => Promise<RouteResult<R>>) & {
  withResponse(...args: ArgsTuple<R>): Promise<HttpResponse<RouteResult<R>>>;
};

export type ServiceClient<R extends AppRouter> = {
  [K in keyof R]: R[K] extends AppRoute ? RouteMethod<R[K]> : R[K] extends AppRouter ? ServiceClient<R[K]> : never;
};

type CamelCase<S extends string> = S extends `${infer Head}-${infer Tail}` ? `${Head}${Capitalize<CamelCase<Tail>>}` : S;

/**
 * One typed sub-client per service: `client.education.lesson(...)`, `client.btcMetrics...`; and
 * `client.payments`, the spend log and budgets (no service is named payments).
 */
export type AgentEconomyClient = { [S in Service as CamelCase<S['id']>]: ServiceClient<S['router']> } & { readonly payments: Payments };

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
  /** CAIP-2 id of the Solana network the services run on; default devnet's. */
  network?: string;
}

interface Identity {
  /** The service's id, for budgets and receipts. */
  service: string;
  wallet?: Signer;
  network?: string;
  /** Set when the wallet pays. */
  ledger?: PaymentLedger;
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

function routeMethod(route: AppRoute, baseUrl: string, settings: TransportSettings, baseHeaders: Record<string, string>, identity: Identity) {
  const needsProof = (route.metadata as RouteMeta | undefined)?.auth === 'siwx';
  // async, so that a bad path parameter rejects the returned promise rather than throwing synchronously
  const call = async (args: Partial<RouteArgs<AppRoute>> = {}, options: RequestOptions = {}) => {
    const { params, query, body, headers } = args as { params?: unknown; query?: unknown; body?: unknown; headers?: Record<string, string> };
    const url = buildUrl(baseUrl, route, { params, query });
    const { wallet, network, ledger } = identity;
    // A fresh proof for every attempt: the service accepts each nonce once.
    const proof =
      needsProof && wallet
        ? async () => ({ [SIGN_IN_WITH_X_HEADER]: await createSiwxHeader(wallet, { url, ...(network ? { chainId: network } : {}) }) })
        : undefined;
    const request = { method: route.method, url, body: route.method === 'GET' ? undefined : (body ?? {}), headers: { ...baseHeaders, ...headers } };
    // A caller who sends their own PAYMENT-SIGNATURE pays by hand.
    const manual = Object.keys({ ...request.headers, ...options.headers }).some((name) => name.toLowerCase() === PAYMENT_SIGNATURE_HEADER);
    if (!wallet || !ledger || manual) return send(request, options, settings, proof);
    return sendPaying(ledger, { service: identity.service, route, request, options, settings, perAttempt: proof, wallet });
  };
  const method = async (args?: Partial<RouteArgs<AppRoute>>, options?: RequestOptions) => (await call(args, options)).data;
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

/** The ledger the options name, or a new one from their payment options. */
function paymentsOf(options: Pick<ClientOptions, 'payments' | 'network'>): PaymentLedger {
  const { payments } = options;
  if (payments instanceof PaymentLedger) return payments;
  if (payments && 'receipts' in payments) throw new AgentEconomyError('payments: pass PaymentOptions or an object from createPayments()');
  return new PaymentLedger((payments || {}) as PaymentOptions, options.network);
}

/** A client for one service only, e.g. for a deployment that is not at its default address. */
export function createServiceClient<R extends AppRouter>(
  service: ServiceDefinition<R>,
  baseUrl: string,
  options: Omit<ClientOptions, 'baseUrls' | 'host'> = {},
): ServiceClient<R> {
  const settings: TransportSettings = {
    timeoutMs: options.timeoutMs ?? 60_000,
    maxRetries: options.maxRetries ?? 2,
    ...(options.axios ? { axios: options.axios } : {}),
  };
  const ledger = options.payments === false ? undefined : paymentsOf(options);
  const identity: Identity = {
    service: service.id,
    ...(options.wallet ? { wallet: options.wallet } : {}),
    ...(options.network ? { network: options.network } : {}),
    ...(ledger ? { ledger } : {}),
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
  // One ledger for every service, so budgets and the spend log span the whole client.
  const payments = paymentsOf(options);
  const shared = { ...options, payments: options.payments === false ? (false as const) : payments };
  const clients = Object.fromEntries(
    services.map((service: ServiceDefinition & { id: ServiceKey }) => {
      const baseUrl = options.baseUrls?.[service.id] ?? envUrl(service.id) ?? `${host}:${DEFAULT_PORTS[service.id]}`;
      return [camelCase(service.id), createServiceClient(service, baseUrl, shared)];
    }),
  );
  return Object.assign(clients, { payments }) as unknown as AgentEconomyClient;
}
