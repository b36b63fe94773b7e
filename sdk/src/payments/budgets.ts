import type { PaymentRequired, PaymentRequirements } from '@agent-economy/contracts';
import type { BudgetLimit } from './types';

/**
 * A budget of your own: at most `usd` over the spend log's lifetime, or over a rolling `window` (the last
 * hour or day, sliding over the receipts' times), for every payment or only those to one `service` id
 * or one `origin` (scheme://host:port of the service's address).
 */
export interface BudgetCap {
  usd: string;
  window?: 'hour' | 'day';
  service?: string;
  origin?: string;
}

/** What `onApprove` is asked about: one payment, before anything is signed. */
export interface PaymentApproval {
  service: string;
  /** 'METHOD /path' of the contract route. */
  route: string;
  /** The request's address. */
  url: string;
  /** scheme://host:port of the service. */
  origin: string;
  /** The quote element about to be paid (amount in atomic units). */
  requirements: PaymentRequirements;
  /** The same amount in USD, an exact decimal string. */
  amountUsd: string;
  /** The payment identifier this logical call sends (x402 payment-identifier), when the service takes one. */
  paymentId: string | undefined;
  /** The service's 402 quote; absent when paying up front on its known terms. */
  quote: PaymentRequired | undefined;
  /** True when paying up front, with the first request. */
  prepaid: boolean;
  /**
   * True when the amount is a payment session's deposit: held against the budgets and paid out by vouchers, one per
   * call to this seller (each within the per-call cap), none asked about again; the rest is released at close.
   */
  sessionDeposit?: boolean;
}

export type ApproveHook = (approval: PaymentApproval) => boolean | Promise<boolean>;

export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;

/** A cap as the spend log checks it: atomic units; `each` applies one amount to every service or origin separately. */
export interface Cap {
  limit: BudgetLimit;
  amount: bigint;
  windowMs?: number;
  service?: string;
  origin?: string;
  each?: 'service' | 'origin';
}

/**
 * Money spent or held: a receipt (net of refunds, at its time) or a reservation (held: `at` undefined, always counted).
 */
export interface Spend {
  service: string;
  origin: string | undefined;
  amount: bigint;
  at?: number;
}

export function applies(cap: Cap, service: string, origin: string | undefined): boolean {
  if (cap.service !== undefined && cap.service !== service) return false;
  if (cap.origin !== undefined && cap.origin !== origin) return false;
  if (cap.each === 'origin' && origin === undefined) return false;
  return true;
}

/** What the cap has counted so far for a payment to (service, origin), at `now`. */
export function used(
  cap: Cap,
  service: string,
  origin: string | undefined,
  spends: Iterable<Spend>,
  now: number,
): bigint {
  let sum = 0n;
  const since = cap.windowMs === undefined ? undefined : now - cap.windowMs;
  for (const spend of spends) {
    if (cap.service !== undefined && spend.service !== cap.service) continue;
    if (cap.origin !== undefined && spend.origin !== cap.origin) continue;
    if (cap.each === 'service' && spend.service !== service) continue;
    if (cap.each === 'origin' && spend.origin !== origin) continue;
    if (since !== undefined && spend.at !== undefined && spend.at <= since) continue;
    sum += spend.amount;
  }
  return sum;
}

/** The cap named for a person: "hourly (education)", "per-origin (https://…)". */
export function describe(cap: Cap, service: string, origin: string | undefined): string {
  const base = {
    perCall: 'per-call',
    perService: 'per-service',
    total: 'total',
    perOrigin: 'per-origin',
    hourly: 'hourly',
    daily: 'daily',
  }[cap.limit];
  const scope =
    cap.service ??
    (cap.each === 'service' ? service : undefined) ??
    cap.origin ??
    (cap.each === 'origin' ? origin : undefined);
  return scope === undefined ? base : `${base} (${scope})`;
}

/** The kind of a cap given in `caps`: its window, else what it is scoped to. */
export function limitOf(cap: BudgetCap): BudgetLimit {
  if (cap.window === 'hour') return 'hourly';
  if (cap.window === 'day') return 'daily';
  if (cap.origin !== undefined) return 'perOrigin';
  if (cap.service !== undefined) return 'perService';
  return 'total';
}

/** An origin as budgets compare them (URL's origin: lower-case scheme and host, default port dropped). */
export function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}
