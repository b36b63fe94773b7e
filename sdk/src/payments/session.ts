import { getBase64Decoder, getBase64Encoder, getTransactionDecoder, getTransactionEncoder } from '@solana/kit';
import {
  PAYMENT_RESPONSE_HEADER,
  PAYMENT_SIGNATURE_HEADER,
  SESSION_CLOSE_PATH,
  SESSION_PROTOCOL,
  SESSION_SCHEME,
  atomicToUsd,
  base58Encode,
  decodeX402Header,
  encodeX402Header,
  renewedByOnboarding,
  sessionCloseMessage,
  usdToAtomic,
  voucherRequestMessage,
  type PaymentRequired,
  type PaymentRequirements,
  type RouteMeta,
} from '@agent-economy/contracts';
import type { facilitator } from '@agent-economy/contracts';
import type { ServiceClient } from '../client';
import { AgentEconomyError, ApiError, PaymentRequiredError } from '../errors';
import { send, type HttpResponse } from '../http';
import { generateWallet, type GeneratedWallet, type Signer } from '../wallet';
import type { PaidCall } from './pay';
import type { DepositHold, Payments, SpendLog } from './spend-log';

// Payment sessions, from the buyer's side (issue 14, goal 2). After `after` paid calls to a seller whose
// quotes offer scheme `session`, the client onboards at the facilitator once (a delegation role over its
// stablecoin), opens a session with a deposit (held against the budgets) and pays each further call to that
// seller with a voucher: its session key's signature over the cumulative amount, no transaction. Each voucher
// is counted as spent when signed (within the per-call cap); the seller settles what was vouched on chain at
// close, and the rest of the deposit never leaves the wallet. Calls to one session go one at a time, since a
// seller accepts vouchers in order.

/** `payments.sessions`: when and how the client pays a seller it calls often by vouchers. */
export interface SessionOptions {
  /** Open a session after this many paid calls to one seller; default 3. */
  after?: number;
  /** The session's deposit, USD; default '1' (less when the budgets have less left). */
  depositUsd?: string;
  /** Close a session after this long without a call, ms; default 60 000. */
  idleMs?: number;
  /** The delegation role's spend limit at onboarding, USD; default 10 × the deposit, at most what budgets have left. */
  spendLimitUsd?: string;
  /** The role's lifetime, seconds; default 86 400. */
  roleTtlSeconds?: number;
  /** The facilitator closes a session after this long without a voucher it saw, seconds; default 900. */
  idleTimeoutSeconds?: number;
}

type FacilitatorClient = ServiceClient<(typeof facilitator)['router']>;

interface Session {
  channelId: string;
  key: GeneratedWallet;
  deposit: bigint;
  /** What the seller answered: counted as spent. */
  cumulative: bigint;
  /** The highest cumulative amount signed: no voucher of ours lets the seller claim more. */
  signed: bigint;
  /** The signature over `cumulative`, for a close through the facilitator. */
  lastSignature?: string;
  hold: DepositHold;
  idle?: ReturnType<typeof setTimeout>;
  closing?: Promise<SessionClose>;
}

interface Seller {
  service: string;
  origin: string;
  count: number;
  offer?: PaymentRequirements;
  session?: Session;
  opening?: Promise<void>;
  /** No new session before this time (ms) after one failed to open. */
  retryAt: number;
  /** Calls paid by voucher go one at a time. */
  queue: Promise<unknown>;
}

/** How a session ended, as the client saw it. */
export interface SessionClose {
  channelId: string;
  vouchedAtomic: string;
  depositAtomic: string;
  /** The settlement transaction, null when nothing was vouched (or the seller settled it out of sight). */
  signature: string | null;
  error?: string;
}

async function signIn(wallet: Signer, transaction: string): Promise<string> {
  const tx = getTransactionDecoder().decode(getBase64Encoder().encode(transaction));
  const signature = await wallet.signMessage(new Uint8Array(tx.messageBytes));
  const signed = { ...tx, signatures: { ...tx.signatures, [wallet.address]: signature } };
  return getBase64Decoder().decode(getTransactionEncoder().encode(signed as never));
}

class SessionManager {
  readonly sellers = new Map<string, Seller>();
  readonly closed: SessionClose[] = [];
  #onboarded: Promise<void> | undefined;
  #exitHook = false;

  constructor(
    readonly spendLog: SpendLog,
    readonly wallet: Signer,
    readonly facilitator: FacilitatorClient,
    readonly options: SessionOptions,
  ) {}

