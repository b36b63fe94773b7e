import {
  NEGOTIATION_AGREEMENT_VALID_HOURS,
  NEGOTIATION_MAX_ROUNDS,
  atomicToUsd,
  type NegotiatedTerms,
  type Negotiation,
  type NegotiationAgreement,
  type NegotiationOffer,
  type NegotiationParty,
  type NegotiationRejection,
  type NegotiationState,
  type NegotiationStats,
  type NegotiationSummary,
} from '@agent-economy/contracts';
import { HttpError, conflict, unprocessable } from '../../runtime/errors';

// The negotiation state machine, as plain functions over plain data: every move takes a negotiation and returns the
// next one, or throws the contract's error. The store persists the result under an optimistic version check.

export type Mode = Negotiation['mode'];

// A negotiation as the domain and the store keep it: the contract's, with money as bigint atomic units and time as Date
// (toNegotiation writes them back as USD strings and ISO times), without what is derived on the way out (standing
// offer, max rounds), and with its version.

export interface StoredOffer extends Omit<NegotiationOffer, 'priceUsd' | 'at'> {
  /** Atomic units. */
  price: bigint;
  at: Date;
}

export interface StoredNegotiation extends Omit<
  Negotiation,
  | 'listPriceUsd'
  | 'floorUsd'
  | 'standingOffer'
  | 'maxRounds'
  | 'offers'
  | 'agreement'
  | 'rejection'
  | 'openedAt'
  | 'updatedAt'
  | 'expiresAt'
> {
  listPrice: bigint;
  floor: bigint | null;
  offers: StoredOffer[];
  agreement:
    | (Omit<NegotiationAgreement, 'priceUsd' | 'acceptedAt' | 'validUntil'> & {
        price: bigint;
        acceptedAt: Date;
        validUntil: Date;
      })
    | null;
  rejection: (Omit<NegotiationRejection, 'at'> & { at: Date }) | null;
  openedAt: Date;
  updatedAt: Date;
  expiresAt: Date;
  /** Optimistic concurrency: bumped by every write; a write that finds another version loses. */
  version: number;
}

/** What the negotiation needs of a knowledge-market module. */
export interface ModuleTerms {
  id: string;
  title: string;
  seller: string;
  price: bigint;
  mode: 'auto' | 'manual' | 'off';
  floor: bigint | null;
}

export const AGREEMENT_VALID_MS = NEGOTIATION_AGREEMENT_VALID_HOURS * 3_600_000;
const usd = atomicToUsd;
const isOpen = (state: NegotiationState) => state === 'open' || state === 'countered';

/** (a + b) / 2 rounded up to the next atomic unit. */
export const midpointUp = (a: bigint, b: bigint): bigint => (a + b + 1n) / 2n;

/** The negotiation as it reads at `now`: an unfinished one past its expiry is expired (since its expiry). */
export function effective(n: StoredNegotiation, now: Date): StoredNegotiation {
  if (!isOpen(n.state) || now.getTime() < n.expiresAt.getTime()) return n;
  return { ...n, state: 'expired', turn: null, updatedAt: n.expiresAt };
}

/** The seller's standing ask: the last seller offer, else the list price. */
export function standingAsk(n: StoredNegotiation): bigint {
  return n.offers.filter((o) => o.by === 'seller').at(-1)?.price ?? n.listPrice;
}

/** The role the caller plays: the seller, or the buyer (the buyer's broker acts for the buyer). */
export function roleOf(n: StoredNegotiation, caller: string): NegotiationParty {
  if (caller === n.seller) return 'seller';
  if (caller === n.buyer || caller === n.broker) return 'buyer';
  throw new HttpError(
    403,
    'not_a_party',
    'Only the buyer, the seller or the broker of a negotiation may see or move it',
  );
}

function assertOpen(n: StoredNegotiation): void {
  if (!isOpen(n.state)) throw conflict('negotiation_closed', `The negotiation is ${n.state}`, { state: n.state });
}

function assertTurn(n: StoredNegotiation, role: NegotiationParty): void {
  if (n.turn !== role) throw conflict('not_your_turn', `It is the ${n.turn}'s turn`, { turn: n.turn });
}

