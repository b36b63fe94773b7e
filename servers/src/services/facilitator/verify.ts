import type { PaymentRequirements } from '@agent-economy/contracts';
import type { X402PaymentPayload } from '@agent-economy/contracts';
import {
  getSetComputeUnitLimitInstructionDataDecoder,
  getSetComputeUnitPriceInstructionDataDecoder,
} from '@solana-program/compute-budget';
import { getTransferCheckedInstructionDataDecoder } from '@solana-program/token';
import {
  COMPUTE_BUDGET_PROGRAM,
  MEMO_PROGRAM,
  MEMO_V1_PROGRAM,
  TOKEN_2022_PROGRAM,
  TOKEN_PROGRAM,
  associatedTokenAddress,
} from '../../solana/programs';
import { hasValidSignature, readTransaction, type ReadTransaction } from './transaction';

// The Solana `exact` scheme's verification rules (research/x402.md §2.4), checked on the transaction's
// bytes before anything touches the chain. Reason codes are the x402 SVM codes the official packages use.

/** Memo v2 (what x402 clients use) and v1. */
export const MEMO_PROGRAMS = new Set([MEMO_PROGRAM, MEMO_V1_PROGRAM]);
/** Wallet guard instructions some wallets (Phantom) add; they move no funds. */
export const LIGHTHOUSE_PROGRAM = 'L2TExMFKdjpN9kozasaurPirfHy9P8sbXoAN1qA3S95';

export interface VerifyPolicy {
  /** CAIP-2 network this facilitator settles on. */
  network: string;
  /** Addresses this facilitator signs with as fee payer. */
  feePayers: ReadonlySet<string>;
  /** Highest compute unit limit a payment may ask the fee payer to pay for. */
  maxComputeUnits: number;
  /** Highest priority fee, in microlamports per compute unit: the fee payer pays it. */
  maxComputeUnitPriceMicroLamports: bigint;
}

// The official facilitator accepts up to 5 lamports a unit (5,000,000 microlamports): 0.002 SOL a payment at
// 400,000 units, paid by the fee payer for anyone's transfer. x402 clients send 1 microlamport; 50,000 leaves
// room for a congested cluster while bounding the priority fee of one payment to 20,000 lamports.
export const DEFAULT_VERIFY_POLICY: Omit<VerifyPolicy, 'network' | 'feePayers'> = {
  maxComputeUnits: 400_000,
  maxComputeUnitPriceMicroLamports: 50_000n,
};

/** A payment transaction that passed every static rule: what the chain is then asked about. */
export interface CheckedPayment {
  /** The transaction, fee-payer slot unsigned. */
  tx: ReadTransaction;
  payer: string;
  feePayer: string;
  amount: bigint;
  source: string;
  destination: string;
}

export class PaymentRejected extends Error {
  constructor(
    readonly reason: string,
    message: string,
    readonly payer?: string,
  ) {
    super(message);
    this.name = 'PaymentRejected';
  }
}

function reject(reason: string, message: string, payer?: string): never {
  throw new PaymentRejected(reason, message, payer);
}

const ORDINAL = ['fourth', 'fifth', 'sixth', 'seventh'];
const SAME_FIELDS = ['scheme', 'network', 'amount', 'asset', 'payTo'] as const;

