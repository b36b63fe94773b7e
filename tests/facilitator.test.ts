import {
  SOLANA_DEVNET,
  USDC_DEVNET,
  base58Encode,
  usdToAtomic,
  voucherRequestMessage,
  type PaymentRequirements,
} from '@agent-economy/contracts';
import { createSolanaRpc } from '@solana/kit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { generateWallet, signEd25519, type Wallet } from '../servers/src/solana/keys';
import { inProcessRoutes } from '../servers/src/http/in-process';
import { ata, buildPaymentTransaction, type PaymentShape } from './support/payments';
import { startEconomy, type Economy } from './support/economy';
import { FacilitatorUnavailable, facilitatorClient } from '../servers/src/runtime/facilitator-client';
import { RESOURCE_SERVER_HEADER, signResourceRequest } from '../servers/src/runtime/resource-auth';

// The facilitator's x402 routes, driven through the SDK against the local ledger: every verification
// rule refuses what it should, with its reason, and nothing moves on chain unless a payment settles.

let economy: Economy;
let rpc: ReturnType<typeof createSolanaRpc>;
let requirements: PaymentRequirements;

const facilitator = () => economy.facilitator.client.facilitator;

async function recentBlockhash() {
  const { value } = await rpc.getLatestBlockhash().send();
  return value;
}

async function payment(overrides: Partial<PaymentShape> = {}) {
  const transaction = await buildPaymentTransaction({
    payer: economy.buyer,
    requirements,
    blockhash: await recentBlockhash(),
    ...overrides,
  });
  const accepted = overrides.requirements ?? requirements;
  return {
    x402Version: 2 as const,
    paymentPayload: {
      x402Version: 2 as const,
      resource: { url: `${economy.education.url}/api/lesson`, description: 'a lesson' },
      accepted,
      payload: { transaction },
    },
    paymentRequirements: accepted,
  };
}

async function expectRefused(body: Awaited<ReturnType<typeof payment>>, reason: string) {
  const verdict = await facilitator().verify({ body });
  expect(verdict, JSON.stringify(verdict)).toMatchObject({ isValid: false, invalidReason: reason });
  expect(verdict.invalidMessage).toBeTruthy();
  const settlement = await facilitator().settle({ body });
  // /settle names the same reason /verify does.
  expect(settlement).toMatchObject({ success: false, errorReason: reason, transaction: '', network: SOLANA_DEVNET });
  expect(settlement.errorMessage).toBeTruthy();
}

beforeAll(async () => {
  economy = await startEconomy();
  rpc = createSolanaRpc(economy.rpcUrl);
  requirements = {
    scheme: 'exact',
    network: SOLANA_DEVNET,
    amount: usdToAtomic('0.05').toString(),
    asset: USDC_DEVNET,
    payTo: economy.education.context.wallet.address,
    maxTimeoutSeconds: 60,
    extra: { feePayer: economy.feePayer.address },
  };
});
afterAll(async () => {
  await economy?.close();
});

describe('facilitator /supported', () => {
  it('advertises exact on devnet with its fee payer', async () => {
    const supported = await facilitator().supported();
    expect(supported).toEqual({
      kinds: [
        { x402Version: 2, scheme: 'exact', network: SOLANA_DEVNET, extra: { feePayer: economy.feePayer.address } },
      ],
      extensions: ['bazaar'],
      signers: { 'solana:*': [economy.feePayer.address] },
    });
  });
});

