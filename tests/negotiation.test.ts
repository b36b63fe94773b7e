import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usdToAtomic } from '@agent-economy/contracts';
import {
  AuthenticationError,
  BadRequestError,
  ConflictError,
  NotFoundError,
  PermissionDeniedError,
  UnprocessableEntityError,
  createClient,
  walletFromSecretKey,
  type Signer,
} from '@agent-economy/sdk';
import { createKnowledgeMarketApp } from '../servers/src/services/knowledge-market';
import { createNegotiationApp } from '../servers/src/services/negotiation';
import { acceptOffer, effective, midpointUp, rejectNegotiation } from '../servers/src/services/negotiation/domain';
import { negotiationStore } from '../servers/src/services/negotiation/store';
import { loadConfig } from '../servers/src/config';
import { generateWallet } from '../servers/src/solana/keys';
import { startEconomy, type Economy } from './support/economy';
import { startService, type RunningService } from './support/servers';

// Expected prices follow the contract's responder rule by hand: list L, floor F = L × (100 − d) / 100 rounded up,
// counter C = max(F, (P + A) / 2 rounded up to 0.000001), round 5 accepts P ≥ F, else rejects below_floor.

const FREE = { kind: 'fixed', usd: '0' } as const;
const HOUR = 3_600_000;

let economy: Economy;
let market: RunningService;
let service: RunningService;
let seller: Signer, bob: Signer, carol: Signer, gateway: Signer, stranger: Signer, reader: Signer;
let clockOffset = 0;
const modules: Record<'auto' | 'manual' | 'off' | 'cheap', string> = { auto: '', manual: '', off: '', cheap: '' };

const signer = () => walletFromSecretKey(generateWallet().secretKey);
const as = (wallet?: Signer, url = service.url) =>
  createClient({
    baseUrls: { negotiation: url, 'knowledge-market': market.url },
    ...(wallet ? { wallet } : {}),
    payments: false,
    maxRetries: 0,
  });
const fail = <T>(p: Promise<T>) =>
  p.then(
    () => expect.unreachable('expected an error') as never,
    (e) => e,
  );
const fieldsOf = (error: { details?: unknown }) =>
  (error.details as { fields: { field: string }[] }).fields.map((f) => f.field);

