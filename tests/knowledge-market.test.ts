import { createHash } from 'node:crypto';
import axios, { AxiosHeaders } from 'axios';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usdToAtomic } from '@agent-economy/contracts';
import {
  AuthenticationError,
  BadRequestError,
  ConflictError,
  NotFoundError,
  PaymentRequiredError,
  PermissionDeniedError,
  UnprocessableEntityError,
  createClient,
  sessionsOf,
  walletFromSecretKey,
  type Signer,
} from '@agent-economy/sdk';
import { createKnowledgeMarketApp } from '../servers/src/services/knowledge-market';
import { createNegotiationApp } from '../servers/src/services/negotiation';
import { generateWallet } from '../servers/src/solana/keys';
import { startEconomy, type Economy } from './support/economy';
import { startService, type RunningService } from './support/servers';

// Values below are worked out by hand: SHA-256 with node:crypto, floors as price × (100 − d) / 100 rounded up,
// ratings as means to two decimals, BM25 with k1 = 1.2 and b = 0.75.

const FREE = { kind: 'fixed', usd: '0' } as const;
const DAY = 86_400_000;

let economy: Economy;
let market: RunningService;
let negotiations: RunningService;
let alice: Signer, bob: Signer, carol: Signer, dave: Signer;

const signer = () => walletFromSecretKey(generateWallet().secretKey);
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
/** A client that proves `wallet` and never pays (the test deployment charges nothing). */
const as = (wallet?: Signer, marketUrl = market.url) =>
  createClient({
    baseUrls: { 'knowledge-market': marketUrl, negotiation: negotiations.url },
    ...(wallet ? { wallet } : {}),
    payments: false,
    maxRetries: 0,
  });
const fail = <T>(p: Promise<T>) =>
  p.then(
    () => expect.unreachable('expected an error') as never,
    (e) => e,
  );

async function countRows(table: string): Promise<number> {
  const row = await market.database.db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

const baseModule = {
  title: 'Solana priority fees in practice',
  description: 'How to read recent prioritization fees and choose a compute-unit price that lands.',
  tags: ['solana', 'fees'],
  capabilities: ['fee-estimation', 'transaction-landing'],
  priceUsd: '0.50',
  format: 'markdown' as const,
  content: '# Priority fees\n\nTake the 75th percentile of getRecentPrioritizationFees — café.\n',
};

beforeAll(async () => {
  economy = await startEconomy();
  [alice, bob, carol, dave] = await Promise.all([signer(), signer(), signer(), signer()]);
  await Promise.all([alice, bob].map((s) => economy.ledger.openTokenAccount(s.address)));
  let marketUrl = '';
  // The market signs in with its own wallet to read agreements: the negotiation service trusts it as a reader.
  const marketWallet = generateWallet();
  negotiations = await startService(
    (c) =>
      createNegotiationApp(
        { ...c, prices: { open: FREE, counter: FREE } },
        { marketUrl: () => marketUrl, trustedReaders: [marketWallet.address] },
      ),
    {
      id: 'negotiation',
    },
  );
  market = await startService(
    (c) =>
      createKnowledgeMarketApp(
        { ...c, prices: { publish: FREE, purchase: FREE } },
        { negotiationUrl: negotiations.url },
      ),
    { id: 'knowledge-market', rpcUrl: economy.rpcUrl, wallet: marketWallet },
  );
  marketUrl = market.url;
});
afterAll(async () => {
  await market?.close();
  await negotiations?.close();
  await economy?.close();
});

describe('publish', () => {
  it('lists a module with its hash, size, floor and no content', async () => {
    const module = await as(alice).knowledgeMarket.publish({
      body: { ...baseModule, sellerName: 'fee-scholar', preview: 'Percentiles, worked.' },
    });
    expect(module.id).toMatch(/^mod_[A-Za-z0-9]{16,40}$/);
    expect(module).toMatchObject({
      title: baseModule.title,
      seller: { wallet: alice.address, name: 'fee-scholar' },
      priceUsd: '0.5',
      negotiation: { mode: 'auto', maxDiscountPercent: 20, floorUsd: '0.4' },
      version: '1.0.0',
      format: 'markdown',
      language: null,
      contentHash: sha256(baseModule.content),
      // "—" and "é" are 3 and 2 bytes in UTF-8.
      sizeBytes: baseModule.content.length + 2 + 1,
      preview: 'Percentiles, worked.',
      rating: { average: null, count: 0 },
      sales: 0,
    });
    expect(module).not.toHaveProperty('content');
    expect(await as().knowledgeMarket.get({ params: { moduleId: module.id } })).toEqual(module);
  });

  it('keeps manual and off modes without a floor, and a code module with its language', async () => {
    const code = await as(alice).knowledgeMarket.publish({
      body: {
        ...baseModule,
        title: 'Fee estimator in TypeScript',
        format: 'code',
        language: 'typescript',
        content: 'export const p75 = (xs: number[]) => xs;',
        priceUsd: '0.333333',
        negotiation: { mode: 'manual' },
      },
    });
    expect(code).toMatchObject({
      format: 'code',
      language: 'typescript',
      priceUsd: '0.333333',
      negotiation: { mode: 'manual', maxDiscountPercent: 20, floorUsd: null },
    });
  });

  it('refuses a duplicate, code without language, JSON that does not parse and an unpayable seller, storing nothing', async () => {
    const before = await countRows('knowledge_market_modules');
    const listed = (await as().knowledgeMarket.list({ query: { seller: alice.address, limit: 100 } })).items.find(
      (m) => m.title === baseModule.title,
    )!;
    const dup = await fail(as(alice).knowledgeMarket.publish({ body: { ...baseModule, title: 'Same content again' } }));
    expect(dup).toBeInstanceOf(ConflictError);
    expect(dup).toMatchObject({ code: 'duplicate_module', details: { moduleId: listed.id } });
    const lang = await fail(
      as(alice).knowledgeMarket.publish({ body: { ...baseModule, format: 'code', content: 'x = 1' } }),
    );
    expect(lang).toBeInstanceOf(UnprocessableEntityError);
    expect(lang.code).toBe('language_required');
    const json = await fail(
      as(alice).knowledgeMarket.publish({ body: { ...baseModule, format: 'json', content: '{"a": 1,' } }),
    );
    expect(json.code).toBe('invalid_json_content');
    // Carol has no token account of the stablecoin: buyers could not pay her.
    const unpayable = await fail(
      as(carol).knowledgeMarket.publish({ body: { ...baseModule, content: 'fresh content' } }),
    );
    expect(unpayable).toBeInstanceOf(UnprocessableEntityError);
    expect(unpayable).toMatchObject({ code: 'no_token_account', details: { wallet: carol.address } });
    expect(await countRows('knowledge_market_modules')).toBe(before);
  });

  it('reports the chain it reads in its health route', async () => {
    const health = (await (await fetch(`${market.url}/health`)).json()) as {
      status: string;
      upstream: { mode: string; providers: { name: string; status: string }[] };
    };
    expect(health).toMatchObject({
      status: 'ok',
      service: 'knowledge-market',
      database: 'ok',
      upstream: { mode: 'chain', providers: [{ name: 'local-ledger', status: 'ok' }] },
    });
  });

  it('needs a SIGN-IN-WITH-X proof', async () => {
    const error = await fail(as().knowledgeMarket.publish({ body: { ...baseModule, content: 'anonymous' } }));
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(error.code).toBe('siwx_invalid');
  });

  it.each([
    ['body.title', { title: 'ab' }],
    ['body.description', { description: 'short' }],
    ['body.tags.0', { tags: ['Not A Slug'] }],
    ['body.capabilities', { capabilities: [] }],
    ['body.priceUsd', { priceUsd: '0.0001' }],
    ['body.priceUsd', { priceUsd: '100.01' }],
    ['body.priceUsd', { priceUsd: 'free' }],
    ['body.format', { format: 'pdf' }],
    ['body.language', { language: 'Type Script' }],
    ['body.content', { content: '' }],
    ['body.version', { version: 'v1' }],
    ['body.negotiation.maxDiscountPercent', { negotiation: { maxDiscountPercent: 60 } }],
    ['body.negotiation.mode', { negotiation: { mode: 'sometimes' } }],
    ['body.content', { content: 'nul \u0000 inside' }],
    ['body.extra', { extra: true }],
  ])('refuses a bad %s with 400 and stores nothing', async (field, change) => {
    const before = await countRows('knowledge_market_modules');
    const error = await fail(
      as(alice).knowledgeMarket.publish({ body: { ...baseModule, content: `c ${field}`, ...change } as never }),
    );
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error.details as { fields: { field: string }[] }).fields.map((f) => f.field)).toContain(field);
    expect(await countRows('knowledge_market_modules')).toBe(before);
  });
});

