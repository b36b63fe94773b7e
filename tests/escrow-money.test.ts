import axios from 'axios';
import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ESCROW_MILESTONE_IDS, usdToAtomic, type Escrow } from '@agent-economy/contracts';
import { ApiError, ConflictError, createClient, walletFromSecretKey, type Signer } from '@agent-economy/sdk';
import { createEscrowService, type EscrowService } from '../servers/src/services/escrow';
import { generateWallet } from '../servers/src/solana/keys';
import { startEconomy, type Economy } from './support/economy';
import { servedRecorded, type RunningService } from './support/servers';

// The money property: random sequences of operations over many escrows, and after every step
//   1. the vault's balance on chain = what it started with + the funds held by open escrows + the fees earned;
//   2. buyers + sellers + vault is constant (every movement is a transfer between them);
//   3. each escrow's locked + frozen + released + refunded = its amount.
// Only the escrow moves money here: its per-call prices are free in this deployment and the reputation and
// verification services are unreachable (the escrow pays for those calls; the lifecycle tests count that).

const FREE = { kind: 'fixed', usd: '0' } as const;
const DEAD = 'http://127.0.0.1:9';
const HOUR = 3_600_000;

let economy: Economy;
let running: RunningService;
let service: EscrowService;
let buyers: Signer[];
let sellers: Signer[];
let offset = 0;
/** The vault's balance and the sum of every wallet's before anything happened. */
let vaultStart: bigint;
let constant: bigint;
const now = () => new Date(Date.now() + offset);
const escrows: { id: string; buyer: Signer; seller: Signer; milestones: number }[] = [];

const balance = (address: string) => economy.ledger.tokenBalance(address);
const client = (wallet: Signer) =>
  createClient({
    baseUrls: { escrow: running.url },
    wallet,
    payments: { rpcUrl: economy.rpcUrl, maxPerCallUsd: '100' },
    maxRetries: 0,
  }).escrow;
const total = () =>
  [...buyers, ...sellers].reduce((sum, w) => sum + balance(w.address), 0n) + balance(running.context.wallet.address);

beforeAll(async () => {
  economy = await startEconomy();
  running = await economy.startPaidService(
    async (c) => {
      service = await createEscrowService(
        { ...c, prices: { deliver: FREE, confirm: FREE, dispute: FREE, resolve: FREE } },
        { tickMs: false, now, reputationUrl: DEAD, verificationUrl: DEAD },
      );
      return service.app;
    },
    { id: 'escrow', sol: true },
  );
  buyers = await Promise.all([0, 1].map(() => walletFromSecretKey(generateWallet().secretKey)));
  sellers = await Promise.all([0, 1].map(() => walletFromSecretKey(generateWallet().secretKey)));
  for (const b of buyers) await economy.ledger.mintTo(b.address, usdToAtomic('1000'));
  // The vault pays only wallets with a stablecoin account open (vault.ts): sellers open theirs.
  for (const s of sellers) await economy.ledger.openTokenAccount(s.address);
  vaultStart = balance(running.context.wallet.address);
  constant = total();
}, 60_000);
afterAll(async () => {
  await economy?.close();
});

type Command =
  | { kind: 'create'; buyer: number; seller: number; amounts: number[]; reviewHours: number }
  | { kind: 'deliver'; escrow: number; milestone: number }
  | { kind: 'confirm'; escrow: number; milestone: number | null }
  | { kind: 'dispute'; escrow: number; bySeller: boolean; milestone: number | null }
  | { kind: 'resolve'; escrow: number; bySeller: boolean }
  | { kind: 'wait'; hours: number };

const command: fc.Arbitrary<Command> = fc.oneof(
  fc.record({
    kind: fc.constant('create' as const),
    buyer: fc.nat(1),
    seller: fc.nat(1),
    amounts: fc.array(fc.integer({ min: 10_000, max: 3_000_000 }), { minLength: 1, maxLength: 3 }),
    reviewHours: fc.integer({ min: 1, max: 100 }),
  }),
  fc.record({ kind: fc.constant('deliver' as const), escrow: fc.nat(20), milestone: fc.nat(2) }),
  fc.record({ kind: fc.constant('confirm' as const), escrow: fc.nat(20), milestone: fc.option(fc.nat(2)) }),
  fc.record({
    kind: fc.constant('dispute' as const),
    escrow: fc.nat(20),
    bySeller: fc.boolean(),
    milestone: fc.option(fc.nat(2)),
  }),
  fc.record({ kind: fc.constant('resolve' as const), escrow: fc.nat(20), bySeller: fc.boolean() }),
  fc.record({ kind: fc.constant('wait' as const), hours: fc.integer({ min: 1, max: 400 }) }),
);

