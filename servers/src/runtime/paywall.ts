import type { AppRoute } from '@ts-rest/core';
import {
  PAYMENT_REQUIRED_HEADER,
  PAYMENT_SIGNATURE_HEADER,
  atomicToUsd,
  encodeX402Header,
  routeMeta,
  usdToAtomic,
  type PaymentRequired,
  type PaymentRequirements,
} from '@agent-economy/contracts';
import type { Request, Response } from 'express';
import { envelope } from './errors';
import type { ParsedRequest } from './validation';

/** Where and how a service is paid: its own wallet, the chain and the stablecoin. */
export interface PaywallConfig {
  payTo: string;
  network: string;
  asset: string;
  maxTimeoutSeconds: number;
  /** The facilitator's fee payer, advertised in `extra.feePayer` once a facilitator is configured. */
  feePayer?: string;
}

/** A route's price for one request: a USD amount, or the id of one of the route's declared tiers. */
export type PriceDecision = { usd: string } | { tier: string };
export type PriceResolver = (request: ParsedRequest) => PriceDecision | Promise<PriceDecision>;

/** The USD price of one request to a route, from its payment metadata and, where it varies, the service's resolver. */
export async function priceOf(route: AppRoute, request: ParsedRequest, resolver?: PriceResolver): Promise<string> {
  const payment = routeMeta(route).payment;
  if (payment.kind === 'free') return '0';
  if (payment.kind === 'fixed') return payment.usd;
  if (!resolver) throw new Error(`route ${route.method} ${route.path} has a variable price but no price resolver`);
  const decision = await resolver(request);
  if (payment.kind === 'tiered') {
    if (!('tier' in decision)) throw new Error(`route ${route.path} must be priced by tier`);
    const tier = payment.tiers.find((t) => t.id === decision.tier);
    if (!tier) throw new Error(`route ${route.path} has no tier ${decision.tier}`);
    return tier.usd;
  }
  if (!('usd' in decision)) throw new Error(`route ${route.path} must be priced in USD`);
  const [min, max, usd] = [usdToAtomic(payment.minUsd), usdToAtomic(payment.maxUsd), usdToAtomic(decision.usd)];
  // Adaptive prices stay inside the route's declared range whatever the demand model says.
  return atomicToUsd(usd < min ? min : usd > max ? max : usd);
}

export function buildQuote(config: PaywallConfig, resourceUrl: string, route: AppRoute, usd: string, error: string): PaymentRequired {
  const requirements: PaymentRequirements = {
    scheme: 'exact',
    network: config.network,
    amount: usdToAtomic(usd).toString(),
    asset: config.asset,
    payTo: config.payTo,
    maxTimeoutSeconds: config.maxTimeoutSeconds,
    extra: config.feePayer ? { feePayer: config.feePayer } : {},
  };
  return {
    x402Version: 2,
    error,
    resource: { url: resourceUrl, description: route.summary ?? route.path, mimeType: 'application/json' },
    accepts: [requirements],
  };
}

/**
 * Answers a paid request. Until settlement through a facilitator is wired in, no payment can be
 * verified, so a paid route never serves its content: it quotes, and refuses any payment it is sent.
 */
export function answerPaidRequest(
  req: Request,
  res: Response,
  config: PaywallConfig,
  resourceUrl: string,
  route: AppRoute,
  usd: string,
  requestId: string,
): void {
  const paid = req.header(PAYMENT_SIGNATURE_HEADER) !== undefined;
  const [code, message] = paid
    ? ['payment_unverifiable', 'This deployment has no facilitator to verify payments; nothing was charged']
    : ['payment_required', `This operation costs ${usd} USD, paid with x402 (see the PAYMENT-REQUIRED header)`];
  const quote = buildQuote(config, resourceUrl, route, usd, paid ? message : 'Payment required');
  res.setHeader(PAYMENT_REQUIRED_HEADER, encodeX402Header(quote));
  res.setHeader('cache-control', 'no-store');
  res.status(402).json(envelope(requestId, code, message, quote));
}
