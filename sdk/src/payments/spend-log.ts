import {
  createSolanaRpc,
  signature as toSignature,
  type Blockhash,
  type GetAccountInfoApi,
  type GetLatestBlockhashApi,
  type GetSignatureStatusesApi,
  type IsBlockhashValidApi,
  type Rpc,
} from '@solana/kit';
import {
  SOLANA_DEVNET,
  SOLANA_MAINNET,
  SOLANA_TESTNET,
  STABLECOIN_DECIMALS,
  USDC_DEVNET,
  USDC_MAINNET,
  atomicToUsd,
  isBase58OfLength,
  usdToAtomic,
  type PaymentRequirements,
  type Service,
} from '@agent-economy/contracts';
import { AgentEconomyError, SolanaRpcError } from '../errors';
import { KNOWN_MINTS, fetchMintInfo, lifetimeHint, type Lifetime, type MintInfo } from './exact-svm';
import { requireRpcUrl } from './preflight';
import {
  DAY_MS,
  HOUR_MS,
  applies,
  describe,
  limitOf,
  originOf,
  used,
  SettledSpends,
  type ApproveHook,
  type BudgetCap,
  type PaymentApproval,
  type Cap,
  type Spend,
} from './budgets';
import type { SpendRecord, SpendStore } from './spend-store';
import type { SessionOptions } from './session';
import type { BudgetLimit, PaymentReceipt, SentPayment } from './types';
import { randomHex } from '../random';

/** How the client pays x402 quotes: `createClient({ wallet, payments: { … } })`. */
export interface PaymentOptions {
  /**
   * The most one call may cost, USD decimal string. Default `'1'` (as the official x402 client's spend control);
   * `false`: no cap.
   */
  maxPerCallUsd?: string | false;
  /**
   * The most the client spends per service over its lifetime, USD: one value for every service, or a
   * map by service id (services not in the map are uncapped). Default: no cap.
   */
  maxPerServiceUsd?: string | Partial<Record<Service['id'] | (string & {}), string>>;
  /** The most the client spends over its lifetime, across services, USD. Default: no cap. */
  maxTotalUsd?: string;
  /** The most spent in any rolling hour (receipts of the last 60 minutes, plus payments in flight or pending), USD. */
  maxPerHourUsd?: string;
  /** The most spent in any rolling 24 hours, USD. */
  maxPerDayUsd?: string;
  /**
   * The most spent per origin (scheme://host:port) over the spend log's lifetime: one value for each origin, or a map
   * by origin.
   */
  maxPerOriginUsd?: string | Record<string, string>;
  /**
   * More budgets, each lifetime or rolling (`window: 'hour' | 'day'`), for every payment or those to one `service` or
   * `origin`.
   */
  caps?: readonly BudgetCap[];
  /**
   * The only wallets (payTo addresses) this client pays; a quote to any other is refused before signing. Default: any.
   */
  allowedPayTo?: readonly string[];
  /**
   * Asked before each payment is signed, once the budgets allow it; `false` (or a throw) refuses it with
   * PaymentNotApprovedError: nothing is signed or sent.
   */
  onApprove?: ApproveHook;
  /**
   * Where the spend log persists: `fileSpendStore(path)` or your own SpendStore. Budgets then count what
   * earlier runs spent, and a payment sent before a crash whose outcome is unknown stays pending (counted
   * as spent) until `resolve`. Default: memory only.
   */
  store?: SpendStore;
  /** CAIP-2 ids of the Solana networks to pay on. Default: the client's `network` (devnet's unless set). */
  allowedNetworks?: readonly string[];
  /**
   * Mints to pay with; each must be a 6-decimal USD stablecoin, since budgets count it 1:1 in USD.
   * Default: USDC of each allowed network.
   */
  allowedAssets?: readonly string[];
  /**
   * Send the payment with the first request of a fixed-price route once this client knows the
   * service's payment terms from an earlier 402, saving the 402 round trip. A refused up-front payment
   * (never broadcast) falls back once to the service's quote. Default `true`.
   */
  prepay?: boolean;
  /**
   * Solana JSON-RPC for blockhashes (when a quote carries none), the payer's balance and the chain's
   * genesis (checked before signing) and mint lookups (mints other than USDC). Default:
   * AGENT_ECONOMY_SOLANA_RPC_URL, else the client's `deployment` (its `chain.rpcUrl`), else, for a client
   * whose services all sit at their default ports on `host`, that host's port 8899 (where `npm start`
   * runs its ledger). With none of these a payment fails before signing, saying so: never a guess.
   */
  rpcUrl?: string;
  /** Called with each receipt once a payment settled. Its exceptions are ignored, so a paid result is never lost. */
  onPayment?: (receipt: PaymentReceipt) => void;
  /**
   * How many of the latest receipts `receipts` keeps in memory, so that a long-running agent does not grow by a
   * receipt per call. Sums and budgets count every payment whatever this is, and a `store` keeps every receipt.
   * Default 10,000; `Infinity` keeps them all.
   */
  keepReceipts?: number;
  /**
   * Payment sessions with sellers called often (session.ts): after `after` paid calls to one seller that offers
   * them, open a session with a `depositUsd` deposit and pay by vouchers. On by default (`after` 3, `depositUsd` '1');
   * `false`: off, every call pays by transaction.
   */
  sessions?: SessionOptions | false;
}

