import { createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  PAYMENT_RESPONSE_HEADER,
  USDC_DEVNET,
  decodeX402Header,
  facilitator,
  usdToAtomic,
  type DiscoverySettlement,
  type PaymentRequired,
} from '@agent-economy/contracts';
import {
  ApiError,
  PaymentRequiredError,
  UnprocessableEntityError,
  createPayments,
  createServiceClient,
  walletFromSecretKey,
  type Payments,
} from '@agent-economy/sdk';
import { address, createNoopSigner, createSolanaRpc } from '@solana/kit';
import { getTransferCheckedInstruction } from '@solana-program/token';
import { sendInstructions } from '../servers/src/solana/send';
import { buildOpenApiDocument } from '@agent-economy/openapi-generator';
import { generateWallet, type Wallet } from '../servers/src/solana/keys';
import { signResourceRequest } from '../servers/src/runtime/resource-auth';
import { startEconomy, type Economy } from './support/economy';
import { ata, buildPaymentTransaction, paymentHeader } from './support/payments';
import { createDeskApp, desk } from './support/desk';
import type { RunningService } from './support/servers';

// Settle-first routes on real components: the payment settles before the handler runs; a handler that
// then fails is refunded on chain from the service's wallet, and the SDK reports the refund.

let economy: Economy;
let service: RunningService;
let client: ReturnType<typeof createServiceClient<typeof desk.router>>;
let payments: Payments;
let clock = Date.now();
/** The same service on the same database, with the settlement's database write failing (PAYWALL_FAULT=fail-record). */
let faulty: { url: string; close(): Promise<void> };
const orders = () => service.database.db.selectFrom('desk_orders').selectAll().execute();
const buyerBalance = () => economy.ledger.tokenBalance(economy.buyer.address);
const serviceBalance = () => economy.ledger.tokenBalance(service.context.wallet.address);

beforeAll(async () => {
  economy = await startEconomy();
  service = await economy.startPaidService(
    async (context) => {
      const server = createServer(
        await createDeskApp(context, {
          now: () => new Date(clock),
          paywall: { ...context.paywall, fault: 'fail-record' },
        }),
      );
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      faulty = {
        url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
        close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
      };
      return createDeskApp(context, { now: () => new Date(clock) });
    },
    { id: 'desk', sol: true },
  );
  payments = createPayments({ rpcUrl: economy.rpcUrl });
  client = createServiceClient(desk, service.url, {
    wallet: await walletFromSecretKey(economy.buyer.secretKey),
    maxRetries: 0,
    payments,
  });
}, 60_000);

afterAll(async () => {
  await faulty?.close();
  await economy?.close();
});

