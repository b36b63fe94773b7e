import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSolanaRpc } from '@solana/kit';
import {
  PAYMENT_REQUIRED_HEADER,
  SOLANA_DEVNET,
  decodeX402Header,
  facilitator as facilitatorContract,
  marketplace as marketplaceContract,
  type DiscoverySettlement,
  type PaymentRequired,
} from '@agent-economy/contracts';
import {
  BadRequestError,
  NotFoundError,
  createClient,
  createServiceClient,
  walletFromSecretKey,
} from '@agent-economy/sdk';
import { createEducationApp } from '../servers/src/services/education';
import { createFacilitatorApp } from '../servers/src/services/facilitator';
import { createMarketplaceApp } from '../servers/src/services/marketplace';
import { generateWallet } from '../servers/src/solana/keys';
import { buildPaymentTransaction } from './support/payments';
import { startEconomy, type Economy } from './support/economy';
import { startService, testDatabase, type RunningService } from './support/servers';
import { migrate } from '../servers/src/db';
import { marketplaceStore, migrations } from '../servers/src/services/marketplace/store';

// The public marketplace API against a real economy: the local ledger, the facilitator, two education deployments
// (two sellers) paid through it by the SDK, and the marketplace reading them all over HTTP.

let economy: Economy;
let second: RunningService;
let market: RunningService;
let replica: RunningService;
let clock = new Date();
const now = () => clock;
const DAY = 86_400_000;

const api = (service: RunningService = market) =>
  createServiceClient(marketplaceContract, service.url, { payments: false, maxRetries: 0 });
const lessonUrl = () => `${economy.education.url}/api/lesson`;

async function buyer() {
  const wallet = await walletFromSecretKey(economy.buyer.secretKey);
  return createClient({
    baseUrls: { education: economy.education.url },
    wallet,
    payments: { rpcUrl: economy.rpcUrl, maxPerCallUsd: '0.10', maxTotalUsd: '1' },
    maxRetries: 0,
  });
}

async function rejection(promise: Promise<unknown>): Promise<any> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

beforeAll(async () => {
  economy = await startEconomy();
  second = await economy.startPaidService(createEducationApp, { id: 'education' });
  economy.sellers.add(second.context.wallet.address);
  const options = {
    serviceUrls: () => ({
      education: economy.education.url,
      'education-2': second.url,
      facilitator: economy.facilitator.url,
      ghost: 'http://127.0.0.1:9',
    }),
    facilitatorUrl: () => economy.facilitator.url,
    now,
  };
  market = await startService((context) => createMarketplaceApp(context, options), { id: 'marketplace' });
  // A second replica on the same database: what one copies, the other must not count again.
  replica = await startService((context) => createMarketplaceApp(context, options), {
    id: 'marketplace',
    database: market.database,
  });
}, 60_000);

afterAll(async () => {
  await replica?.stopServer();
  await market?.close();
  await economy?.close();
});

describe('before any sale', () => {
  it('lists every paid route of the running services, priced from their documents, with zero stats', async () => {
    const { ok, resources } = await api().resources();
    expect(ok).toBe(true);
    const education = economy.education.context.wallet.address;
    const lesson = resources.find((r) => r.resourceUrl === lessonUrl());
    expect(lesson).toEqual({
      resourceUrl: lessonUrl(),
      displayName: 'Full AI-generated lesson',
      description: expect.any(String),
      category: 'education',
      priceUsd: 0.05,
      payTo: education,
      stats: { totalCalls: 0, totalVolumeUsd: 0 },
    });
    // The paid routes of both deployments, none of the free ones (catalog, course), nothing from the ghost.
    const paths = (url: string) =>
      resources
        .filter((r) => r.resourceUrl.startsWith(url))
        .map((r) => new URL(r.resourceUrl).pathname)
        .sort();
    expect(paths(economy.education.url)).toEqual(['/api/exercise', '/api/lesson', '/api/quiz', '/api/tutor']);
    expect(paths(second.url)).toEqual(paths(economy.education.url));
    expect(resources.every((r) => r.payTo === education || r.payTo === second.context.wallet.address)).toBe(true);
  });

  it('lists the sellers with zeros', async () => {
    const page = await api().projects({ query: {} });
    expect(page.items.map((p) => p.payTo).sort()).toEqual(
      [economy.education.context.wallet.address, second.context.wallet.address].sort(),
    );
    for (const project of page.items) {
      expect(project).toMatchObject({
        displayName: 'Education Service',
        category: 'education',
        resourceCount: 4,
        settlements: 0,
        volumeUsd: 0,
        uniqueBuyers: 0,
        lastSettlementAt: null,
      });
    }
  });
});