/** The client's spend log and budgets: `client.payments`. */
export interface Payments {
  /** The latest settled payments (`keepReceipts` of them, 10,000 by default), oldest first. */
  readonly receipts: readonly PaymentReceipt[];
  /** Payments sent whose outcome is unknown (see PaymentOutcomeUnknownError); they count as spent until resolved. */
  readonly pending: readonly SentPayment[];
  /** USD settled so far, by one service or in total. */
  spentUsd(service?: string): string;
  /** USD settled so far by each service paid, including those whose receipts are no longer kept. */
  spentUsdByService(): Record<string, string>;
  /**
   * USD the budgets still allow (the total, and with `service` that service's cap too), counting
   * payments in flight and pending; undefined when no cap applies. The per-call cap is separate.
   */
  remainingUsd(service?: string): string | undefined;
  /**
   * Settles a pending payment after checking the chain: the transaction id when it settled (it becomes
   * a receipt), null when it did not (its amount returns to the budgets).
   */
  resolve(payment: SentPayment, transaction: string | null): PaymentReceipt | undefined;
  /**
   * Resolves once the store's earlier records are loaded (payments wait for it themselves); rejects when they cannot be
   * read.
   */
  ready(): Promise<void>;
}

/** A spend log and budgets that several clients can share: `createClient({ wallet, payments: shared })`. */
export function createPayments(options: PaymentOptions = {}): Payments {
  return new SpendLog(options);
}

const USDC_BY_NETWORK: Readonly<Record<string, string>> = {
  [SOLANA_MAINNET]: USDC_MAINNET,
  [SOLANA_DEVNET]: USDC_DEVNET,
  [SOLANA_TESTNET]: USDC_DEVNET, // the x402 packages name devnet's mint for testnet too
};
/** Quote fields that change per quote and so are not part of a service's standing terms. */
const PER_QUOTE_EXTRA = ['recentBlockhash', 'lastValidBlockHeight', 'memo'];

function usdOption(name: string, value: string): bigint {
  try {
    return usdToAtomic(value);
  } catch (error) {
    throw new AgentEconomyError(`payments.${name}: ${(error as Error).message}`);
  }
}

/** Every budget but the per-call cap, from the options. */
function capsOf(options: PaymentOptions): Cap[] {
  const caps: Cap[] = [];
  const perService = options.maxPerServiceUsd;
  if (typeof perService === 'string')
    caps.push({ limit: 'perService', amount: usdOption('maxPerServiceUsd', perService), each: 'service' });
  else
    for (const [id, usd] of Object.entries(perService ?? {}))
      if (usd !== undefined)
        caps.push({ limit: 'perService', amount: usdOption(`maxPerServiceUsd.${id}`, usd), service: id });
  if (options.maxTotalUsd !== undefined)
    caps.push({ limit: 'total', amount: usdOption('maxTotalUsd', options.maxTotalUsd) });
  if (options.maxPerHourUsd !== undefined)
    caps.push({ limit: 'hourly', amount: usdOption('maxPerHourUsd', options.maxPerHourUsd), windowMs: HOUR_MS });
  if (options.maxPerDayUsd !== undefined)
    caps.push({ limit: 'daily', amount: usdOption('maxPerDayUsd', options.maxPerDayUsd), windowMs: DAY_MS });
  const perOrigin = options.maxPerOriginUsd;
  if (typeof perOrigin === 'string')
    caps.push({ limit: 'perOrigin', amount: usdOption('maxPerOriginUsd', perOrigin), each: 'origin' });
  else
    for (const [origin, usd] of Object.entries(perOrigin ?? {}))
      caps.push({ limit: 'perOrigin', amount: usdOption(`maxPerOriginUsd.${origin}`, usd), origin: originOf(origin) });
  (options.caps ?? []).forEach((cap, i) => {
    if (cap.window !== undefined && cap.window !== 'hour' && cap.window !== 'day')
      throw new AgentEconomyError(`payments.caps[${i}].window: 'hour' or 'day', not ${String(cap.window)}`);
    caps.push({
      limit: limitOf(cap),
      amount: usdOption(`caps[${i}].usd`, cap.usd),
      ...(cap.window ? { windowMs: cap.window === 'hour' ? HOUR_MS : DAY_MS } : {}),
      ...(cap.service !== undefined ? { service: cap.service } : {}),
      ...(cap.origin !== undefined ? { origin: originOf(cap.origin) } : {}),
    });
  });
  return caps;
}