function close(
  n: StoredNegotiation,
  now: Date,
  outcome: Pick<StoredNegotiation, 'state' | 'agreement' | 'rejection'>,
): StoredNegotiation {
  return { ...n, ...outcome, turn: null, updatedAt: now };
}

function agree(
  n: StoredNegotiation,
  price: bigint,
  acceptedBy: NegotiationParty,
  automatic: boolean,
  now: Date,
): StoredNegotiation {
  return close(n, now, {
    state: 'accepted',
    agreement: {
      price,
      acceptedBy,
      automatic,
      acceptedAt: now,
      validUntil: new Date(now.getTime() + AGREEMENT_VALID_MS),
    },
    rejection: null,
  });
}

/**
 * The automatic responder's answer to the buyer's offer P in round k (mode auto): before round 5 it counters with
 * C = max(F, (P + A) / 2 rounded up); in round 5 it accepts P when P ≥ F, else rejects (below_floor).
 */
export function respond(n: StoredNegotiation, now: Date): StoredNegotiation {
  const offer = n.offers.at(-1)!;
  const floor = n.floor ?? n.listPrice;
  const k = n.rounds;
  if (k >= NEGOTIATION_MAX_ROUNDS) {
    if (offer.price >= floor) return agree(n, offer.price, 'seller', true, now);
    return close(n, now, {
      state: 'rejected',
      agreement: null,
      rejection: { by: 'seller', automatic: true, reason: 'below_floor', at: now },
    });
  }
  const ask = standingAsk(n);
  const split = midpointUp(offer.price, ask);
  const price = split > floor ? split : floor;
  const rationale =
    `round ${k}: (offer ${usd(offer.price)} + ask ${usd(ask)}) / 2 = ${usd(split)} (rounded up to 0.000001); ` +
    `counter = max(floor ${usd(floor)}, ${usd(split)}) = ${usd(price)}`;
  const counter: StoredOffer = { round: k, by: 'seller', price, message: null, automatic: true, rationale, at: now };
  return { ...n, offers: [...n.offers, counter], state: 'countered', turn: 'buyer', updatedAt: now };
}

export interface OpenInput {
  id: string;
  module: ModuleTerms;
  buyer: string;
  broker: string | null;
  offer: bigint;
  message: string | null;
  ttlSeconds: number;
}

/** Refusals of an opening that depend only on the module and the parties. */
export function checkOpening(module: ModuleTerms, buyer: string): asserts module is ModuleTerms & { mode: Mode } {
  if (module.mode === 'off')
    throw unprocessable(
      'not_negotiable',
      'The seller sells this module at its list price only (negotiation mode off)',
      { moduleId: module.id },
    );
  if (buyer === module.seller)
    throw unprocessable('own_module', 'The buyer is the module’s seller', { moduleId: module.id });
}

/** A new negotiation with the buyer's opening offer, answered at once where the rules say so. */
export function openNegotiation(input: OpenInput, now: Date): StoredNegotiation {
  const { module } = input;
  checkOpening(module, input.buyer);
  const n: StoredNegotiation = {
    id: input.id,
    moduleId: module.id,
    moduleTitle: module.title,
    buyer: input.buyer,
    seller: module.seller,
    broker: input.broker,
    mode: module.mode,
    state: 'open',
    turn: 'seller',
    listPrice: module.price,
    floor: module.mode === 'auto' ? (module.floor ?? module.price) : null,
    rounds: 1,
    offers: [
      { round: 1, by: 'buyer', price: input.offer, message: input.message, automatic: false, rationale: null, at: now },
    ],
    agreement: null,
    rejection: null,
    openedAt: now,
    updatedAt: now,
    expiresAt: new Date(now.getTime() + input.ttlSeconds * 1000),
    version: 0,
  };
  // The list price is the seller's published offer: meeting it is a deal, at the list price, in either mode.
  if (input.offer >= module.price) return agree(n, module.price, 'seller', true, now);
  return module.mode === 'auto' ? respond(n, now) : n;
}