const CONTENT = {
  title: 'Chapter',
  format: 'markdown' as const,
  body: '# Chunking\n\nSplit documents into chunks of 300 to 500 tokens with an overlap of 50 tokens, embed every chunk and retrieve the closest ones for each question asked.\n',
};

async function run(c: Command): Promise<void> {
  const pick = (i: number) => escrows[i % Math.max(escrows.length, 1)];
  const milestoneId = (e: { milestones: number }, m: number) => ESCROW_MILESTONE_IDS[m % e.milestones]!;
  switch (c.kind) {
    case 'create': {
      const amounts = c.amounts.map(BigInt);
      const amount = amounts.reduce((a, b) => a + b, 0n);
      const body = {
        seller: sellers[c.seller]!.address,
        title: 'Random escrow',
        amount: String(amount),
        reviewPeriodHours: c.reviewHours,
        timeoutHours: 24 * (1 + (c.reviewHours % 5)),
        ...(amounts.length > 1
          ? { milestones: amounts.map((a, i) => ({ title: `Part ${i + 1}`, amount: String(a) })) }
          : {}),
      };
      const escrow: Escrow = await client(buyers[c.buyer]!).create({ body });
      escrows.push({ id: escrow.id, buyer: buyers[c.buyer]!, seller: sellers[c.seller]!, milestones: amounts.length });
      return;
    }
    case 'deliver': {
      const e = pick(c.escrow);
      if (e)
        await client(e.seller).deliver({
          body: { escrowId: e.id, milestoneId: milestoneId(e, c.milestone), content: CONTENT },
        });
      return;
    }
    case 'confirm': {
      const e = pick(c.escrow);
      if (e)
        await client(e.buyer).confirm({
          body: { escrowId: e.id, ...(c.milestone === null ? {} : { milestoneIds: [milestoneId(e, c.milestone)] }) },
        });
      return;
    }
    case 'dispute': {
      const e = pick(c.escrow);
      const body = {
        escrowId: e?.id ?? '',
        reason: 'other' as const,
        statement: 'Random dispute statement.',
        ...(c.milestone === null || !e ? {} : { milestoneIds: [milestoneId(e, c.milestone)] }),
      };
      if (e) await client(c.bySeller ? e.seller : e.buyer).dispute({ body });
      return;
    }
    case 'resolve': {
      const e = pick(c.escrow);
      if (e) await client(c.bySeller ? e.seller : e.buyer).resolve({ body: { escrowId: e.id } });
      return;
    }
    case 'wait':
      offset += c.hours * HOUR;
      await service.scheduler.tick();
      return;
  }
}

async function assertBooks(): Promise<void> {
  const stats = await createClient({ baseUrls: { escrow: running.url }, maxRetries: 0 }).escrow.stats();
  const vault = balance(running.context.wallet.address);
  expect(vault - vaultStart).toBe(BigInt(stats.volumeLocked) + BigInt(stats.volume.fees));
  expect(total()).toBe(constant);
  expect(BigInt(stats.volume.escrowed)).toBe(
    BigInt(stats.volumeLocked) + BigInt(stats.volume.released) + BigInt(stats.volume.refunded),
  );
  for (const e of escrows) {
    const escrow = await client(e.buyer).get({ params: { escrowId: e.id } });
    const b = escrow.balances;
    expect(BigInt(b.locked) + BigInt(b.frozen) + BigInt(b.released) + BigInt(b.refunded)).toBe(BigInt(escrow.amount));
  }
}

