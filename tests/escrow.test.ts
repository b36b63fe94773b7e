import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { escrowFee, usdToAtomic, type Escrow } from '@agent-economy/contracts';
import {
  ApiError,
  AuthenticationError,
  BadRequestError,
  ConflictError,
  NotFoundError,
  PaymentRequiredError,
  PermissionDeniedError,
  UnprocessableEntityError,
  createClient,
  walletFromSecretKey,
  type Signer,
} from '@agent-economy/sdk';
import { createEscrowService, type EscrowOptions, type EscrowService } from '../servers/src/services/escrow';
import { createReputationApp } from '../servers/src/services/reputation';
import { createVerificationApp } from '../servers/src/services/verification';
import { generateWallet, type Wallet } from '../servers/src/solana/keys';
import type { Database } from '../servers/src/db';
import { startEconomy, type Economy } from './support/economy';
import { listenLocal, raceOutcome, startService, testDatabase, type RunningService } from './support/servers';

// Amounts are worked out by hand: the fee is 1 % rounded up, at least 10000 atomic units (0.01 USD); deliver costs
// 5000, confirm 1000, dispute and resolve 50000 each, paid by the caller to the escrow's vault.

const HOUR = 3_600_000;
const DEAD = 'http://127.0.0.1:9';

let economy: Economy;
let escrowWallet: Wallet;
let reputation: RunningService;
let verification: RunningService;
let main: RunningEscrow;
let buyer: Signer, seller: Signer, stranger: Signer;
/** The escrow's clock: real time moved on by `offset` (tests move it past review periods and timeouts). */
let offset = 0;
const now = () => new Date(Date.now() + offset);

interface RunningEscrow extends RunningService {
  service: EscrowService;
}

/** An escrow service paid through the economy, with the escrow wallet (trusted by the reputation service). */
async function startEscrow(options: EscrowOptions = {}, database?: Database): Promise<RunningEscrow> {
  let service!: EscrowService;
  const running = await startService(
    async (c) => {
      service = await createEscrowService(c, {
        tickMs: false,
        now,
        reputationUrl: () => reputation.url,
        verificationUrl: () => verification.url,
        ...options,
      });
      return service.app;
    },
    {
      id: 'escrow',
      wallet: escrowWallet,
      rpcUrl: economy.rpcUrl,
      paywall: { feePayer: economy.feePayer.address, facilitatorUrl: economy.facilitator.url },
      ...(database ? { database } : {}),
    },
  );
  return Object.assign(running, { service });
}

const balance = (address: string) => economy.ledger.tokenBalance(address);
const vault = () => balance(escrowWallet.address);
const client = (wallet: Signer | undefined, url = main.url) =>
  createClient({
    baseUrls: { escrow: url },
    ...(wallet ? { wallet } : {}),
    payments: { rpcUrl: economy.rpcUrl, maxPerCallUsd: '100' },
    maxRetries: 0,
  }).escrow;
const fail = <T>(p: Promise<T>) =>
  p.then(
    () => expect.unreachable('expected an error') as never,
    (e: ApiError) => e,
  );
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

const TERMS = 'Markdown module covering chunking, embedding and retrieval, with runnable TypeScript examples.';
const body = (sellerAddress: string, extra: Record<string, unknown> = {}) => ({
  seller: sellerAddress,
  title: 'RAG pipeline module',
  terms: TERMS,
  amount: '2500000',
  milestones: [
    { title: 'Chunking and embedding', amount: '1000000' },
    { title: 'Retrieval and evaluation', amount: '1500000' },
  ],
  ...extra,
});
const chapter = (topic: string) => ({
  title: `${topic} chapter`,
  format: 'markdown' as const,
  body:
    `# ${topic}\n\nThis chapter covers chunking, embedding and retrieval for a RAG pipeline. Split each document into chunks of ` +
    `300 to 500 tokens with an overlap of 50 tokens, embed every chunk, and retrieve the closest chunks for each question.\n\n` +
    `## Runnable TypeScript examples\n\nThe examples below run as they are.\n\n\`\`\`ts\nconst chunks = split(text, { size: 400, overlap: 50 });\n` +
    `const vectors = await embed(chunks);\n\`\`\`\n\n## Evaluation\n\nMeasure recall at five on a labelled set of questions before tuning anything else.\n`,
});

/** A funded two-milestone escrow between `buyer` and `seller` on the main service. */
async function open(extra: Record<string, unknown> = {}): Promise<Escrow> {
  return client(buyer).create({ body: body(seller.address, extra) });
}

beforeAll(async () => {
  economy = await startEconomy();
  escrowWallet = generateWallet();
  economy.sellers.add(escrowWallet.address);
  await economy.ledger.openTokenAccount(escrowWallet.address);
  // The vault pays its own transaction fees when it sends.
  await economy.ledger.airdrop(escrowWallet.address, 2_000_000_000n);
  reputation = await economy.startPaidService(
    (c) => createReputationApp(c, { trustedReporters: [escrowWallet.address] }),
    { id: 'reputation' },
  );
  verification = await economy.startPaidService((c) => createVerificationApp(c, { marketUrl: DEAD }), {
    id: 'verification',
  });
  main = await startEscrow();
  [buyer, seller, stranger] = (await Promise.all(
    [0, 1, 2].map(() => walletFromSecretKey(generateWallet().secretKey)),
  )) as [Signer, Signer, Signer];
  await economy.ledger.mintTo(buyer.address, usdToAtomic('200'));
  await economy.ledger.mintTo(seller.address, usdToAtomic('5'));
  await economy.ledger.mintTo(stranger.address, usdToAtomic('5'));
}, 60_000);
afterAll(async () => {
  await main?.close();
  await economy?.close();
});

