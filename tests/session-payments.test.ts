import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  PAYMENT_REQUIRED_HEADER,
  PAYMENT_RESPONSE_HEADER,
  PAYMENT_SIGNATURE_HEADER,
  SESSION_CLOSE_PATH,
  base58Encode,
  USDC_DEVNET,
  decodeX402Header,
  defineService,
  encodeX402Header,
  fixed,
  paymentErrors,
  standardErrors,
  type PaymentRequired,
  type PaymentRequirements,
} from '@agent-economy/contracts';
import {
  BudgetExceededError,
  createClient,
  createPayments,
  fileSpendStore,
  sessionsOf,
  walletFromSecretKey,
  type AgentEconomyClient,
  type PaymentApproval,
} from '@agent-economy/sdk';
import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { createNoopSigner, address, createSolanaRpc } from '@solana/kit';
import { getRevokeInstruction, getTransferCheckedInstruction } from '@solana-program/token';
import { createServiceApp } from '../servers/src/runtime/app';
import { createEducationApp } from '../servers/src/services/education';
import { sendInstructions } from '../servers/src/solana/send';
import { ata } from './support/payments';
import { generateWallet, signEd25519, type Wallet } from '../servers/src/solana/keys';
import { startEconomy, type Economy } from './support/economy';
import { startService, testDatabase, type RunningService } from './support/servers';
import type { Database } from '../servers/src/db';
import { createLogger, type Logger } from '../servers/src/runtime/logger';

// Payment sessions on the paid path, through the SDK against real services on the local ledger: a buyer
// that calls one seller often opens a session and pays by vouchers; the seller's close settles on chain
// exactly what was vouched, and the rest of the deposit never leaves the buyer.

const LESSON = { body: { courseId: 'rag', lessonId: 'chunking' } } as const;
const PRICE = 50_000n; // a lesson, 0.05 USD

let economy: Economy;
let seller: Wallet;
let database: Database;
/** Two replicas of the education service on one database, one wallet: both accept the same sessions. */
let replicas: RunningService[];
let proxy: { url: string; hits: number[]; close(): Promise<void> };