function envRpcUrl(): string | undefined {
  const env = typeof process === 'undefined' ? undefined : process.env;
  return env?.AGENT_ECONOMY_SOLANA_RPC_URL || undefined;
}

export interface BudgetBreach {
  limit: BudgetLimit;
  /** The cap named for a person, e.g. 'hourly', 'per-service (education)'. */
  cap: string;
  limitUsd: string;
  remainingUsd: string;
}

/** What a reservation is for, as the spend log records it. */
export interface ReserveContext {
  origin?: string;
  payTo?: string;
  paymentId?: string;
}

const newId = () => randomHex(12);
/** A Solana address: base58 of 32 bytes (as @solana/kit's isAddress, without its BigInt arithmetic each payment). */
const isAddress = (text: string) => isBase58OfLength(text, 32);
const atomic = (text: string | undefined) => (text !== undefined && /^\d{1,30}$/.test(text) ? BigInt(text) : undefined);

/** A payment session's deposit held against the budgets: holdDeposit. */
export interface DepositHold {
  /** Whether a voucher of `price` fits in what is held and under the per-call cap. */
  allows(price: bigint): boolean;
  /**
   * Moves a voucher's price out of the hold into a reservation, recorded in the store like any payment: commit it once
   * the seller took the voucher, release it (back into the hold) when it did not.
   */
  reserve(price: bigint, payTo: string): Reservation;
  /** Frees what is left of the deposit (the session closed). */
  release(): void;
}

/** Money held for a payment from before it is built until it settles or is known not to. */
export interface Reservation {
  readonly id: string;
  readonly amount: bigint;
  /** Resolves once the reservation is durable in the store (at once without one): sign only after it. */
  readonly persisted: Promise<void>;
  /** Records that the signed payment is about to leave; resolves once durable: send only after it. */
  sending(payment: SentPayment): Promise<void>;
  /** Records the settled payment; returns its receipt. */
  commit(settled: Omit<PaymentReceipt, 'service' | 'amountUsd' | 'at'>): PaymentReceipt;
  release(): void;
  /** Keeps the money held for a payment whose outcome is unknown, until `resolve`. */
  hold(payment: SentPayment): void;
}

/** What the spend log reads from the chain. */
type ChainReads = GetAccountInfoApi & GetLatestBlockhashApi & IsBlockhashValidApi & GetSignatureStatusesApi;

/** `keepReceipts` unless set: a few megabytes of receipts (under 1 KB each). */
const DEFAULT_KEEP_RECEIPTS = 10_000;
/** How long one read of the latest blockhash serves further payments (one read per call cost each paid call an RPC). */
const BLOCKHASH_REUSE_MS = 2_000;
/** How long one read of a payer's balance, less what it has paid since, serves further payments' preflight. */
const FUNDS_REUSE_MS = 2_000;

export class SpendLog implements Payments {
  readonly receipts: PaymentReceipt[] = [];
  readonly #keepReceipts: number;
  /**
   * Receipts kept, by settlement transaction: a payment reported again is found without reading every receipt. One
   * reported again after `keepReceipts` newer ones (a service's retry answer comes within seconds) would count twice:
   * the safe side for budgets.
   */
  readonly #byTransaction = new Map<string, PaymentReceipt>();
  readonly #pending = new Map<SentPayment, Reservation>();
  readonly #spent = new Map<string, bigint>();
  #spentTotal = 0n;
  /** What the caps count: receipts (net of refunds, at their time), and the reservations and deposits held. */
  readonly #settled: SettledSpends;
  readonly #held = new Set<Spend>();