describe('create', () => {
  it('is priced at the amount plus the fee, and that payment funds the vault', async () => {
    expect(escrowFee(2_500_000n)).toBe(25_000n);
    expect(escrowFee(10_000n)).toBe(10_000n);
    const quoted = await fail(
      createClient({ baseUrls: { escrow: main.url }, wallet: buyer, payments: false, maxRetries: 0 }).escrow.create({
        body: body(seller.address),
      }),
    );
    expect(quoted).toBeInstanceOf(PaymentRequiredError);
    expect((quoted as PaymentRequiredError).quote?.accepts[0]).toMatchObject({
      amount: '2525000',
      payTo: escrowWallet.address,
    });

    const [buyerBefore, vaultBefore] = [balance(buyer.address), vault()];
    const result = await client(buyer).create.withResponse({ body: body(seller.address) });
    const escrow = result.data;
    expect(balance(buyer.address)).toBe(buyerBefore - 2_525_000n);
    expect(vault()).toBe(vaultBefore + 2_525_000n);
    expect(escrow).toMatchObject({
      state: 'funded',
      kind: 'milestones',
      buyer: buyer.address,
      seller: seller.address,
      amount: '2500000',
      fee: '25000',
      vault: escrowWallet.address,
      balances: { locked: '2500000', frozen: '0', released: '0', refunded: '0' },
      nextAction: { party: 'seller', action: 'deliver' },
      reviewTimer: { periodHours: 72, nextReleaseAt: null },
      timeoutRelease: { timeoutHours: 336, action: 'refund_undelivered_to_buyer' },
      closedAt: null,
    });
    expect(escrow.id).toMatch(/^esc_[A-Za-z0-9]{16,40}$/);
    expect(escrow.milestones.map((m) => [m.id, m.amount, m.state])).toEqual([
      ['m1', '1000000', 'pending'],
      ['m2', '1500000', 'pending'],
    ]);
    expect(Date.parse(escrow.timeoutRelease.at) - Date.parse(escrow.createdAt)).toBe(336 * HOUR);
    expect(escrow.timeline).toHaveLength(1);
    expect(escrow.timeline[0]).toMatchObject({
      event: 'funded',
      transfer: {
        purpose: 'funding',
        from: buyer.address,
        to: escrowWallet.address,
        amount: '2525000',
        signature: result.payment!.transaction,
      },
    });
  });

  it('makes a single-release escrow of one milestone m1', async () => {
    const escrow = await client(buyer).create({
      body: { seller: seller.address, title: 'One module', amount: '10000', reviewPeriodHours: 1, timeoutHours: 2160 },
    });
    expect(escrow).toMatchObject({
      kind: 'single',
      fee: '10000',
      reviewTimer: { periodHours: 1 },
      timeoutRelease: { timeoutHours: 2160 },
    });
    expect(escrow.milestones).toMatchObject([{ id: 'm1', amount: '10000', title: 'One module' }]);
  });

  it('refuses before payment: a self escrow, bad input, no sign-in', async () => {
    const before = balance(buyer.address);
    const self = await fail(client(buyer).create({ body: body(buyer.address) }));
    expect(self).toBeInstanceOf(UnprocessableEntityError);
    expect(self.code).toBe('self_escrow');
    // A seller without a stablecoin account could never be released to (the vault opens none): refused unpaid.
    const unopened = generateWallet().address;
    const noAccount = await fail(client(buyer).create({ body: body(unopened) }));
    expect(noAccount).toBeInstanceOf(UnprocessableEntityError);
    expect(noAccount.code).toBe('seller_account_missing');
    expect(noAccount.details).toEqual({ seller: unopened });
    const sum = await fail(client(buyer).create({ body: body(seller.address, { amount: '2400000' }) }));
    expect(sum).toBeInstanceOf(BadRequestError);
    expect(sum.message).toContain('milestone amounts add up to 2500000, not to amount 2400000');
    const small = await fail(
      client(buyer).create({ body: body(seller.address, { amount: '9999', milestones: undefined }) }),
    );
    expect(small).toBeInstanceOf(BadRequestError);
    expect(JSON.stringify(small.details)).toContain('body.amount');
    const toVault = await fail(client(buyer).create({ body: body(escrowWallet.address) }));
    expect(toVault.code).toBe('invalid_seller');
    const anonymous = await fail(client(undefined).create({ body: body(seller.address) }));
    expect(anonymous).toBeInstanceOf(AuthenticationError);
    expect(balance(buyer.address)).toBe(before);
  });
});