describe('browse and search', () => {
  let seller: Signer;
  const ids: Record<string, string> = {};
  beforeAll(async () => {
    seller = await signer();
    await economy.ledger.openTokenAccount(seller.address);
    const publish = (key: string, body: Partial<typeof baseModule> & { tags?: string[] }) =>
      as(seller)
        .knowledgeMarket.publish({ body: { ...baseModule, content: `content of ${key}`, ...body } })
        .then((m) => (ids[key] = m.id));
    // Published one after another so that "newest" has an order.
    await publish('rpc', {
      title: 'Reading RPC nodes',
      description: 'Which RPC methods answer what, with latency notes.',
      tags: ['rpc'],
      capabilities: ['rpc-reading'],
      priceUsd: '1',
    });
    await publish('fees', {
      title: 'Fee markets explained',
      description: 'Fees, fees and more fees: priority fees per block.',
      tags: ['fees'],
      capabilities: ['fee-estimation'],
      priceUsd: '0.2',
    });
    await publish('nft', {
      title: 'NFT royalties',
      description: 'Creator royalties and their enforcement on Solana.',
      tags: ['nft'],
      capabilities: ['royalty-check'],
      priceUsd: '3',
    });
  });

  const mine = (query: Record<string, unknown>) =>
    as().knowledgeMarket.list({ query: { seller: seller.address, ...query } as never });

  it('orders by newest without q, by price, and pages with a cursor', async () => {
    expect((await mine({})).items.map((m) => m.id)).toEqual([ids.nft, ids.fees, ids.rpc]);
    expect((await mine({ sort: 'price' })).items.map((m) => m.priceUsd)).toEqual(['0.2', '1', '3']);
    const first = await mine({ limit: 2 });
    expect(first.items).toHaveLength(2);
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = await mine({ limit: 2, cursor: first.nextCursor });
    expect(second).toEqual({ items: [expect.objectContaining({ id: ids.rpc })], nextCursor: null });
  });

  it('searches with BM25 and filters by tags, capability and price', async () => {
    // "fees" occurs in the fee module four times and nowhere else among these; "solana" only in the NFT module's text.
    const fees = await mine({ q: 'fees' });
    expect(fees.items.map((m) => m.id)).toEqual([ids.fees]);
    expect((await mine({ q: 'rpc royalties' })).items.map((m) => m.id).sort()).toEqual([ids.rpc, ids.nft].sort());
    expect((await mine({ tags: 'nft,rpc' })).items.map((m) => m.id)).toEqual([ids.nft, ids.rpc]);
    expect((await mine({ capability: 'fee-estimation' })).items.map((m) => m.id)).toEqual([ids.fees]);
    expect((await mine({ maxPriceUsd: '1' })).items.map((m) => m.id)).toEqual([ids.fees, ids.rpc]);
    expect((await mine({ q: 'nothing-like-this' })).items).toEqual([]);
  });

  it('refuses bad queries with 400 naming the field', async () => {
    for (const [field, query] of [
      ['query.tags', { tags: 'Bad Tag' }],
      ['query.sort', { sort: 'cheapest' }],
      ['query.minRating', { minRating: 6 }],
      ['query.maxPriceUsd', { maxPriceUsd: '-1' }],
      ['query.limit', { limit: 0 }],
      ['query.cursor', { cursor: 'garbage' }],
      ['query.seller', { seller: 'not-an-address' }],
    ] as const) {
      const error = await fail(as().knowledgeMarket.list({ query: query as never }));
      expect(error, field).toBeInstanceOf(BadRequestError);
      expect((error.details as { fields: { field: string }[] }).fields.map((f) => f.field)).toContain(field);
    }
  });

  it('answers 404 for an unknown module and 400 for a malformed id', async () => {
    const missing = await fail(as().knowledgeMarket.get({ params: { moduleId: 'mod_0000000000000000' } }));
    expect(missing).toBeInstanceOf(NotFoundError);
    expect(missing.code).toBe('module_not_found');
    expect(await fail(as().knowledgeMarket.get({ params: { moduleId: 'module-1' } }))).toBeInstanceOf(BadRequestError);
  });
});

