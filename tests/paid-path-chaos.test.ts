import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  PAYMENT_RESPONSE_HEADER,
  decodeX402Header,
  education,
  type PaymentRequired,
  type X402PaymentPayload,
} from '@agent-economy/contracts';
import {
  ConnectionError,
  PaymentRequiredError,
  createServiceClient,
  createSiwxHeader,
  walletFromSecretKey,
} from '@agent-economy/sdk';
import { createSolanaRpc } from '@solana/kit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../servers/src/db';
import { paymentKey, type PaywallFault } from '../servers/src/runtime/paywall';
import { generateWallet } from '../servers/src/solana/keys';
import { desk } from './support/desk';
import { startEconomy, type Economy } from './support/economy';
import { buildPaymentTransaction, paymentHeader } from './support/payments';
import { freePort, postgresReachable } from './support/servers';

// "Charged, never served": the education service runs as a real process (`npm start`'s main.ts with
// SERVICES=education) and is killed (SIGKILL, from inside, by the PAYWALL_FAULT point) at each step of the
// paid path. Then the same payment is presented again, to a process that did not die, and the invariant is
// checked on chain: charged ⇒ served exactly once; not charged ⇒ not served (and, presented again, served
// and charged once). A crash leaves a claim whose lease has not expired: the test first sees it refused as
// in flight, then ends the lease in the database (as the passing of maxTimeoutSeconds would) and presents
// it again.

const DATABASE_URL = process.env.TEST_DATABASE_URL;
const root = new URL('..', import.meta.url).pathname;
const LESSON = { body: { courseId: 'tool-use', lessonId: 'function-calling' } } as never;

/** Steps at which the process dies, and whether the buyer has been charged by then. */
const KILLS: { fault: PaywallFault; charged: boolean }[] = [
  { fault: 'after-claim', charged: false },
  { fault: 'after-verify', charged: false },
  { fault: 'after-handler', charged: false },
  { fault: 'after-settle', charged: true },
  { fault: 'after-record', charged: true },
];

interface Child {
  child: ChildProcess;
  url: string;
  exited: Promise<NodeJS.Signals | number | null>;
}

/** `npm start` with SERVICES=education, or (desk: true) the settle-first fixture's process. */
async function startChild(env: Record<string, string>, options: { desk?: boolean } = {}): Promise<Child> {
  // A port free a moment ago can still be taken by another test file's server before the child binds it.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startChildOn(await freePort(), env, options);
    } catch (error) {
      if (attempt < 3 && /is taken|EADDRINUSE/.test(String(error))) continue;
      throw error;
    }
  }
}

async function startChildOn(port: number, env: Record<string, string>, options: { desk?: boolean }): Promise<Child> {
  const script = options.desk ? 'tests/support/desk-process.ts' : 'servers/src/main.ts';
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=ae-source', script], {
    cwd: root,
    env: { ...process.env, ...env, [options.desk ? 'DESK_PORT' : 'EDUCATION_PORT']: String(port), LOG_LEVEL: 'error' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
    child.on('exit', (code, signal) => resolve(signal ?? code)),
  );
  await new Promise<void>((resolve, reject) => {
    let output = '';
    const collect = (chunk: Buffer) => {
      output += chunk;
      if (output.includes('Ctrl-C stops')) resolve();
    };
    child.stdout!.on('data', collect);
    child.stderr!.on('data', collect);
    void exited.then((how) => reject(new Error(`service exited with ${how}:\n${output}`)));
  });
  return { child, url: `http://127.0.0.1:${port}`, exited };
}

async function stop(child: Child): Promise<void> {
  if (child.child.exitCode === null && child.child.signalCode === null) child.child.kill('SIGINT');
  await child.exited;
}

/**
 * Runs every kill against one database. `shared`: the database the surviving process and the test reach
 * while the dying one runs (PostgreSQL); otherwise (PGlite, one process at a time) the survivor starts after.
 */
