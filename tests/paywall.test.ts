import { initContract } from '@ts-rest/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  PAYMENT_RESPONSE_HEADER,
  SOLANA_DEVNET,
  decodeX402Header,
  encodeX402Header,
  defineService,
  fixed,
  paymentErrors,
  standardErrors,
  type PaymentRequired,
  type X402PaymentPayload,
} from '@agent-economy/contracts';
import {
  InternalServerError,
  PaymentRequiredError,
  createServiceClient,
  createSiwxHeader,
  walletFromSecretKey,
} from '@agent-economy/sdk';
import { createSolanaRpc } from '@solana/kit';
import { createServiceApp } from '../servers/src/runtime/app';
import { paymentKey } from '../servers/src/runtime/paywall';
import { generateWallet } from '../servers/src/solana/keys';
import { startEconomy, type Economy } from './support/economy';
import { buildPaymentTransaction, paymentHeader } from './support/payments';
import { servedRecorded, startService, type RunningService } from './support/servers';

// The paywall's order of work on real components: verify through the facilitator, run the handler with
// its response held back, settle only when it succeeded. Payments here are hand-built so each case can be
// exact about what was sent; the SDK's automatic payments are tested in sdk-payments and payments.

const c = initContract();
const shop = defineService({
  id: 'shop',
  title: 'Paywall fixture',
  description: 'A paid route whose handler can be told to fail',
  router: c.router({
    buy: {
      method: 'POST',
      path: '/api/buy',
      body: z
        .object({ item: z.string().min(1), fail: z.enum(['no', 'domain', 'crash', 'after']).default('no') })
        .strict(),
      responses: {
        200: z.object({ item: z.string(), payer: z.string() }),
        422: z.unknown(),
        ...standardErrors,
        ...paymentErrors,
      },
      summary: 'Buys an item',
      metadata: { payment: fixed('0.25') },
    },
    tip: {
      method: 'POST',
      path: '/api/tip',
      body: z.object({ to: z.string() }).strict(),
      responses: { 200: z.object({ to: z.string() }), ...standardErrors, ...paymentErrors },
      summary: 'Tips another wallet: the payment goes to it, not to the service',
      metadata: { payment: fixed('0.01') },
    },
  }),
});

let economy: Economy;
let seller: RunningService;
let client: ReturnType<typeof createServiceClient<typeof shop.router>>;
const served: string[] = [];

async function quote(): Promise<PaymentRequired> {
  const error = await client.buy({ body: { item: 'book' } }).catch((e) => e);
  expect(error).toBeInstanceOf(PaymentRequiredError);
  return error.quote;
}

async function signedPayment(q: PaymentRequired) {
  const { value } = await createSolanaRpc(economy.rpcUrl).getLatestBlockhash().send();
  const requirements = q.accepts[0]!;
  return paymentHeader(
    requirements,
    await buildPaymentTransaction({ payer: economy.buyer, requirements, blockhash: value }),
    q.resource.url,
  );
}

const balance = () => economy.ledger.tokenBalance(economy.buyer.address);

beforeAll(async () => {
  economy = await startEconomy();
  seller = await startService(
    async (context) =>
      createServiceApp({
        service: shop,
        handlers: {
          buy: async ({ body, res }) => {
            if (body.fail === 'crash') throw new Error('the warehouse is on fire');
            if (body.fail === 'domain')
              return { status: 422, body: { error: { code: 'out_of_stock', message: 'none left' } } };
            if (body.fail === 'after') {
              // Answers, then fails: the answer stands, paid once, and the failure changes nothing.
              res.status(200).json({ item: body.item, payer: 'answered' });
              res.end();
              throw new Error('failed after answering');
            }
            served.push(body.item);
            return { status: 200, body: { item: body.item, payer: (res.locals.payment as { payer: string }).payer } };
          },
          tip: async ({ body }) => ({ status: 200, body: { to: body.to } }),
        },
        pricing: { tip: ({ body }) => ({ usd: '0.01', payTo: body.to }) },
        publicUrl: context.publicUrl,
        db: context.db,
        logger: context.logger,
        paywall: context.paywall,
        signer: context.wallet,
      }),
    {
      id: 'shop',
      rpcUrl: economy.rpcUrl,
      paywall: { feePayer: economy.feePayer.address, facilitatorUrl: economy.facilitator.url },
    },
  );
  await economy.ledger.openTokenAccount(seller.context.wallet.address);
  // The shop signs its facilitator calls with its wallet, a registered resource server: tips to anyone settle.
  economy.sellers.add(seller.context.wallet.address);
  client = createServiceClient(shop, seller.url, { maxRetries: 0 });
});
afterAll(async () => {
  await seller?.close();
  await economy?.close();
});