describe('purchases, downloads and ratings', () => {
  let seller: Signer;
  let moduleId: string;
  let otherModuleId: string;
  const content =
    '# Rent\n\nAccounts need 0.00089088 SOL per 0 bytes; compute it with getMinimumBalanceForRentExemption.\n';
  beforeAll(async () => {
    seller = await signer();
    await economy.ledger.openTokenAccount(seller.address);
    moduleId = (
      await as(seller).knowledgeMarket.publish({
        body: { ...baseModule, title: 'Rent exemption', content, priceUsd: '0.5', tags: ['rent'] },
      })
    ).id;
    otherModuleId = (
      await as(seller).knowledgeMarket.publish({
        body: { ...baseModule, title: 'Other module', content: 'other content', tags: ['other'] },
      })
    ).id;
  });

  it('delivers the content with its SHA-256, counts the sale and lets the buyer download it again', async () => {
    const purchase = await as().knowledgeMarket.purchase({ params: { moduleId }, body: { beneficiary: bob.address } });
    expect(purchase.id).toMatch(/^pur_[A-Za-z0-9]{16,40}$/);
    expect(purchase).toMatchObject({
      moduleId,
      title: 'Rent exemption',
      version: '1.0.0',
      seller: seller.address,
      buyer: bob.address,
      paidBy: bob.address,
      priceUsd: '0.5',
      listPriceUsd: '0.5',
      negotiationId: null,
      format: 'markdown',
      content,
      contentHash: sha256(content),
    });
    expect((await as().knowledgeMarket.get({ params: { moduleId } })).sales).toBe(1);
    expect(await as(bob).knowledgeMarket.download({ params: { purchaseId: purchase.id } })).toEqual(purchase);
    const stranger = await fail(as(carol).knowledgeMarket.download({ params: { purchaseId: purchase.id } }));
    expect(stranger).toBeInstanceOf(PermissionDeniedError);
    expect(stranger.code).toBe('not_purchase_party');
    expect(
      (await fail(as(bob).knowledgeMarket.download({ params: { purchaseId: 'pur_0000000000000000' } }))).code,
    ).toBe('purchase_not_found');
    expect(await fail(as().knowledgeMarket.download({ params: { purchaseId: purchase.id } }))).toBeInstanceOf(
      AuthenticationError,
    );
  });

  it('refuses the seller buying their own module, an unknown module, and an unpaid purchase naming no buyer', async () => {
    const before = await countRows('knowledge_market_purchases');
    const own = await fail(
      as().knowledgeMarket.purchase({ params: { moduleId }, body: { beneficiary: seller.address } }),
    );
    expect(own).toBeInstanceOf(UnprocessableEntityError);
    expect(own.code).toBe('own_module');
    expect(
      (await fail(as().knowledgeMarket.purchase({ params: { moduleId: 'mod_0000000000000000' }, body: {} }))).code,
    ).toBe('module_not_found');
    const nobody = await fail(as().knowledgeMarket.purchase({ params: { moduleId }, body: {} }));
    expect(nobody).toBeInstanceOf(BadRequestError);
    expect((nobody.details as { fields: { field: string }[] }).fields[0]!.field).toBe('body.beneficiary');
    for (const [field, body] of [
      ['body.beneficiary', { beneficiary: 'nope' }],
      ['body.negotiationId', { negotiationId: 'neg_1', beneficiary: bob.address }],
      ['body.tip', { tip: 1, beneficiary: bob.address }],
    ] as const) {
      const error = await fail(as().knowledgeMarket.purchase({ params: { moduleId }, body: body as never }));
      expect((error.details as { fields: { field: string }[] }).fields.map((f) => f.field)).toContain(field);
    }
    expect(await countRows('knowledge_market_purchases')).toBe(before);
  });

  it('counts a paid purchase only once its payment has settled', async () => {
    // A purchase whose handler answered but whose settlement then failed: the runtime deleted its payment claim.
    const db = market.database.db;
    const sales = async () => (await as().knowledgeMarket.get({ params: { moduleId } })).sales;
    const before = await sales();
    const row = {
      id: 'pur_UnsettledPurchase001',
      module_id: moduleId,
      title: 'Rent exemption',
      version: '1.0.0',
      seller: seller.address,
      buyer: bob.address,
      paid_by: bob.address,
      price: 500_000n,
      list_price: 500_000n,
      negotiation_id: null,
      payment_key: 'f'.repeat(64),
      purchased_at: new Date(),
    };
    await db.insertInto('knowledge_market_purchases').values(row).execute();
    expect(await sales()).toBe(before);
    expect((await fail(as(bob).knowledgeMarket.download({ params: { purchaseId: row.id } }))).code).toBe(
      'purchase_not_found',
    );
    // Once the runtime records the settlement, it is a sale.
    await db
      .insertInto('runtime_payments')
      .values({
        key: row.payment_key,
        status: 'settled',
        resource: 'test',
        payer: bob.address,
        pay_to: seller.address,
        amount: 500_000n,
        transaction: null,
        created_at: new Date(),
        settled_at: new Date(),
      })
      .execute();
    expect(await sales()).toBe(before + 1);
    expect((await as(bob).knowledgeMarket.download({ params: { purchaseId: row.id } })).content).toBe(content);
    await db.deleteFrom('knowledge_market_purchases').where('id', '=', row.id).execute();
    await db.deleteFrom('runtime_payments').where('key', '=', row.payment_key).execute();
  });

  it('takes one rating per purchase from its buyer and keeps the mean to two decimals', async () => {
    const p1 = await as().knowledgeMarket.purchase({ params: { moduleId }, body: { beneficiary: carol.address } });
    const p2 = await as().knowledgeMarket.purchase({ params: { moduleId }, body: { beneficiary: dave.address } });
    const p3 = await as().knowledgeMarket.purchase({ params: { moduleId }, body: { beneficiary: dave.address } });
    const other = await as().knowledgeMarket.purchase({
      params: { moduleId: otherModuleId },
      body: { beneficiary: dave.address },
    });

    const first = await as(carol).knowledgeMarket.rate({
      params: { moduleId },
      body: { purchaseId: p1.id, rating: 5, comment: 'Exact numbers.' },
    });
    expect(first).toMatchObject({
      moduleId,
      purchaseId: p1.id,
      rating: 5,
      comment: 'Exact numbers.',
      moduleRating: { average: 5, count: 1 },
    });
    await as(dave).knowledgeMarket.rate({ params: { moduleId }, body: { purchaseId: p2.id, rating: 4 } });
    const third = await as(dave).knowledgeMarket.rate({ params: { moduleId }, body: { purchaseId: p3.id, rating: 4 } });
    // (5 + 4 + 4) / 3 = 4.333… -> 4.33
    expect(third.moduleRating).toEqual({ average: 4.33, count: 3 });
    expect((await as().knowledgeMarket.get({ params: { moduleId } })).rating).toEqual({ average: 4.33, count: 3 });

    const again = await fail(
      as(carol).knowledgeMarket.rate({ params: { moduleId }, body: { purchaseId: p1.id, rating: 1 } }),
    );
    expect(again).toBeInstanceOf(ConflictError);
    expect(again.code).toBe('already_rated');
    const notBuyer = await fail(
      as(carol).knowledgeMarket.rate({ params: { moduleId }, body: { purchaseId: p2.id, rating: 1 } }),
    );
    expect(notBuyer).toBeInstanceOf(PermissionDeniedError);
    expect(notBuyer.code).toBe('not_buyer');
    const mismatch = await fail(
      as(dave).knowledgeMarket.rate({ params: { moduleId }, body: { purchaseId: other.id, rating: 2 } }),
    );
    expect(mismatch).toBeInstanceOf(UnprocessableEntityError);
    expect(mismatch.code).toBe('purchase_module_mismatch');
    expect(
      (
        await fail(
          as(dave).knowledgeMarket.rate({
            params: { moduleId: 'mod_0000000000000000' },
            body: { purchaseId: other.id, rating: 2 },
          }),
        )
      ).code,
    ).toBe('module_not_found');
    expect(
      (
        await fail(
          as(dave).knowledgeMarket.rate({
            params: { moduleId },
            body: { purchaseId: 'pur_0000000000000000', rating: 2 },
          }),
        )
      ).code,
    ).toBe('purchase_not_found');
    const bad = await fail(
      as(dave).knowledgeMarket.rate({ params: { moduleId }, body: { purchaseId: other.id, rating: 6 } }),
    );
    expect((bad.details as { fields: { field: string }[] }).fields.map((f) => f.field)).toEqual(['body.rating']);
    expect(
      await fail(as().knowledgeMarket.rate({ params: { moduleId }, body: { purchaseId: other.id, rating: 2 } })),
    ).toBeInstanceOf(AuthenticationError);

    // Only minRating 4.33 or less keeps this module.
    const rated = await as().knowledgeMarket.list({ query: { seller: seller.address, minRating: 4.3 } });
    expect(rated.items.map((m) => m.id)).toEqual([moduleId]);
    expect((await as().knowledgeMarket.list({ query: { seller: seller.address, minRating: 4.34 } })).items).toEqual([]);
    expect(
      (await as().knowledgeMarket.list({ query: { seller: seller.address, sort: 'rating' } })).items.map((m) => m.id),
    ).toEqual([moduleId, otherModuleId]);
  });
});

