import { describe, expect, it } from 'vitest';
import {
  SOLANA_DEVNET,
  USDC_DEVNET,
  type PaymentRequirements,
  type X402PaymentPayload,
} from '@agent-economy/contracts';
import { PaymentRejected, checkTransaction, type VerifyPolicy } from '../../servers/src/services/facilitator/verify';
import { ata, buildPaymentTransaction, type PaymentShape } from '../../servers/src/solana/payment-builder';
import { generateWallet } from '../../servers/src/solana/keys';

// The facilitator's static rules for an x402 exact-scheme payment (/verify and /settle before the chain is asked),
// on transactions built offline.

const feePayer = generateWallet();
const buyer = generateWallet();
const seller = generateWallet();
const policy: VerifyPolicy = {
  network: SOLANA_DEVNET,
  feePayers: new Set([feePayer.address]),
  maxComputeUnits: 400_000,
  maxComputeUnitPriceMicroLamports: 50_000n,
};
const requirements: PaymentRequirements = {
  scheme: 'exact',
  network: SOLANA_DEVNET,
  amount: '50000',
  asset: USDC_DEVNET,
  payTo: seller.address,
  maxTimeoutSeconds: 60,
  extra: { feePayer: feePayer.address },
};
// Any 32 bytes in base58 serve as a blockhash: these rules never ask the chain whether it is recent.
const blockhash = { blockhash: generateWallet().address, lastValidBlockHeight: 1_000n };

async function payment(
  deviation: Partial<PaymentShape> = {},
  accepted: PaymentRequirements = requirements,
): Promise<X402PaymentPayload> {
  const transaction = await buildPaymentTransaction({ payer: buyer, requirements, blockhash, ...deviation });
  return {
    x402Version: 2,
    resource: { url: 'http://127.0.0.1/resource' },
    accepted,
    payload: { transaction },
  } as X402PaymentPayload;
}

async function reason(payload: X402PaymentPayload, asked: PaymentRequirements = requirements): Promise<string> {
  const error = await checkTransaction(payload, asked, policy).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PaymentRejected);
  return (error as PaymentRejected).reason;
}

describe('x402 payment transaction checks', () => {
  it('accepts an honest payment and reads its transfer', async () => {
    const checked = await checkTransaction(await payment(), requirements, policy);
    expect(checked).toMatchObject({
      payer: buyer.address,
      feePayer: feePayer.address,
      amount: 50_000n,
      source: ata(buyer.address, USDC_DEVNET),
      destination: ata(seller.address, USDC_DEVNET),
    });
  });

  it('refuses a payment made for other requirements, or for a fee payer the facilitator does not hold', async () => {
    expect(await reason(await payment({}, { ...requirements, amount: '1' }))).toBe('invalid_payment_requirements');
    expect(
      await reason(await payment({}, { ...requirements, network: 'solana:other' }), {
        ...requirements,
        network: 'solana:other',
      }),
    ).toBe('invalid_network');
    const stranger = { ...requirements, extra: { feePayer: generateWallet().address } };
    expect(await reason(await payment({}, stranger), stranger)).toBe(
      'invalid_exact_svm_fee_payer_not_managed_by_facilitator',
    );
  });

  it('refuses a transfer that pays too little, the wrong account or the wrong mint', async () => {
    expect(await reason(await payment({ amount: 49_999n }))).toBe('invalid_exact_svm_payload_amount_mismatch');
    expect(await reason(await payment({ destination: ata(generateWallet().address, USDC_DEVNET) }))).toBe(
      'invalid_exact_svm_payload_recipient_mismatch',
    );
    expect(await reason(await payment({ mint: generateWallet().address }))).toBe(
      'invalid_exact_svm_payload_mint_mismatch',
    );
  });

  it('refuses what would make the fee payer pay more or sign for funds: another fee payer, a high price, a forged signature', async () => {
    expect(await reason(await payment({ feePayer: generateWallet().address }))).toBe(
      'invalid_exact_svm_invalid_fee_payer',
    );
    expect(await reason(await payment({ computeUnitPrice: 50_001n }))).toBe(
      'invalid_exact_svm_payload_transaction_instructions_compute_price_instruction_too_high',
    );
    expect(await reason(await payment({ authority: feePayer }))).toBe(
      'invalid_exact_svm_payload_transaction_fee_payer_transferring_funds',
    );
    expect(await reason(await payment({ signWith: generateWallet() }))).toBe(
      'invalid_exact_svm_payload_signature_invalid',
    );
  });
});