describe('lifecycle', () => {
  let escrow: Escrow;
  beforeAll(async () => {
    escrow = await open();
  });

  it('shows the escrow to its buyer and seller only', async () => {
    expect((await client(buyer).get({ params: { escrowId: escrow.id } })).id).toBe(escrow.id);
    expect((await client(seller).get({ params: { escrowId: escrow.id } })).id).toBe(escrow.id);
    const stranger403 = await fail(client(stranger).get({ params: { escrowId: escrow.id } }));
    expect(stranger403).toBeInstanceOf(PermissionDeniedError);
    expect(stranger403.code).toBe('not_a_party');
    const missing = await fail(client(buyer).get({ params: { escrowId: 'esc_0000000000000000' } }));
    expect(missing).toBeInstanceOf(NotFoundError);
    expect(missing.code).toBe('escrow_not_found');
  });

  it('lets only the seller deliver, once per milestone, and starts the review timer', async () => {
    const before = balance(buyer.address);
    const byBuyer = await fail(client(buyer).deliver({ body: { escrowId: escrow.id, content: chapter('Chunking') } }));
    expect(byBuyer.code).toBe('not_seller');
    const byStranger = await fail(
      client(stranger).deliver({ body: { escrowId: escrow.id, content: chapter('Chunking') } }),
    );
    expect(byStranger.code).toBe('not_a_party');
    expect(balance(buyer.address)).toBe(before);

    const content = chapter('Chunking');
    const [sellerBefore, vaultBefore] = [balance(seller.address), vault()];
    const delivered = await client(seller).deliver({
      body: { escrowId: escrow.id, content, notes: 'Chapter one as agreed.' },
    });
    expect(balance(seller.address)).toBe(sellerBefore - 5_000n);
    expect(vault()).toBe(vaultBefore + 5_000n);
    expect(delivered.milestoneId).toBe('m1');
    expect(delivered.delivery).toMatchObject({
      contentHash: sha256(content.body),
      sizeBytes: Buffer.byteLength(content.body),
      notes: 'Chapter one as agreed.',
      scanId: null,
    });
    expect(Date.parse(delivered.reviewEndsAt) - Date.parse(delivered.delivery.deliveredAt)).toBe(72 * HOUR);
    expect(delivered.escrow).toMatchObject({
      state: 'delivered',
      nextAction: { party: 'buyer', action: 'review', deadline: delivered.reviewEndsAt },
    });
    expect(delivered.escrow.timeline.at(-1)).toMatchObject({
      event: 'delivered',
      actor: 'seller',
      milestoneIds: ['m1'],
    });
    // The buyer sees the content.
    const seen = await client(buyer).get({ params: { escrowId: escrow.id } });
    expect(seen.milestones[0]!.delivery!.content.body).toBe(content.body);

    const again = await fail(client(seller).deliver({ body: { escrowId: escrow.id, milestoneId: 'm1', content } }));
    expect(again).toBeInstanceOf(ConflictError);
    expect(again.code).toBe('milestone_not_pending');
    const unknown = await fail(client(seller).deliver({ body: { escrowId: escrow.id, milestoneId: 'm7', content } }));
    expect(unknown.code).toBe('milestone_not_found');
  });

  it('checks an attached scan against the delivered content', async () => {
    const content = chapter('Retrieval');
    const scan = await createClient({
      baseUrls: { verification: verification.url },
      wallet: seller,
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    }).verification.scan({
      body: {
        content: {
          title: 'Tomatoes',
          format: 'text',
          body: 'A different text altogether: growing tomatoes in a small garden, watering them in the evening.',
        },
      },
    });
    const mismatch = await fail(client(seller).deliver({ body: { escrowId: escrow.id, content, scanId: scan.id } }));
    expect(mismatch).toBeInstanceOf(UnprocessableEntityError);
    expect(mismatch.code).toBe('scan_content_mismatch');
    const missing = await fail(
      client(seller).deliver({ body: { escrowId: escrow.id, content, scanId: 'scn_0000000000000000' } }),
    );
    expect(missing.code).toBe('scan_not_found');
  });

  it('lets only the buyer confirm; releases on chain and reports to reputation', async () => {
    const bySeller = await fail(client(seller).confirm({ body: { escrowId: escrow.id, milestoneIds: ['m1'] } }));
    expect(bySeller).toBeInstanceOf(PermissionDeniedError);
    expect(bySeller.code).toBe('not_buyer');
    const byStranger = await fail(client(stranger).confirm({ body: { escrowId: escrow.id } }));
    expect(byStranger.code).toBe('not_a_party');

    const [sellerBefore, vaultBefore, buyerBefore] = [balance(seller.address), vault(), balance(buyer.address)];
    const confirmed = await client(buyer).confirm({
      body: { escrowId: escrow.id, milestoneIds: ['m1'], rating: 5, comment: 'Clear.' },
    });
    expect(balance(seller.address)).toBe(sellerBefore + 1_000_000n);
    // The vault paid 1 USD out, took the 0.001 confirm fee and paid the reputation service 0.001 for the report.
    expect(vault()).toBe(vaultBefore - 1_000_000n + 1_000n - 1_000n);
    expect(balance(buyer.address)).toBe(buyerBefore - 1_000n);
    expect(confirmed.releasedMilestoneIds).toEqual(['m1']);
    expect(confirmed.transfers).toHaveLength(1);
    expect(confirmed.transfers[0]).toMatchObject({
      purpose: 'release',
      from: escrowWallet.address,
      to: seller.address,
      amount: '1000000',
    });
    expect(confirmed.escrow.milestones[0]).toMatchObject({
      state: 'released',
      settledBy: 'buyer',
      toSeller: '1000000',
      toBuyer: '0',
      reviewEndsAt: null,
    });
    expect(confirmed.escrow.balances).toEqual({ locked: '1500000', frozen: '0', released: '1000000', refunded: '0' });
    expect(confirmed.escrow.state).toBe('funded');
    const released = confirmed.escrow.timeline.find((e) => e.event === 'released')!;
    expect(released.transfer!.signature).toBe(confirmed.transfers[0]!.signature);
    expect(confirmed.reputationReport.status).toBe('sent');

    const profile = await createClient({
      baseUrls: { reputation: reputation.url },
      wallet: stranger,
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    }).reputation.get({
      params: { agentId: seller.address },
      query: {},
    });
    expect(profile.history.items[0]).toMatchObject({
      id: confirmed.reputationReport.reportId,
      reporter: escrowWallet.address,
      ratedBy: buyer.address,
      outcome: 'completed',
      rating: 5,
      verified: true,
      amount: '1000000',
      signature: confirmed.transfers[0]!.signature,
    });

    const twice = await fail(client(buyer).confirm({ body: { escrowId: escrow.id, milestoneIds: ['m1'] } }));
    expect(twice).toBeInstanceOf(ConflictError);
    expect(twice.code).toBe('milestone_not_releasable');
    expect(balance(seller.address)).toBe(sellerBefore + 1_000_000n);
  });

  it('freezes the funds on a dispute and lets the counterparty answer', async () => {
    await client(seller).deliver({
      body: { escrowId: escrow.id, content: { title: 'Retrieval', format: 'markdown', body: 'todo' } },
    });
    const byStranger = await fail(
      client(stranger).dispute({ body: { escrowId: escrow.id, reason: 'other', statement: 'I want that money.' } }),
    );
    expect(byStranger.code).toBe('not_a_party');
    const settled = await fail(
      client(buyer).dispute({
        body: {
          escrowId: escrow.id,
          milestoneIds: ['m1'],
          reason: 'low_quality',
          statement: 'Too short to be useful.',
        },
      }),
    );
    expect(settled.code).toBe('milestone_not_disputable');

    const disputed = await client(buyer).dispute({
      body: {
        escrowId: escrow.id,
        milestoneIds: ['m2'],
        reason: 'not_as_described',
        statement: 'The retrieval chapter is one word long.',
        evidence: [{ type: 'text', text: 'The body is "todo".' }],
      },
    });
    expect(disputed.escrow).toMatchObject({
      state: 'disputed',
      balances: { locked: '0', frozen: '1500000', released: '1000000', refunded: '0' },
      nextAction: { party: 'seller', action: 'respond_to_dispute' },
    });
    expect(disputed.escrow.timersPausedAt).not.toBeNull();
    expect(disputed.dispute).toMatchObject({
      status: 'open',
      openedBy: 'buyer',
      milestoneIds: ['m2'],
      frozenAmount: '1500000',
      decision: null,
    });
    expect(Date.parse(disputed.dispute.respondBy) - Date.parse(disputed.dispute.openedAt)).toBe(48 * HOUR);
    expect(Date.parse(disputed.dispute.autoResolveAt) - Date.parse(disputed.dispute.respondBy)).toBe(72 * HOUR);
    const inv = disputed.dispute.investigation;
    expect(inv).toMatchObject({
      status: 'complete',
      unavailable: [],
      milestonesDelivered: 1,
      milestonesDisputed: 1,
      deliveredBeforeTimeout: true,
    });
    expect(inv.scans).toHaveLength(1);
    expect(inv.reputation.seller!.agentId).toBe(seller.address);
    expect(inv.reputation.seller!.tradeCount).toBe(1);

    // Frozen: no confirm, no delivery; the opener may not cut the answer short.
    expect((await fail(client(buyer).confirm({ body: { escrowId: escrow.id } }))).code).toBe('escrow_disputed');
    expect((await fail(client(buyer).resolve({ body: { escrowId: escrow.id } }))).code).toBe('awaiting_counterparty');
    expect(
      (
        await fail(
          client(buyer).dispute({ body: { escrowId: escrow.id, reason: 'other', statement: 'Saying it twice now.' } }),
        )
      ).code,
    ).toBe('dispute_already_stated');

    const answered = await client(seller).dispute({
      body: { escrowId: escrow.id, reason: 'other', statement: 'The chapter was delivered on time as agreed.' },
    });
    expect(answered.dispute.statements.map((s) => s.party)).toEqual(['buyer', 'seller']);
    expect(answered.escrow.timeline.some((e) => e.event === 'dispute_response')).toBe(true);
    expect(answered.escrow.nextAction).toMatchObject({ party: 'mediator', action: 'resolve' });
  });

  it('resolves once: a binding decision paid out on chain, naming its evidence', async () => {
    const [sellerBefore, buyerBefore] = [balance(seller.address), balance(buyer.address)];
    const vaultBefore = vault();
    const resolved = await client(seller).resolve({ body: { escrowId: escrow.id, finalStatement: 'I delivered.' } });
    const { decision } = resolved;
    expect(decision.binding).toBe(true);
    expect(decision.requestedBy).toBe('seller');
    expect(decision.generator.engine).toBe('builtin');
    // A one-word delivery against the terms: refunded to the buyer.
    expect(decision.outcome).toBe('refund_to_buyer');
    expect(decision.distribution).toEqual({ total: '1500000', toSeller: '0', toBuyer: '1500000' });
    expect(decision.factors.map((f) => f.factor)).toEqual(
      expect.arrayContaining(['delivery', 'terms', 'quality', 'reputation', 'evidence']),
    );
    const scanId = resolved.dispute.investigation.scans[0]!.scanId;
    expect(decision.factors.find((f) => f.factor === 'quality')!.finding).toContain(scanId);
    expect(decision.transfers).toHaveLength(1);
    expect(decision.transfers[0]).toMatchObject({ purpose: 'refund', to: buyer.address, amount: '1500000' });
    expect(balance(buyer.address)).toBe(buyerBefore + 1_500_000n);
    expect(balance(seller.address)).toBe(sellerBefore - 50_000n);
    // 1.5 USD out, the 0.05 resolve fee in, the reads (2 × 0.002) and the two reports (2 × 0.001) paid out.
    expect(vault()).toBe(vaultBefore - 1_500_000n + 50_000n - 4_000n - 2_000n);
    expect(resolved.escrow).toMatchObject({
      state: 'resolved',
      balances: { locked: '0', frozen: '0', released: '1000000', refunded: '1500000' },
      nextAction: { party: 'none' },
    });
    expect(resolved.escrow.closedAt).not.toBeNull();
    expect(resolved.escrow.milestones[1]).toMatchObject({
      state: 'resolved',
      settledBy: 'mediator',
      toSeller: '0',
      toBuyer: '1500000',
    });
    expect(resolved.dispute.investigation.observations).toContain('Final statement of the seller: I delivered.');

    expect((await fail(client(stranger).resolve({ body: { escrowId: escrow.id } }))).code).toBe('not_a_party');
    const twice = await fail(client(buyer).resolve({ body: { escrowId: escrow.id } }));
    expect(twice).toBeInstanceOf(ConflictError);
    expect(twice.code).toBe('not_disputed');
    expect(
      (
        await fail(
          client(buyer).dispute({ body: { escrowId: escrow.id, reason: 'other', statement: 'After the decision.' } }),
        )
      ).code,
    ).toBe('escrow_closed');
    expect((await fail(client(buyer).confirm({ body: { escrowId: escrow.id } }))).code).toBe('escrow_closed');
    expect(balance(buyer.address)).toBe(buyerBefore + 1_500_000n);
  });

  it('lists an agent’s escrows, grouped, to that agent only; and counts them in the stats', async () => {
    const list = await client(buyer).list({ params: { agentId: buyer.address }, query: {} });
    expect(list.completed.map((s) => s.id)).toContain(escrow.id);
    const summary = list.completed.find((s) => s.id === escrow.id)!;
    expect(summary).toMatchObject({
      role: 'buyer',
      counterparty: seller.address,
      released: '1000000',
      refunded: '1500000',
      milestones: 2,
      milestonesSettled: 2,
      actionRequired: false,
    });
    expect(list.summary.total).toBe(list.active.length + list.completed.length + list.disputed.length);
    expect(list.summary.asBuyer).toBe(list.summary.total);
    expect(list.summary.disputesOpened).toBeGreaterThanOrEqual(1);
    const forbidden = await fail(client(stranger).list({ params: { agentId: buyer.address }, query: {} }));
    expect(forbidden.code).toBe('not_your_escrows');
    const asSeller = await client(seller).list({
      params: { agentId: seller.address },
      query: { role: 'seller', limit: 1 },
    });
    expect(asSeller.summary.asSeller).toBe(list.summary.total);
    expect(asSeller.active.length).toBeLessThanOrEqual(1);

    const stats = await client(undefined).stats();
    expect(stats.totalEscrows).toBe(list.summary.total);
    expect(stats.disputes.resolved).toBeGreaterThanOrEqual(1);
    expect(stats.resolutionRates.refundedToBuyer).not.toBeNull();
    expect(BigInt(stats.volume.escrowed)).toBeGreaterThanOrEqual(2_500_000n);
    // Asked again with nothing changed: the same figures, as of the new answer; an escrow created since is counted.
    offset += 1_000;
    const again = await client(undefined).stats();
    expect({ ...again, asOf: stats.asOf }).toEqual(stats);
    expect(Date.parse(again.asOf) - Date.parse(stats.asOf)).toBeGreaterThanOrEqual(1_000);
    const opened = await open();
    const after = await client(undefined).stats();
    expect([after.totalEscrows, BigInt(after.volume.escrowed), after.byState.funded]).toEqual([
      stats.totalEscrows + 1,
      BigInt(stats.volume.escrowed) + BigInt(opened.amount),
      stats.byState.funded + 1,
    ]);
    // The books hold what the vault paid other services: a report on confirm, two reads and two reports on resolve,
    // two reads and a scan on each dispute call (0.001 + 2 × 0.002 + 2 × 0.001 + 2 × (2 × 0.002) + 0.02).
    expect(await main.service.expenses()).toBe(1_000n + 4_000n + 2_000n + 8_000n + 20_000n);
  });
});

