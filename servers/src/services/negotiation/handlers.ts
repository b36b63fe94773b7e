import { randomBytes } from 'node:crypto';
import { base58Encode, negotiation, usdToAtomic } from '@agent-economy/contracts';
import type { RouterImplementation } from '../../runtime/app';
import { callerOf } from '../../runtime/app';
import { HttpError, conflict, notFound, unavailable } from '../../runtime/errors';
import { recomputed } from '../../runtime/recomputed';
import type { ParsedRequest } from '../../runtime/validation';
import {
  acceptOffer,
  buildStats,
  checkOpening,
  counterOffer,
  decodeCursor,
  effective,
  encodeCursor,
  openNegotiation,
  rejectNegotiation,
  roleOf,
  toNegotiation,
  toSummary,
  toTerms,
  type ModuleTerms,
  type StoredNegotiation,
} from './domain';
import type { NegotiationStore } from './store';

export interface NegotiationDeps {
  store: NegotiationStore;
  /** The module's terms from the knowledge market (404 module_not_found, 502 market_unavailable). */
  module(moduleId: string): Promise<ModuleTerms>;
  /**
   * Wallets allowed to open a negotiation for another buyer (the gateway): NEGOTIATION_BROKERS and `npm start`'s
   * gateway.
   */
  brokers: ReadonlySet<string>;
  /**
   * Wallets besides the parties allowed to read an agreement (the knowledge market, which prices purchases with it):
   * NEGOTIATION_TRUSTED_READERS and `npm start`'s market.
   */
  trustedReaders: ReadonlySet<string>;
  now: () => Date;
}

export interface OpenBody {
  moduleId: string;
  offerUsd: string;
  message?: string;
  buyer?: string;
  ttlSeconds: number;
}

const newId = () => `neg_${base58Encode(randomBytes(16))}`;
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** A message the database could not store is a 400 naming the field, never a 500. */
export function assertStorable(field: string, value: string | undefined): void {
  if (value !== undefined && UNSTORABLE.test(value)) {
    const message = 'must be Unicode text without NUL characters or lone surrogates';
    throw new HttpError(400, 'invalid_request', `Invalid request: ${field} ${message}`, {
      fields: [{ field, message }],
    });
  }
}

const notFoundError = (id: string) => notFound('negotiation_not_found', `No negotiation ${id}`, { negotiationId: id });

export function negotiationLogic(deps: NegotiationDeps) {
  const { store, now } = deps;
  // The preflight and the handler see the same parsed request: one read of the market serves both.
  const modules = new WeakMap<object, Promise<ModuleTerms>>();
  const moduleFor = (request: ParsedRequest | undefined, moduleId: string) => {
    if (!request) return deps.module(moduleId);
    let found = modules.get(request);
    if (!found) {
      found = deps.module(moduleId);
      modules.set(request, found);
    }
    return found;
  };

  /** Everything about an opening that can fail, decided before the fee (again in the handler). */
  async function checkOpen(
    body: OpenBody,
    caller: string,
    request?: ParsedRequest,
  ): Promise<{ module: ModuleTerms; buyer: string; broker: string | null }> {
    assertStorable('body.message', body.message);
    const buyer = body.buyer ?? caller;
    // Only a registered broker speaks for another wallet: anyone else could open (and so block) a buyer's negotiation.
    if (buyer !== caller && !deps.brokers.has(caller)) {
      throw new HttpError(
        403,
        'not_a_broker',
        'Only a registered broker may open a negotiation for another buyer; open it as yourself',
        { caller, buyer },
      );
    }
    const module = await moduleFor(request, body.moduleId);
    checkOpening(module, buyer);
    await store.expireDue(now());
    const existing = await store.unfinished(buyer, module.id);
    if (existing)
      throw conflict('negotiation_exists', 'This buyer already negotiates over this module', {
        negotiationId: existing.id,
      });
    return { module, buyer, broker: buyer === caller ? null : caller };
  }

  /** The negotiation as it reads now, with the caller's role in it. */
  async function load(id: string, caller: string) {
    const stored = await store.get(id);
    if (!stored) throw notFoundError(id);
    const current = effective(stored, now());
    return { stored, current, role: roleOf(current, caller) };
  }

  /**
   * Applies a move under optimistic concurrency: read, decide, write only if nobody wrote in between; the loser
   * decides again on the fresh state (where the winner's move usually makes it a 409).
   */
  async function move(
    id: string,
    caller: string,
    decide: (n: StoredNegotiation, role: 'buyer' | 'seller', at: Date) => StoredNegotiation,
  ) {
    for (let attempt = 0; attempt < 8; attempt++) {
      const { stored, current, role } = await load(id, caller);
      const next = decide(current, role, now());
      if (await store.save(next, stored.version)) return next;
    }
    throw unavailable('negotiation_busy', 'The negotiation is changing too fast; try again', 1);
  }

  return { checkOpen, load, move };
}