describe('after the demo wallet buys lessons', () => {
  const seller = () => economy.education.context.wallet.address;
  let sellerBefore: bigint;
  let bought: string;

  beforeAll(async () => {
    sellerBefore = economy.ledger.tokenBalance(seller());
    const client = await buyer();
    const lesson = await client.education.lesson.withResponse({
      body: { courseId: 'tool-use', lessonId: 'function-calling' },
    });
    bought = lesson.payment!.transaction;
    // Two lessons from the second seller, one day later.
    clock = new Date(clock.getTime() + DAY);
    const other = createClient({
      baseUrls: { education: second.url },
      wallet: await walletFromSecretKey(economy.buyer.secretKey),
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    });
    await other.education.lesson({ body: { courseId: 'rag', lessonId: 'chunking' } });
    await other.education.lesson({ body: { courseId: 'rag', lessonId: 'reranking-and-context-assembly' } });
  }, 60_000);

  it('lists the lesson route with one call and 0.05 USD, counted once across replicas', async () => {
    // Both replicas sync at once, twice: a settlement is one row whoever copies it.
    await Promise.all([api().resources(), api(replica).resources(), api().resources(), api(replica).resources()]);
    for (const service of [market, replica]) {
      const { resources } = await api(service).resources();
      expect(resources.find((r) => r.resourceUrl === lessonUrl())!.stats).toEqual({
        totalCalls: 1,
        totalVolumeUsd: 0.05,
      });
      expect(resources.find((r) => r.resourceUrl === `${second.url}/api/lesson`)!.stats).toEqual({
        totalCalls: 2,
        totalVolumeUsd: 0.1,
      });
      // Highest volume first.
      expect(resources[0]!.resourceUrl).toBe(`${second.url}/api/lesson`);
      expect(resources.find((r) => r.resourceUrl === `${economy.education.url}/api/quiz`)!.stats.totalCalls).toBe(0);
    }
    const rows = await market.database.db.selectFrom('marketplace_settlements').select('transaction').execute();
    expect(rows.map((r) => r.transaction)).toContain(bought);
    expect(rows).toHaveLength(3);
  });

  it('seller stats agree with the chain', async () => {
    const received = economy.ledger.tokenBalance(seller()) - sellerBefore;
    expect(received).toBe(50_000n);
    const stats = await api().stats({ params: { payTo: seller() } });
    expect(stats.stats).toEqual({ totalCalls: 1, totalVolumeUsd: Number(received) / 1e6 });
    expect(stats.uniqueBuyers).toBe(1);
    expect(stats.averagePriceUsd).toBe(0.05);
    expect(stats.topResources).toEqual([{ resourceUrl: lessonUrl(), totalCalls: 1, totalVolumeUsd: 0.05 }]);
    expect(stats.timeframes.map((t) => t.timeframe)).toEqual(['1d', '7d', '30d', '90d']);
    expect(stats.lastSettlementAt).not.toBeNull();
    expect(Date.parse(stats.asOf)).toBe(clock.getTime());
  });

  it('seller profile: the descriptor’s name, its origin and resources, the networks paid on', async () => {
    const profile = await api().profile({ params: { payTo: seller() } });
    expect(profile).toMatchObject({
      payTo: seller(),
      displayName: 'Education Service',
      category: 'education',
      websiteUrl: economy.education.url,
      agentCardUrl: `${economy.education.url}/.well-known/agent-card.json`,
      networks: [SOLANA_DEVNET],
    });
    expect(profile.description.length).toBeGreaterThan(20);
    expect(profile.resources).toContainEqual({
      resourceUrl: lessonUrl(),
      displayName: 'Full AI-generated lesson',
      priceUsd: 0.05,
    });
    expect(profile.firstSettlementAt).toBe(
      profile.firstSettlementAt && new Date(profile.firstSettlementAt).toISOString(),
    );
  });

  it('projects: timeframes, sorts and directions', async () => {
    const other = second.context.wallet.address;
    const byVolume = await api().projects({ query: { timeframe: '7d', sort: 'volume', direction: 'desc' } });
    expect(byVolume.items.map((p) => [p.payTo, p.settlements, p.volumeUsd, p.uniqueBuyers])).toEqual([
      [other, 2, 0.1, 1],
      [seller(), 1, 0.05, 1],
    ]);
    const ascending = await api().projects({ query: { timeframe: '7d', sort: 'settlements', direction: 'asc' } });
    expect(ascending.items.map((p) => p.payTo)).toEqual([seller(), other]);
    const recent = await api().projects({ query: { sort: 'recent' } });
    expect(recent.items.map((p) => p.payTo)).toEqual([other, seller()]);
    // Move two days on: the 1d window is empty, the 7d one still holds both.
    clock = new Date(clock.getTime() + 2 * DAY);
    const day = await api().projects({ query: { timeframe: '1d' } });
    expect(day.items.map((p) => [p.settlements, p.volumeUsd])).toEqual([
      [0, 0],
      [0, 0],
    ]);
    expect(day.items.every((p) => p.lastSettlementAt !== null)).toBe(true);
    const stats = await api().stats({ params: { payTo: other } });
    expect(stats.timeframes).toEqual([
      { timeframe: '1d', settlements: 0, volumeUsd: 0, uniqueBuyers: 0 },
      { timeframe: '7d', settlements: 2, volumeUsd: 0.1, uniqueBuyers: 1 },
      { timeframe: '30d', settlements: 2, volumeUsd: 0.1, uniqueBuyers: 1 },
      { timeframe: '90d', settlements: 2, volumeUsd: 0.1, uniqueBuyers: 1 },
    ]);
  });

  it('pages with limit and cursor', async () => {
    const first = await api().projects({ query: { limit: 1, timeframe: '90d' } });
    expect(first.items).toHaveLength(1);
    expect(first.nextCursor).not.toBeNull();
    const rest = await api().projects({ query: { limit: 1, timeframe: '90d', cursor: first.nextCursor! } });
    expect(rest.items).toHaveLength(1);
    expect(rest.items[0]!.payTo).not.toBe(first.items[0]!.payTo);
    expect(rest.nextCursor).toBeNull();
  });
});

