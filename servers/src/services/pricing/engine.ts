import {
  atomicToUsd,
  decodeX402Header,
  PAYMENT_SIGNATURE_HEADER,
  usdToAtomic,
  type AppliedPrice,
  type EndpointPrice,
  type PaymentMeta,
  type PricedEndpoint,
} from '@agent-economy/contracts';
import type { PriceResolver } from '../../runtime/paywall';
import type { PricingStore } from './store';
import {
  DEMAND_WINDOW_SECONDS,
  ENDPOINTS,
  hundredthsOfPrice,
  multiplierText,
  priceState,
  zoneOf,
  type Sale,
} from './surge';

// The adaptive price of each paid endpoint, from the demand measured in settled payments, and the promise a 402
// makes: the price it quotes is accepted until the quote expires, whatever the surge does in between.

export const ROUTE_OF: Record<PricedEndpoint, 'tokenIntel' | 'walletScan' | 'trending' | 'whaleWatch'> = {
  'token-intel': 'tokenIntel',
  'wallet-scan': 'walletScan',
  trending: 'trending',
  'whale-watch': 'whaleWatch',
};

export interface Range {
  minAtomic: bigint;
  maxAtomic: bigint;
  /** The price at multiplier 1: the range's minimum × 2, so 0.5× is the minimum. */
  baseAtomic: bigint;
}

export function rangeOf(payment: PaymentMeta): Range {
  if (payment.kind !== 'adaptive') throw new Error('the pricing service prices adaptive routes only');
  const minAtomic = usdToAtomic(payment.minUsd);
  return { minAtomic, maxAtomic: usdToAtomic(payment.maxUsd), baseAtomic: minAtomic * 2n };
}

export function pricingEngine(deps: {
  store: PricingStore;
  ranges: Record<PricedEndpoint, Range>;
  baselineCallsPerMinute: number;
  /** How long a quoted price is honoured: the quote's own validity (maxTimeoutSeconds). */
  quoteSeconds: number;
  now: () => Date;
}) {
  const clamp = (endpoint: PricedEndpoint, amount: bigint) => {
    const { minAtomic, maxAtomic } = deps.ranges[endpoint];
    return amount < minAtomic ? minAtomic : amount > maxAtomic ? maxAtomic : amount;
  };

  /** The endpoint's price now, from the sales settled in the demand window ending `at`. */
  function stateFrom(endpoint: PricedEndpoint, sales: readonly Sale[], at: Date): EndpointPrice {
    const range = deps.ranges[endpoint];
    const from = at.getTime() - DEMAND_WINDOW_SECONDS * 1000;
    const calls = sales.filter(
      (s) => s.endpoint === endpoint && s.at.getTime() > from && s.at.getTime() <= at.getTime(),
    ).length;
    const state = priceState(range.baseAtomic, calls, deps.baselineCallsPerMinute);
    return {
      endpoint,
      method: 'POST',
      path: `/api/${endpoint}`,
      basePriceUsd: atomicToUsd(range.baseAtomic),
      minPriceUsd: atomicToUsd(range.minAtomic),
      maxPriceUsd: atomicToUsd(range.maxAtomic),
      currentPriceUsd: atomicToUsd(clamp(endpoint, state.amount)),
      surgeMultiplier: multiplierText(state.hundredths),
      demandZone: state.zone,
      demand: state.demand,
      updatedAt: at.toISOString(),
    };
  }

  async function prices(endpoints: readonly PricedEndpoint[] = ENDPOINTS): Promise<EndpointPrice[]> {
    const at = deps.now();
    const sales = await deps.store.sales(new Date(at.getTime() - DEMAND_WINDOW_SECONDS * 1000), at);
    return endpoints.map((e) => stateFrom(e, sales, at));
  }

  /** The amount (atomic) a PAYMENT-SIGNATURE header says it pays, if it is a well-formed x402 payment. */
  function paidAmount(header: unknown): bigint | null {
    if (typeof header !== 'string') return null;
    const amount = (decodeX402Header(header) as { accepted?: { amount?: unknown } } | undefined)?.accepted?.amount;
    return typeof amount === 'string' && /^[1-9]\d{0,17}$/.test(amount) ? BigInt(amount) : null;
  }

  /**
   * The paywall's price resolver of one endpoint. A request without payment is quoted the current price, and the
   * quote is recorded with its expiry. A request with a payment is priced at the amount it pays when that amount
   * was quoted for this endpoint and the quote has not expired; otherwise at the current price (the paywall then
   * refuses the payment with a fresh 402). So a buyer keeps a quoted price while it is valid, and cannot reuse an
   * expired cheap one, nor one quoted for another endpoint.
   */
  function resolver(endpoint: PricedEndpoint): PriceResolver {
    return async (request) => {
      const at = deps.now();
      const [current] = await prices([endpoint]);
      const paid = paidAmount(
        (request.headers as Record<string, string | undefined> | undefined)?.[PAYMENT_SIGNATURE_HEADER],
      );
      if (paid !== null) {
        const quote = await deps.store.quote(endpoint, paid);
        if (quote && quote.expiresAt.getTime() > at.getTime()) return { usd: atomicToUsd(quote.amount) };
        return { usd: current!.currentPriceUsd };
      }
      const amount = usdToAtomic(current!.currentPriceUsd);
      const hundredths = Math.round(Number(current!.surgeMultiplier) * 100);
      await deps.store.recordQuote(
        endpoint,
        { amount, hundredths, zone: current!.demandZone, expiresAt: new Date(at.getTime() + deps.quoteSeconds * 1000) },
        at,
      );
      return { usd: current!.currentPriceUsd };
    };
  }

  /** What a paid call was charged: the quote its payment answered (its multiplier and zone as quoted). */
  async function applied(endpoint: PricedEndpoint, amountAtomic: string | undefined): Promise<AppliedPrice> {
    if (amountAtomic === undefined) {
      const [current] = await prices([endpoint]);
      return {
        priceUsd: current!.currentPriceUsd,
        surgeMultiplier: current!.surgeMultiplier,
        demandZone: current!.demandZone,
      };
    }
    const amount = BigInt(amountAtomic);
    const quote = await deps.store.quote(endpoint, amount);
    const hundredths = quote?.hundredths ?? hundredthsOfPrice(deps.ranges[endpoint].baseAtomic, amount);
    return {
      priceUsd: atomicToUsd(amount),
      surgeMultiplier: multiplierText(hundredths),
      demandZone: quote?.zone ?? zoneOf(hundredths),
    };
  }

  return { prices, resolver, applied, ranges: deps.ranges, baselineCallsPerMinute: deps.baselineCallsPerMinute };
}

export type PricingEngine = ReturnType<typeof pricingEngine>;