/** The party in turn answers the standing offer with a new price; moves must converge. */
export function counterOffer(
  n: StoredNegotiation,
  role: NegotiationParty,
  price: bigint,
  message: string | null,
  now: Date,
): StoredNegotiation {
  assertOpen(n);
  assertTurn(n, role);
  const standing = n.offers.at(-1)!;
  if (role === 'seller') {
    if (n.rounds >= NEGOTIATION_MAX_ROUNDS) {
      throw conflict(
        'max_rounds_reached',
        `The buyer made ${NEGOTIATION_MAX_ROUNDS} offers: accept or reject the last one`,
        { rounds: n.rounds },
      );
    }
    const ask = standingAsk(n);
    if (price > ask)
      throw unprocessable('offer_regressed', `A seller may not ask more than before (${usd(ask)})`, {
        previousUsd: usd(ask),
      });
    if (price <= standing.price) {
      throw unprocessable(
        'counter_crosses_offer',
        `The buyer offers ${usd(standing.price)}: accept it rather than ask that or less`,
        { standingUsd: usd(standing.price) },
      );
    }
    const offer: StoredOffer = {
      round: n.rounds,
      by: 'seller',
      price,
      message,
      automatic: false,
      rationale: null,
      at: now,
    };
    return { ...n, offers: [...n.offers, offer], state: 'countered', turn: 'buyer', updatedAt: now };
  }
  const previous = n.offers.filter((o) => o.by === 'buyer').at(-1)!.price;
  if (price < previous)
    throw unprocessable('offer_regressed', `A buyer may not offer less than before (${usd(previous)})`, {
      previousUsd: usd(previous),
    });
  if (price >= standing.price) {
    throw unprocessable(
      'counter_crosses_offer',
      `The seller asks ${usd(standing.price)}: accept it rather than offer that or more`,
      { standingUsd: usd(standing.price) },
    );
  }
  const rounds = n.rounds + 1;
  const offer: StoredOffer = { round: rounds, by: 'buyer', price, message, automatic: false, rationale: null, at: now };
  const next: StoredNegotiation = {
    ...n,
    rounds,
    offers: [...n.offers, offer],
    state: 'countered',
    turn: 'seller',
    updatedAt: now,
  };
  return n.mode === 'auto' ? respond(next, now) : next;
}

/** The party in turn accepts the other side's standing offer. */
export function acceptOffer(
  n: StoredNegotiation,
  role: NegotiationParty,
  expected: bigint | undefined,
  now: Date,
): StoredNegotiation {
  assertOpen(n);
  assertTurn(n, role);
  const standing = n.offers.at(-1)!;
  if (expected !== undefined && expected !== standing.price) {
    throw conflict('offer_changed', `The standing offer is ${usd(standing.price)}, not ${usd(expected)}`, {
      standingUsd: usd(standing.price),
    });
  }
  return agree(n, standing.price, role, false, now);
}

/** Either party walks away before agreement, in turn or not. */
export function rejectNegotiation(
  n: StoredNegotiation,
  role: NegotiationParty,
  reason: string | null,
  now: Date,
): StoredNegotiation {
  assertOpen(n);
  return close(n, now, {
    state: 'rejected',
    agreement: null,
    rejection: { by: role, automatic: false, reason, at: now },
  });
}

const toOffer = (o: StoredOffer): NegotiationOffer => ({
  round: o.round,
  by: o.by,
  priceUsd: usd(o.price),
  message: o.message,
  automatic: o.automatic,
  rationale: o.rationale,
  at: o.at.toISOString(),
});

export function toNegotiation(n: StoredNegotiation): Negotiation {
  const open = isOpen(n.state);
  return {
    id: n.id,
    moduleId: n.moduleId,
    moduleTitle: n.moduleTitle,
    buyer: n.buyer,
    seller: n.seller,
    broker: n.broker,
    mode: n.mode,
    state: n.state,
    turn: open ? n.turn : null,
    listPriceUsd: usd(n.listPrice),
    floorUsd: n.floor === null ? null : usd(n.floor),
    standingOffer: open ? toOffer(n.offers.at(-1)!) : null,
    rounds: n.rounds,
    maxRounds: NEGOTIATION_MAX_ROUNDS,
    offers: n.offers.map(toOffer),
    agreement: n.agreement && {
      priceUsd: usd(n.agreement.price),
      acceptedBy: n.agreement.acceptedBy,
      automatic: n.agreement.automatic,
      acceptedAt: n.agreement.acceptedAt.toISOString(),
      validUntil: n.agreement.validUntil.toISOString(),
    },
    rejection: n.rejection && { ...n.rejection, at: n.rejection.at.toISOString() },
    openedAt: n.openedAt.toISOString(),
    updatedAt: n.updatedAt.toISOString(),
    expiresAt: n.expiresAt.toISOString(),
  };
}

