import {
  SOLANA_DEVNET,
  USDC_DEVNET,
  type MppChargeRequest,
  type MppPreparedCharge,
  type PaymentRequirements,
} from '@agent-economy/contracts';
import { BadRequestError, ConflictError, RateLimitError, UnprocessableEntityError } from '@agent-economy/sdk';
import { getTransferCheckedInstruction } from '@solana-program/token';
import { AccountRole, address, createNoopSigner, createSolanaRpc, type Instruction } from '@solana/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MEMO_PROGRAM, SYSTEM_PROGRAM, TOKEN_PROGRAM } from '../servers/src/solana/programs';
import { createFacilitatorApp } from '../servers/src/services/facilitator';
import { generateWallet } from '../servers/src/solana/keys';
import { ata, buildPaymentTransaction, type PaymentShape } from './support/payments';
import { startEconomy, type Economy } from './support/economy';
import { startService, testDatabase, type RunningService } from './support/servers';

// The facilitator's charge routes (/mpp/prepare, /mpp/settle, /mpp/stats) against the local ledger:
// a buyer-signed charge settles once and moves exactly its amount; every policy rule refuses what it
// should with its reason, moving nothing; the caps push back with Retry-After; stats count what happened.

let economy: Economy;
let rpc: ReturnType<typeof createSolanaRpc>;
let seller: string;

const AMOUNT = 50_000n;
const facilitator = () => economy.facilitator.client.facilitator;

/** What a seller's quote would say: pay `payTo` exactly AMOUNT of the stablecoin, fee payer = the facilitator. */
const terms = (payTo = seller): PaymentRequirements => ({
  scheme: 'exact',
  network: SOLANA_DEVNET,
  amount: AMOUNT.toString(),
  asset: USDC_DEVNET,
  payTo,
  maxTimeoutSeconds: 60,
  extra: { feePayer: economy.feePayer.address },
});

const lifetime = (p: MppPreparedCharge) => ({
  blockhash: p.recentBlockhash,
  lastValidBlockHeight: BigInt(p.lastValidBlockHeight),
});

/** A charge built as a client does: fee payer and blockhash from /mpp/prepare, signed by the buyer only. */
async function chargeTransaction(
  overrides: Partial<PaymentShape> = {},
  service: RunningService = economy.facilitator,
): Promise<string> {
  const prepared = await service.client.facilitator.prepare({ body: {} });
  return buildPaymentTransaction({
    payer: economy.buyer,
    requirements: terms(),
    blockhash: lifetime(prepared),
    ...overrides,
  });
}

const body = (transaction: string, payTo = seller): MppChargeRequest => ({
  transaction,
  network: 'devnet',
  recipient: payTo,
  amount: AMOUNT.toString(),
  asset: USDC_DEVNET,
});

const balances = () => ({
  buyer: economy.ledger.tokenBalance(economy.buyer.address),
  seller: economy.ledger.tokenBalance(seller),
});

async function settlementRows(service: RunningService = economy.facilitator) {
  return service.database.db.selectFrom('facilitator_settlements').selectAll().execute();
}

/** Refused with 422 invalid_transaction and this policy reason; nothing moved, nothing recorded. */
async function expectPolicyRefusal(request: MppChargeRequest, reason: string) {
  const before = balances();
  const rows = (await settlementRows()).length;
  const error = await facilitator()
    .settleCharge({ body: request })
    .catch((e) => e);
  expect(error, String(error)).toBeInstanceOf(UnprocessableEntityError);
  expect(error.code).toBe('invalid_transaction');
  expect(error.details.reason).toBe(reason);
  expect(error.body.error.message).toBeTruthy();
  expect(balances()).toEqual(before);
  expect(await settlementRows()).toHaveLength(rows);
}