describe('what cannot inflate the figures', () => {
  it('a seller paying itself moves nothing between parties and counts for nothing', async () => {
    const self = economy.education.context.wallet;
    await economy.ledger.mintTo(self.address, 100_000n);
    const before = await api().stats({ params: { payTo: self.address } });
    const client = createClient({
      baseUrls: { education: economy.education.url },
      wallet: await walletFromSecretKey(self.secretKey),
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    });
    // The facilitator settles it (a real transfer, to itself); the marketplace copies it and does not count it.
    await client.education.lesson({ body: { courseId: 'rag', lessonId: 'chunking' } });
    const after = await api().stats({ params: { payTo: self.address } });
    expect(after.stats).toEqual(before.stats);
    expect(after.uniqueBuyers).toBe(before.uniqueBuyers);
    const rows = await market.database.db
      .selectFrom('marketplace_settlements')
      .selectAll()
      .where('payer', '=', self.address)
      .execute();
    expect(rows).toHaveLength(1);
    const { resources } = await api().resources();
    expect(resources.find((r) => r.resourceUrl === lessonUrl())!.stats).toEqual({
      totalCalls: 1,
      totalVolumeUsd: 0.05,
    });
  });

  it('a payment to one seller naming another seller’s route does not count for that route', async () => {
    const quote = decodeX402Header(
      (
        await fetch(`${second.url}/api/lesson`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ courseId: 'rag', lessonId: 'chunking' }),
        })
      ).headers.get(PAYMENT_REQUIRED_HEADER)!,
    ) as PaymentRequired;
    const requirements = quote.accepts[0]!;
    const { value: blockhash } = await createSolanaRpc(economy.rpcUrl).getLatestBlockhash().send();
    const transaction = await buildPaymentTransaction({ payer: economy.buyer, requirements, blockhash });
    const settled = await createServiceClient(facilitatorContract, economy.facilitator.url, { payments: false }).settle(
      {
        body: {
          x402Version: 2,
          paymentPayload: {
            x402Version: 2,
            resource: { url: lessonUrl() },
            accepted: requirements,
            payload: { transaction },
          },
          paymentRequirements: requirements,
        },
      },
    );
    expect(settled.success).toBe(true);
    const { resources } = await api().resources();
    expect(resources.find((r) => r.resourceUrl === lessonUrl())!.stats).toEqual({
      totalCalls: 1,
      totalVolumeUsd: 0.05,
    });
    expect(resources.find((r) => r.resourceUrl === `${second.url}/api/lesson`)!.stats).toEqual({
      totalCalls: 2,
      totalVolumeUsd: 0.1,
    });
    // The money did reach the second seller: its own totals say so, under the URL it was paid for.
    const stats = await api().stats({ params: { payTo: second.context.wallet.address } });
    expect(stats.stats).toEqual({ totalCalls: 3, totalVolumeUsd: 0.15 });
    expect(stats.topResources).toContainEqual({ resourceUrl: lessonUrl(), totalCalls: 1, totalVolumeUsd: 0.05 });
  });

  it('a payment below a route’s price naming that route is not a call of it (calls cannot be bought for dust)', async () => {
    // Anyone can settle through the facilitator a transfer of 1 atomic unit to the seller naming its lesson route: the
    // seller was paid (its own totals say so), but nobody bought a 0.05 USD lesson.
    const seller = economy.education.context.wallet.address;
    const before = await api().stats({ params: { payTo: seller } });
    const quote = decodeX402Header(
      (
        await fetch(lessonUrl(), {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ courseId: 'rag', lessonId: 'chunking' }),
        })
      ).headers.get(PAYMENT_REQUIRED_HEADER)!,
    ) as PaymentRequired;
    const requirements = { ...quote.accepts[0]!, amount: '1' };
    expect(requirements.payTo).toBe(seller);
    const { value: blockhash } = await createSolanaRpc(economy.rpcUrl).getLatestBlockhash().send();
    const transaction = await buildPaymentTransaction({ payer: economy.buyer, requirements, blockhash });
    const settled = await createServiceClient(facilitatorContract, economy.facilitator.url, { payments: false }).settle(
      {
        body: {
          x402Version: 2,
          paymentPayload: {
            x402Version: 2,
            resource: { url: lessonUrl() },
            accepted: requirements,
            payload: { transaction },
          },
          paymentRequirements: requirements,
        },
      },
    );
    expect(settled.success).toBe(true);
    const { resources } = await api().resources();
    expect(resources.find((r) => r.resourceUrl === lessonUrl())!.stats).toEqual({
      totalCalls: 1,
      totalVolumeUsd: 0.05,
    });
    const after = await api().stats({ params: { payTo: seller } });
    expect(after.stats.totalCalls).toBe(before.stats.totalCalls + 1);
    expect(after.stats.totalVolumeUsd).toBeCloseTo(before.stats.totalVolumeUsd + 0.000001, 6);
    expect(after.topResources.find((r) => r.resourceUrl === lessonUrl())).toEqual({
      resourceUrl: lessonUrl(),
      totalCalls: 1,
      totalVolumeUsd: 0.05,
    });
  });

  it('a settlement read through another facilitator replica is still counted once', async () => {
    const facilitatorB = await startService(createFacilitatorApp, {
      id: 'facilitator',
      wallet: economy.feePayer,
      rpcUrl: economy.rpcUrl,
      database: economy.facilitator.database,
    });
    const readerB = await startService(
      (context) =>
        createMarketplaceApp(context, {
          serviceUrls: () => ({ education: economy.education.url }),
          facilitatorUrl: () => facilitatorB.url,
          now,
        }),
      { id: 'marketplace', database: market.database },
    );
    try {
      const { resources } = await api(readerB).resources();
      expect(resources.find((r) => r.resourceUrl === lessonUrl())!.stats).toEqual({
        totalCalls: 1,
        totalVolumeUsd: 0.05,
      });
      // Both replicas hand out the same feed: one numbering, shared through the database.
      const feedA = await createServiceClient(facilitatorContract, economy.facilitator.url, {
        payments: false,
      }).settlements({ query: {} });
      const feedB = await createServiceClient(facilitatorContract, facilitatorB.url, { payments: false }).settlements({
        query: {},
      });
      expect(feedB).toEqual(feedA);
    } finally {
      await readerB.stopServer();
      await facilitatorB.stopServer();
    }
  });

  it('a replica whose facilitator does not answer serves the last copy, not an error', async () => {
    const lonely = await startService(
      (context) =>
        createMarketplaceApp(context, {
          serviceUrls: () => ({ education: economy.education.url }),
          facilitatorUrl: () => 'http://127.0.0.1:9',
          now,
        }),
      { id: 'marketplace', database: market.database },
    );
    try {
      const { resources } = await api(lonely).resources();
      expect(resources.find((r) => r.resourceUrl === lessonUrl())!.stats).toEqual({
        totalCalls: 1,
        totalVolumeUsd: 0.05,
      });
    } finally {
      await lonely.stopServer();
    }
  });
});