  seller(service: string, origin: string): Seller {
    const key = `${service} ${origin}`;
    let seller = this.sellers.get(key);
    if (!seller) this.sellers.set(key, (seller = { service, origin, count: 0, retryAt: 0, queue: Promise.resolve() }));
    return seller;
  }

  /**
   * A fixed-price route's price (the deployment's last quote, else the contract's) when a voucher to this seller can
   * pay it. Not a route priced per request (adaptive, tiered: another request's quote says nothing of this one's), nor
   * one last quoted to another wallet than the session's (the knowledge market pays a module's price to its seller).
   */
  price(call: PaidCall, label: string, seller: Seller): bigint | undefined {
    const meta = (call.route.metadata as RouteMeta | undefined)?.payment;
    if (meta?.kind !== 'fixed') return undefined;
    const route = `${call.service} ${seller.origin} ${label}`;
    const payTo = this.spendLog.routeTerms.get(route)?.payTo;
    if (payTo !== undefined && seller.offer && payTo !== seller.offer.payTo) return undefined;
    const quoted = this.spendLog.routePrices.get(route);
    return quoted ? BigInt(quoted) : usdToAtomic(meta.usd);
  }

  async pay(call: PaidCall, fallback: PayExact): Promise<HttpResponse> {
    const origin = new URL(call.request.url).origin;
    const seller = this.seller(call.service, origin);
    const label = `${call.route.method} ${call.route.path}`;
    const price = this.price(call, label, seller);
    if (seller.session && !seller.session.closing && price) {
      const paid = await this.inTurn(seller, call, price, label);
      if (paid) return paid;
    }
    // Priced per request: the 402's quote names this request's price; with a session open, a voucher pays it.
    const response = await fallback(this.spendLog, call, (quote) => this.quoted(seller, call, label, quote));
    if (
      response.payment?.transaction &&
      seller.offer &&
      !seller.session &&
      !seller.opening &&
      ++seller.count >= (this.options.after ?? 3) &&
      Date.now() >= seller.retryAt
    ) {
      seller.opening = this.open(seller, price ?? BigInt(response.payment.amount), label).finally(
        () => (seller.opening = undefined),
      );
    }
    return response;
  }

  /**
   * Pays a quoted call with a voucher when the quote offers this seller's session (the same wallet, network and
   * asset) and a session is open; undefined when it is to be paid another way.
   */
  quoted(seller: Seller, call: PaidCall, label: string, quote: PaymentRequired): Promise<HttpResponse | undefined> {
    const offer = seller.offer;
    const s = seller.session;
    const element = quote.accepts.find(
      (a) => isSessionOffer(a) && a.payTo === offer?.payTo && a.network === offer.network && a.asset === offer.asset,
    );
    if (!s || s.closing || !element || !/^[1-9]\d*$/.test(element.amount)) return Promise.resolve(undefined);
    return this.inTurn(seller, call, BigInt(element.amount), label);
  }

  /** A voucher for the call, once the seller's calls before it are done: calls to one session go one at a time. */
  inTurn(seller: Seller, call: PaidCall, price: bigint, label: string): Promise<HttpResponse | undefined> {
    const turn = seller.queue.then(() => this.voucher(seller, call, price, label, true));
    seller.queue = turn.catch(() => undefined);
    return turn;
  }