  readonly #perCall: bigint | undefined;
  readonly #caps: Cap[];
  readonly #payTo: ReadonlySet<string> | undefined;
  /** Asked before each payment is signed. */
  readonly onApprove: ApproveHook | undefined;
  readonly #store: SpendStore | undefined;
  #loaded: Promise<void> | undefined;
  /** Outcome records (receipts, releases) still being written. */
  readonly #writes = new Set<Promise<void>>();
  readonly networks: ReadonlySet<string>;
  readonly #assets: ReadonlySet<string> | undefined;
  readonly prepay: boolean;
  /** Payment sessions (session.ts), when turned on. */
  readonly sessions: SessionOptions | undefined;
  /** Where the chain is read; set by `rpcUrl`, the environment, or the first client's deployment (useRpc). */
  rpcUrl: string | undefined;
  readonly #onPayment: PaymentOptions['onPayment'];

  #rpc: Rpc<ChainReads> | undefined;
  readonly #mints = new Map<string, Promise<MintInfo | string>>();
  /** By payer and asset: what a recent balance read left after the payments built since (FUNDS_REUSE_MS). */
  readonly #funds = new Map<string, { left: bigint; at: number }>();
  /** The latest blockhash as last read, and when: payments within BLOCKHASH_REUSE_MS of each other share one read. */
  #blockhash: { read: Promise<Lifetime>; at: number } | undefined;
  /**
   * A service's standing terms (network, asset, payTo, fee payer, timeout) from its last quote of a fixed-price route,
   * by service and origin. A route priced per request may pay someone else (a market module's seller).
   */
  readonly terms = new Map<string, PaymentRequirements>();
  /**
   * A route's own terms from its last quote, by service, origin and route: a service may pay different wallets by
   * route (the knowledge market: its listing fee to itself, a module's price to the module's seller).
   */
  readonly routeTerms = new Map<string, PaymentRequirements>();
  /**
   * The amount last quoted per route, by service, origin and route: the deployment's price, which may differ from the
   * contract's.
   */
  readonly routePrices = new Map<string, string>();
  /** Routes whose up-front payment was refused on terms that were current: the client stops prepaying them. */
  readonly noPrepay = new Set<string>();

  constructor(options: PaymentOptions, network?: string) {
    this.#perCall =
      options.maxPerCallUsd === false ? undefined : usdOption('maxPerCallUsd', options.maxPerCallUsd ?? '1');
    this.#caps = capsOf(options);
    this.#settled = new SettledSpends(this.#caps.flatMap((cap) => (cap.windowMs === undefined ? [] : [cap.windowMs])));
    this.#payTo = options.allowedPayTo ? new Set(options.allowedPayTo) : undefined;
    this.onApprove = options.onApprove;
    this.#store = options.store;
    this.networks = new Set(options.allowedNetworks ?? [network ?? SOLANA_DEVNET]);
    this.#assets = options.allowedAssets ? new Set(options.allowedAssets) : undefined;
    this.prepay = options.prepay ?? true;
    this.sessions = options.sessions === false ? undefined : (options.sessions ?? {});
    this.rpcUrl = options.rpcUrl ?? envRpcUrl();
    this.#onPayment = options.onPayment;
    const keep = options.keepReceipts ?? DEFAULT_KEEP_RECEIPTS;
    if (!(keep === Infinity || (Number.isSafeInteger(keep) && keep >= 0)))
      throw new AgentEconomyError(`payments.keepReceipts: a whole number of receipts or Infinity, not ${keep}`);
    this.#keepReceipts = keep;
  }

  /** The caller's onApprove verdict: true approves; anything else (false, a throw, kept as `cause`) declines. */
  async approve(approval: PaymentApproval): Promise<true | { cause?: unknown }> {
    if (!this.onApprove) return true;
    try {
      return (await this.onApprove(approval)) === true ? true : {};
    } catch (cause) {
      return { cause };
    }
  }