describe('negotiated purchases', () => {
  let seller: Signer;
  let moduleId: string;
  let otherModuleId: string;
  beforeAll(async () => {
    seller = await signer();
    await economy.ledger.openTokenAccount(seller.address);
    moduleId = (
      await as(seller).knowledgeMarket.publish({
        body: { ...baseModule, title: 'Negotiable module', content: 'negotiable' },
      })
    ).id;
    otherModuleId = (
      await as(seller).knowledgeMarket.publish({
        body: { ...baseModule, title: 'Another negotiable', content: 'negotiable 2' },
      })
    ).id;
  });

  /** An accepted negotiation: the responder counters 0.35 with max(0.40, 0.425) = 0.425, which the buyer accepts. */
  async function agreed(buyer: Signer, id = moduleId): Promise<string> {
    const opened = await as(buyer).negotiation.open({ body: { moduleId: id, offerUsd: '0.35' } });
    expect(opened.standingOffer?.priceUsd).toBe('0.425');
    const accepted = await as(buyer).negotiation.accept({
      params: { negotiationId: opened.id },
      body: { expectedPriceUsd: '0.425' },
    });
    expect(accepted.state).toBe('accepted');
    return opened.id;
  }

  it('charges the agreed price once, for the agreement’s own buyer and module only', async () => {
    const negotiationId = await agreed(bob);
    const wrongBuyer = await fail(
      as().knowledgeMarket.purchase({ params: { moduleId }, body: { negotiationId, beneficiary: carol.address } }),
    );
    expect(wrongBuyer).toBeInstanceOf(UnprocessableEntityError);
    expect(wrongBuyer.code).toBe('negotiation_mismatch');
    const wrongModule = await fail(
      as().knowledgeMarket.purchase({
        params: { moduleId: otherModuleId },
        body: { negotiationId, beneficiary: bob.address },
      }),
    );
    expect(wrongModule.code).toBe('negotiation_mismatch');

    const purchase = await as().knowledgeMarket.purchase({
      params: { moduleId },
      body: { negotiationId, beneficiary: bob.address },
    });
    expect(purchase).toMatchObject({
      buyer: bob.address,
      priceUsd: '0.425',
      listPriceUsd: '0.5',
      negotiationId,
      content: 'negotiable',
      contentHash: sha256('negotiable'),
    });
    const reused = await fail(
      as().knowledgeMarket.purchase({ params: { moduleId }, body: { negotiationId, beneficiary: bob.address } }),
    );
    expect(reused).toBeInstanceOf(ConflictError);
    expect(reused.code).toBe('negotiation_already_used');
  });

  it('refuses unknown, unaccepted and expired agreements, and says when the negotiation service is down', async () => {
    expect(
      (
        await fail(
          as().knowledgeMarket.purchase({
            params: { moduleId },
            body: { negotiationId: 'neg_0000000000000000', beneficiary: bob.address },
          }),
        )
      ).code,
    ).toBe('negotiation_not_found');
    const open = await as(carol).negotiation.open({ body: { moduleId, offerUsd: '0.3' } });
    const notAccepted = await fail(
      as().knowledgeMarket.purchase({
        params: { moduleId },
        body: { negotiationId: open.id, beneficiary: carol.address },
      }),
    );
    expect(notAccepted).toBeInstanceOf(ConflictError);
    expect(notAccepted).toMatchObject({ code: 'negotiation_not_accepted', details: { state: 'countered' } });

    const negotiationId = await agreed(dave);
    // The same market a day and a minute later, and one whose negotiation service does not answer.
    const later = await startService(
      (c) =>
        createKnowledgeMarketApp(
          { ...c, prices: { purchase: FREE } },
          { negotiationUrl: negotiations.url, now: () => new Date(Date.now() + DAY + 60_000) },
        ),
      { id: 'knowledge-market', database: market.database, wallet: market.context.wallet },
    );
    const cut = await startService(
      (c) => createKnowledgeMarketApp({ ...c, prices: { purchase: FREE } }, { negotiationUrl: 'http://127.0.0.1:9' }),
      {
        id: 'knowledge-market',
        database: market.database,
      },
    );
    try {
      const expired = await fail(
        as(undefined, later.url).knowledgeMarket.purchase({
          params: { moduleId },
          body: { negotiationId, beneficiary: dave.address },
        }),
      );
      expect(expired).toMatchObject({ status: 409, code: 'agreement_expired' });
      const down = await fail(
        as(undefined, cut.url).knowledgeMarket.purchase({
          params: { moduleId },
          body: { negotiationId, beneficiary: dave.address },
        }),
      );
      expect(down).toMatchObject({ status: 502, code: 'negotiation_unavailable' });
    } finally {
      await later.stopServer();
      await cut.stopServer();
    }
  });

  it('reads agreements signed in as the trusted market: another wallet learns nothing and cannot price with one', async () => {
    const negotiationId = await agreed(carol, otherModuleId);
    // A stranger holding the id is refused by the negotiation service, signed in or not.
    expect(await fail(as(dave).negotiation.agreement({ params: { negotiationId } }))).toMatchObject({
      status: 403,
      code: 'not_a_party',
    });
    expect(await fail(as().negotiation.agreement({ params: { negotiationId } }))).toMatchObject({
      status: 401,
      code: 'siwx_invalid',
    });
    // A market with a wallet the negotiation service does not trust cannot read it: 502, and it says why.
    const untrusted = await startService(
      (c) => createKnowledgeMarketApp({ ...c, prices: { purchase: FREE } }, { negotiationUrl: negotiations.url }),
      { id: 'knowledge-market', database: market.database },
    );
    try {
      const refused = await fail(
        as(undefined, untrusted.url).knowledgeMarket.purchase({
          params: { moduleId: otherModuleId },
          body: { negotiationId, beneficiary: carol.address },
        }),
      );
      expect(refused).toMatchObject({ status: 502, code: 'negotiation_unavailable' });
      expect(refused.message).toContain('trusted readers');
    } finally {
      await untrusted.stopServer();
    }
    // Its buyer still reads it, unused (the trusted market's purchases with agreements are the tests above and below;
    // one more here would change the statistics this file counts).
    expect(await as(carol).negotiation.agreement({ params: { negotiationId } })).toMatchObject({
      buyer: carol.address,
      priceUsd: '0.425',
    });
  });
});