export const toSummary = (n: StoredNegotiation): NegotiationSummary => ({
  id: n.id,
  moduleId: n.moduleId,
  moduleTitle: n.moduleTitle,
  mode: n.mode,
  state: n.state,
  rounds: n.rounds,
  maxRounds: NEGOTIATION_MAX_ROUNDS,
  openedAt: n.openedAt.toISOString(),
  updatedAt: n.updatedAt.toISOString(),
});

export function toTerms(n: StoredNegotiation): NegotiatedTerms {
  if (n.state !== 'accepted' || !n.agreement)
    throw conflict('negotiation_not_accepted', `The negotiation is ${n.state}`, { state: n.state });
  return {
    negotiationId: n.id,
    moduleId: n.moduleId,
    buyer: n.buyer,
    broker: n.broker,
    seller: n.seller,
    priceUsd: usd(n.agreement.price),
    listPriceUsd: usd(n.listPrice),
    acceptedAt: n.agreement.acceptedAt.toISOString(),
    validUntil: n.agreement.validUntil.toISOString(),
  };
}

const round = (x: number, digits: number) => Math.round(x * 10 ** digits) / 10 ** digits;

/**
 * Counts by state and mode; agreement rate (4 decimals), mean rounds of closed ones and mean discount of accepted ones
 * (2 decimals).
 */
export function buildStats(all: StoredNegotiation[], now: Date): NegotiationStats {
  const byState: Record<NegotiationState, number> = { open: 0, countered: 0, accepted: 0, rejected: 0, expired: 0 };
  const byMode = { auto: 0, manual: 0 };
  for (const n of all) {
    byState[n.state] += 1;
    byMode[n.mode] += 1;
  }
  const closed = all.filter((n) => !isOpen(n.state));
  const accepted = all.filter((n) => n.state === 'accepted' && n.agreement);
  const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
  return {
    negotiations: all.length,
    byState,
    byMode,
    agreementRate: closed.length ? round(byState.accepted / closed.length, 4) : null,
    averageRounds: closed.length ? round(mean(closed.map((n) => n.rounds)), 2) : null,
    averageDiscountPercent: accepted.length
      ? round(mean(accepted.map((n) => (Number(n.listPrice - n.agreement!.price) / Number(n.listPrice)) * 100)), 2)
      : null,
    openedLast24h: all.filter((n) => n.openedAt.getTime() > now.getTime() - 86_400_000).length,
    asOf: now.toISOString(),
  };
}

// ---- pages: keyset over (updatedAt, id), newest first ----

export interface PagePosition {
  updatedAt: Date;
  id: string;
}

export const encodeCursor = (p: PagePosition): string =>
  Buffer.from(JSON.stringify({ t: p.updatedAt.toISOString(), id: p.id })).toString('base64url');

export function decodeCursor(cursor: string | undefined): PagePosition | undefined {
  if (cursor === undefined) return undefined;
  let value: { t?: unknown; id?: unknown } | undefined;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    value = undefined;
  }
  const at = typeof value?.t === 'string' ? new Date(value.t) : undefined;
  if (
    !at ||
    Number.isNaN(at.getTime()) ||
    typeof value?.id !== 'string' ||
    !/^neg_[A-Za-z0-9]{16,40}$/.test(value.id)
  ) {
    const message = 'is not a cursor this route issued';
    throw new HttpError(400, 'invalid_request', `Invalid request: query.cursor ${message}`, {
      fields: [{ field: 'query.cursor', message }],
    });
  }
  return { updatedAt: at, id: value.id };
}
