import { SOLANA_DEVNET, USDC_DEVNET, base58Encode, type PaymentRequirements } from '@agent-economy/contracts';
import {
  PermissionDeniedError,
  RateLimitError,
  UnprocessableEntityError,
  createClient,
  walletFromSecretKey,
} from '@agent-economy/sdk';
import axios, { AxiosHeaders } from 'axios';
import { createSolanaRpc, getBase64Decoder, getTransactionDecoder, getTransactionEncoder } from '@solana/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { facilitatorClient } from '../servers/src/runtime/facilitator-client';
import { RESOURCE_SERVER_HEADER, signResourceRequest } from '../servers/src/runtime/resource-auth';
import { generateWallet, signEd25519, type Wallet } from '../servers/src/solana/keys';
import { createFacilitatorApp } from '../servers/src/services/facilitator';
import { buildPaymentTransaction, type PaymentShape } from './support/payments';
import { startEconomy, type Economy } from './support/economy';
import { startService, testDatabase, type RunningService } from './support/servers';

// The facilitator under an attacker's review: its fee payer pays only for the sellers it serves, within
// caps counted per kind of settlement and per payer; failures name their x402 reason; vouchers are signed
// only while the chain covers everything the buyer has vouched.

let economy: Economy;
let rpc: ReturnType<typeof createSolanaRpc>;

beforeAll(async () => {
  economy = await startEconomy();
  rpc = createSolanaRpc(economy.rpcUrl);
});
afterAll(async () => {
  await economy?.close();
});

const lifetime = async () => (await rpc.getLatestBlockhash().send()).value;

function terms(payTo: string, amount = '1'): PaymentRequirements {
  return {
    scheme: 'exact',
    network: SOLANA_DEVNET,
    amount,
    asset: USDC_DEVNET,
    payTo,
    maxTimeoutSeconds: 60,
    extra: { feePayer: economy.feePayer.address },
  };
}

async function x402Body(payer: Wallet, requirements: PaymentRequirements, shape: Partial<PaymentShape> = {}) {
  const transaction = await buildPaymentTransaction({ payer, requirements, blockhash: await lifetime(), ...shape });
  return {
    x402Version: 2 as const,
    paymentPayload: { x402Version: 2 as const, accepted: requirements, payload: { transaction } },
    paymentRequirements: requirements,
  };
}

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

const settlementCount = async (service: RunningService = economy.facilitator) =>
  (
    await service.database.db
      .selectFrom('facilitator_settlements')
      .select((eb) => eb.fn.countAll<bigint>().as('n'))
      .executeTakeFirstOrThrow()
  ).n;

describe('the fee payer pays only for the sellers it serves', () => {
  let stranger: Wallet;
  let sink: Wallet;
  beforeAll(async () => {
    stranger = generateWallet();
    sink = generateWallet();
    await economy.ledger.mintTo(stranger.address, 1_000_000n);
    await economy.ledger.openTokenAccount(sink.address);
  });

  it('refuses /verify, /settle and /mpp/settle to an unregistered payTo, before the chain, moving nothing', async () => {
    const lamports = economy.ledger.lamports(economy.feePayer.address);
    const rows = await settlementCount();
    const body = await x402Body(stranger, terms(sink.address));

    const verify = await post(`${economy.facilitator.url}/verify`, body);
    expect(verify.status).toBe(403);
    expect(await verify.json()).toMatchObject({ isValid: false, invalidReason: 'payee_not_served' });

    const settle = await post(`${economy.facilitator.url}/settle`, body);
    expect(settle.status).toBe(403);
    const refused = (await settle.json()) as { errorMessage: string };
    expect(refused).toMatchObject({
      success: false,
      errorReason: 'payee_not_served',
      transaction: '',
      network: SOLANA_DEVNET,
    });
    expect(refused.errorMessage).toContain('FACILITATOR_SELLERS');

    const charge = await economy.facilitator.client.facilitator
      .settleCharge({
        body: {
          transaction: body.paymentPayload.payload.transaction,
          network: 'devnet',
          recipient: sink.address,
          amount: '1',
          asset: USDC_DEVNET,
        },
      })
      .catch((e) => e);
    expect(charge).toBeInstanceOf(PermissionDeniedError);
    expect(charge.code).toBe('payee_not_served');

    expect(economy.ledger.lamports(economy.feePayer.address)).toBe(lamports);
    expect(economy.ledger.tokenBalance(sink.address)).toBe(0n);
    expect(await settlementCount()).toBe(rows);
  });

  it('settles any payTo for a registered resource server that signs its calls (a marketplace paying its sellers)', async () => {
    const body = await x402Body(stranger, terms(sink.address, '7'));
    const market = facilitatorClient(economy.facilitator.url, { sign: economy.education.context.wallet });
    expect(await market.verify(body)).toEqual({ isValid: true, payer: stranger.address });
    const settled = await market.settle(body);
    expect(settled).toMatchObject({ success: true, payer: stranger.address, amount: '7' });
    expect(economy.ledger.tokenBalance(sink.address)).toBe(7n);
  });

  it('refuses a signature by an unregistered wallet, and one replayed over another body', async () => {
    const body = await x402Body(stranger, terms(sink.address));
    const lone = await facilitatorClient(economy.facilitator.url, { sign: generateWallet() })
      .settle(body)
      .catch((e) => e);
    expect(lone).toMatchObject({ success: false, errorReason: 'resource_server_unauthorized', transaction: '' });

    const other = await x402Body(stranger, terms(sink.address, '2'));
    const header = signResourceRequest(economy.education.context.wallet, 'POST', '/settle', JSON.stringify(other));
    const replayed = await post(`${economy.facilitator.url}/settle`, body, { [RESOURCE_SERVER_HEADER]: header });
    expect(replayed.status).toBe(403);
    expect(await replayed.json()).toMatchObject({ success: false, errorReason: 'resource_server_unauthorized' });
    expect(economy.ledger.tokenBalance(sink.address)).toBe(7n);
  });

  it('caps the priority fee it pays, naming the x402 reason on /verify and /settle alike', async () => {
    const lamports = economy.ledger.lamports(economy.feePayer.address);
    const body = await x402Body(economy.buyer, terms(economy.education.context.wallet.address), {
      computeUnitPrice: 5_000_000n,
    });
    const reason = 'invalid_exact_svm_payload_transaction_instructions_compute_price_instruction_too_high';
    expect(await economy.facilitator.client.facilitator.verify({ body })).toMatchObject({
      isValid: false,
      invalidReason: reason,
    });
    expect(await economy.facilitator.client.facilitator.settle({ body })).toMatchObject({
      success: false,
      errorReason: reason,
      transaction: '',
    });
    expect(economy.ledger.lamports(economy.feePayer.address)).toBe(lamports);
  });
});