// Handlers only translate between the contract and the domain.
export function negotiationHandlers(
  deps: NegotiationDeps,
  logic: ReturnType<typeof negotiationLogic>,
): RouterImplementation<typeof negotiation.router> {
  const { store, now } = deps;
  const { checkOpen, load, move } = logic;
  const statsOf = recomputed<ReturnType<typeof buildStats>>({ maxAgeMs: 60_000 });
  return {
    open: async ({ body, res }) => {
      const caller = callerOf(res);
      const { module, buyer, broker } = await checkOpen(body, caller, res.locals.parsed as ParsedRequest);
      const opened = openNegotiation(
        {
          id: newId(),
          module,
          buyer,
          broker,
          offer: usdToAtomic(body.offerUsd),
          message: body.message ?? null,
          ttlSeconds: body.ttlSeconds,
        },
        now(),
      );
      if (!(await store.insert(opened))) {
        const existing = await store.unfinished(buyer, module.id);
        throw conflict('negotiation_exists', 'This buyer already negotiates over this module', {
          negotiationId: existing?.id,
        });
      }
      return { status: 201, body: toNegotiation(opened) };
    },

    get: async ({ params, res }) => {
      const { current } = await load(params.negotiationId, callerOf(res));
      return { status: 200, body: toNegotiation(current) };
    },

    counter: async ({ params, body, res }) => {
      assertStorable('body.message', body.message);
      const price = usdToAtomic(body.offerUsd);
      const next = await move(params.negotiationId, callerOf(res), (n, role, at) =>
        counterOffer(n, role, price, body.message ?? null, at),
      );
      return { status: 200, body: toNegotiation(next) };
    },

    accept: async ({ params, body, res }) => {
      const expected = body.expectedPriceUsd === undefined ? undefined : usdToAtomic(body.expectedPriceUsd);
      const next = await move(params.negotiationId, callerOf(res), (n, role, at) => acceptOffer(n, role, expected, at));
      return { status: 200, body: toNegotiation(next) };
    },

    reject: async ({ params, body, res }) => {
      assertStorable('body.reason', body.reason);
      const next = await move(params.negotiationId, callerOf(res), (n, role, at) =>
        rejectNegotiation(n, role, body.reason ?? null, at),
      );
      return { status: 200, body: toNegotiation(next) };
    },

    list: async ({ params, query, res }) => {
      if (params.wallet !== callerOf(res))
        throw new HttpError(
          403,
          'not_your_negotiations',
          'You may list only your own negotiations (the path’s wallet must be the signed-in one)',
        );
      const after = decodeCursor(query.cursor);
      await store.expireDue(now());
      const page = await store.list({
        wallet: params.wallet,
        role: query.role,
        ...(query.state ? { state: query.state } : {}),
        limit: query.limit,
        ...(after ? { after } : {}),
      });
      const last = page.items.at(-1);
      return {
        status: 200,
        body: { items: page.items.map(toNegotiation), nextCursor: page.more && last ? encodeCursor(last) : null },
      };
    },

    search: async ({ query }) => {
      const after = decodeCursor(query.cursor);
      await store.expireDue(now());
      const words = query.q ? query.q.split(/\s+/).filter(Boolean) : [];
      const page = await store.list({
        words,
        ...(query.moduleId ? { moduleId: query.moduleId } : {}),
        ...(query.state ? { state: query.state } : {}),
        limit: query.limit,
        ...(after ? { after } : {}),
      });
      const last = page.items.at(-1);
      return {
        status: 200,
        body: { items: page.items.map(toSummary), nextCursor: page.more && last ? encodeCursor(last) : null },
      };
    },

    agreement: async ({ params, res }) => {
      const caller = callerOf(res);
      const stored = await store.get(params.negotiationId);
      if (!stored) throw notFoundError(params.negotiationId);
      // Ids are public (the search lists them): a stranger is refused before learning the state, parties or price.
      const party = caller === stored.buyer || caller === stored.seller || caller === stored.broker;
      if (!party && !deps.trustedReaders.has(caller))
        throw new HttpError(
          403,
          'not_a_party',
          'Only the buyer, the seller or the broker of a negotiation, or a trusted reader (the knowledge market), may ' +
            'read its agreement',
        );
      return { status: 200, body: toTerms(effective(stored, now())) };
    },

    stats: async () => {
      const at = now();
      await store.expireDue(at);
      // A free route: computed again once a negotiation changed, or after a minute (openedLast24h moves with the
      // clock); asOf says when.
      return {
        status: 200,
        body: await statsOf(await store.fingerprint(), at, async () => buildStats(await store.all(), at)),
      };
    },
  };
}
