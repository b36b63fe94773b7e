import { encodeX402Header, type PaymentRequirements } from '@agent-economy/contracts';
import { getSetComputeUnitLimitInstruction, getSetComputeUnitPriceInstruction } from '@solana-program/compute-budget';
import { getTransferCheckedInstruction } from '@solana-program/token';
import {
  address,
  appendTransactionMessageInstructions,
  compileTransaction,
  createNoopSigner,
  createTransactionMessage,
  getBase64Decoder,
  getTransactionEncoder,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  type Blockhash,
  type Instruction,
} from '@solana/kit';
import { MEMO_PROGRAM, associatedTokenAddress } from './programs';
import { signEd25519, type Wallet } from './keys';

// Hand-built x402 payments for tests and benchmarks, honest or deliberately wrong in one respect, so that each of the
// facilitator's rules can be seen to refuse what it should. (The SDK builds only honest ones.)

/** The associated token account of `owner` for `mint` (SPL Token). */
export const ata = (owner: string, mint: string): string => associatedTokenAddress(owner, mint);

export interface PaymentShape {
  payer: Wallet;
  requirements: PaymentRequirements;
  blockhash: { blockhash: string; lastValidBlockHeight: bigint };
  /** Deviations from the honest payment. */
  amount?: bigint;
  mint?: string;
  destination?: string;
  authority?: Wallet;
  feePayer?: string;
  extraInstruction?: Instruction;
  computeUnitPrice?: bigint;
  memo?: string;
  /** Sign with this wallet instead of the payer (a signature that does not match). */
  signWith?: Wallet;
}

/** A partially signed payment transaction (fee payer slot empty), base64, as a client would send it. */
export async function buildPaymentTransaction(shape: PaymentShape): Promise<string> {
  const { requirements } = shape;
  const authority = shape.authority ?? shape.payer;
  const mint = shape.mint ?? requirements.asset;
  const feePayer = shape.feePayer ?? (requirements.extra?.feePayer as string);
  const instructions: Instruction[] = [
    getSetComputeUnitLimitInstruction({ units: 20_000 }),
    getSetComputeUnitPriceInstruction({ microLamports: shape.computeUnitPrice ?? 1n }),
    getTransferCheckedInstruction({
      source: address(ata(authority.address, mint)),
      mint: address(mint),
      destination: address(shape.destination ?? ata(requirements.payTo, mint)),
      authority: createNoopSigner(address(authority.address)),
      amount: shape.amount ?? BigInt(requirements.amount),
      decimals: 6,
    }),
    {
      programAddress: address(MEMO_PROGRAM),
      data: new TextEncoder().encode(
        shape.memo ?? Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString('hex'),
      ),
    },
  ];
  if (shape.extraInstruction) instructions.push(shape.extraInstruction);
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayer(address(feePayer), m),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash(
        {
          blockhash: shape.blockhash.blockhash as Blockhash,
          lastValidBlockHeight: shape.blockhash.lastValidBlockHeight,
        },
        m,
      ),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
  const compiled = compileTransaction(message);
  const signer = shape.signWith ?? authority;
  const signatures = {
    ...compiled.signatures,
    [authority.address]: signEd25519(signer, new Uint8Array(compiled.messageBytes)),
  };
  const wire = getTransactionEncoder().encode({ ...compiled, signatures: signatures as never });
  return getBase64Decoder().decode(wire);
}

/** The PAYMENT-SIGNATURE header value for a transaction paying `requirements`. */
export function paymentHeader(
  requirements: PaymentRequirements,
  transaction: string,
  resourceUrl = 'http://127.0.0.1/resource',
): string {
  return encodeX402Header({
    x402Version: 2,
    resource: { url: resourceUrl },
    accepted: requirements,
    payload: { transaction },
  });
}