/** The buyer's signature slot emptied: a transaction nobody but the fee payer would sign. */
function unsigned(transaction: string): string {
  const wire = Buffer.from(transaction, 'base64');
  wire.fill(0, 1 + 64, 1 + 128); // signature count (1 byte), fee payer slot, then the buyer's
  return wire.toString('base64');
}

beforeAll(async () => {
  economy = await startEconomy();
  rpc = createSolanaRpc(economy.rpcUrl);
  seller = economy.education.context.wallet.address;
});
afterAll(async () => {
  await economy?.close();
});

describe('POST /mpp/prepare', () => {
  it('gives the fee payer, a blockhash the ledger accepts and the stablecoin read from the chain', async () => {
    const prepared = await facilitator().prepare({ body: { network: 'devnet' } });
    expect(prepared).toMatchObject({
      feePayer: economy.feePayer.address,
      network: SOLANA_DEVNET,
      cluster: 'devnet',
      splToken: USDC_DEVNET,
      decimals: 6,
      tokenProgram: TOKEN_PROGRAM,
    });
    expect(prepared.blockhash).toBe(prepared.recentBlockhash);
    const { value: valid } = await rpc
      .isBlockhashValid(prepared.recentBlockhash as never, { commitment: 'confirmed' })
      .send();
    expect(valid).toBe(true);
    const height = await rpc.getBlockHeight().send();
    expect(BigInt(prepared.lastValidBlockHeight)).toBeGreaterThanOrEqual(height);
    expect(BigInt(prepared.lastValidBlockHeight)).toBeLessThanOrEqual(height + 151n);
  });

  it('reads every published spelling of its network, and refuses a network it does not serve', async () => {
    for (const network of ['solana-devnet', SOLANA_DEVNET] as const) {
      expect((await facilitator().prepare({ body: { network } })).cluster).toBe('devnet');
    }
    expect((await facilitator().prepare({ body: {} })).cluster).toBe('devnet');
    const error = await facilitator()
      .prepare({ body: { network: 'mainnet-beta' } })
      .catch((e) => e);
    expect(error).toBeInstanceOf(UnprocessableEntityError);
    expect(error.code).toBe('unsupported_network');
    expect(error.details.supported).toEqual(['devnet']);
  });
});