/** The requirements the payer says it paid must be the ones the resource server asks for. */
export function checkAccepted(
  payload: X402PaymentPayload,
  requirements: PaymentRequirements,
  policy: VerifyPolicy,
): void {
  if (requirements.scheme !== 'exact' || payload.accepted.scheme !== 'exact') {
    reject(
      'unsupported_scheme',
      `only the "exact" scheme is supported, not "${requirements.scheme === 'exact' ? payload.accepted.scheme : requirements.scheme}"`,
    );
  }
  if (requirements.network !== policy.network || payload.accepted.network !== policy.network) {
    reject(
      'invalid_network',
      `this facilitator settles on ${policy.network}, not ${requirements.network === policy.network ? payload.accepted.network : requirements.network}`,
    );
  }
  for (const field of SAME_FIELDS) {
    if (payload.accepted[field] !== requirements[field]) {
      reject(
        'invalid_payment_requirements',
        `the payment was made for ${field} ${payload.accepted[field]}, but the requirements ask for ${requirements[field]}`,
      );
    }
  }
  const feePayer = requirements.extra?.feePayer;
  if (typeof feePayer !== 'string')
    reject('invalid_exact_svm_payload_missing_fee_payer', 'paymentRequirements.extra.feePayer is missing');
  if (!policy.feePayers.has(feePayer as string)) {
    reject(
      'invalid_exact_svm_fee_payer_not_managed_by_facilitator',
      `fee payer ${feePayer} is not one of this facilitator's signers`,
    );
  }
  if (payload.accepted.extra?.feePayer !== feePayer) {
    reject('invalid_payment_requirements', 'the payment names a different fee payer than the requirements');
  }
}