  /** Pays one call with a voucher; undefined when it should be paid another way (the seller refused the session). */
  async voucher(
    seller: Seller,
    call: PaidCall,
    price: bigint,
    label: string,
    retry: boolean,
  ): Promise<HttpResponse | undefined> {
    const s = seller.session;
    if (!s || s.closing) return undefined;
    const next = s.cumulative + price;
    if (next > s.deposit) {
      // Used up: settle it and pay this call another way; a new session opens after `after` more calls.
      void this.close(seller, s);
      return undefined;
    }
    // Budgets before signing: a price over the per-call cap is left to the exact path, which refuses it.
    if (!s.hold.allows(price)) return undefined;
    const accepted: PaymentRequirements = { ...seller.offer!, amount: price.toString() };
    // Recorded like an exact payment, durable before the voucher leaves: a crash mid-call counts it as spent.
    const reservation = s.hold.reserve(price, accepted.payTo);
    try {
      await reservation.persisted;
    } catch (error) {
      reservation.release();
      throw error;
    }
    const cumulativeAmount = next.toString();
    const signature = base58Encode(
      await s.key.signMessage(voucherRequestMessage({ channelId: s.channelId, cumulativeAmount, units: 1 })),
    );
    if (next > s.signed) s.signed = next;
    const header = encodeX402Header({
      x402Version: 2,
      resource: { url: call.request.url },
      accepted,
      payload: { channelId: s.channelId, cumulativeAmount, signer: s.key.address, signature },
    });
    this.arm(seller, s);
    let response: HttpResponse;
    try {
      await reservation.sending({
        service: call.service,
        route: label,
        requirements: accepted,
        payer: this.wallet.address,
        payerSignature: signature,
        memo: '',
        signedTransaction: '',
        prepaid: false,
      });
      response = await send(
        { ...call.request, headers: { ...call.request.headers, [PAYMENT_SIGNATURE_HEADER]: header } },
        call.options,
        call.settings,
        call.perAttempt,
      );
    } catch (error) {
      // Not taken as far as we know; should the seller hold it after all, its next refusal says so (below).
      reservation.release();
      if (error instanceof PaymentRequiredError && error.code.startsWith('session_')) {
        const state = JSON.parse(error.headers['x-session-state'] ?? '{}') as {
          acceptedCumulative?: string;
          state?: string;
        };
        const acceptedCumulative =
          state.acceptedCumulative && /^\d+$/.test(state.acceptedCumulative)
            ? BigInt(state.acceptedCumulative)
            : undefined;
        if (
          (error.code === 'session_voucher_stale' || error.code === 'session_voucher_mismatch') &&
          acceptedCumulative !== undefined &&
          retry &&
          state.state === 'open'
        ) {
          // A seller can hold no voucher above the highest we signed: one that claims more lies (to have the next
          // voucher cover the rest of the deposit). Nothing more is vouched to it; this call is paid another way.
          if (acceptedCumulative > s.signed) {
            void this.close(seller, s);
            return undefined;
          }
          // The seller holds more than we counted (an answer lost on the way back): that much was vouched.
          if (acceptedCumulative > s.cumulative) {
            s.hold.reserve(acceptedCumulative - s.cumulative, accepted.payTo).commit({
              route: label,
              amount: (acceptedCumulative - s.cumulative).toString(),
              asset: accepted.asset,
              network: accepted.network,
              payTo: accepted.payTo,
              payer: this.wallet.address,
              transaction: '',
              session: { channelId: s.channelId, cumulativeAmount: acceptedCumulative.toString() },
            });
            s.cumulative = acceptedCumulative;
            // Signed before (the signature is deterministic): what a close through the facilitator presents.
            s.lastSignature = base58Encode(
              await s.key.signMessage(
                voucherRequestMessage({
                  channelId: s.channelId,
                  cumulativeAmount: acceptedCumulative.toString(),
                  units: 1,
                }),
              ),
            );
          }
          return this.voucher(seller, call, price, label, false);
        }
        void this.close(seller, s);
        return undefined;
      }
      // Refused as a payment on other terms than this request's: nothing was taken, so it is paid another way.
      if (error instanceof PaymentRequiredError && error.code === 'payment_invalid') return undefined;
      throw error;
    }
    const settled = decodeX402Header(response.headers[PAYMENT_RESPONSE_HEADER] ?? '') as
      | {
          success?: unknown;
          payer?: unknown;
          extensions?: { session?: { channelId?: unknown; acceptedCumulative?: unknown } };
        }
      | undefined;
    if (settled?.success !== true || settled.extensions?.session?.channelId !== s.channelId) {
      reservation.release();
      return response;
    }
    s.cumulative = next;
    s.lastSignature = signature;
    const receipt = reservation.commit({
      route: label,
      amount: price.toString(),
      asset: accepted.asset,
      network: accepted.network,
      payTo: accepted.payTo,
      payer: this.wallet.address,
      transaction: '',
      session: { channelId: s.channelId, cumulativeAmount },
    });
    return { ...response, payment: receipt };
  }

  /** Idle timer: closes the session after `idleMs` without a call; never keeps the process alive. */
  arm(seller: Seller, s: Session): void {
    if (s.idle) clearTimeout(s.idle);
    s.idle = setTimeout(() => void this.close(seller, s), this.options.idleMs ?? 60_000);
    (s.idle as { unref?: () => void }).unref?.();
  }