async function startSeller(options: {
  wallet: Wallet;
  database?: Database;
  idleSeconds?: number;
  sweepMs?: number;
  logger?: Logger;
  facilitatorUrl?: string;
}): Promise<RunningService> {
  return startService(createEducationApp, {
    rpcUrl: economy.rpcUrl,
    wallet: options.wallet,
    ...(options.database ? { database: options.database } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    paywall: {
      feePayer: economy.feePayer.address,
      facilitatorUrl: options.facilitatorUrl ?? economy.facilitator.url,
      // Forwarded at once from 0.1 USD (two lessons) on, so tests see checkpoints without waiting for a sweep.
      sessions: {
        idleSeconds: options.idleSeconds ?? 300,
        sweepMs: options.sweepMs ?? 60_000,
        checkpointAtomic: '100000',
      },
    },
  });
}

/** Sends a request on to `target` and its answer back, as a proxy does. */
function passOn(req: IncomingMessage, res: ServerResponse, target: URL): void {
  const out = httpRequest(target, { method: req.method, headers: { ...req.headers, host: target.host } }, (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(res);
  });
  out.on('error', () => res.destroy());
  req.pipe(out);
}

/** A round-robin HTTP proxy: one origin in front of several replicas, as a load balancer. */
async function roundRobin(upstreams: string[]) {
  const hits = upstreams.map(() => 0);
  let next = 0;
  const server: Server = createServer((req, res) => {
    const i = next++ % upstreams.length;
    hits[i]!++;
    passOn(req, res, new URL(req.url ?? '/', upstreams[i]));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hits,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A proxy to `upstream` that parks the POSTs to `path` until release(): what is on its way can be counted. */
async function holdingProxy(upstream: string, path: string) {
  const parked: (() => void)[] = [];
  let holding = true;
  const server: Server = createServer((req, res) => {
    const target = new URL(req.url ?? '/', upstream);
    const forward = () => passOn(req, res, target);
    if (holding && req.method === 'POST' && target.pathname === path) parked.push(forward);
    else forward();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    parked: () => parked.length,
    release() {
      holding = false;
      for (const go of parked.splice(0)) go();
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function fundedBuyer(atomic = 2_000_000n): Promise<Wallet> {
  const buyer = generateWallet();
  await economy.ledger.mintTo(buyer.address, atomic);
  return buyer;
}

async function buyerClient(
  buyer: Wallet,
  url: string,
  payments: NonNullable<Parameters<typeof createClient>[0]>['payments'],
): Promise<AgentEconomyClient> {
  return createClient({
    baseUrls: { facilitator: economy.facilitator.url, education: url },
    wallet: await walletFromSecretKey(buyer.secretKey),
    maxRetries: 0,
    payments,
  });
}

async function until<T>(what: () => T | Promise<T>, ok: (value: T) => boolean, label: string, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await what();
    if (ok(value)) return value;
    if (Date.now() > end)
      throw new Error(
        `timed out waiting for ${label}: ${JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v))}`,
      );
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const facilitatorSession = (channelId: string) =>
  economy.facilitator.database.db
    .selectFrom('facilitator_sessions')
    .selectAll()
    .where('channel_id', '=', channelId)
    .executeTakeFirst();
const balance = (owner: string) => economy.ledger.tokenBalance(owner);

beforeAll(async () => {
  // A buyer's close at the facilitator waits 2 s for the seller's vouchers (15 s under npm start).
  economy = await startEconomy({ facilitator: { sessionCloseGraceSeconds: 2 } });
  seller = generateWallet();
  await economy.ledger.openTokenAccount(seller.address);
  economy.sellers.add(seller.address);
  database = await testDatabase();
  replicas = [await startSeller({ wallet: seller, database }), await startSeller({ wallet: seller, database })];
  proxy = await roundRobin(replicas.map((r) => r.url));
}, 60_000);

afterAll(async () => {
  await proxy?.close();
  for (const r of replicas ?? []) await r.close();
  await database?.close();
  await economy?.close();
});

describe('sessions through the SDK', () => {
  it('opens a session after N calls, pays by vouchers, and the close settles exactly what was vouched (two replicas share it)', async () => {
    const buyer = await fundedBuyer();
    const client = await buyerClient(buyer, proxy.url, {
      rpcUrl: economy.rpcUrl,
      sessions: { after: 2, depositUsd: '0.5' },
    });
    const [buyerBefore, sellerBefore] = [balance(buyer.address), balance(seller.address)];
    // The quote offers the session beside exact, exact first: clients that do not know it pay exact.
    const first = await client.education.lesson.withResponse(LESSON);
    expect(first.payment?.transaction).toBeTruthy();
    await client.education.lesson(LESSON);
    const open = await until(
      () => sessionsOf(client.payments).open,
      (o) => o.length === 1,
      'the session to open',
    );
    expect(open[0]!.depositAtomic).toBe('500000');
    const hitsBefore = [...proxy.hits];
    const vouchers = [];
    for (let i = 0; i < 6; i++) {
      const paid = await client.education.lesson.withResponse(LESSON);
      expect(paid.status).toBe(200);
      expect(paid.payment?.session?.channelId).toBe(open[0]!.channelId);
      expect(paid.payment?.transaction).toBe('');
      vouchers.push(paid.payment!);
    }
    // Vouchers alternated between the replicas: both served some, one session row on the shared database.
    expect(proxy.hits.map((h, i) => h - hitsBefore[i]!).every((h) => h >= 2)).toBe(true);
    expect(vouchers.map((v) => v.session!.cumulativeAmount)).toEqual(
      [1n, 2n, 3n, 4n, 5n, 6n].map((n) => (n * PRICE).toString()),
    );
    const row = (await database.db
      .selectFrom('paywall_sessions' as never)
      .selectAll()
      .executeTakeFirst()) as { spent: bigint; vouchers: number } | undefined;
    expect(BigInt(row!.spent)).toBe(6n * PRICE);
    // Spent in the log as signed: two exact payments and six vouchers.
    expect(client.payments.spentUsd('education')).toBe('0.4');

    await client.close();
    const closed = sessionsOf(client.payments).closed.at(-1)!;
    expect(closed.error).toBeUndefined();
    expect(closed.signature).toBeTruthy();
    const settled = await facilitatorSession(open[0]!.channelId);
    expect(settled?.state).toBe('closed');
    const vouched = vouchers.reduce((sum, v) => sum + BigInt(v.amount), 0n);
    // Exact to the atomic unit: the settlement is the sum of the vouchers, the buyer keeps the rest of the deposit.
    expect(BigInt(settled!.amount_settled!)).toBe(vouched);
    expect(BigInt(settled!.deposit) - BigInt(settled!.amount_settled!)).toBe(500_000n - 6n * PRICE);
    expect(balance(seller.address) - sellerBefore).toBe(2n * PRICE + vouched);
    expect(buyerBefore - balance(buyer.address)).toBe(2n * PRICE + vouched);
    // The session is gone: the next call pays exact again.
    expect((await client.education.lesson.withResponse(LESSON)).payment?.transaction).toBeTruthy();
  }, 60_000);

  it('refuses a voucher over the budgets before signing it', async () => {
    const buyer = await fundedBuyer();
    const payments = createPayments({
      rpcUrl: economy.rpcUrl,
      maxPerServiceUsd: '0.25',
      sessions: { after: 1, depositUsd: '1' },
    });
    const client = await buyerClient(buyer, replicas[0]!.url, payments);
    await client.education.lesson(LESSON);
    const open = await until(
      () => sessionsOf(payments).open,
      (o) => o.length === 1,
      'the session to open',
    );
    // The deposit is what the budget has left after the first call, not the 1 USD asked for.
    expect(open[0]!.depositAtomic).toBe('200000');
    for (let i = 0; i < 4; i++)
      expect((await client.education.lesson.withResponse(LESSON)).payment?.session).toBeDefined();
    const refused = await client.education.lesson(LESSON).catch((e) => e);
    expect(refused).toBeInstanceOf(BudgetExceededError);
    expect(payments.spentUsd()).toBe('0.25');
    await client.close();
    expect(sessionsOf(payments).closed.find((c) => c.channelId === open[0]!.channelId)?.vouchedAtomic).toBe('200000');
    const settled = await facilitatorSession(open[0]!.channelId);
    expect(BigInt(settled!.amount_settled!)).toBe(4n * PRICE);
  }, 60_000);
});

describe('a route priced per request', () => {
  it('is paid by voucher at the price its 402 quotes, once a session with its seller is open', async () => {
    const buyer = await fundedBuyer();
    const payments = createPayments({ rpcUrl: economy.rpcUrl, sessions: { after: 1, depositUsd: '0.5' } });
    const client = await buyerClient(buyer, replicas[0]!.url, payments);
    const start = balance(buyer.address);
    await client.education.lesson(LESSON);
    const [open] = await until(
      () => sessionsOf(payments).open,
      (o) => o.length === 1,
      'the session to open',
    );
    // The quiz is tiered (generate 0.03 USD): no price to pay ahead, so the client asks, and the quote's session
    // element is paid by voucher, not by a transaction.
    const quiz = await client.education.quiz.withResponse({
      body: { action: 'generate', courseId: 'rag', lessonId: 'chunking' },
    });
    expect(quiz.status).toBe(200);
    expect(quiz.payment).toMatchObject({
      amount: '30000',
      transaction: '',
      session: { channelId: open!.channelId, cumulativeAmount: '30000' },
    });
    // Then a lesson (fixed price) on the same session: the cumulative amount goes on from the quiz's.
    expect((await client.education.lesson.withResponse(LESSON)).payment?.session?.cumulativeAmount).toBe(
      (30_000n + PRICE).toString(),
    );
    await client.close();
    const settled = await facilitatorSession(open!.channelId);
    expect(BigInt(settled!.amount_settled!)).toBe(30_000n + PRICE);
    expect(balance(buyer.address)).toBe(start - PRICE - 30_000n - PRICE);
  }, 60_000);
});

describe('a long-running buyer', () => {
  it('grants its delegation role afresh once its sessions have spent it, and goes on paying by vouchers', async () => {
    const buyer = await fundedBuyer();
    // The role may move one deposit of two lessons: the second session needs it granted again.
    const payments = createPayments({
      rpcUrl: economy.rpcUrl,
      sessions: { after: 1, depositUsd: '0.1', spendLimitUsd: '0.1' },
    });
    const client = await buyerClient(buyer, replicas[0]!.url, payments);
    const start = balance(buyer.address);
    const lesson = async () => (await client.education.lesson.withResponse(LESSON)).payment!;
    expect((await lesson()).transaction).toBeTruthy();
    const [first] = await until(
      () => sessionsOf(payments).open,
      (o) => o.length === 1,
      'the first session to open',
    );
    expect([(await lesson()).session?.channelId, (await lesson()).session?.channelId]).toEqual([
      first!.channelId,
      first!.channelId,
    ]);
    // The deposit is used up: this lesson is paid by transaction, and the session closes, settling two lessons.
    expect((await lesson()).transaction).toBeTruthy();
    await until(
      () => sessionsOf(payments).closed,
      (c) => c.some((x) => x.channelId === first!.channelId),
      'the first session to close',
    );
    expect((await lesson()).transaction).toBeTruthy();
    const opened = await until(
      () => sessionsOf(payments),
      (s) => s.open.length === 1 || s.closed.some((c) => c.error),
      'a second session to open',
    );
    expect(opened.closed.filter((c) => c.error)).toEqual([]);
    const second = opened.open[0]!;
    expect(second.channelId).not.toBe(first!.channelId);
    expect((await lesson()).session?.channelId).toBe(second.channelId);
    const role = await client.facilitator.onboardingStatus({
      query: { wallet: buyer.address, network: 'devnet' },
    });
    expect(role).toMatchObject({ status: 'active', roleId: 2, spendLimitAtomic: '100000' });
    await client.close();
    // Three lessons by transaction and three by voucher (two settled with the first session, one with the second).
    expect(sessionsOf(payments).closed.map((c) => [c.vouchedAtomic, !!c.signature])).toEqual([
      ['100000', true],
      ['50000', true],
    ]);
    expect(balance(buyer.address)).toBe(start - 6n * PRICE);
  }, 60_000);
});

describe('a buyer that revokes its delegation role', () => {
  it('is not granted it again by its client: further sellers are paid by transaction', async () => {
    // Two sellers of their own (a session left open with a revoked role stays so: nothing shared with other tests).
    const sellers = [generateWallet(), generateWallet()];
    const services: RunningService[] = [];
    try {
      for (const wallet of sellers) {
        await economy.ledger.openTokenAccount(wallet.address);
        economy.sellers.add(wallet.address);
        services.push(await startSeller({ wallet }));
      }
      const buyer = await fundedBuyer();
      await economy.ledger.airdrop(buyer.address, 1_000_000_000n);
      const payments = createPayments({ rpcUrl: economy.rpcUrl, sessions: { after: 1, depositUsd: '0.1' } });
      const [first, second] = await Promise.all(services.map((s) => buyerClient(buyer, s.url, payments)));
      const start = balance(buyer.address);
      expect((await first!.education.lesson.withResponse(LESSON)).payment!.transaction).toBeTruthy();
      const [opened] = await until(
        () => sessionsOf(payments).open,
        (o) => o.length === 1,
        'the first session',
      );
      expect((await first!.education.lesson.withResponse(LESSON)).payment!.session?.channelId).toBe(opened!.channelId);
      const rounds = () =>
        economy.facilitator.database.db
          .selectFrom('facilitator_onboarding_txs')
          .select('round')
          .distinct()
          .where('wallet', '=', buyer.address)
          .execute();
      expect(await rounds()).toHaveLength(1);

      // The buyer revokes the facilitator's delegation on chain, paying the fee itself.
      await sendInstructions(
        createSolanaRpc(economy.rpcUrl),
        [buyer],
        [
          getRevokeInstruction({
            source: address(ata(buyer.address, USDC_DEVNET)),
            owner: createNoopSigner(address(buyer.address)),
          }),
        ],
      );
      // The second seller: its first call by transaction, then the client tries to open a session, is refused for the
      // revoked role, and leaves it revoked (no grant signed again); its calls go on by transaction.
      expect((await second!.education.lesson.withResponse(LESSON)).payment!.transaction).toBeTruthy();
      const refused = await until(
        () => sessionsOf(payments).closed,
        (c) => c.some((x) => x.error),
        'the refused open',
      );
      expect(refused.find((x) => x.error)!.error).toMatch(/could not open a session: .*revoked/);
      for (let i = 0; i < 2; i++)
        expect((await second!.education.lesson.withResponse(LESSON)).payment!.transaction).toBeTruthy();
      expect(await rounds()).toHaveLength(1);
      const status = await first!.facilitator.onboardingStatus({
        query: { wallet: buyer.address, network: 'devnet' },
      });
      expect(status.status).toBe('revoked');
      expect(sessionsOf(payments).open.map((o) => o.channelId)).toEqual([opened!.channelId]);
      // One lesson vouched (not yet settled: its session cannot close on a revoked role), four paid by transaction.
      expect(balance(buyer.address)).toBe(start - 4n * PRICE);
      expect(balance(sellers[1]!.address)).toBe(3n * PRICE);
    } finally {
      for (const s of services) await s.close();
    }
  }, 60_000);
});

describe("the buyer's budgets over a session", () => {
  it('asks onApprove for the deposit, holds it to per-origin caps, and records every voucher in the spend store', async () => {
    const buyer = await fundedBuyer();
    const url = replicas[0]!.url;
    const dir = mkdtempSync(join(tmpdir(), 'session-spend-'));
    const path = join(dir, 'spend.jsonl');
    const approvals: PaymentApproval[] = [];
    try {
      const store = fileSpendStore(path);
      const payments = createPayments({
        rpcUrl: economy.rpcUrl,
        maxPerOriginUsd: { [url]: '0.3' },
        store,
        onApprove: (approval) => (approvals.push(approval), true),
        sessions: { after: 1, depositUsd: '1' },
      });
      const client = await buyerClient(buyer, url, payments);
      await client.education.lesson(LESSON);
      const open = await until(
        () => sessionsOf(payments).open,
        (o) => o.length === 1,
        'the session to open',
      );
      // The deposit is what the origin's cap has left, and the caller approved it as a deposit.
      expect(open[0]!.depositAtomic).toBe('250000');
      expect(approvals.map((a) => [a.amountUsd, a.sessionDeposit ?? false])).toEqual([
        ['0.05', false],
        ['0.25', true],
      ]);
      for (let i = 0; i < 3; i++)
        expect((await client.education.lesson.withResponse(LESSON)).payment?.session).toBeDefined();
      expect(approvals).toHaveLength(2); // vouchers within the approved deposit are not asked about again
      await client.close();
      await store.close();
      // Each voucher was recorded before it left (reserve, sent), then its receipt.
      const records = readFileSync(path, 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { type: string; receipt?: { session?: unknown } });
      expect(records.filter((r) => r.type === 'receipt' && r.receipt?.session)).toHaveLength(3);
      expect(records.filter((r) => r.type === 'sent')).toHaveLength(4);
      // Another run on the same store counts them: four lessons spent.
      const restarted = createPayments({ rpcUrl: economy.rpcUrl, store: fileSpendStore(path) });
      await restarted.ready();
      expect([restarted.spentUsd(), restarted.receipts.filter((r) => r.session).length]).toEqual(['0.2', 3]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('opens no session when onApprove declines the deposit or the seller is not in allowedPayTo', async () => {
    for (const options of [
      { onApprove: (approval: PaymentApproval) => !approval.sessionDeposit },
      { allowedPayTo: [generateWallet().address] },
    ]) {
      const buyer = await fundedBuyer();
      const payments = createPayments({
        rpcUrl: economy.rpcUrl,
        sessions: { after: 1, depositUsd: '0.5' },
        ...options,
      });
      const client = await buyerClient(buyer, replicas[0]!.url, payments);
      const paid = await client.education.lesson.withResponse(LESSON).catch((e) => e);
      if ('allowedPayTo' in options) {
        // Not even the exact payment is made to a seller outside the allowlist.
        expect(paid).toBeInstanceOf(Error);
      } else {
        expect(paid.payment?.transaction).toBeTruthy();
        for (let i = 0; i < 2; i++)
          expect((await client.education.lesson.withResponse(LESSON)).payment?.transaction).toBeTruthy();
      }
      await Promise.resolve();
      expect(sessionsOf(payments).open).toEqual([]);
      await client.close();
    }
  }, 60_000);
});

/** A session opened by hand (onboarded, a session key of our own), for the seller's refusals. */
async function handSession(buyer: Wallet, depositAtomic = '500000', pricePerUnit?: string) {
  const facilitator = createClient({
    baseUrls: { facilitator: economy.facilitator.url },
    wallet: await walletFromSecretKey(buyer.secretKey),
    maxRetries: 0,
  }).facilitator;
  const started = await facilitator.onboard({
    body: { buyerWallet: buyer.address, spendLimitAtomic: '5000000', ttlSeconds: 3600 },
  });
  if (started.status === 'transactions_required') {
    const { getTransactionDecoder, getTransactionEncoder, getBase64Decoder } = await import('@solana/kit');
    const signed = started.transactions.map((t) => {
      const tx = getTransactionDecoder().decode(Buffer.from(t.transaction, 'base64'));
      const signatures = { ...tx.signatures, [buyer.address]: signEd25519(buyer, new Uint8Array(tx.messageBytes)) };
      return getBase64Decoder().decode(getTransactionEncoder().encode({ ...tx, signatures: signatures as never }));
    });
    await facilitator.confirmOnboarding({ body: { buyerWallet: buyer.address, signedTransactions: signed } });
  }
  const key = generateWallet();
  const session = await facilitator.openSession({
    body: {
      buyerWallet: buyer.address,
      sellerWallet: seller.address,
      depositAtomic,
      sessionKey: key.address,
      ...(pricePerUnit ? { pricePerUnit } : {}),
    },
  });
  return { channelId: session.channelId, key };
}

/** The quote's session offer for a lesson. */
async function offer(url: string): Promise<{ quote: PaymentRequired; session: PaymentRequirements }> {
  const answer = await fetch(`${url}/api/lesson`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(LESSON.body),
  });
  expect(answer.status).toBe(402);
  const quote = decodeX402Header(answer.headers.get(PAYMENT_REQUIRED_HEADER)!) as PaymentRequired;
  expect(quote.accepts.map((a) => a.scheme)).toEqual(['exact', 'session']);
  return { quote, session: quote.accepts[1]! };
}

function voucherHeader(session: PaymentRequirements, channelId: string, key: Wallet, cumulative: bigint): string {
  const cumulativeAmount = cumulative.toString();
  const message = new TextEncoder().encode(
    `solana-mpp-session-voucher-request-v1:{"channelId":"${channelId}","cumulativeAmount":"${cumulativeAmount}","units":1}`,
  );
  return encodeX402Header({
    x402Version: 2,
    accepted: session,
    payload: { channelId, cumulativeAmount, signer: key.address, signature: base58Encode(signEd25519(key, message)) },
  });
}

const pay = (url: string, header: string) =>
  fetch(`${url}/api/lesson`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', [PAYMENT_SIGNATURE_HEADER]: header },
    body: JSON.stringify(LESSON.body),
  });

async function sellerClose(url: string, channelId: string, key: Wallet) {
  const signature = base58Encode(
    signEd25519(key, new TextEncoder().encode(`agent-economy session close v1:${channelId}`)),
  );
  return fetch(`${url}/x402/sessions/close`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ channelId, signature }),
  });
}

describe('the seller', () => {
  it('refuses a replayed, a lower and a skipping voucher with clear codes, and charges nothing for them', async () => {
    const buyer = await fundedBuyer();
    const { channelId, key } = await handSession(buyer);
    const url = replicas[0]!.url;
    const { session } = await offer(url);
    const first = voucherHeader(session, channelId, key, PRICE);
    const ok = await pay(url, first);
    expect(ok.status).toBe(200);
    const receipt = decodeX402Header(ok.headers.get(PAYMENT_RESPONSE_HEADER)!) as {
      success: boolean;
      extensions: { session: { acceptedCumulative: string } };
    };
    expect(receipt.extensions.session.acceptedCumulative).toBe(PRICE.toString());
    expect((await pay(replicas[1]!.url, voucherHeader(session, channelId, key, 2n * PRICE))).status).toBe(200);
    for (const [header, code] of [
      [first, 'session_voucher_stale'], // replayed
      [voucherHeader(session, channelId, key, PRICE), 'session_voucher_stale'], // lower than accepted
      [voucherHeader(session, channelId, key, 4n * PRICE), 'session_voucher_mismatch'], // skips a price
      [voucherHeader(session, channelId, generateWallet(), 3n * PRICE), 'session_voucher_invalid'], // another key
    ] as const) {
      const refused = await pay(url, header);
      expect(refused.status).toBe(402);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe(code);
    }
    const closed = await sellerClose(url, channelId, key);
    expect(closed.status).toBe(200);
    expect(((await closed.json()) as { settlement: { amountSettled: string } }).settlement.amountSettled).toBe(
      (2n * PRICE).toString(),
    );
    expect(BigInt((await facilitatorSession(channelId))!.amount_settled!)).toBe(2n * PRICE);
    // After the close a voucher is refused, and nothing more is settled.
    const late = await pay(url, voucherHeader(session, channelId, key, 3n * PRICE));
    expect(((await late.json()) as { error: { code: string } }).error.code).toBe('session_closed');
  }, 60_000);

  it('refuses the vouchers of a session whose buyer set a minimum increment above the price: the facilitator would refuse them all', async () => {
    // The buyer opens the session and sets pricePerUnit itself: every checkpoint of a one-price voucher would be an
    // underpayment, so the seller would serve and settle nothing. It serves nothing on it instead.
    const buyer = await fundedBuyer();
    const { channelId, key } = await handSession(buyer, '500000', (1000n * PRICE).toString());
    const url = replicas[0]!.url;
    const { session } = await offer(url);
    const [buyerBefore, sellerBefore] = [balance(buyer.address), balance(seller.address)];
    for (const replica of replicas) {
      const refused = await pay(replica.url, voucherHeader(session, channelId, key, PRICE));
      expect(refused.status).toBe(402);
      const { error } = (await refused.json()) as { error: { code: string; message: string } };
      expect(error.code).toBe('session_price_mismatch');
      expect(error.message).toContain(`minimum of ${1000n * PRICE}`);
    }
    expect(balance(buyer.address)).toBe(buyerBefore);
    expect(balance(seller.address)).toBe(sellerBefore);
  }, 60_000);

  it('lets a close race a voucher: the voucher lands before the close or is refused, never paid twice nor unpaid', async () => {
    const buyer = await fundedBuyer();
    const sellerBefore = balance(seller.address);
    const { channelId, key } = await handSession(buyer);
    const { session } = await offer(replicas[0]!.url);
    expect((await pay(replicas[0]!.url, voucherHeader(session, channelId, key, PRICE))).status).toBe(200);
    const [voucher, close] = await Promise.all([
      pay(replicas[1]!.url, voucherHeader(session, channelId, key, 2n * PRICE)),
      sellerClose(replicas[0]!.url, channelId, key),
    ]);
    expect(close.status).toBe(200);
    const landed = voucher.status === 200;
    if (!landed) expect(((await voucher.json()) as { error: { code: string } }).error.code).toBe('session_closed');
    const expected = landed ? 2n * PRICE : PRICE;
    expect(BigInt((await facilitatorSession(channelId))!.amount_settled!)).toBe(expected);
    expect(balance(seller.address) - sellerBefore).toBe(expected);
  }, 60_000);
});

describe('checkpoints', () => {
  it('forwards one at a time a session: vouchers that cross the threshold meanwhile do not forward again', async () => {
    // Two replicas on one database: the first learns the session from the facilitator (signed in as the seller,
    // which a proxy's origin would spoil), the second forwards its checkpoints through a proxy that holds them.
    const gate = await holdingProxy(economy.facilitator.url, '/mpp/session/voucher');
    const shared = await testDatabase();
    const learner = await startSeller({ wallet: seller, database: shared });
    const service = await startSeller({ wallet: seller, database: shared, facilitatorUrl: gate.url });
    try {
      const buyer = await fundedBuyer();
      const { channelId, key } = await handSession(buyer);
      const { session } = await offer(service.url);
      expect((await pay(learner.url, voucherHeader(session, channelId, key, PRICE))).status).toBe(200);
      // Forwarded from 2 lessons unforwarded on: the 2nd voucher starts a checkpoint, which the proxy holds, and
      // the 3rd to 6th each cross the threshold again while it is on its way.
      for (let n = 2n; n <= 6n; n++)
        expect((await pay(service.url, voucherHeader(session, channelId, key, n * PRICE))).status).toBe(200);
      await until(gate.parked, (n) => n >= 1, 'the checkpoint to reach the facilitator');
      expect(gate.parked()).toBe(1);
      gate.release();
      await until(
        () => facilitatorSession(channelId),
        (s) => BigInt(s?.accepted ?? 0) >= 2n * PRICE,
        'the checkpoint to land',
      );
      // The next voucher past the threshold forwards again; the close settles every voucher, exactly.
      expect((await pay(service.url, voucherHeader(session, channelId, key, 7n * PRICE))).status).toBe(200);
      const closed = await sellerClose(learner.url, channelId, key);
      expect(closed.status).toBe(200);
      expect(((await closed.json()) as { settlement: { amountSettled: string } }).settlement.amountSettled).toBe(
        (7n * PRICE).toString(),
      );
    } finally {
      await service.close();
      await learner.close();
      await shared.close();
      await gate.close();
    }
  }, 60_000);
});

describe('a seller that is gone at close', () => {
  it('is paid all the same: the client settles its last voucher through the facilitator', async () => {
    const goneSeller = generateWallet();
    await economy.ledger.openTokenAccount(goneSeller.address);
    economy.sellers.add(goneSeller.address);
    const service = await startSeller({ wallet: goneSeller });
    try {
      const buyer = await fundedBuyer();
      const client = await buyerClient(buyer, service.url, {
        rpcUrl: economy.rpcUrl,
        sessions: { after: 1, depositUsd: '0.5' },
      });
      await client.education.lesson(LESSON);
      const open = await until(
        () => sessionsOf(client.payments).open,
        (o) => o.length === 1,
        'the session to open',
      );
      for (let i = 0; i < 2; i++)
        expect((await client.education.lesson.withResponse(LESSON)).payment?.session).toBeDefined();
      await service.stopServer();
      await client.close();
      const closed = sessionsOf(client.payments).closed.find((c) => c.channelId === open[0]!.channelId)!;
      expect(closed.error).toBeUndefined();
      expect(closed.signature).toBeTruthy();
      expect(BigInt((await facilitatorSession(open[0]!.channelId))!.amount_settled!)).toBe(2n * PRICE);
      expect(balance(goneSeller.address)).toBe(3n * PRICE);
    } finally {
      await service.close();
    }
  }, 60_000);
});

describe('a buyer that exits without closing', () => {
  it('is settled by the seller once the session is idle', async () => {
    const idleSeller = generateWallet();
    await economy.ledger.openTokenAccount(idleSeller.address);
    economy.sellers.add(idleSeller.address);
    const service = await startSeller({ wallet: idleSeller, idleSeconds: 1, sweepMs: 250 });
    try {
      const buyer = await fundedBuyer();
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', '--conditions=ae-source', 'tests/support/session-buyer.ts'],
        {
          env: {
            ...process.env,
            BUYER_SECRET: base58Encode(buyer.secretKey),
            FACILITATOR_URL: economy.facilitator.url,
            SERVICE_URL: service.url,
            RPC_URL: economy.rpcUrl,
            CALLS: '3',
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let output = '';
      child.stdout!.on('data', (chunk: Buffer) => (output += chunk));
      child.stderr!.on('data', (chunk: Buffer) => (output += chunk));
      const how = await new Promise((resolve) => child.on('exit', (code, signal) => resolve(signal ?? code)));
      expect(how, output).toBe('SIGKILL');
      const open = JSON.parse(output.trim().split('\n').at(-1)!) as { channelId: string; vouchedAtomic: string };
      expect(open.vouchedAtomic).toBe((3n * PRICE).toString());
      // The buyer never closed: the seller's sweep settles what was vouched.
      const settled = await until(
        () => facilitatorSession(open.channelId),
        (s) => s?.state === 'closed',
        'the seller to settle the session',
      );
      expect(BigInt(settled!.amount_settled!)).toBe(3n * PRICE);
      expect(balance(idleSeller.address)).toBe(4n * PRICE);
    } finally {
      await service.close();
    }
  }, 60_000);
});

describe('two services on one database (as under npm start)', () => {
  it("each settles only its own sessions: the other's sweep and close endpoint leave them alone", async () => {
    const shared = await testDatabase();
    const [mine, other] = [generateWallet(), generateWallet()];
    for (const w of [mine, other]) {
      await economy.ledger.openTokenAccount(w.address);
      economy.sellers.add(w.address);
    }
    const lines: string[] = [];
    const sink = { write: (line: string) => void lines.push(line) };
    const seller1 = await startSeller({ wallet: mine, database: shared, idleSeconds: 1, sweepMs: 1_000 });
    // The other service sweeps ten times as often: before the fix it took the idle session first.
    const seller2 = await startSeller({
      wallet: other,
      database: shared,
      idleSeconds: 1,
      sweepMs: 100,
      logger: createLogger('debug', sink),
    });
    try {
      const buyer = await fundedBuyer();
      const client = await buyerClient(buyer, seller1.url, {
        rpcUrl: economy.rpcUrl,
        sessions: { after: 1, depositUsd: '0.5', idleMs: 600_000 },
      });
      await client.education.lesson(LESSON);
      const [open] = await until(
        () => sessionsOf(client.payments).open,
        (o) => o.length === 1,
        'the session',
      );
      for (let i = 0; i < 2; i++)
        expect((await client.education.lesson.withResponse(LESSON)).payment?.session?.channelId).toBe(open!.channelId);
      // The other service's close endpoint does not know this session (it is not paid through it).
      const misdirected = await fetch(`${seller2.url}${SESSION_CLOSE_PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ channelId: open!.channelId, signature: base58Encode(new Uint8Array(64)) }),
      });
      expect([misdirected.status, ((await misdirected.json()) as { error: { code: string } }).error.code]).toEqual([
        404,
        'session_not_found',
      ]);
      // Idle: its own seller settles what was vouched; the other never touched it.
      const settled = await until(
        () => facilitatorSession(open!.channelId),
        (s) => s?.state === 'closed',
        'the seller to settle the idle session',
      );
      expect([settled!.closed_by, BigInt(settled!.amount_settled!)]).toEqual(['seller', 2n * PRICE]);
      expect(lines.filter((l) => l.includes(open!.channelId))).toEqual([]);
      expect(balance(other.address)).toBe(0n);
      await client.close();
    } finally {
      await seller2.close();
      await seller1.close();
      await shared.close();
    }
  }, 60_000);
});

describe('before the handler runs', () => {
  let shop: RunningService;
  const served: string[] = [];
  const shopContract = defineService({
    id: 'shop',
    title: 'Session fixture',
    description: 'A paid route that records what it served',
    router: initContract().router({
      buy: {
        method: 'POST',
        path: '/api/buy',
        body: z.object({ item: z.string().min(1), fail: z.boolean().default(false) }).strict(),
        responses: { 200: z.object({ item: z.string() }), 422: z.unknown(), ...standardErrors, ...paymentErrors },
        summary: 'Buys an item',
        metadata: { payment: fixed('0.05') },
      },
      gift: {
        method: 'POST',
        path: '/api/gift',
        body: z.object({ item: z.string().min(1) }).strict(),
        responses: { 200: z.object({ item: z.string() }), ...standardErrors, ...paymentErrors },
        summary: 'Buys an item wrapped as a gift',
        metadata: { payment: fixed('0.10') },
      },
    }),
  });
  const buy = (header: string | undefined, item: string, fail = false) =>
    fetch(`${shop.url}/api/buy`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(header ? { [PAYMENT_SIGNATURE_HEADER]: header } : {}) },
      body: JSON.stringify({ item, fail }),
    });
  const gift = (header: string | undefined, item: string) =>
    fetch(`${shop.url}/api/gift`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(header ? { [PAYMENT_SIGNATURE_HEADER]: header } : {}) },
      body: JSON.stringify({ item }),
    });
  const codeOf = async (answer: Response) => ((await answer.json()) as { error: { code: string } }).error.code;
  const offerOf = async (answer: Response) =>
    (decodeX402Header(answer.headers.get(PAYMENT_REQUIRED_HEADER)!) as PaymentRequired).accepts.find(
      (a) => a.scheme === 'session',
    )!;
  const sessionRow = async (channelId: string) => {
    const row = (await shop.context.db
      .selectFrom('paywall_sessions')
      .selectAll()
      .where('channel_id', '=', channelId)
      .executeTakeFirstOrThrow()) as { spent: bigint; vouchers: number };
    return { spent: BigInt(row.spent), vouchers: Number(row.vouchers) };
  };

  beforeAll(async () => {
    shop = await startService(
      async (context) =>
        createServiceApp({
          service: shopContract,
          handlers: {
            buy: async ({ body }) => {
              if (body.fail) return { status: 422, body: { error: { code: 'out_of_stock', message: 'none left' } } };
              served.push(body.item);
              return { status: 200, body: { item: body.item } };
            },
            gift: async ({ body }) => {
              served.push(body.item);
              return { status: 200, body: { item: body.item } };
            },
          },
          publicUrl: context.publicUrl,
          db: context.db,
          logger: context.logger,
          paywall: context.paywall,
          signer: context.wallet,
        }),
      {
        id: 'shop',
        rpcUrl: economy.rpcUrl,
        wallet: seller,
        paywall: {
          feePayer: economy.feePayer.address,
          facilitatorUrl: economy.facilitator.url,
          sessions: { sweepMs: 60_000 },
        },
      },
    );
  }, 60_000);
  afterAll(async () => shop?.close());

  it('refuses a forged, foreign, replayed or doubled voucher without serving it, and a failed call costs nothing', async () => {
    const quoted = await buy(undefined, 'quote');
    const quote = decodeX402Header(quoted.headers.get(PAYMENT_REQUIRED_HEADER)!) as PaymentRequired;
    const offer = quote.accepts.find((a) => a.scheme === 'session')!;
    // A channel nobody opened, signed by a key of the caller's own: the facilitator knows no such session.
    const stranger = generateWallet();
    expect(
      await codeOf(await buy(voucherHeader(offer, 'chn_NoSuchChannel0000000000', stranger, PRICE), 'forged')),
    ).toBe('session_not_found');
    // A real channel, another key.
    const buyer = await fundedBuyer();
    const { channelId, key } = await handSession(buyer);
    expect(await codeOf(await buy(voucherHeader(offer, channelId, stranger, PRICE), 'foreign'))).toBe(
      'session_voucher_invalid',
    );
    expect(served).toEqual([]);

    // A handler that fails: the voucher does not land, and the same amount pays the next call.
    const failed = await buy(voucherHeader(offer, channelId, key, PRICE), 'failed', true);
    expect(failed.status).toBe(422);
    const first = voucherHeader(offer, channelId, key, PRICE);
    expect((await buy(first, 'one')).status).toBe(200);
    // Replayed, and the next one sent twice at once: served once each.
    expect(await codeOf(await buy(first, 'replayed'))).toBe('session_voucher_stale');
    const second = voucherHeader(offer, channelId, key, 2n * PRICE);
    const both = await Promise.all([buy(second, 'two'), buy(second, 'two')]);
    expect(both.map((a) => a.status).sort()).toEqual([200, 402]);
    expect(served).toEqual(['one', 'two']);
    const row = (await shop.context.db
      .selectFrom('paywall_sessions')
      .selectAll()
      .where('channel_id', '=', channelId)
      .executeTakeFirstOrThrow()) as { spent: bigint; vouchers: number };
    expect([BigInt(row.spent), Number(row.vouchers)]).toEqual([2n * PRICE, 2]);
  }, 60_000);

  // Vouchers of concurrent requests land in one UPDATE (group commit): each row keeps its own compare-and-set.
  it('lands concurrent vouchers each on its own session, and only one of two signed from the same amount', async () => {
    served.length = 0;
    const offer = await offerOf(await buy(undefined, 'quote'));
    const giftOffer = await offerOf(await gift(undefined, 'quote'));
    const sessions = await Promise.all([0, 1, 2].map(async () => handSession(await fundedBuyer())));
    const answers = await Promise.all(
      sessions.map(({ channelId, key }, i) => buy(voucherHeader(offer, channelId, key, PRICE), `item-${i}`)),
    );
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    for (const { channelId } of sessions) expect(await sessionRow(channelId)).toEqual({ spent: PRICE, vouchers: 1 });

    // Both signed from PRICE: a 0.05 buy to 2 × PRICE and a 0.10 gift to 3 × PRICE. One lands. The other is refused
    // before its handler runs when the first has landed by then, or after it, its answer withheld (a 402 in its place).
    const { channelId, key } = sessions[0]!;
    const [bought, wrapped] = await Promise.all([
      buy(voucherHeader(offer, channelId, key, 2n * PRICE), 'bought'),
      gift(voucherHeader(giftOffer, channelId, key, 3n * PRICE), 'wrapped'),
    ]);
    const statuses = [bought.status, wrapped.status];
    expect([...statuses].sort()).toEqual([200, 402]);
    const refused = bought.status === 402 ? bought : wrapped;
    expect(['session_voucher_stale', 'session_voucher_mismatch']).toContain(await codeOf(refused));
    const landed = bought.status === 200 ? 'bought' : 'wrapped';
    const other = landed === 'bought' ? 'wrapped' : 'bought';
    expect(served.filter((item) => item !== other).sort()).toEqual(['item-0', 'item-1', 'item-2', landed].sort());
    expect(await (bought.status === 200 ? bought : wrapped).json()).toEqual({ item: landed });
    expect(await sessionRow(channelId)).toEqual({ spent: landed === 'bought' ? 2n * PRICE : 3n * PRICE, vouchers: 2 });
  }, 60_000);
});

describe('a buyer that closes at the facilitator', () => {
  it('still pays what it vouched to the seller: the seller forwards its vouchers within the grace', async () => {
    const graceSeller = generateWallet();
    await economy.ledger.openTokenAccount(graceSeller.address);
    economy.sellers.add(graceSeller.address);
    const service = await startSeller({ wallet: graceSeller, sweepMs: 250 });
    try {
      const buyer = await fundedBuyer();
      const facilitator = createClient({
        baseUrls: { facilitator: economy.facilitator.url },
        wallet: await walletFromSecretKey(buyer.secretKey),
        maxRetries: 0,
      }).facilitator;
      const key = generateWallet();
      await handSession(buyer); // onboards the buyer
      const { channelId } = await facilitator.openSession({
        body: {
          buyerWallet: buyer.address,
          sellerWallet: graceSeller.address,
          depositAtomic: '500000',
          sessionKey: key.address,
        },
      });
      const { session } = await offer(service.url);
      // One voucher, below the amount the seller forwards at once: the facilitator has not seen it.
      expect((await pay(service.url, voucherHeader(session, channelId, key, PRICE))).status).toBe(200);
      expect((await facilitatorSession(channelId))!.accepted).toBe(0n);
      const closed = await facilitator.closeSession({ body: { channelId } });
      expect(closed.settlement.amountSettled).toBe(PRICE.toString());
      expect(closed.settlement.unpaidAtomic).toBe('0');
      expect(balance(graceSeller.address)).toBe(PRICE);
    } finally {
      await service.close();
    }
  }, 60_000);
});

describe('a buyer that moves its funds away after vouching', () => {
  it('is closed by the seller once the facilitator no longer covers it, and pays what its wallet still holds', async () => {
    const buyer = await fundedBuyer(400_000n);
    await economy.ledger.airdrop(buyer.address, 1_000_000_000n);
    const before = balance(seller.address);
    const { channelId, key } = await handSession(buyer, '300000');
    const { session } = await offer(replicas[0]!.url);
    for (const n of [1n, 2n])
      expect((await pay(replicas[0]!.url, voucherHeader(session, channelId, key, n * PRICE))).status).toBe(200);
    // The second voucher reached the checkpoint amount: the facilitator covered it.
    await until(
      () => facilitatorSession(channelId),
      (row) => BigInt(row?.accepted ?? 0) === 2n * PRICE,
      'the checkpoint',
    );
    // The buyer keeps 20 000 and moves the rest to a wallet of its own.
    const sink = generateWallet();
    await economy.ledger.openTokenAccount(sink.address);
    await sendInstructions(
      createSolanaRpc(economy.rpcUrl),
      [buyer],
      [
        getTransferCheckedInstruction({
          source: address(ata(buyer.address, USDC_DEVNET)),
          mint: address(USDC_DEVNET),
          destination: address(ata(sink.address, USDC_DEVNET)),
          authority: createNoopSigner(address(buyer.address)),
          amount: 380_000n,
          decimals: 6,
        }),
      ],
    );
    // The next vouchers reach the checkpoint amount: the facilitator refuses to cover them, the seller closes.
    for (const n of [3n, 4n])
      expect((await pay(replicas[0]!.url, voucherHeader(session, channelId, key, n * PRICE))).status).toBe(200);
    await until(
      () => facilitatorSession(channelId),
      (row) => row?.state === 'closed',
      'the seller to close the uncovered session',
    );
    const late = await pay(replicas[0]!.url, voucherHeader(session, channelId, key, 5n * PRICE));
    expect(((await late.json()) as { error: { code: string } }).error.code).toBe('session_closed');
    const settled = await facilitatorSession(channelId);
    expect([settled!.state, BigInt(settled!.amount_settled!)]).toEqual(['closed', 20_000n]);
    expect(balance(seller.address) - before).toBe(20_000n);
    expect(balance(buyer.address)).toBe(0n);
  }, 60_000);
});

/**
 * A seller in front of a real one (replicas[0]) that sees every voucher the buyer sends and records it: the first
 * voucher of a session it answers in its own way (`first`), the rest it passes on. An adversarial counterparty, not a
 * stand-in for our own code: what it answers the SDK must not trust further than its own signatures go.
 */
async function interceptingSeller(
  upstream: string,
  first: (req: IncomingMessage, res: ServerResponse, target: URL) => void,
) {
  const vouchers: bigint[] = [];
  let intercepted = false;
  const server: Server = createServer((req, res) => {
    const target = new URL(req.url ?? '/', upstream);
    const header = req.headers[PAYMENT_SIGNATURE_HEADER];
    const payload = (
      typeof header === 'string' ? (decodeX402Header(header) as { payload?: Record<string, unknown> }) : undefined
    )?.payload;
    if (typeof payload?.channelId !== 'string' || typeof payload.cumulativeAmount !== 'string')
      return passOn(req, res, target);
    vouchers.push(BigInt(payload.cumulativeAmount));
    if (intercepted) return passOn(req, res, target);
    intercepted = true;
    first(req, res, target);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    vouchers,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe("a seller's account of the session after a refused voucher", () => {
  it('is not trusted beyond what the buyer signed: a seller claiming the deposit less a price gets no voucher for it', async () => {
    const DEPOSIT = 500_000n;
    // It answers the first voucher (PRICE) as stale and claims to hold DEPOSIT - PRICE, so that the next voucher
    // (DEPOSIT - PRICE + PRICE) would let it settle the whole deposit for one lesson.
    const liar = await interceptingSeller(replicas[0]!.url, (req, res) => {
      req.resume();
      res.writeHead(402, {
        'content-type': 'application/json',
        'x-session-state': JSON.stringify({
          acceptedCumulative: (DEPOSIT - PRICE).toString(),
          depositAtomic: DEPOSIT.toString(),
          state: 'open',
        }),
      });
      res.end(JSON.stringify({ error: { code: 'session_voucher_stale', message: 'a stale voucher' } }));
    });
    try {
      const buyer = await fundedBuyer();
      const buyerBefore = balance(buyer.address);
      const client = await buyerClient(buyer, liar.url, {
        rpcUrl: economy.rpcUrl,
        sessions: { after: 1, depositUsd: '0.5', idleMs: 600_000 },
      });
      await client.education.lesson(LESSON);
      const [open] = await until(
        () => sessionsOf(client.payments).open,
        (o) => o.length === 1,
        'the session to open',
      );
      expect(open!.depositAtomic).toBe(DEPOSIT.toString());
      // The lesson is served all the same, paid another way (exact) once the session is given up.
      const paid = await client.education.lesson.withResponse(LESSON);
      expect(paid.status).toBe(200);
      expect(paid.payment?.transaction).toBeTruthy();
      // The only voucher it ever got is the one the buyer signed for this lesson.
      expect(liar.vouchers).toEqual([PRICE]);
      // Spent: two lessons paid exact. Nothing of the claimed amount was counted.
      expect(client.payments.spentUsd('education')).toBe('0.1');
      await client.close();
      const closed = sessionsOf(client.payments).closed.find((c) => c.channelId === open!.channelId);
      expect(closed?.vouchedAtomic).toBe('0');
      const settled = await facilitatorSession(open!.channelId);
      expect(settled?.state).toBe('closed');
      expect(BigInt(settled!.amount_settled ?? 0)).toBe(0n);
      expect(buyerBefore - balance(buyer.address)).toBe(2n * PRICE);
    } finally {
      await liar.close();
    }
  }, 60_000);

  it('is trusted up to a voucher it was sent but whose answer was lost: counted once, and vouching goes on from it', async () => {
    // The first voucher reaches the seller, which serves the lesson; its answer never reaches the buyer.
    const lossy = await interceptingSeller(replicas[0]!.url, (req, res, target) => {
      const out = httpRequest(target, { method: req.method, headers: { ...req.headers, host: target.host } }, (a) => {
        a.resume();
        a.on('end', () => res.destroy());
      });
      out.on('error', () => res.destroy());
      req.pipe(out);
    });
    try {
      const buyer = await fundedBuyer();
      const [buyerBefore, sellerBefore] = [balance(buyer.address), balance(seller.address)];
      const client = await buyerClient(buyer, lossy.url, {
        rpcUrl: economy.rpcUrl,
        sessions: { after: 1, depositUsd: '0.5', idleMs: 600_000 },
      });
      await client.education.lesson(LESSON);
      const [open] = await until(
        () => sessionsOf(client.payments).open,
        (o) => o.length === 1,
        'the session to open',
      );
      expect(await client.education.lesson(LESSON).catch((e) => e)).toBeInstanceOf(Error);
      // The same voucher again: the seller holds it (stale), so the next one is for two lessons.
      const next = await client.education.lesson.withResponse(LESSON);
      expect(next.payment?.session).toEqual({ channelId: open!.channelId, cumulativeAmount: (2n * PRICE).toString() });
      expect(lossy.vouchers).toEqual([PRICE, PRICE, 2n * PRICE]);
      expect(client.payments.spentUsd('education')).toBe('0.15');
      await client.close();
      const closed = sessionsOf(client.payments).closed.find((c) => c.channelId === open!.channelId);
      expect([closed?.error, closed?.vouchedAtomic]).toEqual([undefined, (2n * PRICE).toString()]);
      expect(BigInt((await facilitatorSession(open!.channelId))!.amount_settled!)).toBe(2n * PRICE);
      expect(buyerBefore - balance(buyer.address)).toBe(3n * PRICE);
      expect(balance(seller.address) - sellerBefore).toBe(3n * PRICE);
    } finally {
      await lossy.close();
    }
  }, 60_000);
});