function chaos(label: string, setup: () => Promise<ChaosDatabase>) {
  describe(label, () => {
    let economy: Economy;
    let db: ChaosDatabase;
    const seller = generateWallet();
    let base: Record<string, string>;
    let survivor: Child | undefined;
    const dirs: string[] = [];

    beforeAll(async () => {
      economy = await startEconomy();
      rpcUrl = economy.rpcUrl;
      await economy.ledger.openTokenAccount(seller.address);
      economy.sellers.add(seller.address);
      db = await setup();
      base = {
        SERVICES: 'education',
        SOLANA_RPC_URL: economy.rpcUrl,
        FACILITATOR_URL: economy.facilitator.url,
        EDUCATION_WALLET_SECRET: JSON.stringify([...seller.secretKey]),
        ...db.env,
      };
    }, 120_000);

    afterAll(async () => {
      if (survivor) await stop(survivor);
      await db?.close();
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
      await economy?.close();
    });

    const dataDir = () => {
      const dir = mkdtempSync(join(tmpdir(), 'ae-chaos-'));
      dirs.push(dir);
      return dir;
    };
    const buyer = () => economy.ledger.tokenBalance(economy.buyer.address);
    const settledCount = async () =>
      (
        await economy.facilitator.database.db
          .selectFrom('facilitator_settlements')
          .select('transaction')
          .where('payer', '=', economy.buyer.address)
          .where('status', '=', 'settled')
          .execute()
      ).length;

    async function payFor(url: string): Promise<{ header: string; amount: bigint; key: string }> {
      const quoteError = await createServiceClient(education, url, { maxRetries: 0 })
        .lesson(LESSON)
        .catch((e) => e);
      expect(quoteError).toBeInstanceOf(PaymentRequiredError);
      const quote = quoteError.quote as PaymentRequired;
      const requirements = quote.accepts[0]!;
      const { value } = await createSolanaRpc(economy.rpcUrl).getLatestBlockhash().send();
      const header = paymentHeader(
        requirements,
        await buildPaymentTransaction({ payer: economy.buyer, requirements, blockhash: value }),
        quote.resource.url,
      );
      return {
        header,
        amount: BigInt(requirements.amount),
        key: paymentKey(decodeX402Header(header) as X402PaymentPayload)!,
      };
    }

    for (const { fault, charged } of KILLS) {
      it(`killed ${fault}: ${charged ? 'charged, then served once when the payment comes back' : 'not charged nor served; served and charged once when it comes back'}`, async () => {
        // PGlite: one process at a time on the data directory.
        if (!db.shared && survivor) {
          await stop(survivor);
          survivor = undefined;
        }
        const dying = await startChild({
          ...base,
          PAYWALL_FAULT: fault,
          DATA_DIR: db.shared ? dataDir() : base.DATA_DIR!,
        });
        const { header, amount, key } = await payFor(dying.url);
        const [before, settledBefore] = [buyer(), await settledCount()];

        const lost = await createServiceClient(education, dying.url, { maxRetries: 0 })
          .lesson(LESSON, { headers: { 'payment-signature': header } })
          .catch((e) => e);
        expect(await dying.exited).toBe('SIGKILL');
        // No answer came back: nothing was served.
        expect(lost).toBeInstanceOf(ConnectionError);
        expect(buyer()).toBe(charged ? before - amount : before);
        expect(await settledCount()).toBe(settledBefore + (charged ? 1 : 0));

        survivor ??= await startChild({ ...base, DATA_DIR: db.shared ? dataDir() : base.DATA_DIR! });
        // The dead request's claim is still leased: presented again now, the payment is refused as in flight.
        const early = await createServiceClient(education, survivor.url, { maxRetries: 0 })
          .lesson(LESSON, { headers: { 'payment-signature': header } })
          .catch((e) => e);
        expect(early).toBeInstanceOf(PaymentRequiredError);
        expect(early.code).toBe('payment_already_used');
        expect(Number(early.headers['retry-after'])).toBeGreaterThan(0);
        expect(buyer()).toBe(charged ? before - amount : before);

        if (db.shared) await db.endLease(key);
        else {
          await stop(survivor);
          await db.endLease(key);
          survivor = await startChild({ ...base });
        }
        if (!charged && (await expired(header))) {
          // A slow machine outlived the payment's blockhash (60 s): never charged, it can no longer be, and serves
          // nothing.
          const refused = await createServiceClient(education, survivor.url, { maxRetries: 0 })
            .lesson(LESSON, { headers: { 'payment-signature': header } })
            .catch((e) => e);
          expect(refused).toBeInstanceOf(PaymentRequiredError);
          expect(buyer()).toBe(before);
          return;
        }
        if (charged) {
          // Its transaction is public once charged: a stranger presenting a copy, without proof or signed in as
          // itself, gets nothing, and does not hold the claim up for the buyer.
          const stranger = generateWallet();
          for (const headers of [{}, await signedInAs(stranger, survivor.url)()]) {
            const copy = await createServiceClient(education, survivor.url, { maxRetries: 0 })
              .lesson(LESSON, { headers: { 'payment-signature': header, ...headers } })
              .catch((e) => e);
            expect(copy).toBeInstanceOf(PaymentRequiredError);
            expect(copy.code).toBe('payment_already_used');
            expect(copy.message).toContain('only its buyer can finish it');
          }
          expect(buyer()).toBe(before - amount);
        }
        const served = await createServiceClient(education, survivor.url, { maxRetries: 0 }).lesson.withResponse(
          LESSON,
          { headers: { 'payment-signature': header, ...(await signedInAs(economy.buyer, survivor.url)()) } },
        );
        expect(served.status).toBe(200);
        const receipt = decodeX402Header(served.headers[PAYMENT_RESPONSE_HEADER]!) as {
          success: boolean;
          transaction: string;
        };
        expect(receipt.success).toBe(true);
        expect(economy.ledger.transaction(receipt.transaction)?.err).toBeNull();
        // Charged exactly once, whoever settled it.
        expect(buyer()).toBe(before - amount);
        expect(await settledCount()).toBe(settledBefore + 1);

        // Served once: the payment is spent now.
        const again = await createServiceClient(education, survivor.url, { maxRetries: 0 })
          .lesson(LESSON, { headers: { 'payment-signature': header } })
          .catch((e) => e);
        expect(again.code).toBe('payment_already_used');
        expect(buyer()).toBe(before - amount);
      }, 120_000);
    }
  });
}