it('keeps the vault equal to what open escrows hold, and conserves every unit, whatever the sequence', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(command, { minLength: 4, maxLength: 14 }), async (commands) => {
      for (const c of commands) {
        try {
          await run(c);
        } catch (error) {
          // Refusals (wrong party, wrong state) are part of the game; a server error is not.
          if (!(error instanceof ApiError) || error.status >= 500) throw error;
        }
        await assertBooks();
      }
    }),
    { numRuns: 5 },
  );
  // Finally every escrow is wound up by the timers and the mediator, and the vault holds the fees alone.
  // (A dispute's auto-resolution moves the other deadlines on by the time it paused them: a few rounds.)
  for (let i = 0; i < 3; i++) {
    offset += 5000 * HOUR;
    await service.scheduler.tick();
  }
  const stats = await createClient({ baseUrls: { escrow: running.url }, maxRetries: 0 }).escrow.stats();
  expect(stats.volumeLocked).toBe('0');
  expect(balance(running.context.wallet.address) - vaultStart).toBe(BigInt(stats.volume.fees));
  expect(total()).toBe(constant);
}, 600_000);

it('never refunds a payment that funded an escrow when it is presented again by another wallet', async () => {
  const [w, w2, seller] = [buyers[0]!, buyers[1]!, sellers[0]!];
  // The buyer's payment header, as its SDK sent it.
  let header: string | undefined;
  const http = axios.create();
  http.interceptors.request.use((config) => {
    header = (config.headers['payment-signature'] as string | undefined) ?? header;
    return config;
  });
  const paying = createClient({
    baseUrls: { escrow: running.url },
    wallet: w,
    payments: { rpcUrl: economy.rpcUrl, maxPerCallUsd: '100' },
    maxRetries: 0,
    axios: http,
  }).escrow;
  const body = { seller: seller.address, title: 'Funded once', amount: '2000000' };
  const escrow = await paying.create({ body });
  escrows.push({ id: escrow.id, buyer: w, seller, milestones: 1 });
  expect(header).toBeDefined();
  await assertBooks();

  // What a process that died after storing the escrow and before its answer left (or was kept) leaves: the payment
  // settled and never served, its lease over; the next presentation of it runs the handler again.
  const db = running.database.db;
  const unserve = async (answered: boolean) => {
    const { rows } = await sql<{ payment_key: string }>`
      select payment_key from escrow_escrows where id = ${escrow.id}`.execute(db);
    const key = rows[0]!.payment_key;
    if (answered) await servedRecorded(db, key);
    await sql`update runtime_payments set served_at = null, lease_until = now() - interval '1 second'
      where key = ${key}`.execute(db);
    await sql`update runtime_payment_ids set answer_status = null, answer_type = null, answer_body = null,
      settlement = null, answered_at = null where key = ${key}`.execute(db);
  };
  await unserve(true);
  const [wBefore, w2Before] = [balance(w.address), balance(w2.address)];
  const stolen = await client(w2)
    .create({ body }, { headers: { 'payment-signature': header! } })
    .then(
      () => expect.unreachable('another wallet was served with the payment') as never,
      (e: ApiError) => e,
    );
  expect(stolen).toBeInstanceOf(ConflictError);
  expect(stolen.code).toBe('payment_already_used');
  expect(stolen.message).toContain(escrow.id);
  // Nothing was refunded: the escrow still holds the funding, and the vault holds what its escrows do.
  expect([balance(w.address), balance(w2.address)]).toEqual([wBefore, w2Before]);
  await assertBooks();
  expect((await client(w).get({ params: { escrowId: escrow.id } })).balances.locked).toBe('2000000');

  // The buyer presenting it again gets the escrow it funded: no second escrow, no refund.
  const statsBefore = await createClient({ baseUrls: { escrow: running.url }, maxRetries: 0 }).escrow.stats();
  await unserve(false); // the stranger's refused request served nothing
  const again = await client(w).create({ body }, { headers: { 'payment-signature': header! } });
  expect(again.id).toBe(escrow.id);
  expect(again.buyer).toBe(w.address);
  expect(again.balances.locked).toBe('2000000');
  expect([balance(w.address), balance(w2.address)]).toEqual([wBefore, w2Before]);
  const statsAfter = await createClient({ baseUrls: { escrow: running.url }, maxRetries: 0 }).escrow.stats();
  expect(statsAfter.totalEscrows).toBe(statsBefore.totalEscrows);
  await assertBooks();
}, 120_000);