describe('facilitator verification rules', () => {
  it('accepts an honest payment and names the payer, moving nothing', async () => {
    const before = economy.ledger.tokenBalance(economy.buyer.address);
    const verdict = await facilitator().verify({ body: await payment() });
    expect(verdict).toEqual({ isValid: true, payer: economy.buyer.address });
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(before);
  });

  it('refuses the wrong mint', async () => {
    await expectRefused(await payment({ mint: generateWallet().address }), 'invalid_exact_svm_payload_mint_mismatch');
  });

  it('refuses the wrong destination', async () => {
    await expectRefused(
      await payment({ destination: await ata(generateWallet().address, USDC_DEVNET) }),
      'invalid_exact_svm_payload_recipient_mismatch',
    );
  });

  it('refuses a short amount, and an overpayment (the exact scheme is exact)', async () => {
    await expectRefused(await payment({ amount: 49_999n }), 'invalid_exact_svm_payload_amount_mismatch');
    await expectRefused(await payment({ amount: 50_001n }), 'invalid_exact_svm_payload_amount_mismatch');
  });

  it('refuses the fee payer as the transfer authority', async () => {
    await expectRefused(
      await payment({ authority: economy.feePayer }),
      'invalid_exact_svm_payload_transaction_fee_payer_transferring_funds',
    );
  });

  it('refuses an extra instruction after the transfer that is not a memo', async () => {
    const transfer = {
      programAddress: 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA' as never,
      data: new Uint8Array([9]),
    };
    await expectRefused(
      await payment({ extraInstruction: transfer }),
      'invalid_exact_svm_payload_unknown_fifth_instruction',
    );
  });

  it('refuses a priority fee above the cap', async () => {
    await expectRefused(
      await payment({ computeUnitPrice: 5_000_001n }),
      'invalid_exact_svm_payload_transaction_instructions_compute_price_instruction_too_high',
    );
  });

  it('refuses a signature that is not the payer’s', async () => {
    await expectRefused(await payment({ signWith: generateWallet() }), 'invalid_exact_svm_payload_signature_invalid');
  });

  it('refuses a fee payer it does not hold', async () => {
    const foreign: PaymentRequirements = { ...requirements, extra: { feePayer: generateWallet().address } };
    await expectRefused(
      await payment({ requirements: foreign }),
      'invalid_exact_svm_fee_payer_not_managed_by_facilitator',
    );
  });

  it('refuses a memo other than the one required', async () => {
    const withMemo: PaymentRequirements = { ...requirements, extra: { ...requirements.extra, memo: 'inv_123' } };
    await expectRefused(
      await payment({ requirements: withMemo, memo: 'inv_999' }),
      'invalid_exact_svm_payload_memo_mismatch',
    );
  });

  it('refuses a payer without the funds, found by simulation', async () => {
    const poor = generateWallet();
    await economy.ledger.mintTo(poor.address, 10n);
    await expectRefused(await payment({ payer: poor }), 'insufficient_funds');
  });

  it('refuses an expired blockhash', async () => {
    const stale = await recentBlockhash();
    economy.ledger.warp(151);
    await expectRefused(await payment({ blockhash: stale }), 'invalid_exact_svm_blockhash_expired');
  });

  it('answers a malformed body in the x402 shape, not the envelope', async () => {
    const response = await fetch(`${economy.facilitator.url}/verify`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ x402Version: 2, paymentPayload: { x402Version: 2 }, paymentRequirements: requirements }),
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { invalidMessage: string };
    expect(body).toMatchObject({ isValid: false, invalidReason: 'invalid_payload' });
    expect(body.invalidMessage).toContain('paymentPayload');

    const version = await fetch(`${economy.facilitator.url}/settle`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...(await payment()), x402Version: 1 }),
    });
    expect(version.status).toBe(400);
    expect(await version.json()).toMatchObject({
      success: false,
      errorReason: 'invalid_x402_version',
      transaction: '',
      network: SOLANA_DEVNET,
    });
  });
});

describe('facilitator settlement', () => {
  it('settles an honest payment once: the tokens move, the record is kept, a replay is refused', async () => {
    const payTo = requirements.payTo;
    const [buyerBefore, sellerBefore] = [
      economy.ledger.tokenBalance(economy.buyer.address),
      economy.ledger.tokenBalance(payTo),
    ];
    const feesBefore = economy.ledger.lamports(economy.feePayer.address);
    const body = await payment();

    const settlement = await facilitator().settle({ body });
    expect(settlement).toMatchObject({
      success: true,
      network: SOLANA_DEVNET,
      payer: economy.buyer.address,
      amount: '50000',
    });
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(buyerBefore - 50_000n);
    expect(economy.ledger.tokenBalance(payTo)).toBe(sellerBefore + 50_000n);
    // The fee payer paid the two signatures' fees in SOL; the buyer paid only the stablecoin.
    expect(economy.ledger.lamports(economy.feePayer.address)).toBeLessThan(feesBefore);

    const { value } = await rpc.getSignatureStatuses([settlement.transaction as never]).send();
    expect(value[0]?.err).toBeNull();

    const row = await economy.facilitator.database.db
      .selectFrom('facilitator_settlements')
      .selectAll()
      .where('transaction', '=', settlement.transaction)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      status: 'settled',
      payer: economy.buyer.address,
      pay_to: payTo,
      amount: 50_000n,
      asset: USDC_DEVNET,
      network: SOLANA_DEVNET,
      resource: `${economy.education.url}/api/lesson`,
      description: 'a lesson',
    });
    expect(row.settled_at).toBeInstanceOf(Date);

    // Replayed: verify and settle both refuse it, and nothing moves again.
    expect(await facilitator().verify({ body })).toMatchObject({
      isValid: false,
      invalidReason: 'duplicate_settlement',
    });
    expect(await facilitator().settle({ body })).toMatchObject({
      success: false,
      errorReason: 'duplicate_settlement',
      transaction: settlement.transaction,
    });
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(buyerBefore - 50_000n);
  });

  it('settles one of two concurrent settlements of the same payment', async () => {
    const before = economy.ledger.tokenBalance(economy.buyer.address);
    const body = await payment();
    const results = await Promise.all([facilitator().settle({ body }), facilitator().settle({ body })]);
    const settled = results.find((r) => r.success);
    expect(results.filter((r) => r.success)).toHaveLength(1);
    // The loser sees the winner's claim: still in flight (settlement_pending) or already landed
    // (duplicate_settlement), depending on which engine and scheduler win the race.
    expect(['duplicate_settlement', 'settlement_pending']).toContain(results.find((r) => !r.success)?.errorReason);
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(before - 50_000n);
    // Once the winner has landed, asking again names its transaction.
    expect(await facilitator().settle({ body })).toMatchObject({
      success: false,
      errorReason: 'duplicate_settlement',
      transaction: settled?.transaction,
    });
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(before - 50_000n);
  });
});

