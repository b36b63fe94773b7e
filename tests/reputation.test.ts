import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usdToAtomic } from '@agent-economy/contracts';
import {
  AuthenticationError,
  BadRequestError,
  ConflictError,
  PermissionDeniedError,
  UnprocessableEntityError,
  createClient,
  walletFromSecretKey,
  type Signer,
} from '@agent-economy/sdk';
import { createSolanaRpc } from '@solana/kit';
import { createReputationApp } from '../servers/src/services/reputation';
import { generateWallet, type Wallet } from '../servers/src/solana/keys';
import { transferTokens } from '../servers/src/simulate/mints';
import { startEconomy, type Economy } from './support/economy';
import { startService, type RunningService } from './support/servers';

// Expected scores are worked out by hand from the contract's formula:
//   score = (50 × 5 + Σ weight × points) / (5 + Σ weight), weights halved per 180 days, where a report weighs 1 from
//   a trusted service, amount / (amount + 100 000) when a cited transfer of `amount` atomic units verifies it, else 0.

const FREE = { kind: 'fixed', usd: '0' } as const;
const DAY = 86_400_000;

let service: RunningService;
let alice: Signer, bob: Signer, carol: Signer, dave: Signer, erin: Signer, escrow: Signer;

const signer = () => walletFromSecretKey(generateWallet().secretKey);
/** A client that proves `wallet` (SIGN-IN-WITH-X) and never pays. */
const as = (wallet: Signer | undefined, url = service.url) =>
  createClient({ baseUrls: { reputation: url }, ...(wallet ? { wallet } : {}), payments: false, maxRetries: 0 })
    .reputation;
const escrowId = (n: number) => `esc_${'T'.repeat(15)}${n}`;