  onboard(deposit: bigint): Promise<void> {
    this.#onboarded ??= (async () => {
      // The role lets the facilitator move this much of the wallet's stablecoin: by default no more than ten deposits,
      // nor more than the budgets have left in all.
      const left = this.spendLog.remainingUsd();
      const tenDeposits = left !== undefined && usdToAtomic(left) < deposit * 10n ? usdToAtomic(left) : deposit * 10n;
      const spendLimit = this.options.spendLimitUsd ? usdToAtomic(this.options.spendLimitUsd) : tenDeposits;
      const body = {
        buyerWallet: this.wallet.address,
        spendLimitAtomic: (spendLimit > deposit ? spendLimit : deposit).toString(),
        ttlSeconds: this.options.roleTtlSeconds ?? 86_400,
      };
      const started = await this.facilitator.onboard({ body });
      if (started.status === 'ready') return;
      if (started.status !== 'transactions_required')
        throw new AgentEconomyError(`onboarding for payment sessions answered ${started.status}`);
      const signedTransactions = await Promise.all(started.transactions.map((t) => signIn(this.wallet, t.transaction)));
      await this.facilitator.confirmOnboarding({ body: { buyerWallet: this.wallet.address, signedTransactions } });
    })();
    this.#onboarded.catch(() => (this.#onboarded = undefined));
    return this.#onboarded;
  }

  async open(seller: Seller, price: bigint, label: string): Promise<void> {
    const offer = seller.offer!;
    // The allowlists (network, asset, payTo) apply as to an exact payment to the same seller.
    if (this.spendLog.refusal({ ...offer, scheme: 'exact' })) return;
    // The deposit fits every cap (per service, per origin, total, hourly, daily), else what the tightest has left.
    const wanted = usdToAtomic(this.options.depositUsd ?? '1');
    const breach = this.spendLog.breach(seller.service, wanted, seller.origin, false);
    const room = breach ? usdToAtomic(breach.remainingUsd) : wanted;
    const deposit = room < wanted ? room : wanted;
    if (deposit < price) return;
    // The caller's onApprove on the deposit: vouchers within it are not asked about again.
    const approval = await this.spendLog.approve({
      service: seller.service,
      route: label,
      url: seller.origin,
      origin: seller.origin,
      requirements: { ...offer, amount: deposit.toString() },
      amountUsd: atomicToUsd(deposit),
      paymentId: undefined,
      quote: undefined,
      prepaid: false,
      sessionDeposit: true,
    });
    if (approval !== true) {
      seller.retryAt = Date.now() + 60_000;
      return;
    }
    const hold = this.spendLog.holdDeposit(seller.service, deposit, seller.origin);
    if (!('reserve' in hold)) return;
    try {
      const key = await generateWallet();
      const openSession = async () => {
        await this.onboard(deposit);
        return this.facilitator.openSession({
          body: {
            buyerWallet: this.wallet.address,
            sellerWallet: seller.offer!.payTo,
            depositAtomic: deposit.toString(),
            sessionKey: key.address,
            idleTimeoutSeconds: this.options.idleTimeoutSeconds ?? 900,
          },
        });
      };
      const opened = await openSession().catch(async (error: unknown) => {
        // The delegation role has moved what it may, or expired: onboarding again grants it afresh, signed by this
        // wallet.
        if (!(error instanceof ApiError && renewedByOnboarding(error.code, error.details))) throw error;
        this.#onboarded = undefined;
        return openSession();
      });
      const session: Session = { channelId: opened.channelId, key, deposit, cumulative: 0n, signed: 0n, hold };
      seller.session = session;
      this.arm(seller, session);
      if (!this.#exitHook && typeof process !== 'undefined' && typeof process.once === 'function') {
        this.#exitHook = true;
        // Best effort: a process whose work is done settles its sessions before it exits.
        process.once('beforeExit', () => void this.closeAll());
      }
    } catch (error) {
      hold.release();
      seller.retryAt = Date.now() + 60_000;
      this.closed.push({
        channelId: '',
        vouchedAtomic: '0',
        depositAtomic: deposit.toString(),
        signature: null,
        error: `could not open a session: ${(error as Error).message}`,
      });
    }
  }

  /**
   * Settles the session: the seller closes it (it holds the vouchers); if it cannot, the facilitator does, given our
   * last voucher.
   */
  close(seller: Seller, s: Session): Promise<SessionClose> {
    s.closing ??= (async () => {
      if (s.idle) clearTimeout(s.idle);
      await seller.queue;
      const result: SessionClose = {
        channelId: s.channelId,
        vouchedAtomic: s.cumulative.toString(),
        depositAtomic: s.deposit.toString(),
        signature: null,
      };
      try {
        if (s.cumulative === 0n) {
          await this.facilitator.closeSession({ body: { channelId: s.channelId } });
        } else {
          const signature = base58Encode(await s.key.signMessage(sessionCloseMessage(s.channelId)));
          const answer = await fetch(
            `${seller.origin}${(seller.offer?.extra?.close as string | undefined) ?? SESSION_CLOSE_PATH}`,
            {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ channelId: s.channelId, signature }),
            },
          ).catch((error: unknown) => error as Error);
          if (answer instanceof Response && answer.ok) {
            const body = (await answer.json()) as { settlement?: { signature?: string | null } };
            result.signature = body.settlement?.signature ?? null;
          } else if (!(answer instanceof Response) || answer.status !== 503) {
            // The seller is gone: our last voucher settles the same amount through the facilitator.
            await this.facilitator
              .signVoucher({
                body: {
                  channelId: s.channelId,
                  cumulativeAmount: result.vouchedAtomic,
                  units: 1,
                  signer: s.key.address,
                  signature: s.lastSignature!,
                },
              })
              .catch((error: unknown) => {
                if (!(error instanceof ApiError && error.code === 'amount_not_monotonic')) throw error;
              });
            const closed = await this.facilitator.closeSession({ body: { channelId: s.channelId } });
            result.signature = closed.settlement.signature;
          } else {
            result.error = 'the seller is still settling the session';
          }
        }
      } catch (error) {
        result.error = (error as Error).message;
      } finally {
        s.hold.release();
        if (seller.session === s) seller.session = undefined;
        seller.count = 0;
        this.closed.push(result);
      }
      return result;
    })();
    return s.closing;
  }

  async closeAll(): Promise<SessionClose[]> {
    await Promise.all([...this.sellers.values()].map((seller) => seller.opening));
    return Promise.all(
      [...this.sellers.values()].flatMap((seller) => (seller.session ? [this.close(seller, seller.session)] : [])),
    );
  }

  noteQuote(service: string, origin: string, quote: PaymentRequired): void {
    const offer = quote.accepts.find(isSessionOffer);
    if (offer) this.seller(service, origin).offer = offer;
  }
}

