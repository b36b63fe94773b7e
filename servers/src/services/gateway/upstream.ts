import type { AppRouter } from '@ts-rest/core';
import {
  knowledgeMarket,
  negotiation,
  reputation,
  verification,
  type ServiceDefinition,
} from '@agent-economy/contracts';
import {
  ApiError,
  createPayments,
  createServiceClient,
  walletFromSecretKey,
  type Payments,
  type ServiceClient,
  type Signer,
  type SpendStore,
} from '@agent-economy/sdk';
import { HttpError } from '../../runtime/errors';
import type { ServiceContext } from '../../runtime/context';

// The gateway calls the four connected services over HTTP through the SDK, with its own wallet: it proves itself
// (SIGN-IN-WITH-X) where they ask, and pays their x402 quotes where they charge. It never imports their code.

export type ConnectedId = 'knowledge-market' | 'negotiation' | 'reputation' | 'verification';
export const CONNECTED: readonly ConnectedId[] = ['knowledge-market', 'negotiation', 'reputation', 'verification'];
export const CONTRACTS = {
  'knowledge-market': knowledgeMarket,
  negotiation,
  reputation,
  verification,
} as const satisfies Record<ConnectedId, ServiceDefinition>;

export type UrlOption = string | (() => string);
const resolver = (option: UrlOption) =>
  typeof option === 'function' ? () => option().replace(/\/+$/, '') : () => option.replace(/\/+$/, '');

/** The most the gateway pays for one call it makes for itself (a negotiation fee, a reputation lookup or report). */
export const OWN_CALL_CAP_USD = '0.01';

/** Upstream calls a request waits for; search waits 2 seconds per service (the contract's budget). */
const TIMEOUT_MS = 10_000;
export const SEARCH_TIMEOUT_MS = 2_000;

export interface Upstream {
  signer: Signer;
  url(id: ConnectedId): string;
  /** A client that reads without paying or signing in. */
  reader<C extends ConnectedId>(id: C, timeoutMs?: number): ServiceClient<(typeof CONTRACTS)[C]['router']>;
  /** A client that signs in as the gateway and pays up to OWN_CALL_CAP_USD a call from the gateway's wallet. */
  agent<C extends ConnectedId>(id: C): ServiceClient<(typeof CONTRACTS)[C]['router']>;
  /**
   * A client for one purchase: it pays at most `maxUsd` (the price the buyer was charged for), never more. `store`
   * records each payment before it is sent; the SDK presents a payment again (never a second one) while its answer is
   * lost.
   */
  buyer<C extends ConnectedId>(
    id: C,
    maxUsd: string,
    store?: SpendStore,
  ): ServiceClient<(typeof CONTRACTS)[C]['router']>;
  /** What the gateway paid for its own calls since it started (its spend log). */
  payments: Payments;
}

export async function createUpstream(
  context: ServiceContext,
  urls: Partial<Record<ConnectedId, UrlOption>>,
): Promise<Upstream> {
  const signer = await walletFromSecretKey(context.wallet.secretKey);
  const resolvers = Object.fromEntries(
    CONNECTED.map((id) => [id, resolver(urls[id] ?? (() => context.serviceUrl(id)))]),
  ) as Record<ConnectedId, () => string>;
  const paymentOptions = (maxPerCallUsd: string, store?: SpendStore) => ({
    maxPerCallUsd,
    ...(store ? { store } : {}),
    rpcUrl: context.rpcUrl,
    allowedNetworks: [context.paywall.network],
    allowedAssets: [context.paywall.asset],
  });
  const payments = createPayments(paymentOptions(OWN_CALL_CAP_USD));
  const client = <R extends AppRouter>(
    service: ServiceDefinition<R>,
    base: string,
    extra: Parameters<typeof createServiceClient>[2],
  ) =>
    createServiceClient(service, base, {
      maxRetries: 0,
      timeoutMs: TIMEOUT_MS,
      network: context.paywall.network,
      ...extra,
    });
  return {
    signer,
    payments,
    url: (id) => resolvers[id](),
    reader: (id, timeoutMs = TIMEOUT_MS) =>
      client(CONTRACTS[id] as ServiceDefinition, resolvers[id](), { payments: false, timeoutMs }) as never,
    agent: (id) => client(CONTRACTS[id] as ServiceDefinition, resolvers[id](), { wallet: signer, payments }) as never,
    buyer: (id, maxUsd, store) =>
      client(CONTRACTS[id] as ServiceDefinition, resolvers[id](), {
        wallet: signer,
        payments: paymentOptions(maxUsd, store),
        maxRetries: 2,
      }) as never,
  };
}

/** A call's failure that is not the service's considered answer (no answer, a 5xx): the route's 502. */
export function isUnavailable(error: unknown): boolean {
  return !(error instanceof ApiError) || error.status >= 500;
}

export function upstreamUnavailable(id: ConnectedId, error: unknown): HttpError {
  const reason = error instanceof Error ? error.message : String(error);
  return new HttpError(
    502,
    'upstream_unavailable',
    `The ${id} service did not answer: ${reason}`,
    { service: id },
    { 'retry-after': '5' },
  );
}

/** Runs an upstream call; anything but a 4xx answer becomes 502 upstream_unavailable. */
export async function upstreamCall<T>(id: ConnectedId, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (isUnavailable(error)) throw upstreamUnavailable(id, error);
    throw error;
  }
}