async function quote(): Promise<PaymentRequired> {
  const bare = createServiceClient(desk, service.url, { maxRetries: 0 });
  const error = await bare.order({ body: { item: 'probe' } }).catch((e) => e);
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

describe('settle-first routes', () => {
  it('documents that the route settles first', () => {
    const document = buildOpenApiDocument(desk, { serverUrl: 'http://127.0.0.1' }) as unknown as {
      paths: Record<string, Record<string, Record<string, unknown>>>;
    };
    const operation = document.paths['/api/order']!.post!;
    expect(operation['x-payment']).toMatchObject({ kind: 'fixed', usd: '0.50', settle: 'first' });
    expect(operation.description).toMatch(/Settles first/);
  });

  it('settles, then serves: the seller is paid once and the handler sees the settlement', async () => {
    const [buyerBefore, serviceBefore] = [buyerBalance(), serviceBalance()];
    const response = await client.order.withResponse({ body: { item: 'desk lamp' } });
    expect(response.status).toBe(201);
    const receipt = decodeX402Header(response.headers[PAYMENT_RESPONSE_HEADER]!) as {
      success: boolean;
      transaction: string;
      amount: string;
    };
    expect(receipt).toMatchObject({ success: true, amount: '500000' });
    expect(response.data).toMatchObject({ item: 'desk lamp', transaction: receipt.transaction });
    expect(response.payment).toMatchObject({ amount: '500000', transaction: receipt.transaction });
    expect(response.payment!.refund).toBeUndefined();
    expect(buyerBalance()).toBe(buyerBefore - usdToAtomic('0.50'));
    expect(serviceBalance()).toBe(serviceBefore + usdToAtomic('0.50'));
    expect(economy.ledger.transaction(receipt.transaction)?.err).toBeNull();
    expect((await orders()).filter((o) => o.transaction === receipt.transaction)).toHaveLength(1);
  });

  it('refunds a request that fails after its payment settled: the buyer ends where it started', async () => {
    for (const fail of ['domain', 'crash'] as const) {
      const [buyerBefore, serviceBefore, spentBefore] = [buyerBalance(), serviceBalance(), payments.spentUsd()];
      const error = await client.order({ body: { item: 'sold out chair', fail } }).catch((e) => e);
      expect(error).toBeInstanceOf(ApiError);
      expect(error.status).toBe(fail === 'domain' ? 422 : 500);
      if (fail === 'domain') {
        expect(error).toBeInstanceOf(UnprocessableEntityError);
        expect(error.code).toBe('out_of_stock');
        // The handler's details are kept, the refund is added.
        expect(error.details).toMatchObject({ item: 'sold out chair' });
      }
      // The refund is on the error, on the receipt, in PAYMENT-RESPONSE, and on chain.
      expect(error.refund).toEqual({ transaction: expect.any(String), amountAtomic: '500000' });
      const settled = decodeX402Header(error.headers[PAYMENT_RESPONSE_HEADER]) as {
        success: boolean;
        transaction: string;
        refund: { transaction: string; amountAtomic: string };
      };
      expect(settled).toMatchObject({ success: true, amount: '500000', refund: error.refund });
      expect(error.receipt).toMatchObject({ amount: '500000', transaction: settled.transaction, refund: error.refund });
      const refundTx = economy.ledger.transaction(error.refund.transaction);
      expect(refundTx?.err).toBeNull();
      expect(economy.ledger.transaction(settled.transaction)?.err).toBeNull();
      expect(buyerBalance()).toBe(buyerBefore);
      expect(serviceBalance()).toBe(serviceBefore);
      // A refunded payment spent nothing of the buyer's budgets.
      expect(payments.spentUsd()).toBe(spentBefore);
    }
    expect((await orders()).map((o) => o.item)).not.toContain('sold out chair');
  });

  it("tells the facilitator's feed of the refund, which only the seller can report and only with a real refund", async () => {
    const error = await client.order({ body: { item: 'broken stool', fail: 'domain' } }).catch((e) => e);
    const settlement = (decodeX402Header(error.headers[PAYMENT_RESPONSE_HEADER]) as { transaction: string })
      .transaction;
    const refund = error.refund.transaction as string;
    const feed = createServiceClient(facilitator, economy.facilitator.url, { maxRetries: 0 });
    const entry = async () => {
      let after: string | undefined;
      let found: DiscoverySettlement | undefined;
      for (;;) {
        const page = await feed.settlements({ query: { limit: 500, ...(after ? { after } : {}) } });
        for (const s of page.settlements) if (s.transaction === settlement) found = s;
        if (!page.nextCursor) return found;
        after = page.nextCursor;
      }
    };
    // The paywall reports in the background, after answering the buyer.
    for (let i = 0; i < 100 && !(await entry())?.refund; i++) await new Promise((r) => setTimeout(r, 50));
    expect((await entry())?.refund).toEqual({ transaction: refund, amount: '500000' });

    const report = (body: unknown, signer?: Wallet) => {
      const text = JSON.stringify(body);
      return fetch(`${economy.facilitator.url}/discovery/refunds`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(signer ? { 'x-resource-server': signResourceRequest(signer, 'POST', '/discovery/refunds', text) } : {}),
        },
        body: text,
      }).then(async (r) => ({
        status: r.status,
        body: (await r.json()) as { error?: { code: string }; refund?: unknown },
      }));
    };
    const seller = service.context.wallet;
    // Told again: the same record, nothing new.
    expect(await report({ settlement, refund }, seller)).toMatchObject({
      status: 200,
      body: { refund: { transaction: refund, amount: '500000' } },
    });
    // Nobody else may say a sale was refunded, and no one without a signature.
    expect(await report({ settlement, refund })).toMatchObject({
      status: 401,
      body: { error: { code: 'signature_required' } },
    });
    expect(await report({ settlement, refund }, generateWallet())).toMatchObject({
      status: 403,
      body: { error: { code: 'not_the_seller' } },
    });

    // A sale that was served: its own transaction is no refund (the money went the other way), nor is another sale's
    // refund.
    const served = await client.order.withResponse({ body: { item: 'bookshelf' } });
    const sold = (decodeX402Header(served.headers[PAYMENT_RESPONSE_HEADER]!) as { transaction: string }).transaction;
    expect(await report({ settlement: sold, refund: sold }, seller)).toMatchObject({
      status: 422,
      body: { error: { code: 'refund_not_verified' } },
    });
    expect(await report({ settlement: sold, refund }, seller)).toMatchObject({
      status: 409,
      body: { error: { code: 'refund_already_used' } },
    });
    expect(await report({ settlement: refund, refund: sold }, seller)).toMatchObject({
      status: 404,
      body: { error: { code: 'settlement_not_found' } },
    });
    expect((await entry())?.refund).toEqual({ transaction: refund, amount: '500000' });

    // A real transfer from the seller to the buyer, made before the sale, is not that sale's refund.
    await economy.ledger.airdrop(seller.address, 1_000_000_000n);
    const earlier = await sendInstructions(
      createSolanaRpc(economy.rpcUrl),
      [seller],
      [
        getTransferCheckedInstruction({
          source: address(ata(seller.address, USDC_DEVNET)),
          mint: address(USDC_DEVNET),
          destination: address(ata(economy.buyer.address, USDC_DEVNET)),
          authority: createNoopSigner(address(seller.address)),
          amount: 500_000n,
          decimals: 6,
        }),
      ],
    );
    const later = await client.order.withResponse({ body: { item: 'lamp' } });
    const lamp = (decodeX402Header(later.headers[PAYMENT_RESPONSE_HEADER]!) as { transaction: string }).transaction;
    const refused = await report({ settlement: lamp, refund: earlier }, seller);
    expect(refused).toMatchObject({ status: 422, body: { error: { code: 'refund_not_verified' } } });
    // Refused for landing first, or (in the same slot) for not naming the settlement.
    expect(JSON.stringify(refused.body)).toMatch(/before the settlement|no memo naming the settlement/);
  });

  it('counts a payment the service kept pending (settled, not refunded) as spent', async () => {
    const payments = createPayments({ rpcUrl: economy.rpcUrl, sessions: false });
    const paying = createServiceClient(desk, service.url, {
      wallet: await walletFromSecretKey(economy.buyer.secretKey),
      payments,
      maxRetries: 0,
    });
    const before = buyerBalance();
    const pending = await paying.order({ body: { item: 'armchair', fail: 'pending' } }).catch((e) => e);
    expect([pending.status, pending.code]).toEqual([503, 'order_pending']);
    expect(pending.receipt?.transaction).toBeTruthy();
    expect(pending.receipt?.refund).toBeUndefined();
    expect(payments.spentUsd()).toBe('0.5');
    expect(buyerBalance()).toBe(before - 500_000n);
    expect((await orders()).map((o) => o.item)).not.toContain('armchair');
  });

  it('never serves or refunds a refunded payment twice: presented again it is 402 payment_refunded', async () => {
    const q = await quote();
    const header = await signedPayment(q);
    const bare = createServiceClient(desk, service.url, { maxRetries: 0 });
    const before = buyerBalance();
    const first = await bare
      .order({ body: { item: 'chair', fail: 'domain' } }, { headers: { 'payment-signature': header } })
      .catch((e) => e);
    expect(first.refund?.amountAtomic).toBe('500000');
    expect(buyerBalance()).toBe(before);
    for (const fail of ['no', 'domain'] as const) {
      const again = await bare
        .order({ body: { item: 'chair', fail } }, { headers: { 'payment-signature': header } })
        .catch((e) => e);
      expect(again).toBeInstanceOf(PaymentRequiredError);
      expect(again.code).toBe('payment_refunded');
      expect(again.refund).toEqual(first.refund);
    }
    expect(buyerBalance()).toBe(before);
    expect((await orders()).map((o) => o.item)).not.toContain('chair');
  });

  it('refuses a second presentation of a payment that served its order', async () => {
    const q = await quote();
    const header = await signedPayment(q);
    const bare = createServiceClient(desk, service.url, { maxRetries: 0 });
    const before = buyerBalance();
    const served = await bare.order.withResponse(
      { body: { item: 'stool' } },
      { headers: { 'payment-signature': header } },
    );
    expect(served.status).toBe(201);
    const again = await bare
      .order({ body: { item: 'stool' } }, { headers: { 'payment-signature': header } })
      .catch((e) => e);
    expect(again).toBeInstanceOf(PaymentRequiredError);
    expect(again.code).toBe('payment_already_used');
    expect(buyerBalance()).toBe(before - usdToAtomic('0.50'));
    expect((await orders()).filter((o) => o.item === 'stool')).toHaveLength(1);
  });

  it('answers 503 refund_pending when the refund cannot be sent, and finishes it when the payment comes back', async () => {
    const q = await quote();
    const header = await signedPayment(q);
    const bare = createServiceClient(desk, service.url, { maxRetries: 0 });
    const before = buyerBalance();
    // The service's wallet has no SOL for the refund's fee: the refund transaction cannot be sent.
    const lamports = economy.ledger.lamports(service.context.wallet.address);
    const sink = generateWallet();
    const drained = await drain(service.context.wallet.address, sink.address, lamports);
    try {
      const error = await bare
        .order({ body: { item: 'desk', fail: 'domain' } }, { headers: { 'payment-signature': header } })
        .catch((e) => e);
      expect(error.status).toBe(503);
      expect(error.code).toBe('refund_pending');
      expect(decodeX402Header(error.headers[PAYMENT_RESPONSE_HEADER])).toMatchObject({
        success: true,
        amount: '500000',
      });
      expect(buyerBalance()).toBe(before - usdToAtomic('0.50'));
    } finally {
      await economy.ledger.airdrop(service.context.wallet.address, drained + 1_000_000_000n);
    }
    const again = await bare
      .order({ body: { item: 'desk', fail: 'no' } }, { headers: { 'payment-signature': header } })
      .catch((e) => e);
    expect(again.code).toBe('payment_refunded');
    expect(again.refund.amountAtomic).toBe('500000');
    expect(buyerBalance()).toBe(before);
    expect((await orders()).map((o) => o.item)).not.toContain('desk');
  });

  it('serves once a settled payment whose process died before the order was placed, when it comes back after the lease', async () => {
    const q = await quote();
    const header = await signedPayment(q);
    const bare = createServiceClient(desk, service.url, { maxRetries: 0 });
    const before = buyerBalance();
    // As a crash leaves it: settled at the facilitator, recorded as verifying, the handler never ran.
    const payload = decodeX402Header(header) as never;
    const settled = await economy.facilitator.client.facilitator.settle({
      body: { x402Version: 2, paymentPayload: payload, paymentRequirements: q.accepts[0]! },
    });
    expect(settled.success).toBe(true);
    const { paymentKey } = await import('../servers/src/runtime/paywall');
    const key = paymentKey(payload)!;
    await service.database.db
      .insertInto('runtime_payments')
      .values({
        key,
        status: 'verifying',
        resource: q.resource.url,
        payer: null,
        pay_to: q.accepts[0]!.payTo,
        amount: 500_000n,
        transaction: null,
        created_at: new Date(clock),
        settled_at: null,
        lease_until: new Date(clock + 60_000),
      })
      .execute();
    // Still within its lease: another request may be finishing it, so this one is refused.
    const early = await bare
      .order({ body: { item: 'shelf' } }, { headers: { 'payment-signature': header } })
      .catch((e) => e);
    expect(early.code).toBe('payment_already_used');
    expect(Number(early.headers['retry-after'])).toBeGreaterThan(0);
    clock += 61_000;
    const served = await bare.order.withResponse(
      { body: { item: 'shelf' } },
      { headers: { 'payment-signature': header } },
    );
    expect(served.status).toBe(201);
    expect(decodeX402Header(served.headers[PAYMENT_RESPONSE_HEADER]!)).toMatchObject({
      success: true,
      transaction: settled.transaction,
    });
    expect(buyerBalance()).toBe(before - usdToAtomic('0.50'));
    const again = await bare
      .order({ body: { item: 'shelf' } }, { headers: { 'payment-signature': header } })
      .catch((e) => e);
    expect(again.code).toBe('payment_already_used');
    expect((await orders()).filter((o) => o.item === 'shelf')).toHaveLength(1);
  });

  it('says payment_state_unavailable, not settlement_unknown, when the database fails after settling; the payment comes back and is served once', async () => {
    const q = await quote();
    const header = await signedPayment(q);
    const before = buyerBalance();
    const error = await createServiceClient(desk, faulty.url, { maxRetries: 0 })
      .order({ body: { item: 'bench' } }, { headers: { 'payment-signature': header } })
      .catch((e) => e);
    expect(error.status).toBe(503);
    expect(error.code).toBe('payment_state_unavailable');
    expect(error.message).toMatch(/could not record/);
    expect(error.message).not.toMatch(/facilitator/);
    const settled = decodeX402Header(error.headers[PAYMENT_RESPONSE_HEADER]) as {
      success: boolean;
      transaction: string;
    };
    expect(settled.success).toBe(true);
    expect(Number(error.headers['retry-after'])).toBeGreaterThan(0);
    expect(buyerBalance()).toBe(before - usdToAtomic('0.50'));
    expect((await orders()).map((o) => o.item)).not.toContain('bench');

    // The SDK, paying itself, reports such an answer as of unknown outcome, never as nothing charged.
    const { PaymentOutcomeUnknownError } = await import('@agent-economy/sdk');
    const sdkError = await createServiceClient(desk, faulty.url, {
      wallet: await walletFromSecretKey(economy.buyer.secretKey),
      maxRetries: 0,
      payments: createPayments({ rpcUrl: economy.rpcUrl }),
    })
      .order({ body: { item: 'bench' } })
      .catch((e) => e);
    expect(sdkError).toBeInstanceOf(PaymentOutcomeUnknownError);
    expect(sdkError.payment.transaction).toBeTruthy();

    const bare = createServiceClient(desk, service.url, { maxRetries: 0 });
    clock += 200_000; // past the claim's lease
    const served = await bare.order.withResponse(
      { body: { item: 'bench' } },
      { headers: { 'payment-signature': header } },
    );
    expect(served.status).toBe(201);
    expect(served.data).toMatchObject({ item: 'bench', transaction: settled.transaction });
    expect(buyerBalance()).toBe(before - usdToAtomic('0.50') * 2n);
    const again = await bare
      .order({ body: { item: 'bench' } }, { headers: { 'payment-signature': header } })
      .catch((e) => e);
    expect(again.code).toBe('payment_already_used');
    expect((await orders()).filter((o) => o.item === 'bench')).toHaveLength(1);
  });

  it('refuses bad input with 400 before anyone is charged', async () => {
    const before = buyerBalance();
    const error = await client.order({ body: { item: '' } }).catch((e) => e);
    expect(error.status).toBe(400);
    expect(buyerBalance()).toBe(before);
  });
});

