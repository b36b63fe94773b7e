import type { AppRouter } from '@ts-rest/core';
import { isAppRoute } from '@ts-rest/core';
import { z } from 'zod';
import { UsdAmount, compareUsd, usdToAtomic } from './money';
import type { ServiceDefinition } from './service';

/** A price the server chooses per request, e.g. by the wallet's activity or by what the request asks for. */
export interface PriceTier {
  id: string;
  usd: string;
  description: string;
}

/** How a route is paid; lives in the route's metadata and drives the paywall, the SDK budgets and the documents. */
export type PaymentMeta =
  | { kind: 'free' }
  | { kind: 'fixed'; usd: string }
  | { kind: 'adaptive'; minUsd: string; maxUsd: string }
  | { kind: 'tiered'; tiers: readonly PriceTier[] };

/** Who may call a route: anyone, or only a caller that proves a wallet with SIGN-IN-WITH-X. */
export type CallerAuth = 'none' | 'siwx';

/** An example request, used for the OpenAPI documents and checked against the route's schemas by tests. */
export interface RouteExample {
  params?: Record<string, string>;
  query?: Record<string, unknown>;
  body?: unknown;
}

export interface RouteMeta {
  payment: PaymentMeta;
  /** 'siwx': the caller proves a wallet with the SIGN-IN-WITH-X header; a bad or missing proof is 401 siwx_invalid. */
  auth?: CallerAuth;
  example?: RouteExample;
  /**
   * 'x402': errors follow the x402 wire format declared on the route (the facilitator's /verify,
   * /settle and /supported), not the error envelope.
   */
  wire?: 'x402';
  /**
   * 'first': the payment is verified and SETTLED before the handler runs (the route moves or commits money
   * on the buyer's behalf, so it must hold the payment first). If the handler then fails, the runtime
   * refunds the whole amount on chain from the service's wallet and the error says so (`details.refund`).
   */
  settle?: 'first';
}

function checkUsd(usd: string): string {
  UsdAmount.parse(usd);
  return usd;
}

export const free = (): PaymentMeta => ({ kind: 'free' });
export const fixed = (usd: string): PaymentMeta => ({ kind: 'fixed', usd: checkUsd(usd) });
export const adaptive = (minUsd: string, maxUsd: string): PaymentMeta => ({
  kind: 'adaptive',
  minUsd: checkUsd(minUsd),
  maxUsd: checkUsd(maxUsd),
});
export const tiered = (tiers: readonly PriceTier[]): PaymentMeta => {
  for (const tier of tiers) checkUsd(tier.usd);
  return { kind: 'tiered', tiers };
};

export function isPaid(payment: PaymentMeta): boolean {
  const { maxUsd } = priceRange(payment);
  return usdToAtomic(maxUsd) > 0n;
}

/** The lowest and highest USD price a route can charge. */
export function priceRange(payment: PaymentMeta): { minUsd: string; maxUsd: string } {
  switch (payment.kind) {
    case 'free':
      return { minUsd: '0', maxUsd: '0' };
    case 'fixed':
      return { minUsd: payment.usd, maxUsd: payment.usd };
    case 'adaptive':
      return { minUsd: payment.minUsd, maxUsd: payment.maxUsd };
    case 'tiered': {
      const sorted = [...payment.tiers].sort((a, b) => compareUsd(a.usd, b.usd));
      return { minUsd: sorted[0]?.usd ?? '0', maxUsd: sorted.at(-1)?.usd ?? '0' };
    }
  }
}

/** Reads a route's metadata, which ts-rest types as unknown. */
export function routeMeta(route: { metadata?: unknown }): RouteMeta {
  const meta = route.metadata as RouteMeta | undefined;
  if (!meta?.payment) throw new Error('route has no metadata.payment');
  return meta;
}

const PriceTierSchema = z.object({ id: z.string().min(1), usd: UsdAmount, description: z.string() }).strict();
/** A route's payment metadata as an operator writes it to override a price. */
export const PaymentMetaSchema: z.ZodType<PaymentMeta> = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('free') }).strict(),
  z.object({ kind: z.literal('fixed'), usd: UsdAmount }).strict(),
  z.object({ kind: z.literal('adaptive'), minUsd: UsdAmount, maxUsd: UsdAmount }).strict(),
  z.object({ kind: z.literal('tiered'), tiers: z.array(PriceTierSchema).min(1) }).strict(),
]);

/**
 * The service with some routes re-priced for one deployment (route key -> payment metadata). The
 * paywall, descriptor and documents all read the result, so they cannot disagree.
 */
export function withPrices<S extends ServiceDefinition>(service: S, overrides: Record<string, PaymentMeta>): S {
  if (!Object.keys(overrides).length) return service;
  const reprice = (router: AppRouter, prefix: string): AppRouter =>
    Object.fromEntries(
      Object.entries(router).map(([key, value]) => {
        if (!isAppRoute(value)) return [key, reprice(value as AppRouter, `${prefix}${key}.`)];
        const payment = overrides[prefix + key];
        return [key, payment ? { ...value, metadata: { ...(value.metadata as object), payment } } : value];
      }),
    );
  return { ...service, router: reprice(service.router, '') };
}