describe('refusals', () => {
  const fieldOf = (error: any) => (error.details.fields as { field: string }[]).map((f) => f.field);

  it('a bad timeframe, sort, direction, limit or cursor is 400 naming the field', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ timeframe: '2d' }, 'query.timeframe'],
      [{ sort: 'price' }, 'query.sort'],
      [{ direction: 'up' }, 'query.direction'],
      [{ limit: 0 }, 'query.limit'],
      [{ cursor: 'nope' }, 'query.cursor'],
    ];
    for (const [query, field] of cases) {
      const error = await rejection(api().projects({ query: query as never }));
      expect(error, field).toBeInstanceOf(BadRequestError);
      expect(fieldOf(error)).toContain(field);
    }
  });

  it('an unknown payTo is 404 seller_not_found; a malformed one is 400', async () => {
    const stranger = generateWallet().address;
    // Each call starts only when awaited: a second call already in flight would reject unhandled meanwhile.
    for (const call of [
      () => api().profile({ params: { payTo: stranger } }),
      () => api().stats({ params: { payTo: stranger } }),
    ]) {
      const error = await rejection(call());
      expect(error).toBeInstanceOf(NotFoundError);
      expect(error.code).toBe('seller_not_found');
    }
    const error = await rejection(api().stats({ params: { payTo: 'not-a-wallet' } }));
    expect(error).toBeInstanceOf(BadRequestError);
    expect(fieldOf(error)).toContain('params.payTo');
  });
});