/** Decodes the payment's transaction and applies every rule that needs no chain access. */
export async function checkTransaction(
  payload: X402PaymentPayload,
  requirements: PaymentRequirements,
  policy: VerifyPolicy,
): Promise<CheckedPayment> {
  checkAccepted(payload, requirements, policy);
  const feePayer = requirements.extra!.feePayer as string;
  const encoded = payload.payload.transaction;
  if (typeof encoded !== 'string' || !encoded)
    reject('invalid_exact_svm_payload_transaction', 'paymentPayload.payload.transaction must be a base64 transaction');

  let tx: ReadTransaction;
  try {
    tx = readTransaction(encoded as string);
  } catch (error) {
    return reject(
      'invalid_exact_svm_payload_transaction_could_not_be_decoded',
      `the transaction does not decode: ${(error as Error).message}`,
    );
  }
  if (tx.version !== 0)
    reject('invalid_exact_svm_payload_transaction', 'the transaction must be a version 0 transaction');
  if (tx.lookups > 0) {
    reject(
      'invalid_exact_svm_payload_transaction',
      'address lookup tables are not accepted: every account must be in the message',
    );
  }
  const accounts = tx.accounts;
  if (accounts[0] !== feePayer)
    reject('invalid_exact_svm_invalid_fee_payer', `the transaction's fee payer is ${accounts[0]}, not ${feePayer}`);

  const instructions = tx.instructions;
  if (instructions.length < 3 || instructions.length > 7) {
    reject(
      'invalid_exact_svm_payload_transaction_instructions_length',
      `a payment has 3 to 7 instructions, this one has ${instructions.length}`,
    );
  }
  const [limitIx, priceIx, transferIx, ...rest] = instructions as [
    (typeof instructions)[0],
    (typeof instructions)[0],
    (typeof instructions)[0],
    ...typeof instructions,
  ];

  if (limitIx.program !== COMPUTE_BUDGET_PROGRAM || limitIx.data[0] !== 2 || limitIx.data.length !== 5) {
    reject(
      'invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction',
      'the first instruction must be SetComputeUnitLimit',
    );
  }
  const { units } = getSetComputeUnitLimitInstructionDataDecoder().decode(limitIx.data);
  if (units > policy.maxComputeUnits) {
    reject(
      'invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction_too_high',
      `compute unit limit ${units} is above ${policy.maxComputeUnits}`,
    );
  }
  if (priceIx.program !== COMPUTE_BUDGET_PROGRAM || priceIx.data[0] !== 3 || priceIx.data.length !== 9) {
    reject(
      'invalid_exact_svm_payload_transaction_instructions_compute_price_instruction',
      'the second instruction must be SetComputeUnitPrice',
    );
  }
  const { microLamports } = getSetComputeUnitPriceInstructionDataDecoder().decode(priceIx.data);
  if (microLamports > policy.maxComputeUnitPriceMicroLamports) {
    reject(
      'invalid_exact_svm_payload_transaction_instructions_compute_price_instruction_too_high',
      `compute unit price ${microLamports} microlamports is above ${policy.maxComputeUnitPriceMicroLamports}`,
    );
  }

  const isToken = transferIx.program === TOKEN_PROGRAM || transferIx.program === TOKEN_2022_PROGRAM;
  if (!isToken || transferIx.data[0] !== 12 || transferIx.data.length !== 10 || transferIx.accounts.length < 4) {
    reject(
      'invalid_exact_svm_payload_no_transfer_instruction',
      'the third instruction must be a TransferChecked of SPL Token or Token-2022',
    );
  }
  const [source, mint, destination, authority] = transferIx.accounts as [string, string, string, string];
  const payer = authority;
  // The fee payer only pays fees: never the authority, the source, or any account an instruction touches.
  if (authority === feePayer || source === feePayer) {
    reject(
      'invalid_exact_svm_payload_transaction_fee_payer_transferring_funds',
      'the fee payer may not be the transfer authority or source',
      payer,
    );
  }
  if (instructions.some((ix) => ix.accounts.includes(feePayer))) {
    reject(
      'invalid_exact_svm_payload_transaction_fee_payer_included_in_instruction_accounts',
      'the fee payer may not appear in any instruction',
      payer,
    );
  }
  if (tx.numRequiredSignatures !== 2) {
    reject(
      'invalid_exact_svm_payload_excessive_signers',
      `the transaction needs ${tx.numRequiredSignatures} signatures; a payment has exactly two: the fee payer and the payer`,
      payer,
    );
  }
  if (accounts[1] !== payer)
    reject(
      'invalid_exact_svm_payload_transaction',
      'the transfer authority must be the transaction’s second signer',
      payer,
    );

  const { amount } = getTransferCheckedInstructionDataDecoder().decode(transferIx.data);
  if (mint !== requirements.asset)
    reject(
      'invalid_exact_svm_payload_mint_mismatch',
      `the transfer moves mint ${mint}, not ${requirements.asset}`,
      payer,
    );
  const expectedDestination = associatedTokenAddress(requirements.payTo, requirements.asset, transferIx.program);
  if (destination !== expectedDestination) {
    reject(
      'invalid_exact_svm_payload_recipient_mismatch',
      `the transfer pays ${destination}, not ${requirements.payTo}'s token account ${expectedDestination}`,
      payer,
    );
  }
  if (amount !== BigInt(requirements.amount)) {
    reject(
      'invalid_exact_svm_payload_amount_mismatch',
      `the transfer moves ${amount} atomic units, the requirements ask for exactly ${requirements.amount}`,
      payer,
    );
  }

  const memos: Uint8Array[] = [];
  rest.forEach((ix, i) => {
    if (MEMO_PROGRAMS.has(ix.program)) memos.push(ix.data);
    else if (ix.program !== LIGHTHOUSE_PROGRAM) {
      reject(
        `invalid_exact_svm_payload_unknown_${ORDINAL[i]}_instruction`,
        `instruction ${i + 4} calls ${ix.program}; only Memo and Lighthouse may follow the transfer`,
        payer,
      );
    }
  });
  const memo = requirements.extra?.memo;
  if (typeof memo === 'string') {
    if (memos.length !== 1)
      reject(
        'invalid_exact_svm_payload_memo_count',
        `the requirements set a memo, so exactly one Memo instruction must be present, not ${memos.length}`,
        payer,
      );
    if (Buffer.from(memos[0]!).toString('utf8') !== memo)
      reject('invalid_exact_svm_payload_memo_mismatch', 'the memo differs from the one the requirements set', payer);
  }

  for (let i = 1; i < tx.numRequiredSignatures; i++) {
    if (!hasValidSignature(tx, i))
      reject(
        'invalid_exact_svm_payload_signature_invalid',
        `the signature of ${accounts[i]} is missing or does not match the transaction`,
        payer,
      );
  }

  return { tx, payer, feePayer, amount, source, destination };
}