describe('POST /mpp/settle', () => {
  it('settles a buyer-signed charge once, moving exactly the amount to the seller', async () => {
    const before = balances();
    const feesBefore = economy.ledger.lamports(economy.feePayer.address);
    const request = {
      ...body(await chargeTransaction()),
      resource: { url: `${economy.education.url}/api/lesson`, description: 'a lesson' },
    };

    const settled = await facilitator().settleCharge({ body: request });
    expect(settled).toMatchObject({
      success: true,
      ok: true,
      payer: economy.buyer.address,
      network: SOLANA_DEVNET,
      recipient: seller,
      amount: '50000',
      asset: USDC_DEVNET,
      settlement: { recipient: seller, amount: '50000', asset: USDC_DEVNET, feePayer: economy.feePayer.address },
    });
    expect(balances()).toEqual({ buyer: before.buyer - AMOUNT, seller: before.seller + AMOUNT });
    // The fee payer paid the fees in SOL; the buyer paid only the stablecoin.
    expect(economy.ledger.lamports(economy.feePayer.address)).toBeLessThan(feesBefore);

    const { value } = await rpc.getSignatureStatuses([settled.signature as never]).send();
    expect(value[0]?.err).toBeNull();
    expect(Number(value[0]?.slot)).toBe(settled.slot);
    expect(Date.parse(settled.confirmedAt)).not.toBeNaN();

    const row = (await settlementRows()).find((r) => r.transaction === settled.signature);
    expect(row).toMatchObject({
      kind: 'charge',
      status: 'settled',
      payer: economy.buyer.address,
      pay_to: seller,
      amount: AMOUNT,
      asset: USDC_DEVNET,
      resource: request.resource.url,
    });

    // The same transaction again: never settled, nor reported settled, twice.
    const replay = await facilitator()
      .settleCharge({ body: request })
      .catch((e) => e);
    expect(replay).toBeInstanceOf(UnprocessableEntityError);
    expect(replay.code).toBe('invalid_transaction');
    expect(replay.details).toMatchObject({ reason: 'duplicate_settlement', signature: settled.signature });
    expect(balances()).toEqual({ buyer: before.buyer - AMOUNT, seller: before.seller + AMOUNT });
  });

  it('finds the recipient on chain when the request names only the transaction', async () => {
    const before = balances();
    const settled = await facilitator().settleCharge({ body: { transaction: await chargeTransaction() } });
    expect(settled).toMatchObject({ recipient: seller, amount: '50000', payer: economy.buyer.address });
    expect(balances()).toEqual({ buyer: before.buyer - AMOUNT, seller: before.seller + AMOUNT });
  });

  it('refuses the wrong mint', async () => {
    await expectPolicyRefusal(body(await chargeTransaction({ mint: generateWallet().address })), 'mint_mismatch');
    // A request naming another asset than the stablecoin.
    await expectPolicyRefusal({ ...body(await chargeTransaction()), asset: generateWallet().address }, 'mint_mismatch');
  });

  it('refuses the wrong recipient', async () => {
    await expectPolicyRefusal(
      body(await chargeTransaction({ destination: ata(generateWallet().address, USDC_DEVNET) })),
      'recipient_mismatch',
    );
    // Without a named recipient, a destination that is no open token account.
    await expectPolicyRefusal(
      { transaction: await chargeTransaction({ destination: ata(generateWallet().address, USDC_DEVNET) }) },
      'recipient_mismatch',
    );
  });

  it('refuses an amount other than the one named, below or above', async () => {
    await expectPolicyRefusal(body(await chargeTransaction({ amount: AMOUNT - 1n })), 'amount_mismatch');
    await expectPolicyRefusal(body(await chargeTransaction({ amount: AMOUNT + 1n })), 'amount_mismatch');
  });

  it('refuses programs and instructions outside the policy', async () => {
    const other = generateWallet().address;
    const systemTransfer: Instruction = {
      programAddress: address(SYSTEM_PROGRAM),
      accounts: [
        { address: address(economy.buyer.address), role: AccountRole.WRITABLE_SIGNER },
        { address: address(other), role: AccountRole.WRITABLE },
      ],
      data: Uint8Array.of(2, 0, 0, 0, 0x40, 0x42, 0x0f, 0, 0, 0, 0, 0),
    };
    await expectPolicyRefusal(
      body(await chargeTransaction({ extraInstruction: systemTransfer })),
      'program_not_allowed',
    );
    // A token instruction other than TransferChecked (Approve).
    const approve: Instruction = {
      programAddress: address(TOKEN_PROGRAM),
      data: Uint8Array.of(4, 1, 0, 0, 0, 0, 0, 0, 0),
    };
    await expectPolicyRefusal(body(await chargeTransaction({ extraInstruction: approve })), 'program_not_allowed');
    const second = getTransferCheckedInstruction({
      source: address(ata(economy.buyer.address, USDC_DEVNET)),
      mint: address(USDC_DEVNET),
      destination: address(ata(other, USDC_DEVNET)),
      authority: createNoopSigner(address(economy.buyer.address)),
      amount: 1n,
      decimals: 6,
    });
    await expectPolicyRefusal(body(await chargeTransaction({ extraInstruction: second })), 'multiple_transfers');
  });

  it('keeps the fee payer out of every instruction, and only its own fee payer', async () => {
    const memo: Instruction = {
      programAddress: address(MEMO_PROGRAM),
      accounts: [{ address: address(economy.feePayer.address), role: AccountRole.READONLY_SIGNER }],
      data: new TextEncoder().encode('hello'),
    };
    await expectPolicyRefusal(body(await chargeTransaction({ extraInstruction: memo })), 'fee_payer_not_isolated');
    await expectPolicyRefusal(body(await chargeTransaction({ authority: economy.feePayer })), 'fee_payer_not_isolated');
    await expectPolicyRefusal(
      body(await chargeTransaction({ feePayer: generateWallet().address })),
      'fee_payer_mismatch',
    );
  });

  it('refuses a priority fee above the cap', async () => {
    await expectPolicyRefusal(
      body(await chargeTransaction({ computeUnitPrice: 5_000_001n })),
      'compute_price_too_high',
    );
  });

  it('refuses a transaction the buyer did not sign, or signed by someone else', async () => {
    await expectPolicyRefusal(body(unsigned(await chargeTransaction())), 'signature_invalid');
    await expectPolicyRefusal(body(await chargeTransaction({ signWith: generateWallet() })), 'signature_invalid');
  });

  it('refuses bytes that are not a transaction', async () => {
    await expectPolicyRefusal(
      body(Buffer.from('not a transaction at all').toString('base64')),
      'invalid_transaction_encoding',
    );
  });

  it('refuses a payer without the funds, naming what is needed and what is there', async () => {
    const poor = generateWallet();
    await economy.ledger.mintTo(poor.address, 10n);
    const before = balances();
    const error = await facilitator()
      .settleCharge({ body: body(await chargeTransaction({ payer: poor })) })
      .catch((e) => e);
    expect(error).toBeInstanceOf(UnprocessableEntityError);
    expect(error.code).toBe('insufficient_balance');
    expect(error.details).toEqual({ required: '50000', available: '10' });
    expect(economy.ledger.tokenBalance(poor.address)).toBe(10n);
    expect(balances()).toEqual(before);
  });

  it('answers 409 blockhash_expired for a transaction built on an expired blockhash', async () => {
    const stale = await chargeTransaction();
    economy.ledger.warp(151);
    const before = balances();
    const fees = economy.ledger.lamports(economy.feePayer.address);
    const error = await facilitator()
      .settleCharge({ body: body(stale) })
      .catch((e) => e);
    expect(error).toBeInstanceOf(ConflictError);
    expect(error.code).toBe('blockhash_expired');
    expect(balances()).toEqual(before);
    // Refused in the node's preflight, unsent: the fee payer paid nothing, and no claim of it is left behind.
    expect(economy.ledger.lamports(economy.feePayer.address)).toBe(fees);
    expect((await settlementRows()).filter((r) => r.payer === economy.buyer.address && r.status !== 'settled')).toEqual(
      [],
    );
    // Rebuilt on a fresh blockhash from /mpp/prepare, it settles.
    await facilitator().settleCharge({ body: body(await chargeTransaction()) });
    expect(balances()).toEqual({ buyer: before.buyer - AMOUNT, seller: before.seller + AMOUNT });
  });

  it('settles one of two concurrent requests for the same charge', async () => {
    const before = balances();
    const request = body(await chargeTransaction());
    const results = await Promise.all([
      facilitator()
        .settleCharge({ body: request })
        .catch((e) => e),
      facilitator()
        .settleCharge({ body: request })
        .catch((e) => e),
    ]);
    const winner = results.find((r) => r.success === true);
    const loser = results.find((r) => r !== winner);
    expect(winner).toBeDefined();
    // The loser sees the winner's claim: still in flight (503 settlement_pending) or landed (duplicate_settlement).
    const code = loser.code === 'invalid_transaction' ? loser.details.reason : loser.code;
    expect(['settlement_pending', 'duplicate_settlement']).toContain(code);
    expect(loser.details.signature).toBe(winner.signature);
    expect(balances()).toEqual({ buyer: before.buyer - AMOUNT, seller: before.seller + AMOUNT });
  });

  it('refuses a network it does not serve', async () => {
    const error = await facilitator()
      .settleCharge({ body: { ...body(await chargeTransaction()), network: 'mainnet-beta' } })
      .catch((e) => e);
    expect(error).toBeInstanceOf(UnprocessableEntityError);
    expect(error.code).toBe('unsupported_network');
  });

  it('names each bad field with 400 and changes nothing', async () => {
    const transaction = await chargeTransaction();
    const statsBefore = await facilitator().stats();
    const rows = (await settlementRows()).length;
    const before = balances();
    const cases: [Record<string, unknown>, string][] = [
      [{ ...body(transaction), transaction: 'not base64!' }, 'body.transaction'],
      [{ ...body(transaction), transaction: 'A'.repeat(1648) }, 'body.transaction'],
      [{ ...body(transaction), network: 'moonnet' }, 'body.network'],
      [{ ...body(transaction), recipient: 'not-an-address' }, 'body.recipient'],
      [{ ...body(transaction), amount: '0' }, 'body.amount'],
      [{ ...body(transaction), amount: '0.05' }, 'body.amount'],
      [{ ...body(transaction), asset: 'USDC' }, 'body.asset'],
      [{ ...body(transaction), resource: { url: 'not a url' } }, 'body.resource.url'],
      [{ network: 'devnet' }, 'body.transaction'],
    ];
    for (const [request, field] of cases) {
      const error = await facilitator()
        .settleCharge({ body: request as never })
        .catch((e) => e);
      expect(error, field).toBeInstanceOf(BadRequestError);
      expect(error.code).toBe('invalid_request');
      expect(
        error.fields.map((f: { field: string }) => f.field),
        JSON.stringify(request),
      ).toContain(field);
    }
    const unknown = await facilitator()
      .settleCharge({ body: { ...body(transaction), payTo: seller } as never })
      .catch((e) => e);
    expect(unknown).toBeInstanceOf(BadRequestError);
    const prepare = await facilitator()
      .prepare({ body: { network: 'moonnet' } as never })
      .catch((e) => e);
    expect(prepare).toBeInstanceOf(BadRequestError);
    expect(prepare.fields.map((f: { field: string }) => f.field)).toContain('body.network');

    expect(balances()).toEqual(before);
    expect(await settlementRows()).toHaveLength(rows);
    const statsAfter = await facilitator().stats();
    expect({ ...statsAfter, asOf: '' }).toEqual({ ...statsBefore, asOf: '' });
  });
});