/** Moves all but nothing of a wallet's SOL away (a real transfer signed by it), returning what moved. */
async function drain(from: string, to: string, lamports: bigint): Promise<bigint> {
  const { getTransferSolInstruction } = await import('@solana-program/system');
  const {
    address,
    appendTransactionMessageInstructions,
    compileTransaction,
    createNoopSigner,
    createTransactionMessage,
    getBase64EncodedWireTransaction,
    pipe,
    setTransactionMessageFeePayer,
    setTransactionMessageLifetimeUsingBlockhash,
  } = await import('@solana/kit');
  const { signEd25519 } = await import('../servers/src/solana/keys');
  const rpc = createSolanaRpc(economy.rpcUrl);
  const { value } = await rpc.getLatestBlockhash().send();
  const amount = lamports - 5000n;
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayer(address(from), m),
    (m) => setTransactionMessageLifetimeUsingBlockhash(value, m),
    (m) =>
      appendTransactionMessageInstructions(
        [getTransferSolInstruction({ source: createNoopSigner(address(from)), destination: address(to), amount })],
        m,
      ),
  );
  const compiled = compileTransaction(message);
  const signed = {
    ...compiled,
    signatures: {
      ...compiled.signatures,
      [from]: signEd25519(service.context.wallet, new Uint8Array(compiled.messageBytes)),
    },
  } as typeof compiled;
  await rpc.sendTransaction(getBase64EncodedWireTransaction(signed), { encoding: 'base64' }).send();
  expect(economy.ledger.lamports(from)).toBe(0n);
  return amount;
}