async function reportCount(): Promise<number> {
  const row = await service.database.db
    .selectFrom('reputation_reports')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

beforeAll(async () => {
  [alice, bob, carol, dave, erin, escrow] = await Promise.all([
    signer(),
    signer(),
    signer(),
    signer(),
    signer(),
    signer(),
  ]);
  service = await startService(
    (c) =>
      createReputationApp(
        { ...c, prices: { report: FREE, get: FREE, top: FREE } },
        { trustedReporters: [escrow.address] },
      ),
    { id: 'reputation' },
  );
});
afterAll(() => service?.close());

describe('reports and profiles', () => {
  it('answers an agent nobody reported on: score 50, unrated, confidence 0', async () => {
    const profile = await as(undefined).get({ params: { agentId: bob.address } });
    expect(profile).toMatchObject({
      agentId: bob.address,
      score: 50,
      tier: 'unrated',
      confidence: 0,
      tradeCount: 0,
      averageRating: null,
      volume: '0',
      firstSeenAt: null,
      lastTradeAt: null,
      history: { items: [], nextCursor: null },
    });
    expect(profile.asSeller).toEqual({
      score: null,
      trades: 0,
      completed: 0,
      disputes: 0,
      disputesLost: 0,
      expired: 0,
      completionRate: null,
      disputeRate: null,
      volume: '0',
    });
  });

  it('weighs an unverified report 0 and a trusted service’s 1, and scores them by hand', async () => {
    // Alice's own report: unverified (it cites no transfer), points 100, weight 0: the score stays 250 / 5 = 50.
    const first = await as(alice).report({
      body: {
        subject: bob.address,
        subjectRole: 'seller',
        outcome: 'completed',
        rating: 5,
        amount: '2500000',
        escrowId: escrowId(1),
        comment: 'Delivered early.',
      },
    });
    expect(first).toMatchObject({
      reporter: alice.address,
      ratedBy: alice.address,
      subject: bob.address,
      verified: false,
      weight: 0,
      points: 100,
      scoreBefore: 50,
      scoreAfter: 50,
      rating: 5,
      amount: '2500000',
      comment: 'Delivered early.',
      escrowId: escrowId(1),
      signature: null,
    });
    expect(first.id).toMatch(/^rep_[0-9a-f]{24}$/);

    // The escrow service reports Carol's rating 4 of another trade: verified, points (100 + 75) / 2 = 87.5,
    // score (250 + 87.5) / 6 = 56.25.
    const second = await as(escrow).report({
      body: {
        subject: bob.address,
        subjectRole: 'seller',
        outcome: 'completed',
        rating: 4,
        amount: '1000000',
        escrowId: escrowId(2),
        ratedBy: carol.address,
      },
    });
    expect(second).toMatchObject({
      reporter: escrow.address,
      ratedBy: carol.address,
      verified: true,
      weight: 1,
      points: 87.5,
      scoreBefore: 50,
      scoreAfter: 56.25,
    });

    // Bob as a buyer, auto-released by the escrow's timer: points 80, score (250 + 167.5) / 7 = 59.64.
    const third = await as(escrow).report({
      body: {
        subject: bob.address,
        subjectRole: 'buyer',
        outcome: 'auto_released',
        amount: '500000',
        escrowId: escrowId(3),
        ratedBy: dave.address,
      },
    });
    expect(third).toMatchObject({ verified: true, points: 80, rating: null, scoreBefore: 56.25, scoreAfter: 59.64 });
  });

  it('shows the profile with per-role statistics, newest report first', async () => {
    const profile = await as(undefined).get({ params: { agentId: bob.address } });
    // Figures from the two verified reports only: Alice's unverified one is in the history, nowhere else.
    expect(profile).toMatchObject({
      score: 59.64,
      tier: 'new',
      confidence: 0.2857, // 2 / 7
      tradeCount: 2,
      verifiedTradeCount: 2,
      averageRating: 4,
      ratingCount: 1,
      volume: '1500000',
    });
    expect(profile.asSeller).toEqual({
      score: 56.25,
      trades: 1,
      completed: 1,
      disputes: 0,
      disputesLost: 0,
      expired: 0,
      completionRate: 1,
      disputeRate: 0,
      volume: '1000000',
    });
    // (250 + 80) / 6 = 55
    expect(profile.asBuyer).toMatchObject({ score: 55, trades: 1, completed: 1, volume: '500000' });
    expect(profile.history.items.map((r) => r.escrowId)).toEqual([escrowId(3), escrowId(2), escrowId(1)]);
    expect(profile.history.items.map((r) => r.verified)).toEqual([true, true, false]);
    // First seen in a verified report: being named by someone who shows no trade is no appearance.
    expect(profile.firstSeenAt).toBe(profile.history.items[1]!.createdAt);
    expect(profile.lastTradeAt).toBe(profile.history.items[0]!.createdAt);

    const page1 = await as(undefined).get({ params: { agentId: bob.address }, query: { limit: 2 } });
    expect(page1.history.items.map((r) => r.escrowId)).toEqual([escrowId(3), escrowId(2)]);
    const page2 = await as(undefined).get({
      params: { agentId: bob.address },
      query: { limit: 2, cursor: page1.history.nextCursor! },
    });
    expect(page2.history.items.map((r) => r.escrowId)).toEqual([escrowId(1)]);
    expect(page2.history.nextCursor).toBeNull();
  });

  it('counts the escrow’s report and the buyer’s own about one trade as one trade', async () => {
    // Dave's view of escrow 3 (Bob as buyer) adds a report but not a trade: the escrow's verified report decides.
    await as(dave).report({
      body: { subject: bob.address, subjectRole: 'buyer', outcome: 'dispute_split', escrowId: escrowId(3) },
    });
    const profile = await as(undefined).get({ params: { agentId: bob.address } });
    expect(profile.tradeCount).toBe(2);
    expect(profile.asBuyer).toMatchObject({ trades: 1, completed: 1, disputes: 0, volume: '500000' });
    // Dave's own report is unverified: shown, weighing nothing; the score stays (250 + 167.5) / 7 = 59.64.
    expect(profile.score).toBe(59.64);
    expect(profile.history.items).toHaveLength(4);
  });

  it('keeps amounts beyond 64 bits exact', async () => {
    const big = '9999999999999999999999999';
    const report = await as(escrow).report({
      body: {
        subject: alice.address,
        subjectRole: 'buyer',
        outcome: 'completed',
        amount: big,
        escrowId: escrowId(4),
        ratedBy: carol.address,
      },
    });
    expect(report.amount).toBe(big);
    const profile = await as(undefined).get({ params: { agentId: alice.address } });
    // (250 + 100) / 6 = 58.33
    expect(profile).toMatchObject({ volume: big, tradeCount: 1, tier: 'new', score: 58.33 });
    // Out again, so the rankings and statistics below are about the fixed set worked out by hand.
    await service.database.db.deleteFrom('reputation_reports').where('id', '=', report.id).execute();
  });

  it('lets weights decay: a server whose clock is 360 days later scores the same reports at a quarter weight', async () => {
    const later = await startService(
      (c) =>
        createReputationApp(
          { ...c, prices: { get: FREE } },
          { trustedReporters: [escrow.address], now: () => new Date(Date.now() + 360 * DAY) },
        ),
      { id: 'reputation', database: service.database },
    );
    try {
      const profile = await as(undefined, later.url).get({ params: { agentId: bob.address } });
      // Weights 0, 0.25, 0.25, 0: (250 + 21.875 + 20) / (5 + 0.5) = 53.07
      expect(profile.score).toBe(53.07);
      expect(profile.confidence).toBe(0.0909); // 0.5 / 5.5
    } finally {
      await later.close();
    }
  });
});

describe('rankings and statistics', () => {
  beforeAll(async () => {
    // Dave: five verified seller trades rated 5: (250 + 500) / 10 = 75, gold. Erin: one lost dispute: 250 / 6 = 41.67.
    for (let i = 0; i < 5; i++) {
      await as(escrow).report({
        body: {
          subject: dave.address,
          subjectRole: 'seller',
          outcome: 'completed',
          rating: 5,
          amount: '1000000',
          escrowId: escrowId(10 + i),
          ratedBy: carol.address,
        },
      });
    }
    await as(escrow).report({
      body: {
        subject: erin.address,
        subjectRole: 'seller',
        outcome: 'dispute_lost',
        amount: '700000',
        escrowId: escrowId(20),
        ratedBy: alice.address,
      },
    });
  });

  it('ranks agents by score, filtered by role and trade count, paged', async () => {
    // Bob has two verified trades (Alice's unverified report of escrow 1 is no trade).
    const any = await as(undefined).top({ query: { minTrades: 2 } });
    expect(any.items.map((a) => [a.rank, a.agentId, a.score, a.tier])).toEqual([
      [1, dave.address, 75, 'gold'],
      [2, bob.address, 59.64, 'new'],
    ]);
    expect(any.items[0]).toMatchObject({
      tradeCount: 5,
      completionRate: 1,
      disputeRate: 0,
      averageRating: 5,
      volume: '5000000',
      confidence: 0.5,
    });
    expect(any.nextCursor).toBeNull();

    const all = await as(undefined).top({ query: { minTrades: 0, limit: 2 } });
    expect(all.items.map((a) => a.agentId)).toEqual([dave.address, bob.address]);
    const rest = await as(undefined).top({ query: { minTrades: 0, limit: 2, cursor: all.nextCursor! } });
    expect(rest.items.map((a) => [a.rank, a.agentId, a.score, a.disputeRate])).toEqual([[3, erin.address, 41.67, 1]]);
    expect(rest.nextCursor).toBeNull();

    const sellers = await as(undefined).top({ query: { role: 'seller', minTrades: 1 } });
    expect(sellers.items.map((a) => [a.agentId, a.score])).toEqual([
      [dave.address, 75],
      [bob.address, 56.25],
      [erin.address, 41.67],
    ]);
    expect((await as(undefined).top({ query: { role: 'buyer' } })).items).toEqual([]);
  });

  it('summarizes agents, reports, tiers and outcomes', async () => {
    const stats = await as(undefined).stats();
    // Subjects bob, dave, erin; counterparties alice and carol are unrated (dave is also a subject).
    expect(stats).toMatchObject({
      agents: 5,
      reports: 10,
      verifiedReports: 8,
      averageScore: 58.77, // (59.64 + 75 + 41.67) / 3
      tiers: { unrated: 2, new: 2, bronze: 0, silver: 0, gold: 1, platinum: 0 },
      outcomes: { completed: 7, auto_released: 1, dispute_won: 0, dispute_split: 1, dispute_lost: 1, expired: 0 },
      reportsLast24h: 10,
    });
    // No report filed since: the same figures, computed once (asOf says when).
    expect(await as(undefined).stats()).toEqual(stats);
  });
});

describe('refusals', () => {
  it('needs SIGN-IN-WITH-X to report', async () => {
    const before = await reportCount();
    const error = await as(undefined)
      .report({ body: { subject: bob.address, subjectRole: 'seller', outcome: 'completed' } })
      .catch((e) => e);
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(error.code).toBe('siwx_invalid');
    expect(await reportCount()).toBe(before);
  });

  it('refuses ratedBy from a caller that is not a trusted service (403 not_trusted_reporter)', async () => {
    const error = await as(alice)
      .report({ body: { subject: erin.address, subjectRole: 'seller', outcome: 'completed', ratedBy: carol.address } })
      .catch((e) => e);
    expect(error).toBeInstanceOf(PermissionDeniedError);
    expect(error.code).toBe('not_trusted_reporter');
  });

  it('refuses a report about oneself (422 self_report), also through a trusted service', async () => {
    const own = await as(alice)
      .report({ body: { subject: alice.address, subjectRole: 'seller', outcome: 'completed', rating: 5 } })
      .catch((e) => e);
    expect(own).toBeInstanceOf(UnprocessableEntityError);
    expect(own.code).toBe('self_report');
    const relayed = await as(escrow)
      .report({ body: { subject: carol.address, subjectRole: 'seller', outcome: 'completed', ratedBy: carol.address } })
      .catch((e) => e);
    expect(relayed.code).toBe('self_report');
  });

  it('accepts one report per reporter per escrow about a subject (409 duplicate_report)', async () => {
    const before = await reportCount();
    const error = await as(alice)
      .report({ body: { subject: bob.address, subjectRole: 'seller', outcome: 'expired', escrowId: escrowId(1) } })
      .catch((e) => e);
    expect(error).toBeInstanceOf(ConflictError);
    expect(error.code).toBe('duplicate_report');
    expect(error.details.reportId).toMatch(/^rep_/);
    expect(await reportCount()).toBe(before);
  });

  it('needs the chain to weigh a cited transaction: 502 upstream_unavailable with Retry-After, nothing stored', async () => {
    // This service's RPC address has nothing listening, like a cluster that is down.
    const before = await reportCount();
    const error = await as(alice)
      .report({
        body: { subject: erin.address, subjectRole: 'seller', outcome: 'completed', signature: '1'.repeat(64) },
      })
      .catch((e) => e);
    expect(error.status).toBe(502);
    expect(error.code).toBe('upstream_unavailable');
    expect(error.headers['retry-after']).toBe('5');
    expect(await reportCount()).toBe(before);
  });

  it('answers 400 naming each invalid field, and writes nothing', async () => {
    const before = await reportCount();
    const valid = { subject: erin.address, subjectRole: 'seller', outcome: 'completed' };
    const cases: [Record<string, unknown>, string][] = [
      [{ subject: 'not-an-address' }, 'body.subject'],
      [{ subjectRole: 'owner' }, 'body.subjectRole'],
      [{ outcome: 'great' }, 'body.outcome'],
      [{ rating: 6 }, 'body.rating'],
      [{ rating: 2.5 }, 'body.rating'],
      [{ comment: '   ' }, 'body.comment'],
      [{ comment: 'x'.repeat(1001) }, 'body.comment'],
      [{ comment: 'nul \u0000 inside' }, 'body.comment'],
      [{ amount: '-5' }, 'body.amount'],
      [{ amount: '1.5' }, 'body.amount'],
      [{ escrowId: 'esc_short' }, 'body.escrowId'],
      [{ moduleId: '-bad' }, 'body.moduleId'],
      [{ signature: 'abc' }, 'body.signature'],
      [{ ratedBy: 'nobody' }, 'body.ratedBy'],
      [{ stars: 5 }, 'body.stars'],
    ];
    for (const [change, field] of cases) {
      const error = await as(alice)
        .report({ body: { ...valid, ...change } as never })
        .catch((e) => e);
      expect(error, JSON.stringify(change)).toBeInstanceOf(BadRequestError);
      expect(
        error.fields.map((f: { field: string }) => f.field),
        JSON.stringify(change),
      ).toContain(field);
    }
    const missing = await as(alice)
      .report({ body: { subject: erin.address } as never })
      .catch((e) => e);
    expect(missing.fields.map((f: { field: string }) => f.field).sort()).toEqual(['body.outcome', 'body.subjectRole']);
    expect(await reportCount()).toBe(before);
  });

  it('answers 400 for a bad agent id, limit, role or cursor', async () => {
    const fieldsOf = async (p: Promise<unknown>) =>
      ((await p.catch((e) => e)) as BadRequestError).fields.map((f) => f.field);
    expect(await fieldsOf(as(undefined).get({ params: { agentId: 'bob' } }))).toEqual(['params.agentId']);
    expect(await fieldsOf(as(undefined).get({ params: { agentId: bob.address }, query: { limit: 0 } }))).toEqual([
      'query.limit',
    ]);
    expect(
      await fieldsOf(as(undefined).get({ params: { agentId: bob.address }, query: { cursor: 'garbage' } })),
    ).toEqual(['query.cursor']);
    expect(
      await fieldsOf(as(undefined).get({ params: { agentId: bob.address }, query: { verified: 'yes' as never } })),
    ).toEqual(['query.verified']);
    expect(await fieldsOf(as(undefined).top({ query: { role: 'admin' as never } }))).toEqual(['query.role']);
    expect(await fieldsOf(as(undefined).top({ query: { minTrades: -1 } }))).toEqual(['query.minTrades']);
    expect(await fieldsOf(as(undefined).top({ query: { cursor: 'garbage' } }))).toEqual(['query.cursor']);
    const forged = Buffer.from(JSON.stringify({ t: new Date().toISOString(), id: "x' or 1=1\u0000" })).toString(
      'base64url',
    );
    expect(await fieldsOf(as(undefined).get({ params: { agentId: bob.address }, query: { cursor: forged } }))).toEqual([
      'query.cursor',
    ]);
  });
});

describe('paid and verified on chain', () => {
  let economy: Economy;
  let paid: RunningService;
  let buyer: Signer;

  beforeAll(async () => {
    economy = await startEconomy();
    buyer = await walletFromSecretKey(economy.buyer.secretKey);
    paid = await economy.startPaidService((c) => createReputationApp(c, { trustedReporters: [] }), {
      id: 'reputation',
    });
  }, 60_000);
  afterAll(() => economy?.close());

  const payingClient = () =>
    createClient({
      baseUrls: { reputation: paid.url },
      wallet: buyer,
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    });
  /** Sends `amount` atomic units of the stablecoin from `from` to `to` on the ledger: the transaction's signature. */
  let gasPayer: Wallet | undefined;
  const pay = async (from: Wallet, to: string, amount: bigint) => {
    if (!gasPayer) {
      gasPayer = generateWallet();
      await economy.ledger.airdrop(gasPayer.address, 10_000_000_000n);
    }
    return transferTokens(createSolanaRpc(economy.rpcUrl), gasPayer, economy.ledger.mint, 6, from, to, amount);
  };

  it('checks a report before asking for payment: a self-report is 422, not 402', async () => {
    const error = await as(buyer, paid.url)
      .report({ body: { subject: buyer.address, subjectRole: 'buyer', outcome: 'completed' } })
      .catch((e) => e);
    expect(error).toBeInstanceOf(UnprocessableEntityError);
    expect(error.code).toBe('self_report');
  });

  it('charges 0.001 USD for a report, and verifies a report citing a transfer between the parties', async () => {
    const client = payingClient();
    const seller = paid.context.wallet.address;
    const [buyerBefore, sellerBefore] = [
      economy.ledger.tokenBalance(economy.buyer.address),
      economy.ledger.tokenBalance(seller),
    ];

    // A report citing nothing is unverified; paying for it is a transfer from the buyer to the service's wallet.
    const unverified = await client.reputation.report({
      body: { subject: seller, subjectRole: 'seller', outcome: 'completed', rating: 5 },
    });
    expect(unverified).toMatchObject({ verified: false, weight: 0 });
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(buyerBefore - usdToAtomic('0.001'));
    expect(economy.ledger.tokenBalance(seller)).toBe(sellerBefore + usdToAtomic('0.001'));

    // The buyer pays the seller 1 USD for a purchase and cites that transfer: the chain shows 1 USD moved from the
    // reporter to the subject, so the report is verified and weighs what was at stake, 1 / (1 + 0.1) = 0.909.
    const transfer = await pay(economy.buyer, seller, usdToAtomic('1'));
    const verified = await client.reputation.report({
      body: { subject: seller, subjectRole: 'seller', outcome: 'completed', rating: 4, signature: transfer },
    });
    expect(verified).toMatchObject({ verified: true, signature: transfer, amount: '1000000', points: 87.5 });
    expect(verified.weight).toBeCloseTo(1_000_000 / 1_100_000, 12);
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(
      buyerBefore - usdToAtomic('1') - usdToAtomic('0.002'),
    );

    // The same transfer cited about someone it did not pay is no proof: recorded, unverified.
    const other = await client.reputation.report({
      body: { subject: bob.address, subjectRole: 'seller', outcome: 'completed', signature: transfer },
    });
    expect(other).toMatchObject({ verified: false, weight: 0, amount: null });

    // And a transaction may be cited once per subject.
    const again = await client.reputation
      .report({ body: { subject: seller, subjectRole: 'seller', outcome: 'completed', signature: transfer } })
      .catch((e) => e);
    expect(again.code).toBe('duplicate_report');
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(
      buyerBefore - usdToAtomic('1') - usdToAtomic('0.003'),
    );
  });

  it('takes a transfer-verified trade’s amount from the chain, its role from the transfer’s direction, and lets it overwrite no other trade', async () => {
    // A reputation service that trusts an escrow wallet (funded, so it pays its report fees like the real one).
    const trustedEscrow = generateWallet();
    await economy.ledger.mintTo(trustedEscrow.address, usdToAtomic('1'));
    const trusting = await economy.startPaidService(
      (c) => createReputationApp(c, { trustedReporters: [trustedEscrow.address] }),
      { id: 'reputation' },
    );
    const seller = trusting.context.wallet.address;
    const clientOf = async (secretKey: Uint8Array) =>
      createClient({
        baseUrls: { reputation: trusting.url },
        wallet: await walletFromSecretKey(secretKey),
        payments: { rpcUrl: economy.rpcUrl },
        maxRetries: 0,
      });
    const escrowClient = await clientOf(trustedEscrow.secretKey);
    const buyerClient = await clientOf(economy.buyer.secretKey);
    const trade = escrowId(90);
    // The escrow's verified trade: completed, 2 USD.
    await escrowClient.reputation.report({
      body: {
        subject: seller,
        subjectRole: 'seller',
        outcome: 'completed',
        rating: 5,
        amount: '2000000',
        escrowId: trade,
        ratedBy: carol.address,
      },
    });
    // The buyer pays the seller's wallet 0.5 USD (a real purchase between the two)...
    const first = await pay(economy.buyer, seller, usdToAtomic('0.5'));
    // ...and cites it naming the escrow's trade, claiming a lost dispute worth far more than it moved.
    const cited = await buyerClient.reputation.report({
      body: {
        subject: seller,
        subjectRole: 'seller',
        outcome: 'dispute_lost',
        amount: '5000000000',
        escrowId: trade,
        signature: first,
      },
    });
    expect(cited).toMatchObject({ verified: true, amount: '500000', signature: first });
    const profile = await buyerClient.reputation.get({ params: { agentId: seller } });
    // Two verified trades: the escrow's (completed, 2 USD) untouched, and the buyer's own (lost, 0.5 USD).
    expect(profile).toMatchObject({ tradeCount: 2, verifiedTradeCount: 2, volume: '2500000' });
    expect(profile.asSeller).toMatchObject({ trades: 2, completed: 1, disputes: 1, disputesLost: 1 });

    // The seller received the cited report's fee too (a transfer from the buyer): it shows the seller selling.
    const fee = buyerClient.payments.receipts[0]!.transaction;
    const asBuyer = await buyerClient.reputation.report({
      body: { subject: seller, subjectRole: 'buyer', outcome: 'completed', signature: fee },
    });
    expect(asBuyer).toMatchObject({ verified: false, weight: 0 });
    const after = await buyerClient.reputation.get({ params: { agentId: seller } });
    expect(after.asBuyer).toMatchObject({ score: null, trades: 0, volume: '0' });
    expect(after).toMatchObject({ tradeCount: 2, volume: '2500000' });
  });

  describe('a cited transfer weighs what it moved', () => {
    /** `count` fresh wallets, each funded for one report fee and sending `amount` atomic units to `subject`. */
    const sybilsPaying = async (subject: string, count: number, amount: bigint) => {
      const sybils = Array.from({ length: count }, () => generateWallet());
      const cited: { wallet: Wallet; signature: string }[] = [];
      for (const wallet of sybils) {
        await economy.ledger.mintTo(wallet.address, usdToAtomic('0.001') + amount);
        cited.push({ wallet, signature: await pay(wallet, subject, amount) });
      }
      return cited;
    };
    const reputationOf = async (wallet: Wallet) =>
      createClient({
        baseUrls: { reputation: paid.url },
        wallet: await walletFromSecretKey(wallet.secretKey),
        payments: { rpcUrl: economy.rpcUrl },
        maxRetries: 0,
      }).reputation;

    it('lets five fresh wallets that each sent the victim 1 atomic unit barely move its score, and count no trade', async () => {
      const victim = generateWallet().address;
      for (const { wallet, signature } of await sybilsPaying(victim, 5, 1n)) {
        const report = await (
          await reputationOf(wallet)
        ).report({
          body: { subject: victim, subjectRole: 'seller', outcome: 'dispute_lost', rating: 1, signature },
        });
        // Verified (the transfer is real and runs the right way) but weighing 1 / (1 + 100 000): 0.000001 USD at stake.
        expect(report).toMatchObject({ verified: true, amount: '1', points: 0 });
        expect(report.weight).toBeCloseTo(1 / 100_001, 12);
      }
      const profile = await payingClient().reputation.get({ params: { agentId: victim } });
      // 250 / (5 + 5 / 100 001) = 49.9995: within 0.01 of the prior, where weight 1 each would have made it 25.
      expect(Math.abs(profile.score - 50)).toBeLessThan(0.01);
      expect(profile).toMatchObject({ tradeCount: 0, verifiedTradeCount: 0, volume: '0', confidence: 0 });
      // Nor do their 1-star ratings make an average: ratings come from trades.
      expect(profile.averageRating).toBeNull();
      expect(profile.asSeller).toMatchObject({ trades: 0, disputes: 0, disputesLost: 0, volume: '0' });
      expect(['unrated', 'new']).toContain(profile.tier);
      // Shown as they are: five verified reports, each with its amount and its tiny weight.
      expect(profile.history.items.map((r) => [r.verified, r.amount])).toEqual(Array(5).fill([true, '1']));
    }, 60_000);

    it('weighs a report citing a 1 USD transfer 1 / 1.1, and counts it as a trade', async () => {
      const [victim, reporter] = [generateWallet().address, generateWallet()];
      await economy.ledger.mintTo(reporter.address, usdToAtomic('1.001'));
      const signature = await pay(reporter, victim, usdToAtomic('1'));
      const report = await (
        await reputationOf(reporter)
      ).report({
        body: { subject: victim, subjectRole: 'seller', outcome: 'dispute_lost', rating: 1, signature },
      });
      // weight = 1 000 000 / (1 000 000 + 100 000) = 10 / 11; score = (250 + 10/11 × 0) / (5 + 10/11) = 2750 / 65.
      expect(report).toMatchObject({
        verified: true,
        amount: '1000000',
        points: 0,
        scoreBefore: 50,
        scoreAfter: 42.31,
      });
      expect(report.weight).toBeCloseTo(10 / 11, 12);
      const profile = await payingClient().reputation.get({ params: { agentId: victim } });
      expect(profile).toMatchObject({
        score: 42.31,
        confidence: 0.1538, // (10/11) / (10/11 + 5) = 10 / 65
        tradeCount: 1,
        verifiedTradeCount: 1,
        volume: '1000000',
        tier: 'new',
      });
      expect(profile.asSeller).toMatchObject({ score: 42.31, trades: 1, disputesLost: 1 });
    });

    it('counts a transfer-verified report as a trade from 0.01 USD, not below', async () => {
      const victim = generateWallet().address;
      const [below, at] = [generateWallet(), generateWallet()];
      for (const [wallet, amount] of [
        [below, 9_999n],
        [at, 10_000n],
      ] as const) {
        await economy.ledger.mintTo(wallet.address, usdToAtomic('0.001') + amount);
        const signature = await pay(wallet, victim, amount);
        await (
          await reputationOf(wallet)
        ).report({ body: { subject: victim, subjectRole: 'seller', outcome: 'completed', signature } });
      }
      const profile = await payingClient().reputation.get({ params: { agentId: victim } });
      // Both verified and weighing (9 999 / 109 999 and 10 000 / 110 000), one trade: the 0.01 USD one.
      expect(profile).toMatchObject({ tradeCount: 1, volume: '10000' });
      expect(profile.history.items.map((r) => [r.amount, r.verified, r.weight])).toEqual([
        ['10000', true, expect.closeTo(10_000 / 110_000, 12)],
        ['9999', true, expect.closeTo(9_999 / 109_999, 12)],
      ]);
    });

    it('keeps a wallet that twenty sybils each paid 1 atomic unit from rising above new', async () => {
      const target = generateWallet().address;
      for (const { wallet, signature } of await sybilsPaying(target, 20, 1n)) {
        await (
          await reputationOf(wallet)
        ).report({
          body: { subject: target, subjectRole: 'seller', outcome: 'completed', rating: 5, signature },
        });
      }
      const profile = await payingClient().reputation.get({ params: { agentId: target } });
      // At weight 1 each these made (250 + 2000) / 25 = 90 with 20 trades: platinum. Now: no trade, score ~50.
      expect(['unrated', 'new']).toContain(profile.tier);
      expect(profile).toMatchObject({ tradeCount: 0, volume: '0' });
      expect(Math.abs(profile.score - 50)).toBeLessThan(0.01);
      const ranked = (await payingClient().reputation.top({ query: { minTrades: 5, limit: 100 } })).items;
      expect(ranked.map((a) => a.agentId)).not.toContain(target);
    }, 120_000);
  });
});

describe('integrity: only a real counterparty moves a score', () => {
  it('keeps and shows six unverified dispute_lost reports from a wallet that never traded with the seller, and lets them weigh nothing', async () => {
    const [frank, spammer] = await Promise.all([signer(), signer()]);
    // Two verified trades rated 5: (250 + 100 + 100) / 7 = 64.29.
    for (const n of [40, 41]) {
      await as(escrow).report({
        body: {
          subject: frank.address,
          subjectRole: 'seller',
          outcome: 'completed',
          rating: 5,
          amount: '1000000',
          escrowId: escrowId(n),
          ratedBy: carol.address,
        },
      });
    }
    const before = await as(undefined).get({ params: { agentId: frank.address } });
    expect(before).toMatchObject({ score: 64.29, confidence: 0.2857, tier: 'new' });
    for (let i = 0; i < 6; i++) {
      const spam = await as(spammer).report({
        body: { subject: frank.address, subjectRole: 'seller', outcome: 'dispute_lost', rating: 1, comment: 'scam' },
      });
      expect(spam).toMatchObject({
        reporter: spammer.address,
        verified: false,
        weight: 0,
        points: 0,
        scoreBefore: 64.29,
        scoreAfter: 64.29,
      });
    }
    const after = await as(undefined).get({ params: { agentId: frank.address } });
    expect(after).toMatchObject({ score: 64.29, confidence: 0.2857, tier: 'new', verifiedTradeCount: 2 });
    expect(after.asSeller.score).toBe(64.29);
    // Kept and shown: every report is in the history, marked unverified and weightless.
    expect(after.history.items).toHaveLength(8);
    expect(after.history.items.filter((r) => !r.verified).map((r) => r.weight)).toEqual([0, 0, 0, 0, 0, 0]);
    const ranked = (await as(undefined).top({ query: { minTrades: 0, limit: 100 } })).items.find(
      (a) => a.agentId === frank.address,
    );
    expect(ranked).toMatchObject({ score: 64.29, tier: 'new' });
  });

  it('gives no tier to an agent praised only by strangers: five sybils’ "completed" reports leave it unrated at 50', async () => {
    const target = await signer();
    for (let i = 0; i < 5; i++) {
      await as(await signer()).report({
        body: { subject: target.address, subjectRole: 'seller', outcome: 'completed', rating: 5 },
      });
    }
    const profile = await as(undefined).get({ params: { agentId: target.address } });
    expect(profile).toMatchObject({ score: 50, confidence: 0, tier: 'unrated', verifiedTradeCount: 0 });
    expect(profile.history.items).toHaveLength(5);
  });
});

describe('integrity: figures come only from verified evidence', () => {
  // A stranger can sign in with any fresh wallet, pay 0.001 USD and file a report about anyone, as often as it likes,
  // naming any amount, any escrow id and any outcome. None of that may show in a figure: only in the history, labelled.
  const huge = '9000000000000000000000000';
  const figures = (p: Awaited<ReturnType<ReturnType<typeof as>['get']>>) => {
    const { history: _, ...rest } = p;
    return rest;
  };

  it('leaves every figure of a profile and of the rankings as it was when strangers file reports', async () => {
    const [target, stranger, other] = await Promise.all([signer(), signer(), signer()]);
    // One verified trade: the escrow's report of Carol's rating 4, 1 USD. Score (250 + 87.5) / 6 = 56.25.
    await as(escrow).report({
      body: {
        subject: target.address,
        subjectRole: 'seller',
        outcome: 'completed',
        rating: 4,
        amount: '1000000',
        escrowId: escrowId(60),
        ratedBy: carol.address,
      },
    });
    const before = await as(undefined).get({ params: { agentId: target.address } });
    expect(before).toMatchObject({
      score: 56.25,
      tradeCount: 1,
      verifiedTradeCount: 1,
      volume: '1000000',
      averageRating: 4,
      ratingCount: 1,
    });
    const rankedBefore = (await as(undefined).top({ query: { minTrades: 0, limit: 100 } })).items.find(
      (a) => a.agentId === target.address,
    );

    // Praise and blame from strangers: huge amounts, both roles, with and without escrow ids of their own.
    for (let i = 0; i < 3; i++) {
      await as(stranger).report({
        body: { subject: target.address, subjectRole: 'seller', outcome: 'completed', rating: 5, amount: huge },
      });
    }
    await as(stranger).report({
      body: {
        subject: target.address,
        subjectRole: 'buyer',
        outcome: 'dispute_lost',
        rating: 1,
        amount: huge,
        escrowId: escrowId(61),
      },
    });
    await as(other).report({
      body: {
        subject: target.address,
        subjectRole: 'seller',
        outcome: 'expired',
        amount: huge,
        escrowId: escrowId(62),
      },
    });

    const after = await as(undefined).get({ params: { agentId: target.address } });
    expect(figures(after)).toEqual(figures(before));
    expect(after).toMatchObject({ tradeCount: 1, volume: '1000000', ratingCount: 1, averageRating: 4 });
    expect(after.asBuyer).toMatchObject({ score: null, trades: 0, disputes: 0, volume: '0' });
    expect(after.asSeller).toMatchObject({ trades: 1, completed: 1, expired: 0, volume: '1000000' });
    // Shown, labelled: all six reports are in the history, the strangers' five marked unverified and weightless.
    expect(after.history.items).toHaveLength(6);
    expect(after.history.items.filter((r) => !r.verified).map((r) => [r.reporter, r.weight, r.amount])).toEqual([
      [other.address, 0, huge],
      [stranger.address, 0, huge],
      [stranger.address, 0, huge],
      [stranger.address, 0, huge],
      [stranger.address, 0, huge],
    ]);
    const rankedAfter = (await as(undefined).top({ query: { minTrades: 0, limit: 100 } })).items.find(
      (a) => a.agentId === target.address,
    );
    expect(rankedAfter).toEqual(rankedBefore);
    expect(rankedAfter).toMatchObject({ tradeCount: 1, volume: '1000000', averageRating: 4 });
  });

  it('lets no report re-amount or re-outcome a verified trade by naming its escrow id, before or after it', async () => {
    const [target, stranger] = await Promise.all([signer(), signer()]);
    // The stranger names escrow 70 first, with a huge amount and a lost dispute...
    await as(stranger).report({
      body: {
        subject: target.address,
        subjectRole: 'seller',
        outcome: 'dispute_lost',
        amount: huge,
        escrowId: escrowId(70),
      },
    });
    // ...then the escrow reports that trade without an amount, and another one with 2 USD.
    for (const [n, amount] of [
      [70, undefined],
      [71, '2000000'],
    ] as const) {
      await as(escrow).report({
        body: {
          subject: target.address,
          subjectRole: 'seller',
          outcome: 'completed',
          escrowId: escrowId(n),
          ratedBy: carol.address,
          ...(amount ? { amount } : {}),
        },
      });
    }
    // And names escrow 71 afterwards, again with a huge amount.
    await as(stranger).report({
      body: {
        subject: target.address,
        subjectRole: 'seller',
        outcome: 'dispute_lost',
        amount: huge,
        escrowId: escrowId(71),
      },
    });
    const profile = await as(undefined).get({ params: { agentId: target.address } });
    expect(profile).toMatchObject({ tradeCount: 2, verifiedTradeCount: 2, volume: '2000000' });
    expect(profile.asSeller).toMatchObject({
      trades: 2,
      completed: 2,
      disputes: 0,
      disputesLost: 0,
      volume: '2000000',
    });
    const ranked = (await as(undefined).top({ query: { role: 'seller', minTrades: 0, limit: 100 } })).items.find(
      (a) => a.agentId === target.address,
    );
    expect(ranked).toMatchObject({ tradeCount: 2, volume: '2000000', disputeRate: 0, completionRate: 1 });
  });

  it('ranks no agent that only strangers reported on, and gives its role no score', async () => {
    const [target, stranger] = await Promise.all([signer(), signer()]);
    await as(stranger).report({
      body: { subject: target.address, subjectRole: 'seller', outcome: 'completed', rating: 5, amount: huge },
    });
    const profile = await as(undefined).get({ params: { agentId: target.address } });
    expect(profile).toMatchObject({
      score: 50,
      tier: 'unrated',
      tradeCount: 0,
      verifiedTradeCount: 0,
      volume: '0',
      averageRating: null,
      ratingCount: 0,
      lastTradeAt: null,
      // Being named in a stranger's report is not an appearance: it would let anyone age a fresh wallet.
      firstSeenAt: null,
    });
    expect(profile.asSeller).toMatchObject({ score: null, trades: 0, volume: '0' });
    expect(profile.history.items.map((r) => r.verified)).toEqual([false]);
    const all = await as(undefined).top({ query: { minTrades: 0, limit: 100 } });
    expect(all.items.map((a) => a.agentId)).not.toContain(target.address);
  });

  it('pages the verified reports apart, so a flood of unverified ones cannot push them out of reach', async () => {
    const [target, stranger] = await Promise.all([signer(), signer()]);
    await as(escrow).report({
      body: {
        subject: target.address,
        subjectRole: 'seller',
        outcome: 'completed',
        amount: '1000000',
        escrowId: escrowId(80),
        ratedBy: carol.address,
      },
    });
    for (let i = 0; i < 3; i++) {
      await as(stranger).report({ body: { subject: target.address, subjectRole: 'seller', outcome: 'completed' } });
    }
    const newest = await as(undefined).get({ params: { agentId: target.address }, query: { limit: 2 } });
    expect(newest.history.items.map((r) => r.verified)).toEqual([false, false]);
    const verified = await as(undefined).get({
      params: { agentId: target.address },
      query: { limit: 2, verified: 'true' },
    });
    expect(verified.history.items.map((r) => [r.verified, r.escrowId])).toEqual([[true, escrowId(80)]]);
    expect(verified.history.nextCursor).toBeNull();
    const unverified = await as(undefined).get({
      params: { agentId: target.address },
      query: { limit: 2, verified: 'false' },
    });
    expect(unverified.history.items.map((r) => r.verified)).toEqual([false, false]);
    const rest = await as(undefined).get({
      params: { agentId: target.address },
      query: { limit: 2, verified: 'false', cursor: unverified.history.nextCursor! },
    });
    expect(rest.history.items.map((r) => r.verified)).toEqual([false]);
    expect(rest.history.nextCursor).toBeNull();
  });
});