describe('timers', () => {
  it('releases a delivered milestone when the review period ends, without any request', async () => {
    const escrow = await open({ reviewPeriodHours: 2 });
    await client(seller).deliver({ body: { escrowId: escrow.id, content: chapter('Chunking') } });
    const sellerBefore = balance(seller.address);
    offset += HOUR;
    await main.service.scheduler.tick();
    expect(balance(seller.address)).toBe(sellerBefore);
    offset += HOUR + 1_000;
    const { fired } = await main.service.scheduler.tick();
    expect(fired).toBeGreaterThanOrEqual(1);
    expect(balance(seller.address)).toBe(sellerBefore + 1_000_000n);
    const after = await client(buyer).get({ params: { escrowId: escrow.id } });
    expect(after.milestones[0]).toMatchObject({ state: 'released', settledBy: 'review_timer', toSeller: '1000000' });
    expect(after.timeline.some((e) => e.event === 'review_timer_expired')).toBe(true);
    // Too late to confirm it now.
    expect((await fail(client(buyer).confirm({ body: { escrowId: escrow.id, milestoneIds: ['m1'] } }))).code).toBe(
      'milestone_not_releasable',
    );
  });

  it('refunds what was never delivered at the timeout, and refuses later deliveries', async () => {
    const escrow = await open({ timeoutHours: 24 });
    await client(seller).deliver({ body: { escrowId: escrow.id, content: chapter('Chunking') } });
    await client(buyer).confirm({ body: { escrowId: escrow.id, milestoneIds: ['m1'] } });
    const buyerBefore = balance(buyer.address);
    offset += 24 * HOUR + 1_000;
    const late = await fail(client(seller).deliver({ body: { escrowId: escrow.id, content: chapter('Retrieval') } }));
    expect(late.code).toBe('delivery_deadline_passed');
    await main.service.scheduler.tick();
    expect(balance(buyer.address)).toBe(buyerBefore + 1_500_000n);
    const after = await client(buyer).get({ params: { escrowId: escrow.id } });
    expect(after).toMatchObject({
      state: 'expired',
      balances: { locked: '0', frozen: '0', released: '1000000', refunded: '1500000' },
    });
    expect(after.milestones[1]).toMatchObject({ state: 'refunded', settledBy: 'timeout' });
    const refund = after.timeline.find((e) => e.event === 'refunded')!;
    expect(refund.transfer).toMatchObject({ purpose: 'refund', to: buyer.address, amount: '1500000' });
  });

  it('fires nothing for a milestone already confirmed, and nothing twice', async () => {
    const escrow = await open({ reviewPeriodHours: 1 });
    await client(seller).deliver({ body: { escrowId: escrow.id, content: chapter('Chunking') } });
    await client(buyer).confirm({ body: { escrowId: escrow.id, milestoneIds: ['m1'] } });
    const [sellerBefore, vaultBefore] = [balance(seller.address), vault()];
    offset += 2 * HOUR;
    await main.service.scheduler.tick();
    await main.service.scheduler.tick();
    expect(balance(seller.address)).toBe(sellerBefore);
    expect(vault()).toBe(vaultBefore);
    const after = await client(buyer).get({ params: { escrowId: escrow.id } });
    expect(after.milestones[0]!.settledBy).toBe('buyer');
    expect(after.timeline.filter((e) => e.event === 'released')).toHaveLength(1);
  });

  it('pauses the timers during a dispute, and the mediator decides at autoResolveAt', async () => {
    const escrow = await open({ reviewPeriodHours: 10 });
    const delivered = await client(seller).deliver({ body: { escrowId: escrow.id, content: chapter('Chunking') } });
    const disputed = await client(seller).dispute({
      body: {
        escrowId: escrow.id,
        milestoneIds: ['m1'],
        reason: 'unresponsive_buyer',
        statement: 'The buyer does not answer at all.',
      },
    });
    expect(disputed.escrow.reviewTimer.nextReleaseAt).toBeNull();
    offset += 48 * HOUR + 72 * HOUR - HOUR;
    await main.service.scheduler.tick();
    expect((await client(buyer).get({ params: { escrowId: escrow.id } })).state).toBe('disputed');
    const sellerBefore = balance(seller.address);
    offset += 2 * HOUR;
    await main.service.scheduler.tick();
    const after = await client(buyer).get({ params: { escrowId: escrow.id } });
    const decision = after.disputes[0]!.decision!;
    expect(decision.requestedBy).toBe('system');
    // Delivered, good scan, terms met, the buyer silent: released to the seller.
    expect(decision.outcome).toBe('release_to_seller');
    expect(balance(seller.address)).toBe(sellerBefore + 1_000_000n);
    // m2 was never delivered: its timeout moved on by the paused time.
    expect(Date.parse(after.timeoutRelease.at) - Date.parse(escrow.timeoutRelease.at)).toBeGreaterThanOrEqual(
      121 * HOUR - 5_000,
    );
    expect(after.timeline.some((e) => e.event === 'timers_resumed')).toBe(true);
    expect(delivered.reviewEndsAt).toBeTruthy();
  });

  it('fires a timer once across two replicas sharing one database', async () => {
    const shared = await testDatabase();
    const [a, b] = [await startEscrow({}, shared), await startEscrow({}, shared)];
    try {
      const escrow = await client(buyer, a.url).create({ body: body(seller.address, { reviewPeriodHours: 1 }) });
      await client(seller, b.url).deliver({ body: { escrowId: escrow.id, content: chapter('Chunking') } });
      await client(seller, a.url).deliver({ body: { escrowId: escrow.id, content: chapter('Retrieval') } });
      const sellerBefore = balance(seller.address);
      offset += 2 * HOUR;
      const first = await Promise.all([a.service.scheduler.tick(), b.service.scheduler.tick()]);
      const second = await Promise.all([a.service.scheduler.tick(), b.service.scheduler.tick()]);
      // One operation releases both delivered milestones; of the two replicas, one fires it, once.
      expect([...first, ...second].reduce((n, t) => n + t.fired, 0)).toBe(1);
      expect(balance(seller.address)).toBe(sellerBefore + 2_500_000n);
      const after = await client(buyer, b.url).get({ params: { escrowId: escrow.id } });
      expect(after.state).toBe('completed');
      expect(after.timeline.filter((e) => e.event === 'released')).toHaveLength(2);
    } finally {
      await a.stopServer();
      await b.stopServer();
      await shared.close();
    }
  });
});