  get pending(): readonly SentPayment[] {
    return [...this.#pending.keys()];
  }

  spentUsd(service?: string): string {
    return atomicToUsd(service === undefined ? this.#spentTotal : (this.#spent.get(service) ?? 0n));
  }

  spentUsdByService(): Record<string, string> {
    return Object.fromEntries([...this.#spent].map(([service, spent]) => [service, atomicToUsd(spent)]));
  }

  remainingUsd(service?: string): string | undefined {
    const now = Date.now();
    // Without a service: the caps on all spending (total, hourly, daily); with one, that service's too.
    const caps = this.#caps.filter((cap) =>
      service === undefined
        ? cap.service === undefined && cap.origin === undefined && cap.each === undefined
        : cap.origin === undefined && cap.each !== 'origin' && applies(cap, service, undefined),
    );
    if (!caps.length) return undefined;
    const least = caps
      .map((cap) => cap.amount - this.#used(cap, service ?? '', undefined, now))
      .reduce((a, b) => (a < b ? a : b));
    return atomicToUsd(least < 0n ? 0n : least);
  }

  /** What `cap` counts for a payment to (service, origin) at `now`: settled spends and what is held. */
  #used(cap: Cap, service: string, origin: string | undefined, now: number): bigint {
    return this.#settled.used(cap, service, origin, now) + used(cap, service, origin, this.#held, now);
  }

  /** Why `amount` would break a budget, if it would: of several, the one with the least left. */
  breach(service: string, amount: bigint, origin?: string, perCall = true): BudgetBreach | undefined {
    const now = Date.now();
    let worst: (BudgetBreach & { left: bigint }) | undefined;
    const consider = (limit: BudgetLimit, cap: string, total: bigint, spent: bigint) => {
      if (spent + amount <= total) return;
      const left = total > spent ? total - spent : 0n;
      if (!worst || left < worst.left)
        worst = { limit, cap, limitUsd: atomicToUsd(total), remainingUsd: atomicToUsd(left), left };
    };
    if (perCall && this.#perCall !== undefined) consider('perCall', 'per-call', this.#perCall, 0n);
    for (const cap of this.#caps) {
      if (applies(cap, service, origin))
        consider(cap.limit, describe(cap, service, origin), cap.amount, this.#used(cap, service, origin, now));
    }
    if (!worst) return undefined;
    const { left: _, ...breach } = worst;
    return breach;
  }

  /**
   * Holds `amount` against the budgets, or says which one it breaks. Synchronous, so concurrent calls
   * see each other's holds and cannot jointly overspend; with a store, sign only once `persisted` resolves.
   */
  reserve(service: string, amount: bigint, context: ReserveContext = {}): Reservation | BudgetBreach {
    // A call retried with the identifier of a payment still pending is that same payment (the service
    // settles at most one of them): only what exceeds the pending amount is new money.
    const twin = context.paymentId
      ? [...this.#pending].find(([payment]) => payment.paymentId === context.paymentId)?.[1]
      : undefined;
    const breach = this.breach(
      service,
      twin ? (amount > twin.amount ? amount - twin.amount : 0n) : amount,
      context.origin,
    );
    if (breach) return breach;
    return this.#reserve(service, amount, context);
  }

  /** A reservation recorded in the store, budgets already checked. */
  #reserve(service: string, amount: bigint, context: ReserveContext): Reservation {
    const id = newId();
    const persisted = this.#store
      ? this.#store.append({
          type: 'reserve',
          id,
          at: new Date().toISOString(),
          service,
          origin: context.origin ?? '',
          payTo: context.payTo ?? '',
          amount: amount.toString(),
          ...(context.paymentId ? { paymentId: context.paymentId } : {}),
        })
      : Promise.resolve();
    persisted.catch(() => undefined); // the caller awaits it; this only keeps an unawaited failure from going unhandled
    return this.#open(id, service, amount, context, persisted);
  }

  /** A reservation held in memory: a new one, or one a store's records left open. */
  #open(id: string, service: string, amount: bigint, context: ReserveContext, persisted: Promise<void>): Reservation {
    const spend: Spend = { service, origin: context.origin || undefined, amount };
    this.#held.add(spend);
    let open = true;
    let pending: SentPayment | undefined;
    const close = () => {
      if (!open) throw new AgentEconomyError('this payment was already settled or released');
      open = false;
      this.#held.delete(spend);
      if (pending) this.#pending.delete(pending);
    };
    const at = () => new Date().toISOString();
    const reservation: Reservation = {
      id,
      amount,
      persisted,
      sending: async (payment) => {
        await this.#store?.append({ type: 'sent', id, at: at(), payment });
      },
      commit: (settled) => {
        close();
        // A payment left pending (its outcome unknown) that the service now reports under the same
        // identifier is the same logical payment: this receipt accounts for it.
        if (context.paymentId)
          for (const [payment, other] of this.#pending) if (payment.paymentId === context.paymentId) other.release();
        // A service answering a retried payment identifier from its first outcome reports that payment
        // again: it was spent once, and is not counted twice.
        const known = settled.transaction ? this.#byTransaction.get(settled.transaction) : undefined;
        if (known) {
          this.#write({ type: 'release', id, at: at() });
          return known;
        }
        const paid = atomic(settled.amount) ?? amount;
        const receipt: PaymentReceipt = {
          service,
          ...settled,
          amount: paid.toString(),
          amountUsd: atomicToUsd(paid),
          at: at(),
          ...(context.origin ? { origin: context.origin } : {}),
          ...(context.paymentId ? { paymentId: context.paymentId } : {}),
        };
        this.#count(receipt);
        this.#write({ type: 'receipt', id, at: receipt.at, receipt });
        try {
          this.#onPayment?.(receipt);
        } catch {
          // the caller's hook must not turn a paid call into a failure
        }
        return receipt;
      },
      release: () => {
        close();
        this.#write({ type: 'release', id, at: at() });
      },
      hold: (payment) => {
        pending = payment;
        this.#pending.set(payment, reservation);
      },
    };
    return reservation;
  }

  /**
   * Holds a payment session's deposit against the budgets (every cap but the per-call one, which each voucher is held
   * to), or says which it breaks. Each voucher then moves its price from the hold into a reservation recorded in the
   * store like an exact payment (reserve and sent before it leaves, then receipt or release), so a restart counts what
   * was vouched; what is left of the deposit is released when the session closes, or by a restart (its key is gone).
   */
  holdDeposit(service: string, amount: bigint, origin?: string): DepositHold | BudgetBreach {
    const breach = this.breach(service, amount, origin, false);
    if (breach) return breach;
    const held: Spend = { service, origin, amount };
    this.#held.add(held);
    let open = true;
    return {
      allows: (price) => open && price <= held.amount && (this.#perCall === undefined || price <= this.#perCall),
      reserve: (price, payTo) => {
        held.amount = price < held.amount ? held.amount - price : 0n;
        const reservation = this.#reserve(service, price, { ...(origin ? { origin } : {}), payTo });
        return {
          ...reservation,
          release: () => {
            reservation.release();
            if (open) held.amount += price;
          },
        };
      },
      release: () => {
        open = false;
        this.#held.delete(held);
      },
    };
  }

  #count(receipt: PaymentReceipt): void {
    const paid = atomic(receipt.amount) ?? 0n;
    // A refunded payment was given back on chain: it spends what was not refunded (nothing, for a full refund).
    const refunded = atomic(receipt.refund?.amountAtomic) ?? 0n;
    const spent = paid > refunded ? paid - refunded : 0n;
    this.#spent.set(receipt.service, (this.#spent.get(receipt.service) ?? 0n) + spent);
    this.#spentTotal += spent;
    const at = Date.parse(receipt.at);
    this.#settled.add({
      service: receipt.service,
      origin: receipt.origin,
      amount: spent,
      at: Number.isNaN(at) ? Date.now() : at,
    });
    this.receipts.push(receipt);
    if (receipt.transaction && !this.#byTransaction.has(receipt.transaction))
      this.#byTransaction.set(receipt.transaction, receipt);
    // One out for one in (V8 shifts a long array's start in place): the list holds the latest keepReceipts.
    while (this.receipts.length > this.#keepReceipts) {
      const old = this.receipts.shift()!;
      if (old.transaction && this.#byTransaction.get(old.transaction) === old)
        this.#byTransaction.delete(old.transaction);
    }
  }

  /**
   * Appends an outcome record; a failure leaves the payment open in the store, which then counts it as spent: the safe
   * side.
   */
  #write(record: SpendRecord): void {
    if (!this.#store) return;
    const write = this.#store.append(record).catch(() => undefined);
    this.#writes.add(write);
    void write.then(() => this.#writes.delete(write));
  }

  /** Waits for outcome records still being written. */
  async flush(): Promise<void> {
    await Promise.all([...this.#writes]);
  }

  ready(): Promise<void> {
    if (!this.#loaded) {
      this.#loaded = this.#load();
      // A store that could not be read (locked by another process, unreachable) is tried again next time.
      this.#loaded.catch(() => (this.#loaded = undefined));
    }
    return this.#loaded;
  }

  /**
   * Replays the store: receipts count, released payments do not, and a payment sent with no outcome
   * recorded (the process died, or its outcome was unknown) is pending again, counted as spent until
   * `resolve`. A reservation never sent (no `sent` record: the SDK records it before sending) is closed.
   */
  async #load(): Promise<void> {
    if (!this.#store) return;
    const records = await this.#store.load();
    const open = new Map<string, { reserve: Extract<SpendRecord, { type: 'reserve' }>; sent?: SentPayment }>();
    const seen = new Set<string>();
    for (const record of records) {
      if (record.type === 'reserve') open.set(record.id, { reserve: record });
      else if (record.type === 'sent') {
        const entry = open.get(record.id);
        if (entry) entry.sent = record.payment;
      } else {
        open.delete(record.id);
        if (record.type === 'receipt' && !seen.has(record.id)) {
          seen.add(record.id);
          this.#count(record.receipt);
        }
      }
    }
    for (const [id, { reserve, sent }] of open) {
      if (!sent) {
        this.#write({ type: 'release', id, at: new Date().toISOString() });
        continue;
      }
      const context: ReserveContext = {
        origin: reserve.origin,
        payTo: reserve.payTo,
        ...(reserve.paymentId ? { paymentId: reserve.paymentId } : {}),
      };
      this.#open(id, reserve.service, atomic(reserve.amount) ?? 0n, context, Promise.resolve()).hold(sent);
    }
  }

  resolve(payment: SentPayment, transaction: string | null): PaymentReceipt | undefined {
    const reservation = this.#pending.get(payment);
    if (!reservation) throw new AgentEconomyError('this payment is not pending on this client');
    if (transaction === null) {
      reservation.release();
      return undefined;
    }
    const { requirements } = payment;
    return reservation.commit({
      route: payment.route,
      amount: requirements.amount,
      asset: requirements.asset,
      network: requirements.network,
      payTo: requirements.payTo,
      payer: payment.payer,
      transaction,
    });
  }

  /** Why this client would not pay `requirements`, or undefined when it would (budgets aside). */
  refusal(requirements: PaymentRequirements): string | undefined {
    const { scheme, network, asset, payTo, amount } = requirements;
    const label = `${scheme} ${amount} of ${asset} on ${network}`;
    if (scheme !== 'exact') return `${label}: only the exact scheme is supported`;
    if (!network.startsWith('solana:')) return `${label}: only Solana networks are supported`;
    if (!this.networks.has(network))
      return `${label}: network not allowed (allowedNetworks: ${[...this.networks].join(', ')})`;
    const assetAllowed = this.#assets ? this.#assets.has(asset) : USDC_BY_NETWORK[network] === asset;
    if (!assetAllowed) return `${label}: asset not allowed${this.#assets ? '' : ` (default: USDC of the network)`}`;
    if (!isAddress(asset) || !isAddress(payTo)) return `${label}: asset and payTo must be Solana addresses`;
    if (this.#payTo && !this.#payTo.has(payTo)) return `${label}: recipient ${payTo} is not in allowedPayTo`;
    const feePayer = requirements.extra?.feePayer;
    if (typeof feePayer !== 'string' || !isAddress(feePayer))
      return `${label}: no fee payer in extra.feePayer (the service has no facilitator)`;
    if (BigInt(amount) === 0n) return `${label}: a zero amount`;
    return undefined;
  }

  rpc(): Rpc<ChainReads> {
    return (this.#rpc ??= createSolanaRpc(requireRpcUrl(this.rpcUrl)));
  }

  /** The RPC a client derived from its deployment, used when none was configured. */
  useRpc(url: string | undefined): void {
    this.rpcUrl ??= url;
  }

  /**
   * Decimals and token program of a mint: known for USDC, otherwise read once from the chain. A string says why it is
   * unusable.
   */
  async mint(asset: string): Promise<MintInfo | string> {
    const known = KNOWN_MINTS[asset];
    if (known) return known;
    let info = this.#mints.get(asset);
    if (!info) {
      info = fetchMintInfo(this.rpc(), asset);
      this.#mints.set(asset, info);
      // A failed lookup is not cached: the RPC may be back next time.
      info.catch(() => this.#mints.delete(asset));
    }
    let result: MintInfo | string;
    try {
      result = await info;
    } catch (error) {
      throw new SolanaRpcError(
        `could not read mint ${asset} from the Solana RPC at ${this.rpcUrl}: ${(error as Error).message}`,
        { cause: error },
      );
    }
    if (typeof result !== 'string' && result.decimals !== STABLECOIN_DECIMALS) {
      return `${asset} has ${result.decimals} decimals; budgets count only ${STABLECOIN_DECIMALS}-decimal USD stablecoins`;
    }
    return result;
  }

  /**
   * Checks the payer can cover the amount before signing. A balance read within FUNDS_REUSE_MS, less the payments built
   * since, answers without a read when it covers the amount; otherwise `read` asks the chain (and throws
   * InsufficientFundsError when it cannot cover it). A balance that fell meanwhile is the facilitator's to refuse.
   */
  async funds(payer: string, requirements: PaymentRequirements, read: () => Promise<bigint>): Promise<void> {
    const key = `${payer} ${requirements.asset}`;
    const needed = BigInt(requirements.amount);
    const known = this.#funds.get(key);
    if (known && Date.now() - known.at < FUNDS_REUSE_MS && known.left >= needed) {
      known.left -= needed;
      return;
    }
    const at = Date.now();
    const held = await read();
    this.#funds.set(key, { left: held - needed, at });
  }

  /** The quote's blockhash hint when it has one, else the RPC's latest blockhash. */
  async lifetime(extra: Record<string, unknown> | undefined): Promise<Lifetime> {
    const hint = lifetimeHint(extra);
    if (hint) return hint;
    // Each payment carries a random memo, so payments sharing a blockhash still differ; a blockhash stays valid for
    // about a minute, of which a reuse costs at most BLOCKHASH_REUSE_MS.
    const cached = this.#blockhash;
    if (cached && Date.now() - cached.at < BLOCKHASH_REUSE_MS) return cached.read;
    const read = this.rpc()
      .getLatestBlockhash()
      .send()
      .then(
        ({ value }) => ({ blockhash: value.blockhash, lastValidBlockHeight: value.lastValidBlockHeight }),
        (error: unknown) => {
          // A failed read is not reused: the next payment asks again.
          if (this.#blockhash?.read === read) this.#blockhash = undefined;
          throw new SolanaRpcError(
            `could not get a recent blockhash from the Solana RPC at ${this.rpcUrl}: ${(error as Error).message}`,
            { cause: error },
          );
        },
      );
    this.#blockhash = { read, at: Date.now() };
    return read;
  }

  /**
   * Whether a signed payment can never land: its blockhash is no longer valid and the chain has no trace of its
   * signature. Only then is a payment refused as expired paid again: a service's word alone could keep the first
   * one and submit it. False when the chain cannot say.
   */
  async neverLands(blockhash: string, payerSignature: string): Promise<boolean> {
    try {
      const rpc = this.rpc();
      const [valid, statuses] = await Promise.all([
        rpc.isBlockhashValid(blockhash as Blockhash, { commitment: 'processed' }).send(),
        rpc.getSignatureStatuses([toSignature(payerSignature)], { searchTransactionHistory: true }).send(),
      ]);
      return !valid.value && statuses.value[0] === null;
    } catch {
      return false;
    }
  }

  /**
   * Drops the shared blockhash read: a payment built on it was refused as expired (the chain moved on faster than
   * BLOCKHASH_REUSE_MS, e.g. a ledger warped ahead), so the next payment reads a fresh one.
   */
  forgetBlockhash(): void {
    this.#blockhash = undefined;
  }

  /**
   * Remembers the route's own terms and price from a quoted requirement we accepted, and, for a fixed-price route, the
   * service's standing terms.
   */
  remember(key: { service: string; route: string }, requirements: PaymentRequirements, fixedPrice: boolean): void {
    this.routePrices.set(key.route, requirements.amount);
    const extra = Object.fromEntries(
      Object.entries(requirements.extra ?? {}).filter(([name]) => !PER_QUOTE_EXTRA.includes(name)),
    );
    // A seller memo is an invoice for one request: a service that uses them cannot be paid ahead.
    if (typeof requirements.extra?.memo === 'string') {
      this.terms.delete(key.service);
      this.routeTerms.delete(key.route);
    } else {
      const terms = { ...requirements, extra };
      if (fixedPrice) this.terms.set(key.service, terms);
      this.routeTerms.set(key.route, terms);
    }
  }
}