/**
 * SIGN-IN-WITH-X headers of `wallet` for the service at `url`: a charged payment whose request was never answered is
 * served again only to its buyer, who shows itself this way (or with the payment identifier it first sent; these raw
 * payments carry none).
 */
function signedInAs(wallet: { secretKey: Uint8Array }, url: string) {
  return async () => ({
    'sign-in-with-x': await createSiwxHeader(await walletFromSecretKey(wallet.secretKey), { url }),
  });
}

/** Whether the payment's blockhash has expired (then it can never settle). */
async function expired(header: string): Promise<boolean> {
  const payload = decodeX402Header(header) as X402PaymentPayload;
  const { parseTransaction, decodeBase64 } = await import('../servers/src/solana/wire');
  const blockhash = parseTransaction(decodeBase64(payload.payload.transaction as string)).message.recentBlockhash;
  return !(
    await createSolanaRpc(rpcUrl)
      .isBlockhashValid(blockhash as never, { commitment: 'confirmed' })
      .send()
  ).value;
}
let rpcUrl = '';

/** A database the processes share, as a test sees it. */
interface ChaosDatabase {
  env: Record<string, string>;
  /** Ends the lease of a payment's claim (stands in for its time passing). */
  endLease(key: string): Promise<void>;
  /** True when a survivor and the test can reach it while another process runs (PostgreSQL). */
  shared: boolean;
  /** Rows of a query, when shared. */
  query?(text: string, values: unknown[]): Promise<Record<string, unknown>[]>;
  close(): Promise<void>;
}