describe('paywall', () => {
  it('quotes 0.25 USD to the seller’s wallet with the facilitator’s fee payer', async () => {
    const q = await quote();
    expect(q.accepts[0]).toMatchObject({
      amount: '250000',
      payTo: seller.context.wallet.address,
      extra: { feePayer: economy.feePayer.address },
    });
  });

  it('serves a paid request once, settles it, and answers with PAYMENT-RESPONSE', async () => {
    const [buyerBefore, sellerBefore] = [balance(), economy.ledger.tokenBalance(seller.context.wallet.address)];
    const header = await signedPayment(await quote());
    const response = await client.buy.withResponse(
      { body: { item: 'lamp' } },
      { headers: { 'payment-signature': header } },
    );
    expect(response.status).toBe(200);
    expect(response.data).toEqual({ item: 'lamp', payer: economy.buyer.address });
    const receipt = decodeX402Header(response.headers[PAYMENT_RESPONSE_HEADER]!) as {
      success: boolean;
      transaction: string;
      payer: string;
      network: string;
    };
    expect(receipt).toMatchObject({ success: true, payer: economy.buyer.address, amount: '250000' });
    expect(receipt.transaction).toMatch(/^[1-9A-HJ-NP-Za-km-z]{86,88}$/);
    expect(balance()).toBe(buyerBefore - 250_000n);
    expect(economy.ledger.tokenBalance(seller.context.wallet.address)).toBe(sellerBefore + 250_000n);

    // The same payment again buys nothing more.
    const again = await client
      .buy({ body: { item: 'lamp' } }, { headers: { 'payment-signature': header } })
      .catch((e) => e);
    expect(again).toBeInstanceOf(PaymentRequiredError);
    expect(again.code).toBe('payment_already_used');
    expect(balance()).toBe(buyerBefore - 250_000n);
    expect(served.filter((s) => s === 'lamp')).toHaveLength(1);
  });

  it('charges nothing when the handler fails, by a domain error or a crash, and the payment stays usable', async () => {
    const before = balance();
    const header = await signedPayment(await quote());
    const domain = await client
      .buy({ body: { item: 'vase', fail: 'domain' } }, { headers: { 'payment-signature': header } })
      .catch((e) => e);
    expect(domain.status).toBe(422);
    // The answer says nothing was settled, so a client knows its payment is still unspent.
    expect(decodeX402Header(domain.headers[PAYMENT_RESPONSE_HEADER])).toEqual({
      success: false,
      errorReason: 'response_not_successful',
      errorMessage: 'the service answered 422; the payment was not settled and may be used again',
      transaction: '',
      network: SOLANA_DEVNET,
      payer: economy.buyer.address,
    });
    const crash = await client
      .buy({ body: { item: 'vase', fail: 'crash' } }, { headers: { 'payment-signature': header } })
      .catch((e) => e);
    expect(crash.status).toBe(500);
    expect(balance()).toBe(before);
    // Nothing settled, so the buyer may still spend that payment on a request that succeeds.
    expect(await client.buy({ body: { item: 'vase' } }, { headers: { 'payment-signature': header } })).toMatchObject({
      item: 'vase',
    });
    expect(balance()).toBe(before - 250_000n);
  });

  it('settles once and keeps the first answer when a handler answers, ends again and then fails', async () => {
    const before = balance();
    const response = await client.buy.withResponse(
      { body: { item: 'kettle', fail: 'after' } },
      { headers: { 'payment-signature': await signedPayment(await quote()) } },
    );
    expect(response.status).toBe(200);
    expect(response.data).toEqual({ item: 'kettle', payer: 'answered' });
    expect(decodeX402Header(response.headers[PAYMENT_RESPONSE_HEADER]!)).toMatchObject({
      success: true,
      amount: '250000',
    });
    expect(balance()).toBe(before - 250_000n);
    // The service is still up and serving.
    expect((await quote()).accepts[0]!.amount).toBe('250000');
  });

  it('serves a payment whose settlement an earlier request could not confirm, once, without charging again', async () => {
    const q = await quote();
    const header = await signedPayment(q);
    const payload = decodeX402Header(header) as X402PaymentPayload;
    const before = balance();
    // An earlier request's settle went through at the facilitator, but its answer never came back.
    const settled = await economy.facilitator.client.facilitator.settle({
      body: { x402Version: 2, paymentPayload: payload, paymentRequirements: q.accepts[0]! },
    });
    expect(settled.success).toBe(true);
    await seller.database.db
      .insertInto('runtime_payments')
      .values({
        key: paymentKey(payload)!,
        status: 'unknown',
        resource: q.resource.url,
        payer: null,
        pay_to: q.accepts[0]!.payTo,
        amount: 250_000n,
        transaction: null,
        created_at: new Date(),
        settled_at: null,
      })
      .execute();
    expect(balance()).toBe(before - 250_000n);

    // Charged, and its transaction public: only the buyer finishes it. A copy without proof, or signed in as someone
    // else, is refused and leaves the claim as it was; the buyer signs in (a raw payment carries no payment
    // identifier, the other way to show itself).
    const signedIn = async (secretKey: Uint8Array) => ({
      'sign-in-with-x': await createSiwxHeader(await walletFromSecretKey(secretKey), { url: seller.url }),
    });
    for (const headers of [{}, await signedIn(generateWallet().secretKey)]) {
      const copy = await client
        .buy({ body: { item: 'stolen' } }, { headers: { 'payment-signature': header, ...headers } })
        .catch((e) => e);
      expect(copy).toBeInstanceOf(PaymentRequiredError);
      expect(copy.code).toBe('payment_already_used');
    }
    expect(served).not.toContain('stolen');
    const response = await client.buy.withResponse(
      { body: { item: 'clock' } },
      { headers: { 'payment-signature': header, ...(await signedIn(economy.buyer.secretKey)) } },
    );
    expect(response.data).toEqual({ item: 'clock', payer: economy.buyer.address });
    expect(decodeX402Header(response.headers[PAYMENT_RESPONSE_HEADER]!)).toMatchObject({
      success: true,
      transaction: settled.transaction,
    });
    expect(balance()).toBe(before - 250_000n);
    // Served once: the payment is now spent.
    const again = await client
      .buy({ body: { item: 'clock' } }, { headers: { 'payment-signature': header } })
      .catch((e) => e);
    expect(again.code).toBe('payment_already_used');
    expect(served.filter((s) => s === 'clock')).toHaveLength(1);
  });

  it('finishes a charged, unanswered payment only for the buyer that names its payment identifier', async () => {
    const q = await quote();
    // The buyer's payment carries its identifier (x402 payment-identifier), as the SDK sends with every payment.
    const withId = (header: string, id?: string) => {
      const payload = decodeX402Header(header) as X402PaymentPayload & { extensions?: Record<string, unknown> };
      return encodeX402Header({
        ...payload,
        ...(id ? { extensions: { ...q.extensions, 'payment-identifier': { info: { required: false, id } } } } : {}),
      });
    };
    const raw = await signedPayment(q);
    const header = withId(raw, 'pay_buyer_secret_0001');
    const key = paymentKey(decodeX402Header(header) as X402PaymentPayload)!;
    const before = balance();
    await client.buy({ body: { item: 'lamp' } }, { headers: { 'payment-signature': header } });
    expect(balance()).toBe(before - 250_000n);
    await servedRecorded(seller.database.db, key);
    // What a buyer that hung up before the answer leaves (or a crash after the settlement's record): charged, never
    // answered, its lease over, no answer kept for its identifier.
    await seller.database.db
      .updateTable('runtime_payments')
      .set({ served_at: null, lease_until: new Date(Date.now() - 1000) })
      .where('key', '=', key)
      .execute();
    await seller.database.db
      .updateTable('runtime_payment_ids' as never)
      .set({ answer_status: null, answer_type: null, answer_body: null, settlement: null } as never)
      .where('key' as never, '=', key as never)
      .execute();

    // A stranger copies the public transaction: with an identifier of its own, or none, and for its own request.
    for (const copy of [withId(raw, 'pay_stranger_guess_01'), withId(raw)]) {
      const refused = await client
        .buy({ body: { item: 'stolen' } }, { headers: { 'payment-signature': copy } })
        .catch((e) => e);
      expect(refused).toBeInstanceOf(PaymentRequiredError);
      expect(refused.code).toBe('payment_already_used');
      expect(refused.message).toContain('only its buyer can finish it');
    }
    expect(served).not.toContain('stolen');
    // The buyer presents its payment again with its identifier: served once, not charged again.
    const back = await client.buy({ body: { item: 'lamp' } }, { headers: { 'payment-signature': header } });
    expect(back).toEqual({ item: 'lamp', payer: economy.buyer.address });
    expect(balance()).toBe(before - 250_000n);
  });

  it('keeps an identified payment’s answer as it records the settlement, and only its buyer gets it again', async () => {
    const q = await quote();
    const raw = await signedPayment(q);
    const payload = decodeX402Header(raw) as X402PaymentPayload & { extensions?: Record<string, unknown> };
    const withId = (id?: string) =>
      encodeX402Header({
        ...payload,
        ...(id ? { extensions: { ...q.extensions, 'payment-identifier': { info: { required: false, id } } } } : {}),
      });
    const header = withId('pay_kept_answer_0001');
    const key = paymentKey(decodeX402Header(header) as X402PaymentPayload)!;
    const before = balance();
    const first = await client.buy.withResponse(
      { body: { item: 'kettle' } },
      { headers: { 'payment-signature': header } },
    );
    expect(first.data).toEqual({ item: 'kettle', payer: economy.buyer.address });
    // Recorded before the answer left, in one statement: settled, served, and the answer kept under the id.
    const claim = await seller.database.db
      .selectFrom('runtime_payments')
      .select(['status', 'served_at', 'transaction'])
      .where('key', '=', key)
      .executeTakeFirstOrThrow();
    expect(claim.status).toBe('settled');
    expect(claim.served_at).not.toBeNull();
    const kept = await seller.database.db
      .selectFrom('runtime_payment_ids' as never)
      .select(['key', 'answer_status', 'answer_body', 'settlement'] as never)
      .where('id' as never, '=', 'pay_kept_answer_0001' as never)
      .executeTakeFirstOrThrow();
    const row = kept as { key: string; answer_status: number; answer_body: string; settlement: string };
    expect(row.key).toBe(key);
    expect(row.answer_status).toBe(200);
    expect(JSON.parse(Buffer.from(row.answer_body, 'base64').toString())).toEqual(first.data);
    expect(row.settlement).toBe(first.headers[PAYMENT_RESPONSE_HEADER]);
    expect(balance()).toBe(before - 250_000n);

    // The buyer presenting it again with its id (its answer lost on the way) gets the same answer: not charged, and
    // the handler does not run again.
    const again = await client.buy.withResponse(
      { body: { item: 'kettle' } },
      { headers: { 'payment-signature': header } },
    );
    expect(again.data).toEqual(first.data);
    expect(again.headers[PAYMENT_RESPONSE_HEADER]).toBe(first.headers[PAYMENT_RESPONSE_HEADER]);
    expect(served.filter((s) => s === 'kettle')).toHaveLength(1);
    // A stranger copying the public transaction, with a guessed id or none, gets nothing.
    for (const copy of [withId('pay_kept_stranger_01'), withId()]) {
      const refused = await client
        .buy({ body: { item: 'stolen' } }, { headers: { 'payment-signature': copy } })
        .catch((e) => e);
      expect(refused).toBeInstanceOf(PaymentRequiredError);
      expect(refused.code).toBe('payment_already_used');
    }
    expect(served).not.toContain('stolen');
    expect(balance()).toBe(before - 250_000n);
  });

  it('quotes a paid HEAD without charging it', async () => {
    const before = balance();
    const header = await signedPayment(await quote());
    const response = await fetch(`${seller.url}/api/buy`, { method: 'HEAD', headers: { 'payment-signature': header } });
    expect(response.status).toBe(404);
    expect(balance()).toBe(before);
  });

  it('refuses a payment for a different amount with 402 and the reason, charging nothing', async () => {
    const q = await quote();
    const cheap = { ...q, accepts: [{ ...q.accepts[0]!, amount: '1' }] };
    const before = balance();
    const error = await client
      .buy({ body: { item: 'pen' } }, { headers: { 'payment-signature': await signedPayment(cheap) } })
      .catch((e) => e);
    expect(error).toBeInstanceOf(PaymentRequiredError);
    expect(error.code).toBe('payment_invalid');
    expect(error.body.error.details.reason).toBe('invalid_payment_requirements');
    expect(error.quote.accepts[0].amount).toBe('250000');
    expect(balance()).toBe(before);
  });

  it('passes the facilitator’s reason on: a payment from an empty wallet is insufficient_funds', async () => {
    const { generateWallet } = await import('../servers/src/solana/keys');
    const poor = generateWallet();
    await economy.ledger.openTokenAccount(poor.address);
    const q = await quote();
    const { value } = await createSolanaRpc(economy.rpcUrl).getLatestBlockhash().send();
    const tx = await buildPaymentTransaction({ payer: poor, requirements: q.accepts[0]!, blockhash: value });
    const error = await client
      .buy({ body: { item: 'pen' } }, { headers: { 'payment-signature': paymentHeader(q.accepts[0]!, tx) } })
      .catch((e) => e);
    expect(error.code).toBe('payment_invalid');
    expect(error.body.error.details.reason).toBe('insufficient_funds');
  });

  it('pays the wallet a request names when the service prices it so (a marketplace seller)', async () => {
    const { generateWallet } = await import('../servers/src/solana/keys');
    const friend = generateWallet().address;
    await economy.ledger.openTokenAccount(friend);
    const q: PaymentRequired = await client.tip({ body: { to: friend } }).then(
      () => expect.fail('a tip must be paid'),
      (e) => e.quote,
    );
    expect(q.accepts[0]).toMatchObject({ payTo: friend, amount: '10000' });
    const { value } = await createSolanaRpc(economy.rpcUrl).getLatestBlockhash().send();
    const tx = await buildPaymentTransaction({ payer: economy.buyer, requirements: q.accepts[0]!, blockhash: value });
    expect(
      await client.tip(
        { body: { to: friend } },
        { headers: { 'payment-signature': paymentHeader(q.accepts[0]!, tx) } },
      ),
    ).toEqual({ to: friend });
    expect(economy.ledger.tokenBalance(friend)).toBe(10_000n);
  });

  it('answers 503 with Retry-After when the facilitator is down, and charges nothing', async () => {
    const header = await signedPayment(await quote());
    const orphan = await startService(
      async (context) =>
        createServiceApp({
          service: shop,
          handlers: {
            buy: async ({ body }) => ({ status: 200, body: { item: body.item, payer: '' } }),
            tip: async ({ body }) => ({ status: 200, body: body }),
          },
          publicUrl: context.publicUrl,
          db: context.db,
          logger: context.logger,
          paywall: { ...context.paywall, payTo: seller.context.wallet.address },
        }),
      { id: 'shop', paywall: { feePayer: economy.feePayer.address, facilitatorUrl: 'http://127.0.0.1:9' } },
    );
    try {
      const before = balance();
      const error = await createServiceClient(shop, orphan.url, { maxRetries: 0 })
        .buy({ body: { item: 'cup' } }, { headers: { 'payment-signature': header } })
        .catch((e) => e);
      expect(error).toBeInstanceOf(InternalServerError);
      expect(error.status).toBe(503);
      expect(error.code).toBe('facilitator_unavailable');
      expect(error.headers['retry-after']).toBe('5');
      expect(balance()).toBe(before);
    } finally {
      await orphan.close();
    }
  });
});
