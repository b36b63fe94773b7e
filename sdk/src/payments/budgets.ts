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

/** Whether `cap`, checked for a payment to (service, origin), counts money spent with `spent`'s service and origin. */
function counts(
  cap: Cap,
  service: string,
  origin: string | undefined,
  spent: { service: string; origin: string | undefined },
): boolean {
  if (cap.service !== undefined && spent.service !== cap.service) return false;
  if (cap.origin !== undefined && spent.origin !== cap.origin) return false;
  if (cap.each === 'service' && spent.service !== service) return false;
  if (cap.each === 'origin' && spent.origin !== origin) return false;
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
    if (!counts(cap, service, origin, spend)) continue;
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

/** A rolling window's share of one (service, origin) pair: receipts from `start` on are inside it, summing to `sum`. */
interface WindowSum {
  start: number;
  sum: bigint;
  /** The window's start when last moved (receipts at or before it are out); NaN: to be counted again. */
  since: number;
}

interface Pair {
  service: string;
  origin: string | undefined;
  lifetime: bigint;
  /** Receipts of the longest rolling window, oldest first (kept only when a cap has a window). */
  recent: { at: number; amount: bigint }[];
  windows: Map<number, WindowSum>;
}

/** Old receipts are let go in batches of more than this many (dropping one copies the rest). */
const PRUNE_AT = 256;

/**
 * Settled spends (receipts, net of refunds, at their times) summed for the caps without reading every receipt: a
 * lifetime sum per (service, origin) pair and, for each rolling window a cap uses, the pair's receipts inside it with
 * their running sum, moved on as time passes. A budget check costs a step per pair whatever the number of receipts,
 * and receipts older than twice the longest window are let go. `used` over every receipt is what this must equal
 * (tests/sdk-budget-sums.test.ts), for a clock set back by less than a window too.
 */
export class SettledSpends {
  readonly #windows: number[];
  readonly #keepMs: number;
  readonly #pairs = new Map<string, Pair>();

  /** `windowsMs`: the rolling windows the caps use (none: lifetime sums only). */
  constructor(windowsMs: Iterable<number>) {
    this.#windows = [...new Set(windowsMs)];
    this.#keepMs = Math.max(0, ...this.#windows);
  }

  add(spend: Spend & { at: number }): void {
    const key = `${spend.service}\u0000${spend.origin ?? ''}\u0000${spend.origin === undefined ? 0 : 1}`;
    let pair = this.#pairs.get(key);
    if (!pair) {
      pair = { service: spend.service, origin: spend.origin, lifetime: 0n, recent: [], windows: new Map() };
      for (const ms of this.#windows) pair.windows.set(ms, { start: 0, sum: 0n, since: -Infinity });
      this.#pairs.set(key, pair);
    }
    pair.lifetime += spend.amount;
    if (!this.#windows.length) return;
    const { recent } = pair;
    const entry = { at: spend.at, amount: spend.amount };
    if (!recent.length || spend.at >= recent[recent.length - 1]!.at) {
      recent.push(entry);
      for (const w of pair.windows.values()) {
        if (spend.at > w.since) w.sum += spend.amount;
        // Outside the window already: every receipt before it is too.
        else w.start = recent.length;
      }
      return;
    }
    // Recorded out of time order (a clock set back): put in its place, and the windows counted again.
    recent.splice(upperBound(recent, spend.at), 0, entry);
    for (const w of pair.windows.values()) w.since = NaN;
  }

  /** How many receipts are kept for the rolling windows (the lifetime sums keep none). */
  get kept(): number {
    let count = 0;
    for (const pair of this.#pairs.values()) count += pair.recent.length;
    return count;
  }

  /** What `cap` has counted of the settled spends for a payment to (service, origin) at `now`. */
  used(cap: Cap, service: string, origin: string | undefined, now: number): bigint {
    let sum = 0n;
    for (const pair of this.#pairs.values()) {
      if (!counts(cap, service, origin, pair)) continue;
      sum += cap.windowMs === undefined ? pair.lifetime : this.#inWindow(pair, cap.windowMs, now);
    }
    return sum;
  }

  #inWindow(pair: Pair, ms: number, now: number): bigint {
    const w = pair.windows.get(ms)!;
    const { recent } = pair;
    const since = now - ms;
    if (!(since >= w.since)) {
      // Counted again: first use after a receipt out of order or a drop, or the clock went back.
      w.start = upperBound(recent, since);
      w.sum = recent.slice(w.start).reduce((total, r) => total + r.amount, 0n);
    } else {
      while (w.start < recent.length && recent[w.start]!.at <= since) w.sum -= recent[w.start++]!.amount;
    }
    w.since = since;
    // Receipts older than twice the longest window are let go (in batches: dropping copies the rest), so a clock set
    // back by up to a window still counts them.
    if (ms === this.#keepMs && w.start > PRUNE_AT && w.start * 2 > recent.length) {
      const old = upperBound(recent, since - ms);
      if (old > PRUNE_AT) this.#drop(pair, old);
    }
    return w.sum;
  }

  /** Lets go of the pair's first `count` receipts: outside every window. */
  #drop(pair: Pair, count: number): void {
    pair.recent.splice(0, count);
    for (const w of pair.windows.values()) {
      if (w.start >= count) w.start -= count;
      else w.since = NaN;
    }
  }
}

/** The index of the first receipt after `at` (receipts oldest first). */
function upperBound(recent: readonly { at: number }[], at: number): number {
  let low = 0;
  let high = recent.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (recent[mid]!.at <= at) low = mid + 1;
    else high = mid;
  }
  return low;
}