describe('the facilitator’s settlement feed', () => {
  const feed = () =>
    createServiceClient(facilitatorContract, economy.facilitator.url, { payments: false, maxRetries: 0 });

  it('pages the confirmed settlements by cursor, oldest first, with their public fields', async () => {
    const all = await feed().settlements({ query: {} });
    // The three sales, the seller's payment to itself, the payment naming another seller's route and the dust payment.
    expect(all.settlements).toHaveLength(6);
    expect(all.settlements[0]).toMatchObject({
      kind: 'x402',
      payTo: economy.education.context.wallet.address,
      payer: economy.buyer.address,
      amount: '50000',
      resource: `${economy.education.url}/api/lesson`,
    });
    const first = await feed().settlements({ query: { limit: 1 } });
    const next = await feed().settlements({ query: { limit: 6, after: first.nextCursor! } });
    expect([...first.settlements, ...next.settlements]).toEqual(all.settlements);
    const empty = await feed().settlements({ query: { after: all.nextCursor! } });
    expect(empty).toEqual({ settlements: [], nextCursor: null });
  });

  it('refuses a bad cursor or limit with 400 naming the field', async () => {
    for (const [query, field] of [
      [{ after: '-1' }, 'query.after'],
      [{ limit: 501 }, 'query.limit'],
    ] as const) {
      const error = await rejection(feed().settlements({ query: query as never }));
      expect(error).toBeInstanceOf(BadRequestError);
      expect((error.details.fields as { field: string }[]).map((f) => f.field)).toContain(field);
    }
  });
});

