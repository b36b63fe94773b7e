import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import axios, { AxiosError, AxiosHeaders } from 'axios';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  PAYMENT_REQUIRED_HEADER,
  PAYMENT_RESPONSE_HEADER,
  decodeX402Header,
  encodeX402Header,
  usdToAtomic,
  type PaymentRequired,
} from '@agent-economy/contracts';
import {
  BadRequestError,
  BudgetExceededError,
  ConflictError,
  PaymentNotAcceptableError,
  PaymentNotApprovedError,
  PaymentOutcomeUnknownError,
  createClient,
  createServiceClient,
  fileSpendStore,
  walletFromSecretKey,
  type PaymentApproval,
  type PaymentOptions,
  type SpendRecord,
  type SpendStore,
} from '@agent-economy/sdk';
import { generateWallet } from '../servers/src/solana/keys';
import type { Economy } from './support/economy';

// Budgets that persist, the approval hook, the recipient allowlist, and x402's payment-identifier
// extension, end to end: the SDK paying the real education service through the facilitator on the local
// ledger, balances read from the ledger.

let economy: Economy;
let dir: string;
beforeAll(async () => {
  economy = await (await import('./support/economy')).startEconomy();
  dir = mkdtempSync(join(tmpdir(), 'sdk-budgets-'));
});
afterAll(async () => {
  await economy?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const lesson = { body: { courseId: 'rag', lessonId: 'chunking' } } as const;
const otherLesson = { body: { courseId: 'tool-use', lessonId: 'function-calling' } } as const;
const seller = () => economy.education.context.wallet.address;
const balance = (address: string) => economy.ledger.tokenBalance(address);

/** A buyer holding `usd` of the stablecoin on the ledger. */
async function buyer(usd = '1') {
  const wallet = generateWallet();
  await economy.ledger.mintTo(wallet.address, usdToAtomic(usd));
  return walletFromSecretKey(wallet.secretKey);
}

/**
 * An axios instance recording whether each request carried a payment; `lose` drops answers that settled, as a broken
 * connection would.
 */
function transport(options: { lose?: number } = {}) {
  const instance = axios.create();
  const sent: boolean[] = [];
  const replayed: boolean[] = [];
  let toLose = options.lose ?? 0;
  instance.interceptors.request.use((config) => {
    sent.push(typeof AxiosHeaders.from(config.headers).get('payment-signature') === 'string');
    return config;
  });
  instance.interceptors.response.use((response) => {
    if (response.headers[PAYMENT_RESPONSE_HEADER])
      replayed.push(response.headers['payment-identifier-replayed'] === 'true');
    if (response.headers[PAYMENT_RESPONSE_HEADER] && response.status < 300 && toLose > 0) {
      toLose--;
      // The service settled and answered; the answer never arrives.
      throw new AxiosError('socket hang up', 'ECONNRESET', response.config);
    }
    return response;
  });
  return { instance, sent, replayed };
}

async function client(
  payments: PaymentOptions,
  options: { wallet?: Awaited<ReturnType<typeof buyer>>; lose?: number; maxRetries?: number } = {},
) {
  const wallet = options.wallet ?? (await buyer());
  const { instance, sent, replayed } = transport({ lose: options.lose ?? 0 });
  const sdk = createClient({
    baseUrls: { education: economy.education.url },
    wallet,
    axios: instance,
    maxRetries: options.maxRetries ?? 2,
    payments: { rpcUrl: economy.rpcUrl, ...payments },
  });
  return { sdk, wallet, sent, replayed };
}

async function rejection(promise: Promise<unknown>): Promise<any> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to fail');
}

/** A caller's SpendStore keeping its records in memory. */
function memoryStore(records: SpendRecord[] = []): SpendStore & { records: SpendRecord[] } {
  return {
    records,
    async load() {
      return structuredClone(records);
    },
    async append(record) {
      records.push(structuredClone(record));
    },
  };
}

/** A receipt record of 0.05 USD to the education service, `hoursAgo` hours ago. */
function pastReceipt(hoursAgo: number, origin: string): SpendRecord[] {
  const at = new Date(Date.now() - hoursAgo * 3_600_000).toISOString();
  const id = `past-${hoursAgo}`;
  return [
    { type: 'reserve', id, at, service: 'education', origin, payTo: seller(), amount: '50000' },
    {
      type: 'receipt',
      id,
      at,
      receipt: {
        service: 'education',
        route: 'POST /api/lesson',
        amount: '50000',
        amountUsd: '0.05',
        asset: 'x',
        network: 'x',
        payTo: seller(),
        payer: 'x',
        transaction: `tx-${hoursAgo}`,
        at,
        origin,
      },
    },
  ];
}

describe('budgets refuse before anything is signed', () => {
  it('rolling hourly and daily caps slide over the receipts, naming the cap', async () => {
    const origin = new URL(economy.education.url).origin;
    // A lesson bought two hours ago: outside the hour, inside the day.
    const hourly = await client({ maxPerHourUsd: '0.06', store: memoryStore(pastReceipt(2, origin)) });
    const before = balance(hourly.wallet.address);
    const paid = await hourly.sdk.education.lesson.withResponse(lesson);
    expect([paid.status, paid.payment?.amount, paid.payment?.origin]).toEqual([200, '50000', origin]);
    expect([hourly.sdk.payments.spentUsd(), hourly.sdk.payments.remainingUsd()]).toEqual(['0.1', '0.01']);
    const over = await rejection(hourly.sdk.education.lesson(lesson));
    expect(over).toBeInstanceOf(BudgetExceededError);
    expect([over.limit, over.cap, over.limitUsd, over.remainingUsd, over.priceUsd]).toEqual([
      'hourly',
      'hourly',
      '0.06',
      '0.01',
      '0.05',
    ]);
    expect(over.message).toContain('hourly budget of 0.06 USD');
    expect(balance(hourly.wallet.address)).toBe(before - 50_000n);

    const daily = await client({ maxPerDayUsd: '0.06', store: memoryStore(pastReceipt(2, origin)) });
    const refused = await rejection(daily.sdk.education.lesson(lesson));
    expect([refused.constructor, refused.limit, refused.cap, refused.remainingUsd]).toEqual([
      BudgetExceededError,
      'daily',
      'daily',
      '0.01',
    ]);
    // One request, unpaid: the quote; nothing signed, nothing moved.
    expect(daily.sent).toEqual([false]);
    expect(balance(daily.wallet.address)).toBe(1_000_000n);
    // A day and more ago: outside both windows.
    const later = await client({ maxPerDayUsd: '0.06', store: memoryStore(pastReceipt(25, origin)) });
    expect((await later.sdk.education.lesson.withResponse(lesson)).payment?.amountUsd).toBe('0.05');
  });

  it('a long spend log: thousands of receipts over three days count exactly in every window', async () => {
    const origin = new URL(economy.education.url).origin;
    // 3,000 receipts of 0.05 USD, one every 86.4 s over the last three days (the newest 40 s ago): 42 in the last
    // hour (2.1 USD), 1,000 in the last day (50 USD), 150 USD in all.
    const records = Array.from({ length: 3_000 }, (_, i) => pastReceipt((40 + i * 86.4) / 3_600, origin)).flat();
    const log = await client({
      maxPerHourUsd: '2.15',
      maxPerDayUsd: '50.1',
      maxTotalUsd: '150.1',
      store: memoryStore(records),
    });
    await log.sdk.payments.ready();
    expect([log.sdk.payments.spentUsd(), log.sdk.payments.remainingUsd()]).toEqual(['150', '0.05']);
    expect((await log.sdk.education.lesson.withResponse(lesson)).payment?.amountUsd).toBe('0.05');
    // The hour is full now; the day and the lifetime have 0.05 USD left each.
    expect(log.sdk.payments.remainingUsd()).toBe('0');
    const over = await rejection(log.sdk.education.lesson(lesson));
    expect([over.constructor, over.limit, over.remainingUsd]).toEqual([BudgetExceededError, 'hourly', '0']);
  });

  it('caps per service and per origin', async () => {
    const origin = new URL(economy.education.url).origin;
    const service = await client({ caps: [{ usd: '0.04', service: 'education' }] });
    const a = await rejection(service.sdk.education.lesson(lesson));
    expect([a.constructor, a.limit, a.cap, a.remainingUsd]).toEqual([
      BudgetExceededError,
      'perService',
      'per-service (education)',
      '0.04',
    ]);
    const perOrigin = await client({ maxPerOriginUsd: { [economy.education.url]: '0.07' } });
    await perOrigin.sdk.education.lesson(lesson);
    const b = await rejection(perOrigin.sdk.education.lesson(lesson));
    expect([b.constructor, b.limit, b.cap, b.remainingUsd]).toEqual([
      BudgetExceededError,
      'perOrigin',
      `per-origin (${origin})`,
      '0.02',
    ]);
    // A cap on another origin does not apply here.
    const elsewhere = await client({
      maxPerOriginUsd: { 'https://elsewhere.example': '0.01' },
      caps: [{ usd: '0.01', window: 'hour', origin: 'https://elsewhere.example' }],
    });
    expect((await elsewhere.sdk.education.lesson.withResponse(lesson)).status).toBe(200);
    expect([service.sent, perOrigin.sent.filter(Boolean).length]).toEqual([[false], 1]);
  });

  it('pays only recipients on the allowlist', async () => {
    const refused = await client({ allowedPayTo: [generateWallet().address] });
    const error = await rejection(refused.sdk.education.lesson(lesson));
    expect(error).toBeInstanceOf(PaymentNotAcceptableError);
    expect(error.reasons[0]).toContain(`recipient ${seller()} is not in allowedPayTo`);
    expect(refused.sent).toEqual([false]);
    expect(balance(refused.wallet.address)).toBe(1_000_000n);
    const allowed = await client({ allowedPayTo: [seller()] });
    expect((await allowed.sdk.education.lesson.withResponse(lesson)).payment?.payTo).toBe(seller());
  });

  it('onApprove sees the payment first; a veto signs nothing and moves nothing', async () => {
    const asked: PaymentApproval[] = [];
    let approve = true;
    const { sdk, wallet, sent } = await client({ onApprove: (approval) => (asked.push(approval), approve) });
    const sellerBefore = balance(seller());
    const paid = await sdk.education.lesson.withResponse(lesson);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({
      service: 'education',
      route: 'POST /api/lesson',
      amountUsd: '0.05',
      prepaid: false,
      paymentId: paid.payment!.paymentId,
    });
    expect(asked[0]!.requirements.payTo).toBe(seller());
    expect(asked[0]!.quote?.accepts[0]?.amount).toBe('50000');

    approve = false;
    const vetoed = await rejection(sdk.education.lesson(lesson));
    expect(vetoed).toBeInstanceOf(PaymentNotApprovedError);
    expect([vetoed.priceUsd, vetoed.payTo]).toEqual(['0.05', seller()]);
    // The client knew the terms and would have paid up front: asked once, declined, then only the unpaid request went
    // out.
    expect(asked.map((a) => a.prepaid)).toEqual([false, true]);
    expect(sent).toEqual([false, true, false]);
    expect(sdk.payments.receipts).toHaveLength(1);
    expect([balance(wallet.address), balance(seller())]).toEqual([950_000n, sellerBefore + 50_000n]);

    // A hook that throws declines too, with its error as the cause.
    const throwing = await client({ onApprove: () => Promise.reject(new Error('policy service down')) });
    const declined = await rejection(throwing.sdk.education.lesson(lesson));
    expect([declined.constructor, declined.cause?.message]).toEqual([PaymentNotApprovedError, 'policy service down']);
    expect(balance(throwing.wallet.address)).toBe(1_000_000n);
  });
});

describe('the spend log survives restarts', () => {
  it('a new client on the same spend-log file sees the earlier spending and refuses past the cap', async () => {
    const path = join(dir, 'spend.jsonl');
    const wallet = await buyer();
    const first = fileSpendStore(path);
    const before = await client({ maxTotalUsd: '0.12', store: first }, { wallet });
    await before.sdk.education.lesson(lesson);
    // One process at a time: a second store on the same file is refused while the first holds it.
    await expect(fileSpendStore(path).load()).rejects.toThrow(/already open in this process/);
    await first.close();
    expect(
      readFileSync(path, 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line).type),
    ).toEqual(['reserve', 'sent', 'receipt']);

    const store = fileSpendStore(path);
    const after = await client({ maxTotalUsd: '0.12', store }, { wallet });
    await after.sdk.payments.ready();
    expect([
      after.sdk.payments.spentUsd(),
      after.sdk.payments.remainingUsd(),
      after.sdk.payments.receipts.length,
    ]).toEqual(['0.05', '0.07', 1]);
    await after.sdk.education.lesson(lesson);
    const over = await rejection(after.sdk.education.lesson(lesson));
    expect([over.constructor, over.limit, over.remainingUsd]).toEqual([BudgetExceededError, 'total', '0.02']);
    await store.close();
    expect(balance(wallet.address)).toBe(900_000n);
  });

  it('a payment sent before a crash, outcome unknown, counts as spent until resolved; its identifier gets its outcome without paying again', async () => {
    const store = memoryStore();
    const wallet = await buyer();
    // The answer is lost and the client does not ask again: the outcome stays unknown.
    const crashed = await client({ maxTotalUsd: '0.08', store }, { wallet, lose: 1, maxRetries: 0 });
    const lost = await rejection(crashed.sdk.education.lesson(lesson));
    expect(lost).toBeInstanceOf(PaymentOutcomeUnknownError);
    expect(store.records.map((r) => r.type)).toEqual(['reserve', 'sent']);
    expect(balance(wallet.address)).toBe(950_000n); // it did settle

    // Restarted: the pending payment counts, so a second lesson would pass the cap.
    const restarted = await client({ maxTotalUsd: '0.08', store: memoryStore(store.records) }, { wallet });
    await restarted.sdk.payments.ready();
    const [pending] = restarted.sdk.payments.pending;
    expect([pending?.paymentId, pending?.route, restarted.sdk.payments.remainingUsd()]).toEqual([
      lost.payment.paymentId,
      'POST /api/lesson',
      '0.03',
    ]);
    // The same call with the same identifier: the service answers from the first payment, charging nothing.
    const again = await restarted.sdk.education.lesson.withResponse(lesson, { paymentId: pending!.paymentId! });
    expect([again.status, again.data.title, again.headers['payment-identifier-replayed']]).toEqual([
      200,
      'Chunking Documents',
      'true',
    ]);
    expect(balance(wallet.address)).toBe(950_000n);
    // The receipt accounts for the pending payment: spent once.
    expect([
      restarted.sdk.payments.pending.length,
      restarted.sdk.payments.spentUsd(),
      restarted.sdk.payments.remainingUsd(),
    ]).toEqual([0, '0.05', '0.03']);
    expect(economy.ledger.transaction(again.payment!.transaction)).toBeDefined();
  });

  it('a call made again with the identifier of a payment it already has a receipt for is not counted twice', async () => {
    const wallet = await buyer();
    const { sdk } = await client({ maxTotalUsd: '1' }, { wallet });
    const first = await sdk.education.lesson.withResponse(lesson);
    const paymentId = first.payment!.paymentId!;
    // The same logical call again: the service answers from the first payment, with its transaction.
    const again = await sdk.education.lesson.withResponse(lesson, { paymentId });
    expect([again.status, again.headers['payment-identifier-replayed'], again.payment?.transaction]).toEqual([
      200,
      'true',
      first.payment!.transaction,
    ]);
    expect(balance(wallet.address)).toBe(950_000n);
    expect([sdk.payments.receipts.length, sdk.payments.spentUsd(), sdk.payments.remainingUsd()]).toEqual([
      1,
      '0.05',
      '0.95',
    ]);
  });

  it('a long-running client keeps its latest receipts and counts every payment, kept or not', async () => {
    const store = memoryStore();
    const wallet = await buyer();
    expect(() => createClient({ wallet, payments: { keepReceipts: -1 } })).toThrow(/payments\.keepReceipts/);
    const { sdk } = await client({ maxTotalUsd: '0.20', keepReceipts: 2, store }, { wallet });
    const paid = [];
    for (const body of [lesson, otherLesson, lesson])
      paid.push((await sdk.education.lesson.withResponse(body)).payment!);
    expect(sdk.payments.receipts.map((r) => r.transaction)).toEqual([paid[1]!.transaction, paid[2]!.transaction]);
    expect([sdk.payments.spentUsd(), sdk.payments.spentUsdByService(), sdk.payments.remainingUsd()]).toEqual([
      '0.15',
      { education: '0.15' },
      '0.05',
    ]);
    // A kept payment reported again (its identifier retried) is still found: not counted twice.
    const again = await sdk.education.lesson.withResponse(lesson, { paymentId: paid[2]!.paymentId! });
    expect([again.headers['payment-identifier-replayed'], sdk.payments.spentUsd()]).toEqual(['true', '0.15']);
    expect(balance(wallet.address)).toBe(850_000n);
    // The store keeps every receipt; a client restarted on it keeps the latest one and counts all three.
    expect(store.records.filter((r) => r.type === 'receipt')).toHaveLength(3);
    const restarted = await client(
      { maxTotalUsd: '0.20', keepReceipts: 1, store: memoryStore(store.records) },
      { wallet },
    );
    await restarted.sdk.payments.ready();
    expect([
      restarted.sdk.payments.receipts.map((r) => r.transaction),
      restarted.sdk.payments.spentUsd(),
      restarted.sdk.payments.remainingUsd(),
    ]).toEqual([[paid[2]!.transaction], '0.15', '0.05']);
  });

  it('a reservation never sent (a crash before sending) is closed on load', async () => {
    const origin = new URL(economy.education.url).origin;
    const store = memoryStore([
      {
        type: 'reserve',
        id: 'r1',
        at: new Date().toISOString(),
        service: 'education',
        origin,
        payTo: seller(),
        amount: '50000',
      },
    ]);
    const { sdk } = await client({ maxTotalUsd: '0.05', store });
    await sdk.payments.ready();
    expect([sdk.payments.pending.length, sdk.payments.remainingUsd()]).toEqual([0, '0.05']);
    expect(store.records.at(-1)).toMatchObject({ type: 'release', id: 'r1' });
  });
});

