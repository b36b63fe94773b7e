import { createSolanaRpc, isAddress, type GetAccountInfoApi, type GetLatestBlockhashApi, type Rpc } from '@solana/kit';
import {
  SOLANA_DEVNET,
  SOLANA_MAINNET,
  SOLANA_TESTNET,
  STABLECOIN_DECIMALS,
  USDC_DEVNET,
  USDC_MAINNET,
  atomicToUsd,
  usdToAtomic,
  type PaymentRequirements,
  type Service,
} from '@agent-economy/contracts';
import { AgentEconomyError, SolanaRpcError } from '../errors';
import { KNOWN_MINTS, fetchMintInfo, lifetimeHint, type Lifetime, type MintInfo } from './exact-svm';
import type { BudgetLimit, PaymentReceipt, SentPayment } from './types';

/** How the client pays x402 quotes: `createClient({ wallet, payments: { … } })`. */
export interface PaymentOptions {
  /** The most one call may cost, USD decimal string. Default `'1'` (as the official x402 client's spend control); `false`: no cap. */
  maxPerCallUsd?: string | false;
  /**
   * The most the client spends per service over its lifetime, USD: one value for every service, or a
   * map by service id (services not in the map are uncapped). Default: no cap.
   */
  maxPerServiceUsd?: string | Partial<Record<Service['id'] | (string & {}), string>>;
  /** The most the client spends over its lifetime, across services, USD. Default: no cap. */
  maxTotalUsd?: string;
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
   * Solana JSON-RPC for blockhashes (when a quote carries none) and mint lookups (mints other than
   * USDC). Default: AGENT_ECONOMY_SOLANA_RPC_URL, else http://127.0.0.1:8899 (the ledger `npm start` runs).
   */
  rpcUrl?: string;
  /** Called with each receipt once a payment settled. Its exceptions are ignored, so a paid result is never lost. */
  onPayment?: (receipt: PaymentReceipt) => void;
}

/** The client's spend log and budgets: `client.payments`. */
export interface Payments {
  /** Every settled payment, oldest first. */
  readonly receipts: readonly PaymentReceipt[];
  /** Payments sent whose outcome is unknown (see PaymentOutcomeUnknownError); they count as spent until resolved. */
  readonly pending: readonly SentPayment[];
  /** USD settled so far, by one service or in total. */
  spentUsd(service?: string): string;
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
}