describe('attacks and failures', () => {
  it('refuses text the database cannot store (NUL, a lone surrogate) with 400 naming the field, before any charge', async () => {
    const [buyerBefore, sellerBefore, vaultBefore] = [balance(buyer.address), balance(seller.address), vault()];
    const nul = await fail(client(buyer).create({ body: body(seller.address, { title: 'RAG\u0000module' }) }));
    expect(nul).toBeInstanceOf(BadRequestError);
    expect(JSON.stringify(nul.details)).toContain('body.title');
    const surrogate = await fail(
      client(buyer).create({
        body: body(seller.address, {
          milestones: [
            { title: 'Chunking \ud800', amount: '1000000' },
            { title: 'Retrieval', amount: '1500000' },
          ],
        }),
      }),
    );
    expect(surrogate).toBeInstanceOf(BadRequestError);
    expect(JSON.stringify(surrogate.details)).toContain('body.milestones.0.title');
    expect(balance(buyer.address)).toBe(buyerBefore);
    expect(vault()).toBe(vaultBefore);

    const escrow = await open();
    const afterOpen = vault();
    const delivery = await fail(
      client(seller).deliver({
        body: { escrowId: escrow.id, content: { ...chapter('Chunking'), body: `${chapter('Chunking').body}\u0000` } },
      }),
    );
    expect(delivery).toBeInstanceOf(BadRequestError);
    expect(JSON.stringify(delivery.details)).toContain('body.content.body');
    const statement = await fail(
      client(buyer).dispute({
        body: { escrowId: escrow.id, reason: 'not_delivered', statement: 'Nothing arrived\u0000 at all, as agreed.' },
      }),
    );
    expect(statement).toBeInstanceOf(BadRequestError);
    expect(balance(seller.address)).toBe(sellerBefore);
    expect(vault()).toBe(afterOpen);
    expect((await client(buyer).get({ params: { escrowId: escrow.id } })).state).toBe('funded');
  });

  it('serves two racing confirms once', async () => {
    const escrow = await open();
    await client(seller).deliver({ body: { escrowId: escrow.id, content: chapter('Chunking') } });
    const sellerBefore = balance(seller.address);
    const results = await Promise.allSettled([
      client(buyer).confirm({ body: { escrowId: escrow.id, milestoneIds: ['m1'] } }),
      client(buyer).confirm({ body: { escrowId: escrow.id, milestoneIds: ['m1'] } }),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(['milestone_not_releasable', 'operation_in_progress']).toContain((refused.reason as ApiError).code);
    expect(balance(seller.address)).toBe(sellerBefore + 1_000_000n);
  });

  it('pays once when the review timer races a confirm', async () => {
    const escrow = await open({ reviewPeriodHours: 1 });
    await client(seller).deliver({ body: { escrowId: escrow.id, content: chapter('Chunking') } });
    const sellerBefore = balance(seller.address);
    offset += 2 * HOUR;
    const [confirmed] = await Promise.allSettled([
      client(buyer).confirm({ body: { escrowId: escrow.id, milestoneIds: ['m1'] } }),
      main.service.scheduler.tick(),
    ]);
    if (confirmed.status === 'rejected')
      expect(['milestone_not_releasable', 'operation_in_progress']).toContain((confirmed.reason as ApiError).code);
    await main.service.scheduler.tick();
    expect(balance(seller.address)).toBe(sellerBefore + 1_000_000n);
    const after = await client(buyer).get({ params: { escrowId: escrow.id } });
    expect(after.milestones[0]!.state).toBe('released');
    expect(after.timeline.filter((e) => e.event === 'released')).toHaveLength(1);
  });

  it('loses no money when the service dies between the transfer and the commit; a retry finishes it', async () => {
    let crash = true;
    const fragile = await startEscrow({
      beforeCommit: () => {
        if (crash) {
          crash = false;
          throw new Error('simulated crash between the transfer and the commit');
        }
      },
    });
    try {
      const escrow = await client(buyer, fragile.url).create({ body: body(seller.address) });
      await client(seller, fragile.url).deliver({ body: { escrowId: escrow.id, content: chapter('Chunking') } });
      const sellerBefore = balance(seller.address);
      const crashed = await fail(
        client(buyer, fragile.url).confirm({ body: { escrowId: escrow.id, milestoneIds: ['m1'] } }),
      );
      expect(crashed.status).toBe(500);
      // The transfer landed, the state did not move: m1 still shows delivered, nothing released on the books.
      expect(balance(seller.address)).toBe(sellerBefore + 1_000_000n);
      const between = await client(buyer, fragile.url).get({ params: { escrowId: escrow.id } });
      expect(between.milestones[0]!.state).toBe('delivered');
      expect(between.balances.released).toBe('0');
      // The retry finishes it with the same transfer: the seller is paid once.
      const retried = await client(buyer, fragile.url).confirm({ body: { escrowId: escrow.id, milestoneIds: ['m1'] } });
      expect(retried.releasedMilestoneIds).toEqual(['m1']);
      expect(retried.escrow.milestones[0]!.state).toBe('released');
      expect(balance(seller.address)).toBe(sellerBefore + 1_000_000n);
      expect(retried.escrow.timeline.filter((e) => e.event === 'released')).toHaveLength(1);
    } finally {
      await fragile.close();
    }
  });

  it('leaves the escrow as it was when the chain cannot be reached, and a retry finishes the release', async () => {
    // The escrow reaches the chain through a relay the test can cut; payments still settle through the facilitator.
    let down = false;
    const relay = createServer((req, res) => {
      if (down) return void req.socket.destroy();
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', async () => {
        const answer = await fetch(economy.rpcUrl + (req.url ?? '/'), {
          method: req.method,
          headers: { 'content-type': 'application/json' },
          body: Buffer.concat(chunks),
        });
        res
          .writeHead(answer.status, { 'content-type': 'application/json' })
          .end(Buffer.from(await answer.arrayBuffer()));
      });
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    const relayUrl = `http://127.0.0.1:${(relay.address() as AddressInfo).port}`;
    let service!: EscrowService;
    const cut = await startService(
      async (c) => {
        service = await createEscrowService(
          { ...c, rpcUrl: relayUrl },
          { tickMs: false, now, reputationUrl: DEAD, verificationUrl: DEAD },
        );
        return service.app;
      },
      {
        id: 'escrow',
        wallet: escrowWallet,
        rpcUrl: economy.rpcUrl,
        paywall: { feePayer: economy.feePayer.address, facilitatorUrl: economy.facilitator.url },
      },
    );
    try {
      const escrow = await client(buyer, cut.url).create({ body: body(seller.address) });
      await client(seller, cut.url).deliver({ body: { escrowId: escrow.id, content: chapter('Chunking') } });
      const [sellerBefore, buyerBefore, vaultBefore] = [balance(seller.address), balance(buyer.address), vault()];
      down = true;
      const refused = await fail(
        client(buyer, cut.url).confirm({ body: { escrowId: escrow.id, milestoneIds: ['m1'] } }),
      );
      expect(refused.status).toBe(503);
      expect(refused.code).toBe('chain_unavailable');
      // Nothing moved, nothing was charged, the escrow is as it was.
      expect([balance(seller.address), balance(buyer.address), vault()]).toEqual([
        sellerBefore,
        buyerBefore,
        vaultBefore,
      ]);
      const between = await client(buyer, cut.url).get({ params: { escrowId: escrow.id } });
      expect(between.milestones[0]!.state).toBe('delivered');
      expect(between.timeline.some((e) => e.event === 'released')).toBe(false);
      down = false;
      const retried = await client(buyer, cut.url).confirm({ body: { escrowId: escrow.id, milestoneIds: ['m1'] } });
      expect(retried.escrow.milestones[0]!.state).toBe('released');
      expect(balance(seller.address)).toBe(sellerBefore + 1_000_000n);
    } finally {
      await cut.close();
      relay.close();
    }
  });

  it('recovers an abandoned operation from the scheduler once its lease is over', async () => {
    let crash = true;
    const fragile = await startEscrow({
      beforeCommit: () => {
        if (crash) {
          crash = false;
          throw new Error('simulated crash');
        }
      },
    });
    try {
      const escrow = await client(buyer, fragile.url).create({ body: body(seller.address, { reviewPeriodHours: 1 }) });
      await client(seller, fragile.url).deliver({ body: { escrowId: escrow.id, content: chapter('Chunking') } });
      const sellerBefore = balance(seller.address);
      offset += 2 * HOUR;
      await fragile.service.scheduler.tick();
      expect(balance(seller.address)).toBe(sellerBefore + 1_000_000n);
      expect((await client(buyer, fragile.url).get({ params: { escrowId: escrow.id } })).milestones[0]!.state).toBe(
        'delivered',
      );
      offset += 2 * 60_000;
      await fragile.service.scheduler.tick();
      const after = await client(buyer, fragile.url).get({ params: { escrowId: escrow.id } });
      expect(after.milestones[0]).toMatchObject({ state: 'released', settledBy: 'review_timer' });
      expect(balance(seller.address)).toBe(sellerBefore + 1_000_000n);
    } finally {
      await fragile.close();
    }
  });

  it('pays for one investigation when the same party disputes five times at once: the refused ones cost nothing', async () => {
    // An escrow service of its own, so that its books hold this test's expenses only.
    const own = await startEscrow();
    try {
      const escrow = await client(buyer, own.url).create({ body: body(seller.address) });
      await client(seller, own.url).deliver({ body: { escrowId: escrow.id, content: chapter('Chunking') } });
      const [vaultBefore, buyerBefore] = [vault(), balance(buyer.address)];
      expect(await own.service.expenses()).toBe(0n);
      const results = await Promise.allSettled(
        [0, 1, 2, 3, 4].map((i) =>
          client(buyer, own.url).dispute({
            body: { escrowId: escrow.id, reason: 'low_quality', statement: `Not what the terms promised (${i}).` },
          }),
        ),
      );
      const { won, lost } = raceOutcome(results);
      expect(won).toHaveLength(1);
      expect(lost).toHaveLength(4);
      for (const error of lost) {
        expect(error).toBeInstanceOf(ConflictError);
        expect(error.code).toBe('dispute_already_stated');
      }
      const { dispute } = won[0]!;
      expect(dispute.statements).toHaveLength(1);
      expect(dispute.investigation).toMatchObject({ status: 'complete', unavailable: [] });
      expect(dispute.investigation.scans).toHaveLength(1);
      // One investigation: a scan of m1 (0.02) and both parties' reputation (2 × 0.002); one dispute fee charged.
      expect(balance(buyer.address)).toBe(buyerBefore - 50_000n);
      expect(vault()).toBe(vaultBefore + 50_000n - 24_000n);
      await vi.waitFor(async () => expect(await own.service.expenses()).toBe(24_000n));
      const stored = await client(buyer, own.url).get({ params: { escrowId: escrow.id } });
      expect(stored.disputes).toHaveLength(1);
      expect(stored.disputes[0]!.investigation).toEqual(dispute.investigation);
      expect(stored.timeline.filter((e) => e.event === 'investigation_updated')).toHaveLength(1);

      // The seller's answer reuses the scan already made of m1: two reads, no new scan.
      const answered = await client(seller, own.url).dispute({
        body: { escrowId: escrow.id, reason: 'other', statement: 'The chapter was delivered as agreed.' },
      });
      expect(answered.dispute.investigation.scans.map((s) => s.scanId)).toEqual([
        dispute.investigation.scans[0]!.scanId,
      ]);
      await vi.waitFor(async () => expect(await own.service.expenses()).toBe(24_000n + 4_000n));
    } finally {
      await own.close();
    }
  });

  it('pays for one investigation when five resolves of one dispute race: the others are refused before any read', async () => {
    // An escrow service of its own, so that its books hold this test's expenses only.
    const own = await startEscrow();
    try {
      const escrow = await client(buyer, own.url).create({ body: body(seller.address) });
      await client(seller, own.url).deliver({ body: { escrowId: escrow.id, content: chapter('Chunking') } });
      await client(buyer, own.url).dispute({
        body: { escrowId: escrow.id, milestoneIds: ['m1'], reason: 'low_quality', statement: 'Not what was promised.' },
      });
      await client(seller, own.url).dispute({
        body: { escrowId: escrow.id, reason: 'other', statement: 'The chapter was delivered as agreed.' },
      });
      // The dispute's investigation: a scan of m1 (0.02) and two reputation reads (2 × 0.002); the answer's: two reads.
      await vi.waitFor(async () => expect(await own.service.expenses()).toBe(24_000n + 4_000n));
      const [vaultBefore, sellerBefore, buyerBefore] = [vault(), balance(seller.address), balance(buyer.address)];
      const results = await Promise.allSettled(
        [0, 1, 2, 3, 4].map(() => client(seller, own.url).resolve({ body: { escrowId: escrow.id } })),
      );
      const { won, lost } = raceOutcome(results);
      expect(won).toHaveLength(1);
      expect(lost).toHaveLength(4);
      const { decision } = won[0]!;
      const { toSeller, toBuyer } = decision.distribution;
      // One resolve fee charged; one investigation read (two reputation reads, the scan read again for free) and
      // the decision's two reports (2 × 0.001) paid.
      expect(balance(seller.address)).toBe(sellerBefore - 50_000n + BigInt(toSeller));
      expect(balance(buyer.address)).toBe(buyerBefore + BigInt(toBuyer));
      expect(vault()).toBe(vaultBefore + 50_000n - 1_000_000n - 4_000n - 2_000n);
      await vi.waitFor(async () => expect(await own.service.expenses()).toBe(28_000n + 4_000n + 2_000n));
      for (const error of lost) {
        expect(error).toBeInstanceOf(ConflictError);
        // Refused while the winner resolves, or (arriving after its commit) because the dispute is resolved.
        expect(['resolution_in_progress', 'not_disputed']).toContain(error.code);
      }
      const busy = lost.find((e) => e.code === 'resolution_in_progress');
      expect(busy).toBeDefined();
      expect(busy!.details).toMatchObject({ escrowId: escrow.id, disputeId: won[0]!.dispute.id });
      expect(Date.parse((busy!.details as { resolvingUntil: string }).resolvingUntil)).toBeGreaterThan(now().getTime());
      const stored = await client(buyer, own.url).get({ params: { escrowId: escrow.id } });
      expect(stored.timeline.filter((e) => e.event === 'resolved')).toHaveLength(1);
    } finally {
      await own.close();
    }
  });

  it('lets a resolve through once a stalled resolve’s lease is over, the scheduler’s included', async () => {
    // A reputation service that holds its requests while `stalled`: the first resolve stalls in its investigation.
    const held: { destroy(): void }[] = [];
    let holding = true;
    const stall = await listenLocal((req) => (holding ? held.push(req.socket) : req.socket.destroy()));
    let stalled = false;
    const own = await startEscrow({ reputationUrl: () => (stalled ? stall.url : reputation.url) });
    try {
      const escrow = await client(buyer, own.url).create({ body: body(seller.address) });
      await client(seller, own.url).deliver({ body: { escrowId: escrow.id, content: chapter('Chunking') } });
      const disputed = await client(buyer, own.url).dispute({
        body: { escrowId: escrow.id, milestoneIds: ['m1'], reason: 'low_quality', statement: 'Not what was promised.' },
      });
      await client(seller, own.url).dispute({
        body: { escrowId: escrow.id, reason: 'other', statement: 'The chapter was delivered as agreed.' },
      });
      // Past the dispute's automatic resolution: the scheduler would resolve it now.
      offset += Date.parse(disputed.dispute.autoResolveAt) - now().getTime() + 60_000;
      const [sellerBefore, buyerBefore] = [balance(seller.address), balance(buyer.address)];

      stalled = true;
      const first = fail(client(seller, own.url).resolve({ body: { escrowId: escrow.id } }));
      await vi.waitFor(() => expect(held.length).toBeGreaterThan(0), { timeout: 10_000 });
      stalled = false;
      // The lease is taken: the buyer is refused before the quote (nothing charged), the scheduler leaves it.
      const unpaid = createClient({ baseUrls: { escrow: own.url }, wallet: buyer, payments: false, maxRetries: 0 });
      const refused = await fail(unpaid.escrow.resolve({ body: { escrowId: escrow.id } }));
      expect(refused).toBeInstanceOf(ConflictError);
      expect(refused.code).toBe('resolution_in_progress');
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect(balance(buyer.address)).toBe(buyerBefore);
      expect(await own.service.scheduler.tick()).toMatchObject({ fired: 0 });
      expect((await client(buyer, own.url).get({ params: { escrowId: escrow.id } })).state).toBe('disputed');

      // The stalled resolve outlives its lease: the scheduler's automatic resolution goes through.
      offset += 3 * 60_000;
      expect(await own.service.scheduler.tick()).toMatchObject({ fired: 1 });
      const after = await client(buyer, own.url).get({ params: { escrowId: escrow.id } });
      expect(after.disputes[0]!.status).toBe('resolved');
      expect(after.disputes[0]!.decision!.requestedBy).toBe('system');
      expect(after.timeline.filter((e) => e.event === 'resolved')).toHaveLength(1);

      // The stalled one wakes up to a resolved dispute: refused, and not charged.
      holding = false;
      for (const socket of held) socket.destroy();
      const late = await first;
      expect(late).toBeInstanceOf(ConflictError);
      expect(late.code).toBe('not_disputed');
      const { toSeller } = after.disputes[0]!.decision!.distribution;
      expect(balance(seller.address)).toBe(sellerBefore + BigInt(toSeller));
      expect((await client(buyer, own.url).get({ params: { escrowId: escrow.id } })).timeline).toEqual(after.timeline);
    } finally {
      await own.close();
      await stall.close();
    }
  });

  it('says so when verification and reputation cannot be reached, and queues the report', async () => {
    const isolated = await startEscrow({ reputationUrl: DEAD, verificationUrl: DEAD });
    try {
      const escrow = await client(buyer, isolated.url).create({ body: body(seller.address) });
      await client(seller, isolated.url).deliver({ body: { escrowId: escrow.id, content: chapter('Chunking') } });
      const confirmed = await client(buyer, isolated.url).confirm({
        body: { escrowId: escrow.id, milestoneIds: ['m1'] },
      });
      expect(confirmed.reputationReport).toEqual({ status: 'queued', reportId: null });
      const disputed = await client(buyer, isolated.url).dispute({
        body: { escrowId: escrow.id, reason: 'not_delivered', statement: 'Nothing arrived for m2 at all.' },
      });
      expect(disputed.dispute.investigation).toMatchObject({
        status: 'partial',
        unavailable: ['reputation'],
        scans: [],
      });
      expect(disputed.dispute.investigation.observations.join(' ')).toContain(
        'reputation service could not be reached',
      );
      const resolved = await client(seller, isolated.url).resolve({ body: { escrowId: escrow.id } });
      expect(resolved.decision.outcome).toBe('refund_to_buyer');
      expect(resolved.decision.factors.find((f) => f.factor === 'reputation')!.finding).toContain(
        'could not be reached',
      );
      expect(resolved.decision.rationale).toContain('Not weighed: reputation');
    } finally {
      await isolated.close();
    }
  });
});