describe('x402 payment-identifier: a retried call pays once', () => {
  it('the 402 advertises the extension', async () => {
    const response = await axios.post(`${economy.education.url}/api/lesson`, lesson.body, {
      validateStatus: () => true,
    });
    const quote = decodeX402Header(response.headers[PAYMENT_REQUIRED_HEADER]) as PaymentRequired;
    expect(quote.extensions?.['payment-identifier']).toMatchObject({
      info: { required: false },
      schema: { properties: { id: { minLength: 16, maxLength: 128 } } },
    });
  });

  it('an answer lost after the service settled: the SDK presents the same payment again and gets the first outcome', async () => {
    const { sdk, wallet, sent, replayed } = await client({}, { lose: 1 });
    const sellerBefore = balance(seller());
    const result = await sdk.education.lesson.withResponse(lesson);
    expect([result.status, result.data.title, result.headers['payment-identifier-replayed']]).toEqual([
      200,
      'Chunking Documents',
      'true',
    ]);
    expect(sent).toEqual([false, true, true]);
    expect(replayed).toEqual([false, true]);
    expect([balance(wallet.address), balance(seller())]).toEqual([950_000n, sellerBefore + 50_000n]);
    expect([sdk.payments.receipts.length, sdk.payments.spentUsd(), sdk.payments.pending.length]).toEqual([
      1,
      '0.05',
      0,
    ]);
  });

  it('the same paymentId from another client (a restarted agent) is answered from the first payment; another request with it is a conflict', async () => {
    const wallet = await buyer();
    const paymentId = `agent-task-${Date.now()}-0001`;
    const first = await client({}, { wallet });
    const paid = await first.sdk.education.lesson.withResponse(lesson, { paymentId });
    expect(paid.payment?.paymentId).toBe(paymentId);
    const sellerBefore = balance(seller());

    const second = await client({}, { wallet });
    const again = await second.sdk.education.lesson.withResponse(lesson, { paymentId });
    expect([again.data.title, again.payment?.transaction]).toEqual([paid.data.title, paid.payment?.transaction]);
    // It signed a payment of its own, which the service never settled.
    expect(second.sent).toEqual([false, true]);
    expect([balance(wallet.address), balance(seller())]).toEqual([950_000n, sellerBefore]);

    const conflict = await rejection(second.sdk.education.lesson(otherLesson, { paymentId }));
    expect([conflict.constructor, conflict.code]).toEqual([ConflictError, 'payment_identifier_conflict']);
    expect(balance(wallet.address)).toBe(950_000n);
    expect(second.sdk.payments.pending).toEqual([]);
  });

  it('two calls at once with one paymentId: one payment settles, both get its answer', async () => {
    const wallet = await buyer();
    const paymentId = `concurrent-${Date.now()}-0001`;
    const [a, b] = await Promise.all([client({}, { wallet, maxRetries: 6 }), client({}, { wallet, maxRetries: 6 })]);
    const sellerBefore = balance(seller());
    const results = await Promise.all([
      a.sdk.education.lesson.withResponse(lesson, { paymentId }),
      b.sdk.education.lesson.withResponse(lesson, { paymentId }),
    ]);
    expect(results.map((r) => r.status)).toEqual([200, 200]);
    expect(results[1].payment?.transaction).toBe(results[0].payment?.transaction);
    expect([balance(wallet.address), balance(seller())]).toEqual([950_000n, sellerBefore + 50_000n]);
  });

  it('a malformed identifier is a 400 naming the field, and charges nothing; the SDK refuses one before sending', async () => {
    const wallet = await buyer();
    const instance = axios.create();
    instance.interceptors.request.use((config) => {
      const headers = AxiosHeaders.from(config.headers);
      const header = headers.get('payment-signature');
      if (typeof header !== 'string') return config;
      const payload = decodeX402Header(header) as { extensions: Record<string, { info: Record<string, unknown> }> };
      payload.extensions['payment-identifier']!.info.id = 'not an id!';
      headers.set('payment-signature', encodeX402Header(payload));
      config.headers = headers;
      return config;
    });
    const sdk = createClient({
      baseUrls: { education: economy.education.url },
      wallet,
      axios: instance,
      payments: { rpcUrl: economy.rpcUrl },
    });
    const error = await rejection(sdk.education.lesson(lesson));
    expect([error.constructor, error.status, error.fields[0]?.field]).toEqual([
      BadRequestError,
      400,
      'extensions.payment-identifier.info.id',
    ]);
    expect([balance(wallet.address), sdk.payments.pending.length, sdk.payments.receipts.length]).toEqual([
      1_000_000n,
      0,
      0,
    ]);
    const refused = await rejection(sdk.education.lesson(lesson, { paymentId: 'short' }));
    expect(refused.message).toMatch(/^paymentId: 16 to 128 characters/);
  });

  it('a settle-first route: a lost answer is replayed from the settled order, placed and paid once', async () => {
    const { createDeskApp, desk } = await import('./support/desk');
    const deskService = await economy.startPaidService((context) => createDeskApp(context), { id: 'desk', sol: true });
    const wallet = await buyer();
    const { instance } = transport({ lose: 1 });
    const sdk = createServiceClient(desk, deskService.url, {
      wallet,
      axios: instance,
      payments: { rpcUrl: economy.rpcUrl },
    });
    const before = balance(deskService.context.wallet.address);
    const order = await sdk.order.withResponse({ body: { item: 'lamp' } });
    expect([order.status, order.data.item, order.headers['payment-identifier-replayed']]).toEqual([
      201,
      'lamp',
      'true',
    ]);
    expect(order.data.transaction).toBe(order.payment?.transaction);
    const rows = await deskService.database.db.selectFrom('desk_orders').selectAll().execute();
    expect(rows.map((r) => r.item)).toEqual(['lamp']);
    expect([balance(wallet.address), balance(deskService.context.wallet.address)]).toEqual([
      500_000n,
      before + 500_000n,
    ]);
  });

  it('an idempotencyKey reuses one payment identifier across clients', async () => {
    const wallet = await buyer();
    const idempotencyKey = `order #${Date.now()}`;
    const a = await (await client({}, { wallet })).sdk.education.lesson.withResponse(lesson, { idempotencyKey });
    const b = await (await client({}, { wallet })).sdk.education.lesson.withResponse(lesson, { idempotencyKey });
    expect(a.payment?.paymentId).toMatch(/^idem_[0-9a-f]{48}$/);
    expect([b.payment?.paymentId, b.payment?.transaction]).toEqual([a.payment?.paymentId, a.payment?.transaction]);
    expect(balance(wallet.address)).toBe(950_000n);
  });
});