describe('paid through the economy', () => {
  let paidMarket: RunningService;
  let paidNegotiation: RunningService;
  let seller: Signer;
  let buyer: Signer;
  const balance = (address: string) => economy.ledger.tokenBalance(address);
  const paying = (wallet: Signer) =>
    createClient({
      baseUrls: { 'knowledge-market': paidMarket.url, negotiation: paidNegotiation.url },
      wallet,
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    });

  beforeAll(async () => {
    // The market first: the negotiation service trusts its wallet to read agreements.
    let negotiationUrl = '';
    paidMarket = await economy.startPaidService(
      (c) => createKnowledgeMarketApp(c, { negotiationUrl: () => negotiationUrl }),
      // Offers payment sessions beside exact, as under npm start.
      { id: 'knowledge-market', sessions: {} },
    );
    paidNegotiation = await economy.startPaidService(
      (c) =>
        createNegotiationApp(c, {
          marketUrl: paidMarket.url,
          trustedReaders: [paidMarket.context.wallet.address],
        }),
      { id: 'negotiation' },
    );
    negotiationUrl = paidNegotiation.url;
    seller = await signer();
    await economy.ledger.mintTo(seller.address, usdToAtomic('1'));
    buyer = await walletFromSecretKey(economy.buyer.secretKey);
  });

  it('pays the listing fee to the market, and the module’s price straight to the seller', async () => {
    const marketWallet = paidMarket.context.wallet.address;
    const [sellerStart, marketStart] = [balance(seller.address), balance(marketWallet)];
    const module = await paying(seller).knowledgeMarket.publish({
      body: { ...baseModule, title: 'Paid module', content: 'paid content', priceUsd: '0.5' },
    });
    expect(balance(seller.address)).toBe(sellerStart - 10_000n);
    expect(balance(marketWallet)).toBe(marketStart + 10_000n);

    // The quote asks for the module's own price, payable to the seller.
    const quoted = await fail(
      createClient({ baseUrls: { 'knowledge-market': paidMarket.url }, maxRetries: 0 }).knowledgeMarket.purchase({
        params: { moduleId: module.id },
        body: {},
      }),
    );
    expect(quoted).toBeInstanceOf(PaymentRequiredError);
    expect((quoted as PaymentRequiredError).quote?.accepts[0]).toMatchObject({
      amount: '500000',
      payTo: seller.address,
    });

    const [buyerBefore, sellerBefore] = [balance(buyer.address), balance(seller.address)];
    const purchase = await paying(buyer).knowledgeMarket.purchase({ params: { moduleId: module.id }, body: {} });
    expect(purchase).toMatchObject({
      buyer: buyer.address,
      paidBy: buyer.address,
      priceUsd: '0.5',
      content: 'paid content',
      contentHash: sha256('paid content'),
    });
    expect(balance(buyer.address)).toBe(buyerBefore - 500_000n);
    expect(balance(seller.address)).toBe(sellerBefore + 500_000n);
    expect(balance(marketWallet)).toBe(marketStart + 10_000n);
    expect((await paying(buyer).knowledgeMarket.get({ params: { moduleId: module.id } })).sales).toBe(1);
    expect(await paying(buyer).knowledgeMarket.download({ params: { purchaseId: purchase.id } })).toEqual(purchase);

    // A negotiated purchase: the opening fee goes to the negotiation service, the agreed 0.425 to the seller.
    const negotiationWallet = paidNegotiation.context.wallet.address;
    const negotiationStart = balance(negotiationWallet);
    const opened = await paying(buyer).negotiation.open({ body: { moduleId: module.id, offerUsd: '0.35' } });
    await paying(buyer).negotiation.accept({
      params: { negotiationId: opened.id },
      body: { expectedPriceUsd: '0.425' },
    });
    expect(balance(negotiationWallet)).toBe(negotiationStart + 2_000n);
    const [buyerMid, sellerMid] = [balance(buyer.address), balance(seller.address)];
    const negotiated = await paying(buyer).knowledgeMarket.purchase({
      params: { moduleId: module.id },
      body: { negotiationId: opened.id },
    });
    expect(negotiated).toMatchObject({
      priceUsd: '0.425',
      listPriceUsd: '0.5',
      negotiationId: opened.id,
      buyer: buyer.address,
    });
    expect(balance(buyer.address)).toBe(buyerMid - 425_000n);
    expect(balance(seller.address)).toBe(sellerMid + 425_000n);

    // Paid again with the used agreement: refused before the quote, nothing charged.
    const reused = await fail(
      paying(buyer).knowledgeMarket.purchase({ params: { moduleId: module.id }, body: { negotiationId: opened.id } }),
    );
    expect(reused.code).toBe('negotiation_already_used');
    // The seller paying for their own module: refused after verification, before settlement, so nothing moves.
    const sellerBefore2 = balance(seller.address);
    const own = await fail(paying(seller).knowledgeMarket.purchase({ params: { moduleId: module.id }, body: {} }));
    expect(own).toMatchObject({ status: 422, code: 'own_module' });
    expect(balance(seller.address)).toBe(sellerBefore2);
    expect(balance(buyer.address)).toBe(buyerMid - 425_000n);

    const stats = await paying(buyer).knowledgeMarket.stats();
    expect(stats).toMatchObject({
      modules: 1,
      sellers: 1,
      purchases: 2,
      volumeUsd: '0.925',
      ratings: 0,
      averageRating: null,
      byFormat: { markdown: 1, text: 0, json: 0, code: 0 },
    });
    expect(stats.purchasesLast24h).toBe(2);
    expect(stats.topCapabilities).toEqual([
      { capability: 'fee-estimation', modules: 1 },
      { capability: 'transaction-landing', modules: 1 },
    ]);
  });

  it('a trader who buys and lists in turn pays each listing fee up front to the market, never to the last seller', async () => {
    // The SDK pays a fixed-price route up front on the terms it last accepted: this route's own (the market's wallet),
    // not the service's last quote (a purchase, payable to a module's seller), which the market would refuse.
    const trader = await signer();
    await economy.ledger.mintTo(trader.address, usdToAtomic('2'));
    const instance = axios.create();
    const seen: { path: string; paid: boolean; status: number }[] = [];
    instance.interceptors.response.use((response) => {
      seen.push({
        path: new URL(response.config.url!).pathname,
        paid: typeof AxiosHeaders.from(response.config.headers).get('payment-signature') === 'string',
        status: response.status,
      });
      return response;
    });
    // Clients paying by transaction only, whose requests `seen` records.
    const recorded = (wallet: Signer) =>
      createClient({
        baseUrls: { 'knowledge-market': paidMarket.url },
        wallet,
        axios: instance,
        payments: { rpcUrl: economy.rpcUrl, sessions: false },
        maxRetries: 0,
      });
    const client = recorded(trader);
    const listing = (n: number) => ({
      body: { ...baseModule, title: `Trader notes ${n}`, content: `trader content ${n}`, priceUsd: '0.05' },
    });
    const offered = await paying(seller).knowledgeMarket.publish({
      body: { ...baseModule, title: 'Sold to the trader', content: 'sold content', priceUsd: '0.2' },
    });
    const marketWallet = paidMarket.context.wallet.address;
    const [marketStart, sellerStart, traderStart] = [marketWallet, seller.address, trader.address].map(balance);

    await client.knowledgeMarket.publish(listing(1));
    await client.knowledgeMarket.purchase({ params: { moduleId: offered.id }, body: {} });
    seen.length = 0;
    await client.knowledgeMarket.publish(listing(2));
    // One request, paid up front, accepted: no payment refused on the seller's terms, no 402 round trip.
    expect(seen).toEqual([{ path: '/api/modules', paid: true, status: 201 }]);
    expect([marketWallet, seller.address, trader.address].map(balance)).toEqual([
      marketStart! + 20_000n,
      sellerStart! + 200_000n,
      traderStart! - 220_000n,
    ]);

    // A buyer whose first call to the market is a purchase: its first listing is not prepaid on the purchase's terms
    // (the seller's wallet; a route priced per module is no guide to the service's own), it pays the listing's quote.
    const newcomer = await signer();
    await economy.ledger.mintTo(newcomer.address, usdToAtomic('1'));
    const fresh = recorded(newcomer);
    await fresh.knowledgeMarket.purchase({ params: { moduleId: offered.id }, body: {} });
    seen.length = 0;
    await fresh.knowledgeMarket.publish({
      body: { ...baseModule, title: 'Newcomer notes', content: 'newcomer content', priceUsd: '0.05' },
    });
    expect(seen).toEqual([
      { path: '/api/modules', paid: false, status: 402 },
      { path: '/api/modules', paid: true, status: 201 },
    ]);
  });
  it('a trader paying the market by vouchers buys modules by transaction to their sellers, never by voucher', async () => {
    // A session with the market pays its own fixed-price routes (the listing fee). A purchase is priced per module
    // and paid to the module's seller: a voucher to the market for the last purchase's price would be refused.
    const trader = await signer();
    const other = await signer();
    await Promise.all([trader, other].map((w) => economy.ledger.mintTo(w.address, usdToAtomic('2'))));
    const instance = axios.create();
    const refused: string[] = [];
    instance.interceptors.response.use((response) => {
      const paid = typeof AxiosHeaders.from(response.config.headers).get('payment-signature') === 'string';
      if (paid && response.status >= 400) refused.push(`${response.status} ${new URL(response.config.url!).pathname}`);
      return response;
    });
    const client = createClient({
      baseUrls: { 'knowledge-market': paidMarket.url, facilitator: economy.facilitator.url },
      wallet: trader,
      axios: instance,
      payments: { rpcUrl: economy.rpcUrl, sessions: { after: 2, depositUsd: '0.5' } },
      maxRetries: 0,
    });
    const listing = (n: number) => ({
      body: { ...baseModule, title: `Session trader notes ${n}`, content: `session trader ${n}`, priceUsd: '0.05' },
    });
    const [cheap, dear] = await Promise.all([
      paying(seller).knowledgeMarket.publish({
        body: { ...baseModule, title: 'Cheap module', content: 'cheap content', priceUsd: '0.1' },
      }),
      paying(other).knowledgeMarket.publish({
        body: { ...baseModule, title: 'Dear module', content: 'dear content', priceUsd: '0.3' },
      }),
    ]);
    await client.knowledgeMarket.publish(listing(1));
    await client.knowledgeMarket.publish(listing(2));
    for (let i = 0; i < 200 && !sessionsOf(client.payments).open.length; i++)
      await new Promise((r) => setTimeout(r, 50));
    const [session] = sessionsOf(client.payments).open;
    expect(session?.depositAtomic).toBe('500000');
    const [sellerStart, otherStart] = [balance(seller.address), balance(other.address)];

    const first = await client.knowledgeMarket.purchase.withResponse({ params: { moduleId: cheap.id }, body: {} });
    const third = await client.knowledgeMarket.publish.withResponse(listing(3));
    const second = await client.knowledgeMarket.purchase.withResponse({ params: { moduleId: dear.id }, body: {} });
    expect(refused).toEqual([]);
    expect([first.payment, second.payment].map((p) => [p?.amount, p?.payTo, !!p?.transaction, p?.session])).toEqual([
      ['100000', seller.address, true, undefined],
      ['300000', other.address, true, undefined],
    ]);
    expect(third.payment).toMatchObject({ amount: '10000', session: { channelId: session!.channelId } });
    expect([balance(seller.address), balance(other.address)]).toEqual([
      sellerStart! + 100_000n,
      otherStart! + 300_000n,
    ]);
    await client.close();
  });
});