async function postgresDatabase(): Promise<ChaosDatabase> {
  const schema = `chaos_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: DATABASE_URL });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  await admin.query(`set search_path to ${schema}`);
  const url = new URL(DATABASE_URL!);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return {
    env: { DATABASE_URL: url.toString() },
    shared: true,
    // Stands in for the lease's time passing (maxTimeoutSeconds plus the settle timeout).
    endLease: async (key) =>
      void (await admin.query(`update runtime_payments set lease_until = now() - interval '1 second' where key = $1`, [
        key,
      ])),
    query: async (text, values) => (await admin.query(text, values)).rows,
    close: async () => {
      await admin.query(`drop schema if exists ${schema} cascade`);
      await admin.end();
    },
  };
}

async function pgliteDatabase(): Promise<ChaosDatabase> {
  const dir = mkdtempSync(join(tmpdir(), 'ae-chaos-pglite-'));
  return {
    env: { DATA_DIR: dir },
    shared: false,
    endLease: async (key) => {
      // No process holds the data directory now: the test opens it to end the lease, then lets it go.
      const database = await openDatabase({ dataDir: join(dir, 'db') });
      await database.db
        .updateTable('runtime_payments')
        .set({ lease_until: new Date(Date.now() - 1000) })
        .where('key', '=', key)
        .execute();
      await database.close();
    },
    close: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Steps of a settle-first request at which the process dies; `fail`: the order fails and must be refunded. */
const SETTLE_FIRST_KILLS: { fault: PaywallFault; fail: 'no' | 'domain'; charged: boolean; refunded?: boolean }[] = [
  { fault: 'after-claim', fail: 'no', charged: false },
  { fault: 'after-verify', fail: 'no', charged: false },
  { fault: 'after-settle', fail: 'no', charged: true },
  { fault: 'after-record', fail: 'no', charged: true },
  { fault: 'after-settle', fail: 'domain', charged: true },
  { fault: 'before-refund', fail: 'domain', charged: true },
  { fault: 'after-refund', fail: 'domain', charged: true, refunded: true },
];

/**
 * The settle-first fixture (tests/support/desk.ts) killed at each step: an order that succeeds is placed
 * exactly once and paid once; one that fails is refunded exactly once; nothing is placed unpaid.
 */
function settleFirstChaos(label: string, setup: () => Promise<ChaosDatabase>) {
  describe(label, () => {
    let economy: Economy;
    let db: ChaosDatabase;
    const seller = generateWallet();
    let base: Record<string, string>;
    let survivor: Child | undefined;
    const dirs: string[] = [];

    beforeAll(async () => {
      economy = await startEconomy();
      rpcUrl = economy.rpcUrl;
      await economy.ledger.openTokenAccount(seller.address);
      // The desk refunds from its own wallet: it pays those fees itself.
      await economy.ledger.airdrop(seller.address, 1_000_000_000n);
      economy.sellers.add(seller.address);
      db = await setup();
      base = {
        SOLANA_RPC_URL: economy.rpcUrl,
        FACILITATOR_URL: economy.facilitator.url,
        DESK_WALLET_SECRET: JSON.stringify([...seller.secretKey]),
        ...db.env,
      };
    }, 120_000);

    afterAll(async () => {
      if (survivor) await stop(survivor);
      await db?.close();
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
      await economy?.close();
    });

    const dataDir = () => {
      const dir = mkdtempSync(join(tmpdir(), 'ae-chaos-'));
      dirs.push(dir);
      return dir;
    };
    const buyer = () => economy.ledger.tokenBalance(economy.buyer.address);
    const order = (fail: 'no' | 'domain') => ({ body: { item: `chair-${fail}`, fail } });
    const ordersOf = async (key: string) =>
      db.query ? (await db.query('select item from desk_orders where payment_key = $1', [key])).length : undefined;

    for (const { fault, fail, charged, refunded } of SETTLE_FIRST_KILLS) {
      it(`killed ${fault} (${fail === 'no' ? 'order succeeds' : 'order fails'}): ${!charged ? 'not charged, not placed' : fail === 'no' ? 'charged, placed once' : 'charged, refunded once'}`, async () => {
        if (!db.shared && survivor) {
          await stop(survivor);
          survivor = undefined;
        }
        const dying = await startChild(
          { ...base, PAYWALL_FAULT: fault, DATA_DIR: db.shared ? dataDir() : base.DATA_DIR! },
          { desk: true },
        );
        const bare = (url: string) => createServiceClient(desk, url, { maxRetries: 0 });
        const quoteError = await bare(dying.url)
          .order(order(fail))
          .catch((e) => e);
        const quote = quoteError.quote as PaymentRequired;
        const requirements = quote.accepts[0]!;
        const { value } = await createSolanaRpc(economy.rpcUrl).getLatestBlockhash().send();
        const header = paymentHeader(
          requirements,
          await buildPaymentTransaction({ payer: economy.buyer, requirements, blockhash: value }),
          quote.resource.url,
        );
        const key = paymentKey(decodeX402Header(header) as X402PaymentPayload)!;
        const amount = BigInt(requirements.amount);
        const before = buyer();

        const lost = await bare(dying.url)
          .order(order(fail), { headers: { 'payment-signature': header } })
          .catch((e) => e);
        expect(await dying.exited).toBe('SIGKILL');
        expect(lost).toBeInstanceOf(ConnectionError);
        expect(buyer()).toBe(charged && !refunded ? before - amount : before);
        // Not charged, not placed (and an order that fails is never placed).
        if (db.shared && (!charged || fail === 'domain')) expect(await ordersOf(key)).toBe(0);

        survivor ??= await startChild({ ...base, DATA_DIR: db.shared ? dataDir() : base.DATA_DIR! }, { desk: true });
        const early = await bare(survivor.url)
          .order(order(fail), { headers: { 'payment-signature': header } })
          .catch((e) => e);
        expect(early.code).toBe('payment_already_used');
        if (db.shared) await db.endLease(key);
        else {
          await stop(survivor);
          await db.endLease(key);
          survivor = await startChild({ ...base }, { desk: true });
        }

        if (!charged && (await expired(header))) {
          // A slow machine outlived the payment's blockhash (60 s): never charged, it can no longer be, and places
          // nothing.
          const refused = await bare(survivor.url)
            .order(order(fail), { headers: { 'payment-signature': header } })
            .catch((e) => e);
          expect(refused).toBeInstanceOf(PaymentRequiredError);
          expect(buyer()).toBe(before);
          if (db.shared) expect(await ordersOf(key)).toBe(0);
          return;
        }
        if (fail === 'no') {
          const placed = await bare(survivor.url).order.withResponse(order(fail), {
            headers: { 'payment-signature': header, ...(await signedInAs(economy.buyer, survivor.url)()) },
          });
          expect(placed.status).toBe(201);
          expect(decodeX402Header(placed.headers[PAYMENT_RESPONSE_HEADER]!)).toMatchObject({
            success: true,
            amount: requirements.amount,
          });
          expect(buyer()).toBe(before - amount);
          if (db.shared) expect(await ordersOf(key)).toBe(1);
        } else {
          const back = await bare(survivor.url)
            .order(order(fail), {
              headers: { 'payment-signature': header, ...(await signedInAs(economy.buyer, survivor.url)()) },
            })
            .catch((e) => e);
          // after-settle: the survivor places the order, it fails, and it refunds: the handler's own error.
          // before/after-refund: the refund is finished (sent once, whoever sent it): payment_refunded.
          expect(back.code).toBe(fault === 'after-settle' ? 'out_of_stock' : 'payment_refunded');
          expect(back.refund).toEqual({ transaction: expect.any(String), amountAtomic: requirements.amount });
          expect(economy.ledger.transaction(back.refund.transaction)?.err).toBeNull();
          expect(buyer()).toBe(before);
          if (db.shared)
            expect(
              (await db.query!('select transaction from runtime_vault_transfers where key = $1', [`refund:${key}`]))
                .length,
            ).toBe(1);
        }
        // Finished: presented again it buys nothing more, and moves nothing.
        const again = await bare(survivor.url)
          .order(order(fail), { headers: { 'payment-signature': header } })
          .catch((e) => e);
        expect(again.code).toBe(fail === 'no' ? 'payment_already_used' : 'payment_refunded');
        expect(buyer()).toBe(fail === 'no' ? before - amount : before);
      }, 120_000);
    }
  });
}

const hasPostgres = DATABASE_URL ? await postgresReachable(DATABASE_URL) : false;
if (!DATABASE_URL)
  console.warn(
    'paid-path-chaos: TEST_DATABASE_URL is unset; the PostgreSQL chaos runs are skipped (the PGlite ones run)',
  );

describe.skipIf(!hasPostgres)('paid path chaos on PostgreSQL (needs TEST_DATABASE_URL)', () => {
  chaos('education (settles after serving): one schema shared by the dying process and a survivor', postgresDatabase);
  settleFirstChaos('a settle-first route: one schema shared by the dying process and a survivor', postgresDatabase);
});

// The PostgreSQL run of the suite (TEST_DATABASE_URL) runs the chaos on PostgreSQL only: the PGlite runs are the
// PGlite run's, and would only repeat it.
describe.skipIf(!!DATABASE_URL)('paid path chaos on PGlite with a data directory', () => {
  chaos('education (settles after serving): one data directory, one process at a time', pgliteDatabase);
  settleFirstChaos('a settle-first route: one data directory, one process at a time', pgliteDatabase);
});