/** A quote's element offering a payment session in the voucher format this client speaks. */
const isSessionOffer = (a: PaymentRequirements) =>
  a.scheme === SESSION_SCHEME && a.extra?.protocol === SESSION_PROTOCOL;

const managers = new WeakMap<SpendLog, SessionManager>();

/** Turns sessions on for a spend log and the wallet that pays through it (createClient does this). */
export function enableSessions(
  spendLog: SpendLog,
  wallet: Signer,
  facilitatorClient: FacilitatorClient,
  options: SessionOptions,
): void {
  if (!managers.has(spendLog)) managers.set(spendLog, new SessionManager(spendLog, wallet, facilitatorClient, options));
}

/** The exact path (sendPaying); `byVoucher`, given the 402's quote, may pay it by voucher instead. */
type PayExact = (
  spendLog: SpendLog,
  call: PaidCall,
  byVoucher?: (quote: PaymentRequired) => Promise<HttpResponse | undefined>,
) => Promise<HttpResponse>;

/** Pays a call by voucher when a session with its seller is open, else by `fallback` (the exact path). */
export function payWithSessions(spendLog: SpendLog, call: PaidCall, fallback: PayExact): Promise<HttpResponse> {
  const manager = managers.get(spendLog);
  if (!manager || manager.wallet.address !== call.wallet.address) return fallback(spendLog, call);
  return manager.pay(call, fallback);
}

/** Remembers a seller's session offer from a quote (the exact path calls it on every 402). */
export function noteQuote(spendLog: SpendLog, service: string, url: string, quote: PaymentRequired): void {
  managers.get(spendLog)?.noteQuote(service, new URL(url).origin, quote);
}

/** Closes every open session of the spend log (client.close()); resolves with how each ended. */
export async function closeSessions(spendLog: SpendLog): Promise<SessionClose[]> {
  return (await managers.get(spendLog)?.closeAll()) ?? [];
}

/** Sessions the spend log has closed so far, and the open ones (channel, vouched, deposit). */
export function sessionsOf(payments: Payments): {
  open: { channelId: string; vouchedAtomic: string; depositAtomic: string }[];
  closed: readonly SessionClose[];
} {
  const manager = managers.get(payments as SpendLog);
  if (!manager) return { open: [], closed: [] };
  const open = [...manager.sellers.values()].flatMap((s) =>
    s.session
      ? [
          {
            channelId: s.session.channelId,
            vouchedAtomic: s.session.cumulative.toString(),
            depositAtomic: s.session.deposit.toString(),
          },
        ]
      : [],
  );
  return { open, closed: manager.closed };
}