describe('/llms.txt', () => {
  it('describes what the service sells, its prices and how to pay, from its contract', async () => {
    const response = await fetch(`${economy.education.url}/llms.txt`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/markdown');
    const text = await response.text();
    expect(text.startsWith('# Education Service\n')).toBe(true);
    expect(text).toContain('`POST /api/lesson`: Full AI-generated lesson. Price: 0.05 USD per call.');
    expect(text).toContain('`GET /api/catalog`');
    expect(text).toContain('PAYMENT-SIGNATURE');
    expect(text).toContain(`Pays to: ${economy.education.context.wallet.address}`);
    expect(text).toContain(`${economy.education.url}/openapi.json`);
    expect(text).toContain(`${economy.education.url}/docs`);
  });

  it('the served OpenAPI document names the deployment’s payee on paid operations', async () => {
    const document = (await (await fetch(`${economy.education.url}/openapi.json`)).json()) as any;
    expect(document.paths['/api/lesson'].post['x-payment']).toMatchObject({
      kind: 'fixed',
      usd: '0.05',
      payTo: economy.education.context.wallet.address,
    });
    expect(document.paths['/api/catalog'].get['x-payment'].payTo).toBeUndefined();
  });
});

describe('a refunded settlement', () => {
  it('stops counting once the feed repeats it with its refund, and a refund is never taken back', async () => {
    const database = await testDatabase();
    try {
      await migrate(database.db, 'marketplace', migrations);
      const store = marketplaceStore(database.db);
      const seller = generateWallet().address;
      const sale = (transaction: string, refund: DiscoverySettlement['refund'] = null): DiscoverySettlement => ({
        transaction,
        kind: 'x402',
        payTo: seller,
        payer: generateWallet().address,
        amount: '500000',
        asset: 'mint',
        network: SOLANA_DEVNET,
        resource: 'http://127.0.0.1:1/api/order',
        settledAt: new Date().toISOString(),
        refund,
      });
      const window = { since: new Date(0), until: new Date(Date.now() + 60_000) };
      const totals = async () => (await store.sellerTotals(window, seller))[0];
      const [kept, refunded] = [sale('sig-kept'), sale('sig-refunded')];
      await store.apply('feed', [kept, refunded], 2n, new Date());
      expect(await totals()).toMatchObject({ calls: 2, volume: 1_000_000n });
      await store.apply(
        'feed',
        [{ ...refunded, refund: { transaction: 'sig-refund', amount: '500000' } }],
        3n,
        new Date(),
      );
      expect(await totals()).toMatchObject({ calls: 1, volume: 500_000n });
      // Read again without it (an older page re-read by a replica): still refunded.
      await store.apply('feed', [refunded], 3n, new Date());
      expect(await totals()).toMatchObject({ calls: 1, volume: 500_000n });
    } finally {
      await database.close();
    }
  });
});