describe('integrity: an agreement is honoured only for the wallet that paid as its buyer or its broker', () => {
  let paidMarket: RunningService;
  let paidNegotiation: RunningService;
  let seller: Signer, buyer: Signer, stranger: Signer, broker: Signer;
  let moduleId: string;
  const balance = (address: string) => economy.ledger.tokenBalance(address);
  const paying = (wallet: Signer) =>
    createClient({
      baseUrls: { 'knowledge-market': paidMarket.url, negotiation: paidNegotiation.url },
      wallet,
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    });

  beforeAll(async () => {
    [seller, buyer, stranger, broker] = await Promise.all([signer(), signer(), signer(), signer()]);
    await Promise.all([seller, buyer, stranger, broker].map((s) => economy.ledger.mintTo(s.address, usdToAtomic('2'))));
    // The market first: the negotiation service trusts its wallet to read agreements.
    let negotiationUrl = '';
    paidMarket = await economy.startPaidService(
      (c) => createKnowledgeMarketApp(c, { negotiationUrl: () => negotiationUrl }),
      { id: 'knowledge-market' },
    );
    paidNegotiation = await economy.startPaidService(
      (c) =>
        createNegotiationApp(c, {
          marketUrl: paidMarket.url,
          brokers: [broker.address],
          trustedReaders: [paidMarket.context.wallet.address],
        }),
      { id: 'negotiation' },
    );
    negotiationUrl = paidNegotiation.url;
    moduleId = (
      await paying(seller).knowledgeMarket.publish({
        body: { ...baseModule, title: 'Agreement-bound module', content: 'agreement content' },
      })
    ).id;
  });
  // The economy closes the services it started.

  it('refuses a stranger who pays with another buyer’s agreement (403 not_agreement_buyer): nothing moves, the agreement stays usable', async () => {
    const opened = await paying(buyer).negotiation.open({ body: { moduleId, offerUsd: '0.35' } });
    await paying(buyer).negotiation.accept({
      params: { negotiationId: opened.id },
      body: { expectedPriceUsd: '0.425' },
    });
    const [strangerStart, sellerStart] = [balance(stranger.address), balance(seller.address)];
    for (const body of [{ negotiationId: opened.id, beneficiary: buyer.address }, { negotiationId: opened.id }]) {
      const error = await fail(paying(stranger).knowledgeMarket.purchase({ params: { moduleId }, body }));
      expect(error).toBeInstanceOf(PermissionDeniedError);
      expect(error).toMatchObject({ status: 403, code: 'not_agreement_buyer' });
      expect((error as { body?: { content?: string } }).body?.content).toBeUndefined();
    }
    expect(balance(stranger.address)).toBe(strangerStart);
    expect(balance(seller.address)).toBe(sellerStart);
    expect((await paying(seller).knowledgeMarket.get({ params: { moduleId } })).sales).toBe(0);

    // The buyer's own purchase still has the agreement: charged the agreed 0.425, once.
    const buyerStart = balance(buyer.address);
    const purchase = await paying(buyer).knowledgeMarket.purchase({
      params: { moduleId },
      body: { negotiationId: opened.id },
    });
    expect(purchase).toMatchObject({
      buyer: buyer.address,
      paidBy: buyer.address,
      priceUsd: '0.425',
      negotiationId: opened.id,
      content: 'agreement content',
    });
    expect(balance(buyer.address)).toBe(buyerStart - 425_000n);
    expect(balance(seller.address)).toBe(sellerStart + 425_000n);
  });

  it('lets the registered broker that opened it pay: the purchase is the agreement’s buyer’s, paid by the broker', async () => {
    const client = await signer();
    const opened = await paying(broker).negotiation.open({
      body: { moduleId, offerUsd: '0.35', buyer: client.address },
    });
    expect(opened.broker).toBe(broker.address);
    await paying(broker).negotiation.accept({
      params: { negotiationId: opened.id },
      body: { expectedPriceUsd: '0.425' },
    });
    // A beneficiary other than the agreement's buyer is refused, before the quote.
    const elsewhere = await fail(
      paying(broker).knowledgeMarket.purchase({
        params: { moduleId },
        body: { negotiationId: opened.id, beneficiary: stranger.address },
      }),
    );
    expect(elsewhere).toMatchObject({ status: 422, code: 'negotiation_mismatch' });
    const brokerStart = balance(broker.address);
    // Without a beneficiary the content goes to whoever the agreement names.
    const purchase = await paying(broker).knowledgeMarket.purchase({
      params: { moduleId },
      body: { negotiationId: opened.id },
    });
    expect(purchase).toMatchObject({
      buyer: client.address,
      paidBy: broker.address,
      priceUsd: '0.425',
      negotiationId: opened.id,
    });
    expect(balance(broker.address)).toBe(brokerStart - 425_000n);
    expect(await paying(client).knowledgeMarket.download({ params: { purchaseId: purchase.id } })).toEqual(purchase);
  });

  it('refuses the seller paying for their own module for a fresh wallet (422 own_module): nothing moves, no sale, nothing to rate', async () => {
    const fresh = await signer();
    const listed = () => paying(seller).knowledgeMarket.get({ params: { moduleId } });
    const before = await listed();
    const sellerStart = balance(seller.address);
    const error = await fail(
      paying(seller).knowledgeMarket.purchase({ params: { moduleId }, body: { beneficiary: fresh.address } }),
    );
    expect(error).toBeInstanceOf(UnprocessableEntityError);
    expect(error).toMatchObject({ status: 422, code: 'own_module', details: { moduleId } });
    expect(error.message).toMatch(/seller’s own wallet/);
    expect((error as { body?: { content?: string } }).body?.content).toBeUndefined();
    // Refused after verification and before settlement: the seller was not charged (not even to themself).
    expect(balance(seller.address)).toBe(sellerStart);
    const after = await listed();
    expect(after.sales).toBe(before.sales);
    expect(after.rating).toEqual(before.rating);
    // No purchase was recorded for the fresh wallet, so it has nothing to rate with.
    const rows = await paidMarket.database.db
      .selectFrom('knowledge_market_purchases')
      .select('id')
      .where('buyer', '=', fresh.address)
      .execute();
    expect(rows).toEqual([]);
  });

  it('never counts or lets anyone rate a purchase paid from the seller’s own wallet (one recorded before the check)', async () => {
    const fresh = await signer();
    const db = paidMarket.database.db;
    const listed = () => paying(seller).knowledgeMarket.get({ params: { moduleId } });
    const before = await listed();
    const statsBefore = await paying(seller).knowledgeMarket.stats();
    // A settled purchase for a fresh wallet, paid by the seller to the seller, as the market recorded them before.
    const row = {
      id: 'pur_SelfPaidPurchase0001',
      module_id: moduleId,
      title: 'Agreement-bound module',
      version: '1.0.0',
      seller: seller.address,
      buyer: fresh.address,
      paid_by: seller.address,
      price: 500_000n,
      list_price: 500_000n,
      negotiation_id: null,
      payment_key: 'e'.repeat(64),
      purchased_at: new Date(),
    };
    await db.insertInto('knowledge_market_purchases').values(row).execute();
    await db
      .insertInto('runtime_payments')
      .values({
        key: row.payment_key,
        status: 'settled',
        resource: 'test',
        payer: seller.address,
        pay_to: seller.address,
        amount: 500_000n,
        transaction: null,
        created_at: new Date(),
        settled_at: new Date(),
      })
      .execute();
    expect((await listed()).sales).toBe(before.sales);
    const rate = await fail(
      as(fresh, paidMarket.url).knowledgeMarket.rate({ params: { moduleId }, body: { purchaseId: row.id, rating: 5 } }),
    );
    expect(rate).toBeInstanceOf(UnprocessableEntityError);
    expect(rate).toMatchObject({ status: 422, code: 'own_module' });
    // Even a rating already stored against such a purchase does not count.
    await db
      .insertInto('knowledge_market_ratings')
      .values({ purchase_id: row.id, module_id: moduleId, buyer: fresh.address, rating: 5, rated_at: new Date() })
      .execute();
    const after = await listed();
    expect(after.sales).toBe(before.sales);
    expect(after.rating).toEqual(before.rating);
    const statsAfter = await paying(seller).knowledgeMarket.stats();
    expect(statsAfter).toMatchObject({
      purchases: statsBefore.purchases,
      volumeUsd: statsBefore.volumeUsd,
      ratings: statsBefore.ratings,
      averageRating: statsBefore.averageRating,
    });
    await db.deleteFrom('knowledge_market_ratings').where('purchase_id', '=', row.id).execute();
    await db.deleteFrom('knowledge_market_purchases').where('id', '=', row.id).execute();
    await db.deleteFrom('runtime_payments').where('key', '=', row.payment_key).execute();
  });
});

describe('statistics', () => {
  it('counts modules, sellers, purchases, volume, ratings and capabilities exactly', async () => {
    const stats = await as().knowledgeMarket.stats();
    const all = (await as().knowledgeMarket.list({ query: { limit: 100 } })).items;
    expect(stats.modules).toBe(all.length);
    expect(stats.sellers).toBe(new Set(all.map((m) => m.seller.wallet)).size);
    expect(stats.purchases).toBe(all.reduce((s, m) => s + m.sales, 0));
    // Sales in this deployment: 1 + 3 at 0.5 (rent), 1 at 0.5 (other), 1 at 0.425 (negotiated) = 2.925.
    expect(stats.purchases).toBe(6);
    expect(stats.volumeUsd).toBe('2.925');
    expect(stats.ratings).toBe(3);
    expect(stats.averageRating).toBe(4.33);
    expect(stats.byFormat).toEqual({
      markdown: all.filter((m) => m.format === 'markdown').length,
      text: 0,
      json: 0,
      code: 1,
    });
    expect(stats.topCapabilities[0]).toEqual({
      capability: 'fee-estimation',
      modules: all.filter((m) => m.capabilities.includes('fee-estimation')).length,
    });
    expect(stats.purchasesLast24h).toBe(6);
  });
});
