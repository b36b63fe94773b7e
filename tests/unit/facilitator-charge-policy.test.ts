import { describe, expect, it } from 'vitest';
import { SOLANA_DEVNET, USDC_DEVNET, type PaymentRequirements } from '@agent-economy/contracts';
import { getTransferSolInstruction } from '@solana-program/system';
import { AccountRole, address, createNoopSigner } from '@solana/kit';
import { ChargeRejected, checkCharge, type ChargePolicy } from '../../servers/src/services/facilitator/charge-policy';
import { ata, buildPaymentTransaction } from '../../servers/src/solana/payment-builder';
import { generateWallet } from '../../servers/src/solana/keys';
import { MEMO_PROGRAM } from '../../servers/src/solana/programs';

// POST /mpp/settle's charge policy on transactions built offline: bytes and terms in, a verdict out, no chain.

const feePayer = generateWallet();
const buyer = generateWallet();
const seller = generateWallet();
const policy: ChargePolicy = {
  feePayer: feePayer.address,
  asset: USDC_DEVNET,
  maxComputeUnits: 200_000,
  maxComputeUnitPriceMicroLamports: 5_000n,
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
// Any 32 bytes in base58 serve as a blockhash: the policy never asks the chain whether it is recent.
const blockhash = { blockhash: generateWallet().address, lastValidBlockHeight: 1_000n };
const build = (deviation: Partial<Parameters<typeof buildPaymentTransaction>[0]> = {}) =>
  buildPaymentTransaction({ payer: buyer, requirements, blockhash, ...deviation });

function reason(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ChargeRejected);
    return (error as ChargeRejected).reason;
  }
  throw new Error('the charge was accepted');
}

describe('charge policy', () => {
  it('accepts an honest charge and reads its transfer', async () => {
    const checked = checkCharge(
      await build(),
      { recipient: seller.address, amount: '50000', asset: USDC_DEVNET },
      policy,
    );
    expect(checked).toMatchObject({
      payer: buyer.address,
      source: ata(buyer.address, USDC_DEVNET),
      mint: USDC_DEVNET,
      destination: ata(seller.address, USDC_DEVNET),
      amount: 50_000n,
      transferIndex: 2,
    });
  });

  it('refuses a charge that differs from the terms in recipient, amount or mint', async () => {
    const honest = await build();
    expect(reason(() => checkCharge(honest, { recipient: generateWallet().address }, policy))).toBe(
      'recipient_mismatch',
    );
    expect(reason(() => checkCharge(honest, { amount: '50001' }, policy))).toBe('amount_mismatch');
    const otherMint = await build({ mint: generateWallet().address });
    expect(reason(() => checkCharge(otherMint, {}, policy))).toBe('mint_mismatch');
  });

  it('refuses what would put the fee payer at risk: another fee payer, the fee payer in an instruction, a costly priority fee', async () => {
    const otherFeePayer = await build({ feePayer: generateWallet().address });
    expect(reason(() => checkCharge(otherFeePayer, {}, policy))).toBe('fee_payer_mismatch');
    const drain = getTransferSolInstruction({
      source: createNoopSigner(address(feePayer.address)),
      destination: address(buyer.address),
      amount: 1n,
    });
    const draining = await build({ extraInstruction: drain });
    expect(reason(() => checkCharge(draining, {}, policy))).toBe('program_not_allowed');
    // An allowed program (a memo) naming the fee payer: the fee payer may appear in no instruction at all.
    const naming = await build({
      extraInstruction: {
        programAddress: address(MEMO_PROGRAM),
        accounts: [{ address: address(feePayer.address), role: AccountRole.READONLY }],
        data: new Uint8Array([104, 105]),
      },
    });
    expect(reason(() => checkCharge(naming, {}, policy))).toBe('fee_payer_not_isolated');
    const costly = await build({ computeUnitPrice: 5_001n });
    expect(reason(() => checkCharge(costly, {}, policy))).toBe('compute_price_too_high');
  });

  it('refuses a signature that does not match and bytes that are not a transaction', async () => {
    const forged = await build({ signWith: generateWallet() });
    expect(reason(() => checkCharge(forged, {}, policy))).toBe('signature_invalid');
    expect(reason(() => checkCharge('not a transaction', {}, policy))).toBe('invalid_transaction_encoding');
  });
});