describe('a paywall in the facilitator’s own process', () => {
  // npm start serves the facilitator and its sellers in one process: their /verify and /settle skip loopback HTTP
  // (runtime/facilitator-client.ts). Each answer must be the one HTTP gives, refusals and error bodies included.
  const overHttp = async (path: '/verify' | '/settle', body: unknown, signer?: Wallet) => {
    const text = JSON.stringify(body);
    const response = await fetch(`${economy.facilitator.url}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(signer ? { [RESOURCE_SERVER_HEADER]: signResourceRequest(signer, 'POST', path, text) } : {}),
      },
      body: text,
    });
    return { status: response.status, body: await response.json() };
  };
  const routeCounts = async () =>
    (await (await fetch(`${economy.facilitator.url}/metrics`)).text())
      .split('\n')
      .filter((line) => line.startsWith('http_requests_total') && /route="\/(verify|settle)"/.test(line))
      .join('\n');

  it('gives the answers HTTP gives, without an HTTP request', async () => {
    const seller = economy.education.context.wallet;
    const stranger = generateWallet();
    const inProcess = (signer?: Wallet) => facilitatorClient(economy.facilitator.url, signer ? { sign: signer } : {});
    const cases: { what: string; body: unknown; signer?: Wallet }[] = [
      { what: 'a wrong amount', body: await payment({ amount: 1n }), signer: seller },
      {
        what: 'an unserved payTo, unsigned',
        body: await payment({ requirements: { ...requirements, payTo: stranger.address } }),
      },
      { what: 'a signer that is not a resource server', body: await payment(), signer: stranger },
      { what: 'a version that is not 2', body: { ...(await payment()), x402Version: 1 }, signer: seller },
      { what: 'a payload missing its transaction', body: { ...(await payment()), paymentPayload: { x402Version: 2 } } },
    ];
    const before = await routeCounts();
    const answers = [];
    for (const { body, signer } of cases) {
      answers.push(await inProcess(signer).verify(body as never), await inProcess(signer).settle(body as never));
    }
    // None of them was an HTTP request to the facilitator.
    expect(await routeCounts()).toBe(before);
    const expected = [];
    for (const { body, signer } of cases) {
      expected.push((await overHttp('/verify', body, signer)).body, (await overHttp('/settle', body, signer)).body);
    }
    // (The same calls over HTTP are counted: the count above can tell.)
    expect(await routeCounts()).not.toBe(before);
    expect(answers).toEqual(expected);
    expect(answers.map((a) => ('isValid' in a ? a.invalidReason : a.errorReason))).toEqual([
      'invalid_exact_svm_payload_amount_mismatch',
      'invalid_exact_svm_payload_amount_mismatch',
      'payee_not_served',
      'payee_not_served',
      'resource_server_unauthorized',
      'resource_server_unauthorized',
      'invalid_x402_version',
      'invalid_x402_version',
      'invalid_payload',
      'invalid_payload',
    ]);
  });

  it('gives up on an in-process /verify or /settle that does not answer, after the time limit HTTP has', async () => {
    // A hung facilitator in this process (its chain stuck, say) must fail the call as an HTTP timeout would: a payment
    // claim's lease counts on a settle call ending within its limit.
    const url = 'http://127.0.0.1:9/hung-facilitator';
    const calls: string[] = [];
    const stop = inProcessRoutes.serve(url, {
      verify: () => (calls.push('verify'), new Promise(() => undefined)),
      settle: () => (calls.push('settle'), new Promise(() => undefined)),
    });
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const client = facilitatorClient(url);
      const body = await payment();
      const verifying = client.verify(body).catch((error: unknown) => error);
      await vi.advanceTimersByTimeAsync(14_999);
      const settling = client.settle(body).catch((error: unknown) => error);
      await vi.advanceTimersByTimeAsync(1);
      const verified = (await verifying) as Error;
      expect(verified).toBeInstanceOf(FacilitatorUnavailable);
      expect(verified.message).toContain("the facilitator's /verify did not answer within 15000 ms");
      await vi.advanceTimersByTimeAsync(44_998);
      expect(await Promise.race([settling, Promise.resolve('still waiting')])).toBe('still waiting');
      await vi.advanceTimersByTimeAsync(1);
      const settled = (await settling) as Error;
      expect(settled).toBeInstanceOf(FacilitatorUnavailable);
      expect(settled.message).toContain("the facilitator's /settle did not answer within 45000 ms");
      expect(calls).toEqual(['verify', 'settle']);
    } finally {
      vi.useRealTimers();
      stop();
    }
  });

  it('answers a session voucher in process as over HTTP, refusals included', async () => {
    // A session paywall in this process forwards its buyers' vouchers to POST /mpp/session/voucher in process.
    const signVoucher = inProcessRoutes.lookup(economy.facilitator.url)!.signVoucher!;
    const key = generateWallet();
    const request = (channelId: string, cumulativeAmount: string) => ({
      channelId,
      cumulativeAmount,
      units: 1,
      signer: key.address,
      signature: base58Encode(signEd25519(key, voucherRequestMessage({ channelId, cumulativeAmount, units: 1 }))),
    });
    const cases = [
      request('chn_NoSuchChannel0000000000', '50000'),
      { ...request('chn_NoSuchChannel0000000000', '50000'), cumulativeAmount: '-1' },
      { channelId: 'chn_NoSuchChannel0000000000', units: 1 },
    ];
    const voucherCount = async () =>
      (await (await fetch(`${economy.facilitator.url}/metrics`)).text())
        .split('\n')
        .filter((line) => line.startsWith('http_requests_total') && line.includes('route="/mpp/session/voucher"'))
        .join('\n');
    const before = await voucherCount();
    const answers = [];
    for (const body of cases) answers.push(await signVoucher(body, undefined));
    expect(await voucherCount()).toBe(before);
    // The same over HTTP, each answer's request id aside.
    const withoutId = ({ status, body }: { status: number; body: unknown }) => ({
      status,
      body: { ...(body as object), requestId: undefined },
    });
    const expected = [];
    for (const body of cases) {
      const response = await fetch(`${economy.facilitator.url}/mpp/session/voucher`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expected.push(withoutId({ status: response.status, body: await response.json() }));
    }
    expect(await voucherCount()).not.toBe(before);
    expect(answers.map(withoutId)).toEqual(expected);
    expect(answers.map((a) => [a.status, (a.body as { error: { code: string } }).error.code])).toEqual([
      [404, 'session_not_found'],
      [400, 'invalid_request'],
      [400, 'invalid_request'],
    ]);
  });

  it('settles a payment once, in process: the tokens move once, and HTTP then sees the settlement', async () => {
    const seller = economy.education.context.wallet;
    const client = facilitatorClient(economy.facilitator.url, { sign: seller });
    const body = await payment();
    const [buyerBefore, sellerBefore] = [
      economy.ledger.tokenBalance(economy.buyer.address),
      economy.ledger.tokenBalance(seller.address),
    ];
    expect(await client.verify(body)).toEqual({ isValid: true, payer: economy.buyer.address });
    const settled = await client.settle(body);
    expect(settled).toMatchObject({ success: true, payer: economy.buyer.address, amount: requirements.amount });
    const again = await client.settle(body);
    expect(again).toMatchObject({
      success: false,
      errorReason: 'duplicate_settlement',
      transaction: settled.transaction,
    });
    expect((await overHttp('/settle', body, seller)).body).toEqual(again);
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(buyerBefore - BigInt(requirements.amount));
    expect(economy.ledger.tokenBalance(seller.address)).toBe(sellerBefore + BigInt(requirements.amount));
  });
});

describe('facilitator without its chain', () => {
  it('answers 503 in the x402 shape with Retry-After, and records nothing', async () => {
    const { startService, testDatabase } = await import('./support/servers');
    const { createFacilitatorApp } = await import('../servers/src/services/facilitator');
    const feePayer: Wallet = economy.feePayer;
    const database = await testDatabase();
    const orphan = await startService((c) => createFacilitatorApp(c, { sellers: economy.sellers }), {
      id: 'facilitator',
      wallet: feePayer,
      database,
    });
    try {
      const response = await fetch(`${orphan.url}/settle`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(await payment()),
      });
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toBe('5');
      expect(await response.json()).toMatchObject({
        success: false,
        errorReason: 'unexpected_settle_error',
        transaction: '',
        network: SOLANA_DEVNET,
      });
      const rows = await database.db.selectFrom('facilitator_settlements').selectAll().execute();
      expect(rows).toEqual([]);
    } finally {
      await orphan.close();
      await database.close();
    }
  });
});