/** A spend log and budgets that several clients can share: `createClient({ wallet, payments: shared })`. */
export function createPayments(options: PaymentOptions = {}): Payments {
  return new PaymentLedger(options);
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

function envRpcUrl(): string | undefined {
  const env = typeof process === 'undefined' ? undefined : process.env;
  return env?.AGENT_ECONOMY_SOLANA_RPC_URL || undefined;
}

export interface BudgetBreach {
  limit: BudgetLimit;
  limitUsd: string;
  remainingUsd: string;
}

/** Money held for a payment from before it is built until it settles or is known not to. */
export interface Reservation {
  readonly amount: bigint;
  /** Records the settled payment; returns its receipt. */
  commit(settled: Omit<PaymentReceipt, 'service' | 'amountUsd' | 'at'>): PaymentReceipt;
  release(): void;
  /** Keeps the money held for a payment whose outcome is unknown, until `resolve`. */
  hold(payment: SentPayment): void;
}

export class PaymentLedger implements Payments {
  readonly receipts: PaymentReceipt[] = [];
  readonly #pending = new Map<SentPayment, Reservation>();
  readonly #spent = new Map<string, bigint>();
  readonly #held = new Map<string, bigint>();
  #spentTotal = 0n;
  #heldTotal = 0n;

  readonly #perCall: bigint | undefined;
  readonly #perService: bigint | Map<string, bigint> | undefined;
  readonly #total: bigint | undefined;
  readonly networks: ReadonlySet<string>;
  readonly #assets: ReadonlySet<string> | undefined;
  readonly prepay: boolean;
  readonly rpcUrl: string;
  readonly #onPayment: PaymentOptions['onPayment'];

  #rpc: Rpc<GetAccountInfoApi & GetLatestBlockhashApi> | undefined;
  readonly #mints = new Map<string, Promise<MintInfo | string>>();
  /** A service's standing terms (network, asset, payTo, fee payer, timeout) from its last quote, by service and origin. */
  readonly terms = new Map<string, PaymentRequirements>();
  /** The amount last quoted per route, by service, origin and route: the deployment's price, which may differ from the contract's. */
  readonly routePrices = new Map<string, string>();
  /** Routes whose up-front payment was refused on terms that were current: the client stops prepaying them. */
  readonly noPrepay = new Set<string>();

  constructor(options: PaymentOptions, network?: string) {
    this.#perCall = options.maxPerCallUsd === false ? undefined : usdOption('maxPerCallUsd', options.maxPerCallUsd ?? '1');
    const perService = options.maxPerServiceUsd;
    this.#perService =
      perService === undefined
        ? undefined
        : typeof perService === 'string'
          ? usdOption('maxPerServiceUsd', perService)
          : new Map(Object.entries(perService).flatMap(([id, usd]) => (usd === undefined ? [] : [[id, usdOption(`maxPerServiceUsd.${id}`, usd)]])));
    this.#total = options.maxTotalUsd === undefined ? undefined : usdOption('maxTotalUsd', options.maxTotalUsd);
    this.networks = new Set(options.allowedNetworks ?? [network ?? SOLANA_DEVNET]);
    this.#assets = options.allowedAssets ? new Set(options.allowedAssets) : undefined;
    this.prepay = options.prepay ?? true;
    this.rpcUrl = options.rpcUrl ?? envRpcUrl() ?? 'http://127.0.0.1:8899';
    this.#onPayment = options.onPayment;
  }

  get pending(): readonly SentPayment[] {
    return [...this.#pending.keys()];
  }

  spentUsd(service?: string): string {
    return atomicToUsd(service === undefined ? this.#spentTotal : (this.#spent.get(service) ?? 0n));
  }

  #serviceCap(service: string): bigint | undefined {
    return this.#perService instanceof Map ? this.#perService.get(service) : this.#perService;
  }

  #used(service?: string): bigint {
    if (service === undefined) return this.#spentTotal + this.#heldTotal;
    return (this.#spent.get(service) ?? 0n) + (this.#held.get(service) ?? 0n);
  }

  remainingUsd(service?: string): string | undefined {
    const left: bigint[] = [];
    if (this.#total !== undefined) left.push(this.#total - this.#used());
    const cap = service === undefined ? undefined : this.#serviceCap(service);
    if (cap !== undefined) left.push(cap - this.#used(service));
    if (!left.length) return undefined;
    const least = left.reduce((a, b) => (a < b ? a : b));
    return atomicToUsd(least < 0n ? 0n : least);
  }

  /** Why `amount` would break a budget, if it would: of several, the one with the least left. */
  breach(service: string, amount: bigint): BudgetBreach | undefined {
    let worst: (BudgetBreach & { left: bigint }) | undefined;
    const check = (limit: BudgetLimit, cap: bigint | undefined, used: bigint) => {
      if (cap === undefined || used + amount <= cap) return;
      const left = cap > used ? cap - used : 0n;
      if (!worst || left < worst.left) worst = { limit, limitUsd: atomicToUsd(cap), remainingUsd: atomicToUsd(left), left };
    };
    check('perCall', this.#perCall, 0n);
    check('perService', this.#serviceCap(service), this.#used(service));
    check('total', this.#total, this.#used());
    if (!worst) return undefined;
    const { left: _, ...breach } = worst;
    return breach;
  }

  /**
   * Holds `amount` against the budgets, or says which one it breaks. Synchronous, so concurrent calls
   * see each other's holds and cannot jointly overspend.
   */
  reserve(service: string, amount: bigint): Reservation | BudgetBreach {
    const breach = this.breach(service, amount);
    if (breach) return breach;
    this.#hold(service, amount);
    let open = true;
    let pending: SentPayment | undefined;
    const close = () => {
      if (!open) throw new AgentEconomyError('this payment was already settled or released');
      open = false;
      this.#hold(service, -amount);
      if (pending) this.#pending.delete(pending);
    };
    const reservation: Reservation = {
      amount,
      commit: (settled) => {
        close();
        const paid = /^\d{1,30}$/.test(settled.amount) ? BigInt(settled.amount) : amount;
        // A refunded payment was given back on chain: it spends what was not refunded (nothing, for a full refund).
        const refunded = settled.refund && /^\d{1,30}$/.test(settled.refund.amountAtomic) ? BigInt(settled.refund.amountAtomic) : 0n;
        const spent = paid > refunded ? paid - refunded : 0n;
        this.#spent.set(service, (this.#spent.get(service) ?? 0n) + spent);
        this.#spentTotal += spent;
        const receipt: PaymentReceipt = { service, ...settled, amount: paid.toString(), amountUsd: atomicToUsd(paid), at: new Date().toISOString() };
        this.receipts.push(receipt);
        try {
          this.#onPayment?.(receipt);
        } catch {
          // the caller's hook must not turn a paid call into a failure
        }
        return receipt;
      },
      release: close,
      hold: (payment) => {
        pending = payment;
        this.#pending.set(payment, reservation);
      },
    };
    return reservation;
  }

  #hold(service: string, amount: bigint) {
    this.#held.set(service, (this.#held.get(service) ?? 0n) + amount);
    this.#heldTotal += amount;
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
    if (!this.networks.has(network)) return `${label}: network not allowed (allowedNetworks: ${[...this.networks].join(', ')})`;
    const assetAllowed = this.#assets ? this.#assets.has(asset) : USDC_BY_NETWORK[network] === asset;
    if (!assetAllowed) return `${label}: asset not allowed${this.#assets ? '' : ` (default: USDC of the network)`}`;
    if (!isAddress(asset) || !isAddress(payTo)) return `${label}: asset and payTo must be Solana addresses`;
    const feePayer = requirements.extra?.feePayer;
    if (typeof feePayer !== 'string' || !isAddress(feePayer)) return `${label}: no fee payer in extra.feePayer (the service has no facilitator)`;
    if (BigInt(amount) === 0n) return `${label}: a zero amount`;
    return undefined;
  }

  rpc(): Rpc<GetAccountInfoApi & GetLatestBlockhashApi> {
    return (this.#rpc ??= createSolanaRpc(this.rpcUrl));
  }

  /** Decimals and token program of a mint: known for USDC, otherwise read once from the chain. A string says why it is unusable. */
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
      throw new SolanaRpcError(`could not read mint ${asset} from the Solana RPC at ${this.rpcUrl}: ${(error as Error).message}`, { cause: error });
    }
    if (typeof result !== 'string' && result.decimals !== STABLECOIN_DECIMALS) {
      return `${asset} has ${result.decimals} decimals; budgets count only ${STABLECOIN_DECIMALS}-decimal USD stablecoins`;
    }
    return result;
  }

  /** The quote's blockhash hint when it has one, else the RPC's latest blockhash. */
  async lifetime(extra: Record<string, unknown> | undefined): Promise<Lifetime> {
    const hint = lifetimeHint(extra);
    if (hint) return hint;
    try {
      const { value } = await this.rpc().getLatestBlockhash().send();
      return { blockhash: value.blockhash, lastValidBlockHeight: value.lastValidBlockHeight };
    } catch (error) {
      throw new SolanaRpcError(`could not get a recent blockhash from the Solana RPC at ${this.rpcUrl}: ${(error as Error).message}`, { cause: error });
    }
  }

  /** Remembers a service's standing terms and the route's price from a requirement it quoted and we accepted. */
  remember(key: { service: string; route: string }, requirements: PaymentRequirements): void {
    this.routePrices.set(key.route, requirements.amount);
    const extra = Object.fromEntries(Object.entries(requirements.extra ?? {}).filter(([name]) => !PER_QUOTE_EXTRA.includes(name)));
    // A seller memo is an invoice for one request: a service that uses them cannot be paid ahead.
    if (typeof requirements.extra?.memo === 'string') this.terms.delete(key.service);
    else this.terms.set(key.service, { ...requirements, extra });
  }
}