describe('charges without the chain', () => {
  it('answers 503 chain_unavailable with Retry-After, and records no settlement', async () => {
    const transaction = await chargeTransaction();
    const database = await testDatabase();
    // No rpcUrl: nothing listens where this facilitator looks for its chain.
    const orphan = await startService((c) => createFacilitatorApp(c, { sellers: economy.sellers }), {
      id: 'facilitator',
      wallet: economy.feePayer,
      database,
    });
    try {
      const prepare = await orphan.client.facilitator.prepare({ body: {} }).catch((e) => e);
      expect(prepare.status).toBe(503);
      expect(prepare.code).toBe('chain_unavailable');
      expect(prepare.headers['retry-after']).toBe('5');
      const settle = await orphan.client.facilitator.settleCharge({ body: body(transaction) }).catch((e) => e);
      expect(settle.status).toBe(503);
      expect(settle.code).toBe('chain_unavailable');
      expect(await settlementRows(orphan)).toEqual([]);
      expect((await orphan.client.facilitator.stats()).settle).toMatchObject({
        total: 1,
        success: 0,
        fail: 1,
        successRate: 0,
      });
    } finally {
      await orphan.close();
      await database.close();
    }
  });
});

describe('settle caps and statistics', () => {
  let capped: RunningService;
  let database: Awaited<ReturnType<typeof testDatabase>>;

  beforeAll(async () => {
    database = await testDatabase();
    capped = await startService(
      (c) =>
        createFacilitatorApp(c, {
          sellers: economy.sellers,
          settleCaps: { global: 3, perSeller: 2, windowSeconds: 60 },
        }),
      {
        id: 'facilitator',
        wallet: economy.feePayer,
        rpcUrl: economy.rpcUrl,
        database,
      },
    );
  });
  afterAll(async () => {
    await capped?.close();
    await database?.close();
  });

  it('pushes back per seller, then in all, with Retry-After; stats count what really settled', async () => {
    const client = capped.client.facilitator;
    const fresh = await client.stats();
    expect(fresh).toMatchObject({
      networks: [SOLANA_DEVNET],
      prepare: { total: 0, today: 0 },
      settle: { total: 0, today: 0, success: 0, fail: 0, successRate: null },
      volumeAtomic: '0',
      recentSettlements: [],
      lastSettlement: null,
    });

    const [second, third] = [generateWallet().address, generateWallet().address];
    await economy.ledger.openTokenAccount(second);
    await economy.ledger.openTokenAccount(third);
    economy.sellers.add(second);
    economy.sellers.add(third);
    const sellerBefore = economy.ledger.tokenBalance(seller);
    const pay = async (payTo: string) => {
      const prepared = await client.prepare({ body: {} });
      const transaction = await buildPaymentTransaction({
        payer: economy.buyer,
        requirements: terms(payTo),
        blockhash: lifetime(prepared),
      });
      return client.settleCharge({ body: body(transaction, payTo) }).catch((e) => e);
    };

    const first = await pay(seller);
    const again = await pay(seller);
    expect([first.success, again.success]).toEqual([true, true]);
    const sellerCapped = await pay(seller);
    expect(sellerCapped).toBeInstanceOf(RateLimitError);
    expect(sellerCapped.code).toBe('seller_settle_cap_exceeded');
    const retry = Number(sellerCapped.headers['retry-after']);
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(60);
    expect(economy.ledger.tokenBalance(seller)).toBe(sellerBefore + 2n * AMOUNT);

    const other = await pay(second);
    expect(other.success).toBe(true);
    const globalCapped = await pay(third);
    expect(globalCapped).toBeInstanceOf(RateLimitError);
    expect(globalCapped.code).toBe('global_settle_cap_exceeded');
    expect(Number(globalCapped.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(economy.ledger.tokenBalance(third)).toBe(0n);
    expect(economy.ledger.tokenBalance(second)).toBe(AMOUNT);

    // x402 verifications through the same facilitator count too: one valid, one not.
    const x402 = await buildPaymentTransaction({
      payer: economy.buyer,
      requirements: terms(),
      blockhash: lifetime(await client.prepare({ body: {} })),
    });
    const payload = (requirements: PaymentRequirements) => ({
      x402Version: 2 as const,
      paymentPayload: { x402Version: 2 as const, accepted: requirements, payload: { transaction: x402 } },
      paymentRequirements: requirements,
    });
    expect((await client.verify({ body: payload(terms()) })).isValid).toBe(true);
    expect((await client.verify({ body: payload({ ...terms(), amount: '1' }) })).isValid).toBe(false);

    const stats = await client.stats();
    expect(stats.prepare).toEqual({ total: 6, today: 6 });
    expect(stats.settle).toEqual({ total: 5, today: 5, success: 3, fail: 2, successRate: 0.6 });
    expect(stats.x402.verify).toEqual({ total: 2, today: 2, valid: 1, invalid: 1 });
    expect(stats.x402.settle).toEqual({ total: 0, today: 0, success: 0, fail: 0, successRate: null });
    expect(stats.volumeAtomic).toBe((3n * AMOUNT).toString());
    expect(stats.volumeTodayAtomic).toBe((3n * AMOUNT).toString());
    expect(stats.sessions).toEqual({ open: 0, openedToday: 0, closedToday: 0, settledAtomic: '0' });
    expect(stats.recentSettlements.map((r) => r.signature)).toEqual([
      other.signature,
      again.signature,
      first.signature,
    ]);
    expect(stats.recentSettlements[0]).toEqual({
      signature: other.signature,
      kind: 'charge',
      payer: economy.buyer.address,
      recipient: second,
      amount: '50000',
      asset: USDC_DEVNET,
      network: SOLANA_DEVNET,
      at: other.confirmedAt,
    });
    expect(stats.lastSettlement).toEqual(stats.recentSettlements[0]);

    // Counted by kind, outcome and day, not a row a call: free verifications from anyone add no rows.
    const counts = () =>
      database.db.selectFrom('facilitator_event_counts').selectAll().orderBy('kind').orderBy('outcome').execute();
    const before = await counts();
    expect(before.map((r) => [r.kind, r.outcome, Number(r.count)])).toEqual([
      ['charge', 'fail', 2],
      ['charge', 'success', 3],
      ['prepare', 'ok', 6],
      ['x402_verify', 'invalid', 1],
      ['x402_verify', 'valid', 1],
    ]);
    for (let i = 0; i < 20; i++) await client.verify({ body: payload({ ...terms(), amount: '1' }) });
    expect((await client.stats()).x402.verify).toEqual({ total: 22, today: 22, valid: 1, invalid: 21 });
    expect((await counts()).map((r) => Number(r.count))).toEqual([2, 3, 6, 21, 1]);

    // An x402 settlement is counted as one, and joins the volume and the recent list (the caps guard /mpp/settle only).
    const settled = await client.settle({ body: payload(terms()) });
    expect(settled.success).toBe(true);
    const after = await client.stats();
    expect(after.x402.settle).toEqual({ total: 1, today: 1, success: 1, fail: 0, successRate: 1 });
    expect(after.volumeAtomic).toBe((4n * AMOUNT).toString());
    expect(after.lastSettlement).toMatchObject({
      signature: settled.transaction,
      kind: 'x402',
      recipient: seller,
      amount: '50000',
    });
    expect(after.settle).toEqual(stats.settle);
  });
});

describe('statistics kept before counts by day', () => {
  it('carries a database that recorded a row per call into the counts, day by day', async () => {
    const { migrate } = await import('../servers/src/db');
    const { migrations } = await import('../servers/src/services/facilitator/store');
    const { sql } = await import('kysely');
    const database = await testDatabase();
    try {
      const { '007_event_counts': counts, ...before } = migrations;
      await migrate(database.db, 'facilitator', before);
      const at = (iso: string) => new Date(iso);
      await database.db
        .insertInto('facilitator_events')
        .values([
          { kind: 'prepare', outcome: 'ok', at: at('2026-11-25T23:59:59.999Z') },
          { kind: 'prepare', outcome: 'ok', at: at('2026-11-26T00:00:00.000Z') },
          { kind: 'prepare', outcome: 'ok', at: at('2026-11-26T12:00:00.000Z') },
          { kind: 'x402_verify', outcome: 'invalid', at: at('2026-11-26T12:00:00.000Z') },
        ])
        .execute();
      await migrate(database.db, 'facilitator', { ...before, '007_event_counts': counts! });
      const { rows } = await sql<{ kind: string; outcome: string; day: Date; count: string }>`
        select kind, outcome, day, count::text as count from facilitator_event_counts order by kind, day`.execute(
        database.db,
      );
      expect(rows.map((r) => [r.kind, r.outcome, new Date(r.day).toISOString(), r.count])).toEqual([
        ['prepare', 'ok', '2026-11-25T00:00:00.000Z', '1'],
        ['prepare', 'ok', '2026-11-26T00:00:00.000Z', '2'],
        ['x402_verify', 'invalid', '2026-11-26T00:00:00.000Z', '1'],
      ]);
      const left = await sql<{ n: string }>`select count(*)::text as n from facilitator_events`.execute(database.db);
      expect(left.rows[0]!.n).toBe('0');
    } finally {
      await database.close();
    }
  });
});