async function rowCount(): Promise<number> {
  const row = await service.database.db
    .selectFrom('negotiation_negotiations')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

const moduleBody = {
  description: 'How to read recent prioritization fees and choose a compute-unit price.',
  capabilities: ['fee-estimation'],
  format: 'markdown' as const,
};

beforeAll(async () => {
  economy = await startEconomy();
  [seller, bob, carol, gateway, stranger, reader] = await Promise.all([
    signer(),
    signer(),
    signer(),
    signer(),
    signer(),
    signer(),
  ]);
  await economy.ledger.openTokenAccount(seller.address);
  market = await startService((c) => createKnowledgeMarketApp({ ...c, prices: { publish: FREE, purchase: FREE } }), {
    id: 'knowledge-market',
    rpcUrl: economy.rpcUrl,
  });
  service = await startService(
    (c) =>
      createNegotiationApp(
        { ...c, prices: { open: FREE, counter: FREE } },
        {
          marketUrl: market.url,
          brokers: [gateway.address],
          trustedReaders: [reader.address],
          now: () => new Date(Date.now() + clockOffset),
        },
      ),
    { id: 'negotiation' },
  );
  const publish = (
    title: string,
    priceUsd: string,
    negotiation: { mode: 'auto' | 'manual' | 'off'; maxDiscountPercent?: number },
  ) =>
    as(seller)
      .knowledgeMarket.publish({ body: { ...moduleBody, title, priceUsd, negotiation, content: title } })
      .then((m) => m.id);
  modules.auto = await publish('Priority fees in practice', '0.50', { mode: 'auto', maxDiscountPercent: 20 });
  modules.manual = await publish('Manual haggling guide', '0.50', { mode: 'manual' });
  modules.off = await publish('Fixed price notes', '0.50', { mode: 'off' });
  modules.cheap = await publish('Cheap fee notes', '0.10', { mode: 'auto', maxDiscountPercent: 50 });
});
afterAll(async () => {
  await service?.close();
  await market?.close();
  await economy?.close();
});

describe('the automatic responder', () => {
  it('splits the difference above the floor and accepts a fifth offer at the floor (the contract’s example)', async () => {
    const buyer = await signer();
    const opened = await as(buyer).negotiation.open({
      body: { moduleId: modules.auto, offerUsd: '0.35', message: 'Bulk buyer, fair offer.' },
    });
    expect(opened).toMatchObject({
      moduleId: modules.auto,
      moduleTitle: 'Priority fees in practice',
      buyer: buyer.address,
      seller: seller.address,
      broker: null,
      mode: 'auto',
      state: 'countered',
      turn: 'buyer',
      listPriceUsd: '0.5',
      floorUsd: '0.4',
      rounds: 1,
      maxRounds: 5,
      agreement: null,
      rejection: null,
    });
    expect(opened.offers).toEqual([
      expect.objectContaining({
        round: 1,
        by: 'buyer',
        priceUsd: '0.35',
        message: 'Bulk buyer, fair offer.',
        automatic: false,
        rationale: null,
      }),
      expect.objectContaining({ round: 1, by: 'seller', priceUsd: '0.425', automatic: true }),
    ]);
    expect(opened.offers[1]!.rationale).toContain('(offer 0.35 + ask 0.5) / 2 = 0.425');
    expect(opened.offers[1]!.rationale).toContain('max(floor 0.4, 0.425) = 0.425');
    expect(opened.standingOffer).toEqual(opened.offers[1]);
    expect(Date.parse(opened.expiresAt) - Date.parse(opened.openedAt)).toBe(86_400_000);

    // 0.38 -> max(0.40, 0.4025); 0.40 -> max(0.40, 0.40125); 0.40 again -> max(0.40, 0.400625); fifth 0.40 ≥ F:
    // accepted.
    const expected = [
      ['0.38', '0.4025'],
      ['0.4', '0.40125'],
      ['0.4', '0.400625'],
    ];
    let n = opened;
    for (const [offer, counter] of expected) {
      n = await as(buyer).negotiation.counter({ params: { negotiationId: opened.id }, body: { offerUsd: offer! } });
      expect(n.standingOffer).toMatchObject({ by: 'seller', priceUsd: counter, automatic: true, round: n.rounds });
    }
    expect(n.rounds).toBe(4);
    const done = await as(buyer).negotiation.counter({
      params: { negotiationId: opened.id },
      body: { offerUsd: '0.4' },
    });
    expect(done).toMatchObject({
      state: 'accepted',
      turn: null,
      standingOffer: null,
      rounds: 5,
      agreement: { priceUsd: '0.4', acceptedBy: 'seller', automatic: true },
    });
    expect(Date.parse(done.agreement!.validUntil) - Date.parse(done.agreement!.acceptedAt)).toBe(24 * HOUR);
    expect(done.offers).toHaveLength(9);
    expect(await as(buyer).negotiation.agreement({ params: { negotiationId: opened.id } })).toEqual({
      negotiationId: opened.id,
      moduleId: modules.auto,
      buyer: buyer.address,
      broker: null,
      seller: seller.address,
      priceUsd: '0.4',
      listPriceUsd: '0.5',
      acceptedAt: done.agreement!.acceptedAt,
      validUntil: done.agreement!.validUntil,
    });
  });

  it('rejects a fifth offer below the floor', async () => {
    const buyer = await signer();
    const opened = await as(buyer).negotiation.open({ body: { moduleId: modules.auto, offerUsd: '0.1' } });
    // (0.1 + 0.5) / 2 = 0.3 is below the floor: the counter is the floor.
    expect(opened.standingOffer?.priceUsd).toBe('0.4');
    for (let i = 0; i < 3; i++) {
      const n = await as(buyer).negotiation.counter({
        params: { negotiationId: opened.id },
        body: { offerUsd: '0.1' },
      });
      expect(n.standingOffer?.priceUsd).toBe('0.4');
    }
    const last = await as(buyer).negotiation.counter({
      params: { negotiationId: opened.id },
      body: { offerUsd: '0.2' },
    });
    expect(last).toMatchObject({
      state: 'rejected',
      turn: null,
      rounds: 5,
      agreement: null,
      rejection: { by: 'seller', automatic: true, reason: 'below_floor' },
    });
    const terms = await fail(as(buyer).negotiation.agreement({ params: { negotiationId: opened.id } }));
    expect(terms).toBeInstanceOf(ConflictError);
    expect(terms).toMatchObject({ code: 'negotiation_not_accepted', details: { state: 'rejected' } });
  });

  it('accepts an opening offer at or above the list price at the list price', async () => {
    const buyer = await signer();
    const n = await as(buyer).negotiation.open({ body: { moduleId: modules.auto, offerUsd: '0.6' } });
    expect(n).toMatchObject({
      state: 'accepted',
      rounds: 1,
      agreement: { priceUsd: '0.5', acceptedBy: 'seller', automatic: true },
    });
    expect(n.offers).toHaveLength(1);
  });

  it('rounds the split up to the next 0.000001', async () => {
    expect(midpointUp(1n, 2n)).toBe(2n);
    expect(midpointUp(350_000n, 500_000n)).toBe(425_000n);
    const buyer = await signer();
    // Cheap module: L 0.10, 50 % off gives F 0.05; (0.050001 + 0.1) / 2 = 0.0750005 -> 0.075001.
    const n = await as(buyer).negotiation.open({ body: { moduleId: modules.cheap, offerUsd: '0.050001' } });
    expect(n).toMatchObject({ floorUsd: '0.05', standingOffer: { priceUsd: '0.075001' } });
  });
});

describe('manual negotiation: turns and converging moves', () => {
  it('walks the state machine and refuses every illegal move with its code', async () => {
    const opened = await as(bob).negotiation.open({ body: { moduleId: modules.manual, offerUsd: '0.35' } });
    expect(opened).toMatchObject({
      mode: 'manual',
      state: 'open',
      turn: 'seller',
      floorUsd: null,
      standingOffer: { by: 'buyer', priceUsd: '0.35' },
    });
    const id = opened.id;
    const code = async (p: Promise<unknown>) => {
      const e = await fail(p);
      return `${e.status} ${e.code}`;
    };

    expect(await code(as(bob).negotiation.counter({ params: { negotiationId: id }, body: { offerUsd: '0.4' } }))).toBe(
      '409 not_your_turn',
    );
    expect(await code(as(bob).negotiation.accept({ params: { negotiationId: id }, body: {} }))).toBe(
      '409 not_your_turn',
    );
    expect(
      await code(as(stranger).negotiation.counter({ params: { negotiationId: id }, body: { offerUsd: '0.4' } })),
    ).toBe('403 not_a_party');
    expect(
      await code(as(seller).negotiation.counter({ params: { negotiationId: id }, body: { offerUsd: '0.55' } })),
    ).toBe('422 offer_regressed');
    expect(
      await code(as(seller).negotiation.counter({ params: { negotiationId: id }, body: { offerUsd: '0.35' } })),
    ).toBe('422 counter_crosses_offer');

    const countered = await as(seller).negotiation.counter({
      params: { negotiationId: id },
      body: { offerUsd: '0.45', message: 'Meet me at 0.45.' },
    });
    expect(countered).toMatchObject({
      state: 'countered',
      turn: 'buyer',
      rounds: 1,
      standingOffer: {
        round: 1,
        by: 'seller',
        priceUsd: '0.45',
        message: 'Meet me at 0.45.',
        automatic: false,
        rationale: null,
      },
    });
    expect(
      await code(as(seller).negotiation.counter({ params: { negotiationId: id }, body: { offerUsd: '0.44' } })),
    ).toBe('409 not_your_turn');
    expect(await code(as(bob).negotiation.counter({ params: { negotiationId: id }, body: { offerUsd: '0.3' } }))).toBe(
      '422 offer_regressed',
    );
    expect(await code(as(bob).negotiation.counter({ params: { negotiationId: id }, body: { offerUsd: '0.45' } }))).toBe(
      '422 counter_crosses_offer',
    );

    const second = await as(bob).negotiation.counter({ params: { negotiationId: id }, body: { offerUsd: '0.4' } });
    expect(second).toMatchObject({
      state: 'countered',
      turn: 'seller',
      rounds: 2,
      standingOffer: { round: 2, by: 'buyer', priceUsd: '0.4' },
    });
    expect(
      await code(as(seller).negotiation.counter({ params: { negotiationId: id }, body: { offerUsd: '0.46' } })),
    ).toBe('422 offer_regressed');
    expect(
      await code(as(seller).negotiation.accept({ params: { negotiationId: id }, body: { expectedPriceUsd: '0.41' } })),
    ).toBe('409 offer_changed');

    const accepted = await as(seller).negotiation.accept({
      params: { negotiationId: id },
      body: { expectedPriceUsd: '0.4' },
    });
    expect(accepted).toMatchObject({
      state: 'accepted',
      turn: null,
      standingOffer: null,
      agreement: { priceUsd: '0.4', acceptedBy: 'seller', automatic: false },
    });
    const closed = await fail(
      as(bob).negotiation.counter({ params: { negotiationId: id }, body: { offerUsd: '0.41' } }),
    );
    expect(closed).toMatchObject({ status: 409, code: 'negotiation_closed', details: { state: 'accepted' } });
    expect(await code(as(bob).negotiation.reject({ params: { negotiationId: id }, body: {} }))).toBe(
      '409 negotiation_closed',
    );
    expect(
      (await as(bob).negotiation.get({ params: { negotiationId: id } })).offers.map((o) => `${o.by} ${o.priceUsd}`),
    ).toEqual(['buyer 0.35', 'seller 0.45', 'buyer 0.4']);
  });

  it('lets the seller only accept or reject after the buyer’s fifth offer', async () => {
    const buyer = await signer();
    const { id } = await as(buyer).negotiation.open({ body: { moduleId: modules.manual, offerUsd: '0.1' } });
    for (let round = 2; round <= 5; round++) {
      await as(seller).negotiation.counter({ params: { negotiationId: id }, body: { offerUsd: '0.45' } });
      await as(buyer).negotiation.counter({ params: { negotiationId: id }, body: { offerUsd: `0.1${round}` } });
    }
    const maxed = await fail(
      as(seller).negotiation.counter({ params: { negotiationId: id }, body: { offerUsd: '0.45' } }),
    );
    expect(maxed).toMatchObject({ status: 409, code: 'max_rounds_reached' });
    const rejected = await as(seller).negotiation.reject({
      params: { negotiationId: id },
      body: { reason: 'Too low.' },
    });
    expect(rejected).toMatchObject({
      state: 'rejected',
      rounds: 5,
      rejection: { by: 'seller', automatic: false, reason: 'Too low.' },
    });
  });

  it('lets either party walk away out of turn', async () => {
    const buyer = await signer();
    const { id } = await as(buyer).negotiation.open({ body: { moduleId: modules.manual, offerUsd: '0.2' } });
    const n = await as(buyer).negotiation.reject({ params: { negotiationId: id }, body: {} });
    expect(n).toMatchObject({
      state: 'rejected',
      turn: null,
      rejection: { by: 'buyer', automatic: false, reason: null },
    });
  });

  it('lets only one of two simultaneous moves win', async () => {
    for (let i = 0; i < 3; i++) {
      const buyer = await signer();
      const { id } = await as(buyer).negotiation.open({ body: { moduleId: modules.manual, offerUsd: '0.3' } });
      const results = await Promise.allSettled([
        as(seller).negotiation.accept({ params: { negotiationId: id }, body: {} }),
        as(seller).negotiation.counter({ params: { negotiationId: id }, body: { offerUsd: '0.45' } }),
        as(buyer).negotiation.reject({ params: { negotiationId: id }, body: {} }),
      ]);
      const won = results.filter((r) => r.status === 'fulfilled');
      const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      const final = await as(buyer).negotiation.get({ params: { negotiationId: id } });
      // A counter leaves room for the buyer's reject; an accept or a reject closes it for everyone else.
      if (final.state === 'countered') expect(won).toHaveLength(1);
      expect(won.length).toBeGreaterThanOrEqual(1);
      for (const r of lost) expect(['negotiation_closed', 'not_your_turn']).toContain(r.reason.code);
      const closers = results.filter((r, k) => r.status === 'fulfilled' && k !== 1);
      expect(closers.length).toBeLessThanOrEqual(1);
    }
    // The guard itself: a write decided on a stale read loses, whatever the timing of the requests above.
    const guarded = await as(await signer()).negotiation.open({ body: { moduleId: modules.manual, offerUsd: '0.3' } });
    const store = negotiationStore(service.database.db);
    const read = (await store.get(guarded.id))!;
    const at = new Date();
    expect(await store.save(acceptOffer(effective(read, at), 'seller', undefined, at), read.version)).toBe(true);
    expect(await store.save(rejectNegotiation(effective(read, at), 'buyer', null, at), read.version)).toBe(false);
    expect((await store.get(guarded.id))!.state).toBe('accepted');
    // Two accepts at once: exactly one wins.
    const buyer = await signer();
    const { id } = await as(buyer).negotiation.open({ body: { moduleId: modules.manual, offerUsd: '0.3' } });
    const twice = await Promise.allSettled(
      [0, 1].map(() => as(seller).negotiation.accept({ params: { negotiationId: id }, body: {} })),
    );
    expect(twice.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect((twice.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason.code).toBe(
      'negotiation_closed',
    );
  });
});

describe('opening', () => {
  it('refuses what cannot be negotiated, naming why, and stores nothing', async () => {
    const before = await rowCount();
    const code = async (p: Promise<unknown>) => {
      const e = await fail(p);
      return `${e.status} ${e.code}`;
    };
    expect(await code(as(bob).negotiation.open({ body: { moduleId: 'mod_0000000000000000', offerUsd: '0.3' } }))).toBe(
      '404 module_not_found',
    );
    expect(await code(as(bob).negotiation.open({ body: { moduleId: modules.off, offerUsd: '0.3' } }))).toBe(
      '422 not_negotiable',
    );
    expect(await code(as(seller).negotiation.open({ body: { moduleId: modules.auto, offerUsd: '0.3' } }))).toBe(
      '422 own_module',
    );
    expect(
      await code(
        as(gateway).negotiation.open({ body: { moduleId: modules.auto, offerUsd: '0.3', buyer: seller.address } }),
      ),
    ).toBe('422 own_module');
    expect(await fail(as().negotiation.open({ body: { moduleId: modules.auto, offerUsd: '0.3' } }))).toBeInstanceOf(
      AuthenticationError,
    );
    for (const [field, body] of [
      ['body.offerUsd', { offerUsd: '0.0001' }],
      ['body.offerUsd', { offerUsd: 'free' }],
      ['body.moduleId', { moduleId: 'mod-1' }],
      ['body.ttlSeconds', { ttlSeconds: 30 }],
      ['body.ttlSeconds', { ttlSeconds: 604_801 }],
      ['body.message', { message: '   ' }],
      ['body.message', { message: 'nul \u0000' }],
      ['body.buyer', { buyer: 'someone' }],
      ['body.extra', { extra: 1 }],
    ] as const) {
      const base = { moduleId: modules.auto, offerUsd: '0.3' };
      const error = await fail(as(bob).negotiation.open({ body: { ...base, ...body } as never }));
      expect(error, field).toBeInstanceOf(BadRequestError);
      expect(fieldsOf(error)).toContain(field);
    }
    expect(await rowCount()).toBe(before);
  });

  it('allows one unfinished negotiation per buyer and module', async () => {
    const buyer = await signer();
    const first = await as(buyer).negotiation.open({ body: { moduleId: modules.manual, offerUsd: '0.3' } });
    const again = await fail(as(buyer).negotiation.open({ body: { moduleId: modules.manual, offerUsd: '0.31' } }));
    expect(again).toBeInstanceOf(ConflictError);
    expect(again).toMatchObject({ code: 'negotiation_exists', details: { negotiationId: first.id } });
    await as(buyer).negotiation.reject({ params: { negotiationId: first.id }, body: {} });
    expect((await as(buyer).negotiation.open({ body: { moduleId: modules.manual, offerUsd: '0.31' } })).state).toBe(
      'open',
    );
  });

  it('lets a broker open for a buyer and act for them', async () => {
    const n = await as(gateway).negotiation.open({
      body: { moduleId: modules.manual, offerUsd: '0.3', buyer: carol.address },
    });
    expect(n).toMatchObject({ buyer: carol.address, broker: gateway.address });
    await as(seller).negotiation.counter({ params: { negotiationId: n.id }, body: { offerUsd: '0.45' } });
    const byBroker = await as(gateway).negotiation.counter({
      params: { negotiationId: n.id },
      body: { offerUsd: '0.35' },
    });
    expect(byBroker.standingOffer).toMatchObject({ by: 'buyer', priceUsd: '0.35' });
    expect((await as(carol).negotiation.get({ params: { negotiationId: n.id } })).id).toBe(n.id);
    expect((await fail(as(stranger).negotiation.get({ params: { negotiationId: n.id } }))).code).toBe('not_a_party');
    expect(
      (
        await as(gateway).negotiation.list({ params: { wallet: gateway.address }, query: { role: 'broker' } })
      ).items.map((x) => x.id),
    ).toEqual([n.id]);
    expect(
      (await as(gateway).negotiation.list({ params: { wallet: gateway.address }, query: { role: 'buyer' } })).items,
    ).toEqual([]);
  });

  it('answers 502 market_unavailable when the market does not answer', async () => {
    const cut = await startService(
      (c) => createNegotiationApp({ ...c, prices: { open: FREE } }, { marketUrl: 'http://127.0.0.1:9' }),
      {
        id: 'negotiation',
        database: service.database,
      },
    );
    try {
      const error = await fail(
        as(bob, cut.url).negotiation.open({ body: { moduleId: modules.auto, offerUsd: '0.3' } }),
      );
      expect(error).toMatchObject({ status: 502, code: 'market_unavailable' });
    } finally {
      await cut.stopServer();
    }
  });
});

describe('expiry', () => {
  it('reads an unfinished negotiation past expiresAt as expired, and frees the buyer to open another', async () => {
    const buyer = await signer();
    const n = await as(buyer).negotiation.open({ body: { moduleId: modules.manual, offerUsd: '0.3', ttlSeconds: 60 } });
    expect(Date.parse(n.expiresAt) - Date.parse(n.openedAt)).toBe(60_000);
    clockOffset = 61_000;
    try {
      const read = await as(buyer).negotiation.get({ params: { negotiationId: n.id } });
      expect(read).toMatchObject({ state: 'expired', turn: null, standingOffer: null, updatedAt: n.expiresAt });
      const moved = await fail(as(seller).negotiation.accept({ params: { negotiationId: n.id }, body: {} }));
      expect(moved).toMatchObject({ status: 409, code: 'negotiation_closed', details: { state: 'expired' } });
      expect(
        (
          await as(buyer).negotiation.list({ params: { wallet: buyer.address }, query: { state: 'expired' } })
        ).items.map((x) => x.id),
      ).toEqual([n.id]);
      expect((await as(buyer).negotiation.open({ body: { moduleId: modules.manual, offerUsd: '0.3' } })).state).toBe(
        'open',
      );
    } finally {
      clockOffset = 0;
    }
  });
});

describe('reading', () => {
  it('lists a wallet’s own negotiations by role and state, newest first, in pages', async () => {
    const buyer = await signer();
    const a = await as(buyer).negotiation.open({ body: { moduleId: modules.manual, offerUsd: '0.3' } });
    const b = await as(buyer).negotiation.open({ body: { moduleId: modules.auto, offerUsd: '0.3' } });
    const first = await as(buyer).negotiation.list({ params: { wallet: buyer.address }, query: { limit: 1 } });
    expect(first.items.map((x) => x.id)).toEqual([b.id]);
    const second = await as(buyer).negotiation.list({
      params: { wallet: buyer.address },
      query: { limit: 1, cursor: first.nextCursor! },
    });
    expect(second).toEqual({ items: [expect.objectContaining({ id: a.id })], nextCursor: null });
    expect(
      (await as(buyer).negotiation.list({ params: { wallet: buyer.address }, query: { state: 'open' } })).items.map(
        (x) => x.id,
      ),
    ).toEqual([a.id]);
    expect(
      (await as(buyer).negotiation.list({ params: { wallet: buyer.address }, query: { role: 'seller' } })).items,
    ).toEqual([]);
    const sellerView = await as(seller).negotiation.list({
      params: { wallet: seller.address },
      query: { role: 'seller', limit: 100 },
    });
    expect(sellerView.items.map((x) => x.id)).toEqual(expect.arrayContaining([a.id, b.id]));
    const others = await fail(as(stranger).negotiation.list({ params: { wallet: buyer.address }, query: {} }));
    expect(others).toBeInstanceOf(PermissionDeniedError);
    expect(others.code).toBe('not_your_negotiations');
    const bad = await fail(
      as(buyer).negotiation.list({ params: { wallet: buyer.address }, query: { cursor: 'nope' } }),
    );
    expect(fieldsOf(bad)).toEqual(['query.cursor']);
    expect(
      fieldsOf(
        await fail(
          as(buyer).negotiation.list({ params: { wallet: buyer.address }, query: { role: 'owner' } as never }),
        ),
      ),
    ).toEqual(['query.role']);
  });

  it('shows the public only summaries, searchable by title words', async () => {
    const buyer = await signer();
    const n = await as(buyer).negotiation.open({ body: { moduleId: modules.cheap, offerUsd: '0.06' } });
    const hits = await as().negotiation.search({ query: { q: 'CHEAP notes', limit: 100 } });
    expect(hits.items[0]).toEqual({
      id: n.id,
      moduleId: modules.cheap,
      moduleTitle: 'Cheap fee notes',
      mode: 'auto',
      state: 'countered',
      rounds: 1,
      maxRounds: 5,
      openedAt: n.openedAt,
      updatedAt: n.updatedAt,
    });
    expect(hits.items.every((x) => x.moduleTitle === 'Cheap fee notes')).toBe(true);
    expect((await as().negotiation.search({ query: { q: 'notes 100%' } })).items).toEqual([]);
    expect((await as().negotiation.search({ query: { moduleId: modules.off } })).items).toEqual([]);
    const stateOnly = await as().negotiation.search({ query: { state: 'accepted', limit: 100 } });
    expect(stateOnly.items.length).toBeGreaterThan(0);
    expect(stateOnly.items.every((x) => x.state === 'accepted')).toBe(true);
  });

  it('answers 404 for unknown negotiations and 400 for malformed ids', async () => {
    const missing = await fail(as(bob).negotiation.get({ params: { negotiationId: 'neg_0000000000000000' } }));
    expect(missing).toBeInstanceOf(NotFoundError);
    expect(missing.code).toBe('negotiation_not_found');
    expect(
      (await fail(as(bob).negotiation.agreement({ params: { negotiationId: 'neg_0000000000000000' } }))).code,
    ).toBe('negotiation_not_found');
    expect(
      (await fail(as(bob).negotiation.accept({ params: { negotiationId: 'neg_0000000000000000' }, body: {} }))).code,
    ).toBe('negotiation_not_found');
    expect(fieldsOf(await fail(as(bob).negotiation.get({ params: { negotiationId: 'neg-1' } })))).toEqual([
      'params.negotiationId',
    ]);
    expect(
      fieldsOf(
        await fail(
          as(bob).negotiation.counter({ params: { negotiationId: 'neg_0000000000000000' }, body: { offerUsd: '200' } }),
        ),
      ),
    ).toEqual(['body.offerUsd']);
  });
});

describe('statistics', () => {
  it('counts states and modes and computes the rates by hand', async () => {
    const fresh = await startService(
      (c) => createNegotiationApp({ ...c, prices: { open: FREE, counter: FREE } }, { marketUrl: market.url }),
      { id: 'negotiation' },
    );
    try {
      const client = (w: Signer) => as(w, fresh.url).negotiation;
      const [b1, b2, b3, b4] = await Promise.all([signer(), signer(), signer(), signer()]);
      expect(await client(b1).stats()).toMatchObject({
        negotiations: 0,
        agreementRate: null,
        averageRounds: null,
        averageDiscountPercent: null,
      });
      // Accepted at 0.425 of 0.5 after 1 round (15 % off); accepted at list after 1 round (0 %); rejected after 2
      // rounds; one open.
      const a = await client(b1).open({ body: { moduleId: modules.auto, offerUsd: '0.35' } });
      await client(b1).accept({ params: { negotiationId: a.id }, body: {} });
      await client(b2).open({ body: { moduleId: modules.auto, offerUsd: '0.5' } });
      const r = await client(b3).open({ body: { moduleId: modules.manual, offerUsd: '0.2' } });
      await client(seller).counter({ params: { negotiationId: r.id }, body: { offerUsd: '0.45' } });
      await client(b3).counter({ params: { negotiationId: r.id }, body: { offerUsd: '0.25' } });
      await client(seller).reject({ params: { negotiationId: r.id }, body: {} });
      await client(b4).open({ body: { moduleId: modules.manual, offerUsd: '0.2' } });
      const stats = await client(b1).stats();
      expect(stats).toMatchObject({
        negotiations: 4,
        byState: { open: 1, countered: 0, accepted: 2, rejected: 1, expired: 0 },
        byMode: { auto: 2, manual: 2 },
        agreementRate: 0.6667, // 2 / 3
        averageRounds: 1.33, // (1 + 1 + 2) / 3
        averageDiscountPercent: 7.5, // (15 + 0) / 2
        openedLast24h: 4,
      });
      // Nothing moved since: the same figures, computed once (asOf says when).
      expect(await client(b2).stats()).toEqual(stats);
    } finally {
      await fresh.close();
    }
  });
});

describe('paid through the economy', () => {
  it('charges the opening fee and the counter fee, and nothing for a move refused before the quote', async () => {
    const paid = await economy.startPaidService((c) => createNegotiationApp(c, { marketUrl: market.url }), {
      id: 'negotiation',
    });
    const buyer = await walletFromSecretKey(economy.buyer.secretKey);
    const client = createClient({
      baseUrls: { negotiation: paid.url },
      wallet: buyer,
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    }).negotiation;
    const balance = (a: string) => economy.ledger.tokenBalance(a);
    const [buyerStart, serviceStart] = [balance(buyer.address), balance(paid.context.wallet.address)];
    const n = await client.open({ body: { moduleId: modules.auto, offerUsd: '0.35' } });
    expect(n.standingOffer?.priceUsd).toBe('0.425');
    expect(balance(buyer.address)).toBe(buyerStart - usdToAtomic('0.002'));
    const regressed = await fail(client.counter({ params: { negotiationId: n.id }, body: { offerUsd: '0.3' } }));
    expect(regressed).toBeInstanceOf(UnprocessableEntityError);
    expect(regressed.code).toBe('offer_regressed');
    expect(balance(buyer.address)).toBe(buyerStart - 2_000n);
    const countered = await client.counter({ params: { negotiationId: n.id }, body: { offerUsd: '0.38' } });
    expect(countered.standingOffer?.priceUsd).toBe('0.4025');
    expect(balance(buyer.address)).toBe(buyerStart - 3_000n);
    expect(balance(paid.context.wallet.address)).toBe(serviceStart + 3_000n);
    // Accepting is free.
    await client.accept({ params: { negotiationId: n.id }, body: { expectedPriceUsd: '0.4025' } });
    expect(balance(buyer.address)).toBe(buyerStart - 3_000n);
  });
});

describe('integrity: nobody opens a negotiation in another buyer’s name unless they are a registered broker', () => {
  it('refuses a stranger naming another buyer (403 not_a_broker) before the fee, so the buyer’s own opening is not blocked', async () => {
    const victim = await signer();
    const before = await rowCount();
    const squat = await fail(
      as(stranger).negotiation.open({ body: { moduleId: modules.manual, offerUsd: '0.1', buyer: victim.address } }),
    );
    expect(squat).toBeInstanceOf(PermissionDeniedError);
    expect(squat).toMatchObject({ status: 403, code: 'not_a_broker' });
    expect(await rowCount()).toBe(before);
    // The buyer proves their own wallet and opens freely.
    const own = await as(victim).negotiation.open({ body: { moduleId: modules.manual, offerUsd: '0.3' } });
    expect(own).toMatchObject({ buyer: victim.address, broker: null, state: 'open' });
    // Naming yourself as the buyer is not brokering.
    const other = await signer();
    expect(
      await as(other).negotiation.open({ body: { moduleId: modules.manual, offerUsd: '0.3', buyer: other.address } }),
    ).toMatchObject({ buyer: other.address, broker: null });
  });

  it('is refused before the quote in a paid deployment: the stranger is not charged', async () => {
    // (The economy closes the services it started.)
    const paid = await economy.startPaidService(
      (c) => createNegotiationApp(c, { marketUrl: market.url, brokers: [gateway.address] }),
      { id: 'negotiation' },
    );
    const payer = await walletFromSecretKey(economy.buyer.secretKey);
    const start = economy.ledger.tokenBalance(payer.address);
    const client = createClient({
      baseUrls: { negotiation: paid.url },
      wallet: payer,
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    }).negotiation;
    const error = await fail(client.open({ body: { moduleId: modules.auto, offerUsd: '0.35', buyer: carol.address } }));
    expect(error).toMatchObject({ status: 403, code: 'not_a_broker' });
    expect(economy.ledger.tokenBalance(payer.address)).toBe(start);
  });

  it('records the registered broker in the negotiation and in the agreement the market reads', async () => {
    const buyer = await signer();
    const n = await as(gateway).negotiation.open({
      body: { moduleId: modules.auto, offerUsd: '0.5', buyer: buyer.address },
    });
    expect(n).toMatchObject({ state: 'accepted', buyer: buyer.address, broker: gateway.address });
    expect(await as(gateway).negotiation.agreement({ params: { negotiationId: n.id } })).toMatchObject({
      buyer: buyer.address,
      broker: gateway.address,
      priceUsd: '0.5',
    });
    const own = await as(buyer).negotiation.open({ body: { moduleId: modules.cheap, offerUsd: '0.1' } });
    expect(await as(buyer).negotiation.agreement({ params: { negotiationId: own.id } })).toMatchObject({
      buyer: buyer.address,
      broker: null,
    });
  });

  it('reads the registered brokers from NEGOTIATION_BROKERS and names a bad one', () => {
    const a = generateWallet().address;
    expect(loadConfig([], { NEGOTIATION_BROKERS: ` ${a} ,` }).NEGOTIATION_BROKERS).toEqual([a]);
    expect(loadConfig([], {}).NEGOTIATION_BROKERS).toEqual([]);
    expect(() => loadConfig([], { NEGOTIATION_BROKERS: 'nope' })).toThrow(/NEGOTIATION_BROKERS: "nope" /);
  });
});

describe('privacy: an agreement is shown only to its parties and the trusted readers', () => {
  it('refuses a stranger who found the id in the public search (403 not_a_party), before any state, party or price', async () => {
    const buyer = await signer();
    const deal = await as(buyer).negotiation.open({ body: { moduleId: modules.auto, offerUsd: '0.5' } });
    expect(deal.state).toBe('accepted');
    const pending = await as(buyer).negotiation.open({ body: { moduleId: modules.manual, offerUsd: '0.3' } });

    // The public search names the accepted negotiation, and nothing of its parties or price.
    const found = await as().negotiation.search({ query: { state: 'accepted', limit: 100 } });
    const summary = found.items.find((x) => x.id === deal.id)!;
    expect(summary).toBeDefined();
    expect(Object.keys(summary).sort()).toEqual(
      ['id', 'maxRounds', 'mode', 'moduleId', 'moduleTitle', 'openedAt', 'rounds', 'state', 'updatedAt'].sort(),
    );

    // Anonymous: signing in is required.
    const anonymous = await fail(as().negotiation.agreement({ params: { negotiationId: deal.id } }));
    expect(anonymous).toBeInstanceOf(AuthenticationError);
    expect(anonymous).toMatchObject({ status: 401, code: 'siwx_invalid' });

    // Signed in as a stranger: refused, for an accepted negotiation and an unfinished one alike (no 409 naming the
    // state), and the refusal names no party and no price.
    for (const id of [deal.id, pending.id]) {
      const refused = await fail(as(stranger).negotiation.agreement({ params: { negotiationId: id } }));
      expect(refused).toBeInstanceOf(PermissionDeniedError);
      expect(refused).toMatchObject({ status: 403, code: 'not_a_party' });
      const said = JSON.stringify({ message: refused.message, details: refused.details ?? null });
      for (const secret of [buyer.address, seller.address, '0.5', 'accepted', 'open'])
        expect(said).not.toContain(secret);
    }

    // The parties and a trusted reader read the terms; an unfinished one is still a 409 for them.
    const terms = {
      negotiationId: deal.id,
      buyer: buyer.address,
      seller: seller.address,
      broker: null,
      priceUsd: '0.5',
    };
    for (const wallet of [buyer, seller, reader])
      expect(await as(wallet).negotiation.agreement({ params: { negotiationId: deal.id } })).toMatchObject(terms);
    for (const wallet of [buyer, reader])
      expect(await fail(as(wallet).negotiation.agreement({ params: { negotiationId: pending.id } }))).toMatchObject({
        status: 409,
        code: 'negotiation_not_accepted',
        details: { state: 'open' },
      });
  });

  it('reads the trusted readers from NEGOTIATION_TRUSTED_READERS and names a bad one', () => {
    const a = generateWallet().address;
    expect(loadConfig([], { NEGOTIATION_TRUSTED_READERS: ` ${a} ,` }).NEGOTIATION_TRUSTED_READERS).toEqual([a]);
    expect(loadConfig([], {}).NEGOTIATION_TRUSTED_READERS).toEqual([]);
    expect(() => loadConfig([], { NEGOTIATION_TRUSTED_READERS: 'nope' })).toThrow(
      /NEGOTIATION_TRUSTED_READERS: "nope" /,
    );
  });
});