describe('settle caps, per kind and per payer', () => {
  let capped: RunningService;
  let database: Awaited<ReturnType<typeof testDatabase>>;
  const sellers = new Set<string>();

  beforeAll(async () => {
    database = await testDatabase();
    sellers.add(economy.education.context.wallet.address);
    capped = await startService(
      (c) =>
        createFacilitatorApp(c, { sellers, settleCaps: { global: 3, perSeller: 10, perPayer: 2, windowSeconds: 60 } }),
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

  it('pushes back per payer, then on x402 in all, while charges (counted apart) still settle', async () => {
    const seller = economy.education.context.wallet.address;
    const client = capped.client.facilitator;
    const payers = [generateWallet(), generateWallet(), generateWallet()];
    for (const payer of payers) await economy.ledger.mintTo(payer.address, 1_000n);
    const settle = async (payer: Wallet) => {
      const response = await post(`${capped.url}/settle`, await x402Body(payer, terms(seller)));
      return {
        status: response.status,
        retryAfter: response.headers.get('retry-after'),
        body: (await response.json()) as { success: boolean; errorReason?: string; transaction: string },
      };
    };

    expect((await settle(payers[0]!)).body.success).toBe(true);
    expect((await settle(payers[0]!)).body.success).toBe(true);
    const perPayer = await settle(payers[0]!);
    expect(perPayer).toMatchObject({
      status: 429,
      body: { success: false, errorReason: 'payer_settle_cap_exceeded', transaction: '' },
    });
    expect(Number(perPayer.retryAfter)).toBeGreaterThanOrEqual(1);

    expect((await settle(payers[1]!)).body.success).toBe(true);
    const global = await settle(payers[2]!);
    expect(global).toMatchObject({ status: 429, body: { success: false, errorReason: 'global_settle_cap_exceeded' } });
    expect(economy.ledger.tokenBalance(payers[2]!.address)).toBe(1_000n);

    // A charge is not an x402 settlement: the x402 flood leaves the charge route its own budget.
    const prepared = await client.prepare({ body: {} });
    const transaction = await buildPaymentTransaction({
      payer: payers[2]!,
      requirements: terms(seller),
      blockhash: { blockhash: prepared.blockhash, lastValidBlockHeight: BigInt(prepared.lastValidBlockHeight) },
    });
    const charged = await client.settleCharge({
      body: { transaction, network: 'devnet', recipient: seller, amount: '1', asset: USDC_DEVNET },
    });
    expect(charged.success).toBe(true);
    expect(economy.ledger.tokenBalance(payers[2]!.address)).toBe(999n);
  });
});

describe('a buyer at the per-payer settle cap, through the SDK', () => {
  // Two settlements from one payer per 2 s window: the third waits for the window to move on.
  let capped: Economy;
  beforeAll(async () => {
    capped = await startEconomy({ facilitator: { settleCaps: { perPayer: 2, windowSeconds: 2 } } });
  });
  afterAll(async () => {
    await capped?.close();
  });

  it('is told 429 with Retry-After and charged nothing; with retries the SDK waits and presents the same payment, charged once', async () => {
    const wallet = generateWallet();
    await capped.ledger.mintTo(wallet.address, 1_000_000n);
    const seller = capped.education.context.wallet.address;
    const signer = await walletFromSecretKey(wallet.secretKey);
    // The payments each client sends, as the service sees them.
    const sent: string[] = [];
    const options = (maxRetries: number) => {
      const instance = axios.create();
      instance.interceptors.request.use((config) => {
        const header = AxiosHeaders.from(config.headers).get('payment-signature');
        if (typeof header === 'string') sent.push(header);
        return config;
      });
      return {
        baseUrls: { education: capped.education.url },
        wallet: signer,
        maxRetries,
        axios: instance,
        payments: { rpcUrl: capped.rpcUrl, sessions: false as const },
      };
    };
    const lesson = { body: { courseId: 'rag', lessonId: 'chunking' } } as const;
    const impatient = createClient(options(0));
    const first = await impatient.education.lesson.withResponse(lesson);
    const price = BigInt(first.payment!.amount);
    await impatient.education.lesson(lesson);
    const sellerBefore = capped.ledger.tokenBalance(seller);

    const refused = await impatient.education.lesson(lesson).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RateLimitError);
    expect((refused as RateLimitError).status).toBe(429);
    expect((refused as RateLimitError).code).toBe('payer_settle_cap_exceeded');
    const wait = Number((refused as RateLimitError).headers['retry-after']);
    expect(wait).toBeGreaterThanOrEqual(1);
    expect(wait).toBeLessThanOrEqual(2);
    expect((refused as RateLimitError).receipt).toBeUndefined();
    // Nothing moved and nothing stays reserved: two lessons paid, the third neither charged nor counted as spent.
    expect(capped.ledger.tokenBalance(wallet.address)).toBe(1_000_000n - 2n * price);
    expect(capped.ledger.tokenBalance(seller)).toBe(sellerBefore);
    expect(impatient.payments.receipts).toHaveLength(2);
    expect(impatient.payments.pending).toHaveLength(0);

    // A client that retries waits out the window and presents the same payment again (a transaction that can land only
    // once): one new settlement, one new receipt.
    const patient = createClient(options(2));
    sent.length = 0;
    const third = await patient.education.lesson.withResponse(lesson);
    expect(sent).toHaveLength(2);
    expect(sent[1]).toBe(sent[0]);
    expect(third.payment?.amount).toBe(price.toString());
    expect(capped.ledger.tokenBalance(wallet.address)).toBe(1_000_000n - 3n * price);
    expect(capped.ledger.tokenBalance(seller)).toBe(sellerBefore + price);
    expect(patient.payments.receipts).toHaveLength(1);
    const settled = await capped.facilitator.database.db
      .selectFrom('facilitator_settlements')
      .select(({ fn }) => fn.countAll<string>().as('n'))
      .where('payer', '=', wallet.address)
      .where('status', '=', 'settled')
      .executeTakeFirstOrThrow();
    expect(Number(settled.n)).toBe(3);
  });
});

describe('x402 failure shapes', () => {
  it('answers a body that is not JSON in the x402 shape on /verify and /settle', async () => {
    for (const [path, shape] of [
      ['/verify', { isValid: false, invalidReason: 'invalid_payload' }],
      ['/settle', { success: false, errorReason: 'invalid_payload', transaction: '', network: '' }],
    ] as const) {
      const response = await post(`${economy.facilitator.url}${path}`, '{"x402Version": 2, paymentPayload');
      expect(response.status, path).toBe(400);
      expect(await response.json()).toMatchObject(shape);
      // Not JSON by its content type: no body is read, so the first thing missing is the x402 version.
      const text = await fetch(`${economy.facilitator.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body: 'hello',
      });
      expect(text.status, path).toBe(400);
      const reason =
        path === '/verify'
          ? { invalidReason: 'invalid_x402_version' }
          : { errorReason: 'invalid_x402_version', transaction: '' };
      expect(await text.json()).toMatchObject({ ...shape, ...reason });
    }
  });

  it('names the specific reason when a settle fails, with an empty transaction, and the fee payer pays nothing', async () => {
    const poor = generateWallet();
    await economy.ledger.mintTo(poor.address, 1n);
    const body = await x402Body(poor, terms(economy.education.context.wallet.address, '5'));
    const lamports = economy.ledger.lamports(economy.feePayer.address);
    expect(await economy.facilitator.client.facilitator.settle({ body })).toMatchObject({
      success: false,
      errorReason: 'insufficient_funds',
      transaction: '',
      payer: poor.address,
    });
    // Refused in the node's preflight, before it was sent: no fee, and the payment is not held as settling.
    expect(economy.ledger.lamports(economy.feePayer.address)).toBe(lamports);
    await economy.ledger.mintTo(poor.address, 10n);
    expect(await economy.facilitator.client.facilitator.settle({ body })).toMatchObject({
      success: true,
      payer: poor.address,
      amount: '5',
    });
  });
});

describe('vouchers backed by funds', () => {
  const sign = (transaction: string, wallet: Wallet): string => {
    const tx = getTransactionDecoder().decode(Buffer.from(transaction, 'base64'));
    const signatures = { ...tx.signatures, [wallet.address]: signEd25519(wallet, new Uint8Array(tx.messageBytes)) };
    return getBase64Decoder().decode(getTransactionEncoder().encode({ ...tx, signatures: signatures as never }));
  };
  const voucher = (key: Wallet, channelId: string, cumulativeAmount: string) => {
    const json = `{"channelId":${JSON.stringify(channelId)},"cumulativeAmount":${JSON.stringify(cumulativeAmount)},"units":1}`;
    const signature = base58Encode(
      signEd25519(key, new TextEncoder().encode(`solana-mpp-session-voucher-request-v1:${json}`)),
    );
    return { channelId, cumulativeAmount, units: 1, signer: key.address, signature };
  };

  it('refuses a voucher once the wallet no longer covers everything vouched in all of the buyer’s sessions', async () => {
    const buyer = generateWallet();
    const seller = generateWallet();
    await economy.ledger.mintTo(buyer.address, 2_000_000n);
    const stranger = generateWallet().address;
    const client = createClient({
      baseUrls: { facilitator: economy.facilitator.url },
      wallet: await walletFromSecretKey(buyer.secretKey),
      maxRetries: 0,
    }).facilitator;
    const started = await client.onboard({
      body: { buyerWallet: buyer.address, network: 'devnet', spendLimitAtomic: '2000000', ttlSeconds: 3600 },
    });
    await client.confirmOnboarding({
      body: {
        buyerWallet: buyer.address,
        network: 'devnet',
        signedTransactions: started.transactions.map((t) => sign(t.transaction, buyer)),
      },
    });
    const [keyA, keyB] = [generateWallet(), generateWallet()];
    const open = (key: Wallet) =>
      client.openSession({
        body: {
          buyerWallet: buyer.address,
          sellerWallet: seller.address,
          depositAtomic: '1000000',
          sessionKey: key.address,
          network: 'devnet',
        },
      });
    // The fee payer settles sessions only to sellers it serves.
    const unserved = await client
      .openSession({
        body: {
          buyerWallet: buyer.address,
          sellerWallet: stranger,
          depositAtomic: '1000',
          sessionKey: keyA.address,
          network: 'devnet',
        },
      })
      .catch((e) => e);
    expect(unserved).toBeInstanceOf(PermissionDeniedError);
    expect(unserved.code).toBe('payee_not_served');
    economy.sellers.add(seller.address);
    const [a, b] = [await open(keyA), await open(keyB)];

    expect((await client.signVoucher({ body: voucher(keyA, a.channelId, '900000') })).acceptedCumulative).toBe(
      '900000',
    );
    // The buyer moves 1.5 USD away (a payment elsewhere): 0.5 USD is left against the 0.9 already vouched.
    const away = await x402Body(buyer, terms(economy.education.context.wallet.address, '1500000'));
    expect((await economy.facilitator.client.facilitator.settle({ body: away })).success).toBe(true);

    const refused = await client.signVoucher({ body: voucher(keyB, b.channelId, '100000') }).catch((e) => e);
    expect(refused).toBeInstanceOf(UnprocessableEntityError);
    expect(refused.code).toBe('insufficient_balance');
    expect(refused.details).toMatchObject({ reason: 'balance', available: '500000' });
    expect((await client.signVoucher({ body: voucher(keyA, a.channelId, '950000') }).catch((e) => e)).code).toBe(
      'insufficient_balance',
    );
    const rows = await economy.facilitator.database.db
      .selectFrom('facilitator_sessions')
      .select(['channel_id', 'accepted'])
      .where('buyer', '=', buyer.address)
      .execute();
    expect(Object.fromEntries(rows.map((r) => [r.channel_id, BigInt(r.accepted)]))).toEqual({
      [a.channelId]: 900_000n,
      [b.channelId]: 0n,
    });
  });
});
