import { getTransferCheckedInstructionDataDecoder } from '@solana-program/token';
import {
  COMPUTE_BUDGET_PROGRAM,
  TOKEN_2022_PROGRAM,
  TOKEN_PROGRAM,
  associatedTokenAddress,
  computeBudgetOf,
} from '../../solana/programs';
import { hasValidSignature, readTransaction, type ReadTransaction } from './transaction';
import { LIGHTHOUSE_PROGRAM, MEMO_PROGRAMS } from './verify';

// The charge policy of POST /mpp/settle (research/mpp.md §1.3, §2.1, §6): what a buyer-signed transaction
// may contain before the facilitator puts its fee-payer signature on it. Pure: bytes and terms in, a
// verdict out; the chain is asked afterwards (recipient, balance, simulation) by charge.ts.

export interface ChargePolicy {
  /** The facilitator's fee payer: account 0, in no instruction. */
  feePayer: string;
  /** The one mint a charge may move (the USD stablecoin). */
  asset: string;
  /** Highest compute unit limit the fee payer pays for. */
  maxComputeUnits: number;
  /** Highest priority fee, microlamports per compute unit. */
  maxComputeUnitPriceMicroLamports: bigint;
}

/** What the seller expects, when the request says so: the transfer must match each given term exactly. */
export interface ChargeTerms {
  recipient?: string;
  amount?: string;
  asset?: string;
}

export interface CheckedCharge {
  tx: ReadTransaction;
  /** The transfer's authority: the buyer. */
  payer: string;
  source: string;
  mint: string;
  destination: string;
  amount: bigint;
  tokenProgram: string;
  /** Position of the TransferChecked among the instructions (to read the chain's errors). */
  transferIndex: number;
}

/** A policy violation: 422 invalid_transaction with details.reason. */
export class ChargeRejected extends Error {
  constructor(
    readonly reason: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'ChargeRejected';
  }
}

function reject(reason: string, message: string, details?: Record<string, unknown>): never {
  throw new ChargeRejected(reason, message, details);
}

const TRANSFER_CHECKED = 12;
const isTokenProgram = (program: string) => program === TOKEN_PROGRAM || program === TOKEN_2022_PROGRAM;
const ALLOWED_PROGRAMS = new Set([
  COMPUTE_BUDGET_PROGRAM,
  TOKEN_PROGRAM,
  TOKEN_2022_PROGRAM,
  ...MEMO_PROGRAMS,
  LIGHTHOUSE_PROGRAM,
]);

export function checkCharge(encoded: string, terms: ChargeTerms, policy: ChargePolicy): CheckedCharge {
  let tx: ReadTransaction;
  try {
    tx = readTransaction(encoded);
  } catch (error) {
    return reject('invalid_transaction_encoding', `the transaction does not decode: ${(error as Error).message}`);
  }
  if (tx.version !== 0) reject('invalid_transaction_encoding', 'the transaction must be a version 0 transaction');
  // Accounts loaded from a lookup table cannot be checked here (the fee payer could hide among them).
  if (tx.lookups > 0)
    reject(
      'invalid_transaction_encoding',
      'address lookup tables are not accepted: every account must be in the message',
    );
  if (tx.accounts[0] !== policy.feePayer) {
    reject(
      'fee_payer_mismatch',
      `the transaction's fee payer (account 0) is ${tx.accounts[0]}, not this facilitator's ${policy.feePayer} (see /mpp/prepare)`,
      {
        feePayer: tx.accounts[0],
        expected: policy.feePayer,
      },
    );
  }

  tx.instructions.forEach((ix, index) => {
    if (!ALLOWED_PROGRAMS.has(ix.program)) {
      reject(
        'program_not_allowed',
        `instruction ${index + 1} calls ${ix.program}; only ComputeBudget, SPL Token or Token-2022 TransferChecked, Memo and Lighthouse are allowed`,
        {
          instruction: index,
          program: ix.program,
        },
      );
    }
    if (isTokenProgram(ix.program) && ix.data[0] !== TRANSFER_CHECKED) {
      reject(
        'program_not_allowed',
        `instruction ${index + 1} is a ${ix.program} instruction other than TransferChecked; only TransferChecked is allowed`,
        {
          instruction: index,
          program: ix.program,
        },
      );
    }
  });
  // The fee payer pays fees and nothing else: it is in no instruction, so no instruction can spend from it.
  const touching = tx.instructions.findIndex((ix) => ix.accounts.includes(policy.feePayer));
  if (touching >= 0) {
    reject(
      'fee_payer_not_isolated',
      `instruction ${touching + 1} uses the fee payer ${policy.feePayer}; the fee payer may appear in no instruction`,
      { instruction: touching },
    );
  }

  const transfers = tx.instructions.map((ix, index) => ({ ix, index })).filter(({ ix }) => isTokenProgram(ix.program));
  if (transfers.length === 0) reject('no_transfer_instruction', 'the transaction has no TransferChecked instruction');
  if (transfers.length > 1)
    reject(
      'multiple_transfers',
      `the transaction has ${transfers.length} TransferChecked instructions; a charge has exactly one`,
    );
  const { ix: transfer, index: transferIndex } = transfers[0]!;
  if (transfer.data.length !== 10 || transfer.accounts.length < 4) {
    reject(
      'invalid_transaction_encoding',
      'the TransferChecked instruction is malformed (it needs 4 accounts and 10 bytes of data)',
      { instruction: transferIndex },
    );
  }

  const budget = computeBudgetOf(tx.instructions.map((ix) => ({ programId: ix.program, data: ix.data })));
  if (budget.unitPriceMicroLamports > policy.maxComputeUnitPriceMicroLamports) {
    reject(
      'compute_price_too_high',
      `compute unit price ${budget.unitPriceMicroLamports} microlamports is above ${policy.maxComputeUnitPriceMicroLamports}`,
      {
        computeUnitPrice: budget.unitPriceMicroLamports.toString(),
        max: policy.maxComputeUnitPriceMicroLamports.toString(),
      },
    );
  }
  // The fee payer pays price × limit: that priority fee is capped at the cap price for the cap limit.
  const priorityFee = (budget.unitLimit * budget.unitPriceMicroLamports + 999_999n) / 1_000_000n;
  const maxFee = (BigInt(policy.maxComputeUnits) * policy.maxComputeUnitPriceMicroLamports) / 1_000_000n;
  if (priorityFee > maxFee) {
    reject(
      'compute_price_too_high',
      `the priority fee (${budget.unitLimit} units at ${budget.unitPriceMicroLamports} microlamports) is ${priorityFee} lamports, above ${maxFee}`,
      {
        priorityFeeLamports: priorityFee.toString(),
        max: maxFee.toString(),
      },
    );
  }

  const [source, mint, destination, authority] = transfer.accounts as [string, string, string, string];
  // The buyer's signature is the authorisation: the authority signs, and every signature but the fee payer's verifies.
  const authorityIndex = tx.accounts.indexOf(authority);
  if (authorityIndex < 1 || authorityIndex >= tx.numRequiredSignatures) {
    reject('signature_invalid', `the transfer authority ${authority} is not a signer of the transaction`);
  }
  for (let i = 1; i < tx.numRequiredSignatures; i++) {
    if (!hasValidSignature(tx, i)) {
      reject(
        'signature_invalid',
        `the signature of ${tx.accounts[i]} is missing or does not match the transaction; sign it before sending`,
        { signer: tx.accounts[i] },
      );
    }
  }

  const { amount } = getTransferCheckedInstructionDataDecoder().decode(transfer.data);
  if (mint !== policy.asset) {
    reject('mint_mismatch', `the transfer moves mint ${mint}; only the stablecoin ${policy.asset} is accepted`, {
      mint,
      expected: policy.asset,
    });
  }
  if (terms.asset !== undefined && terms.asset !== mint) {
    reject('mint_mismatch', `the transfer moves mint ${mint}, not the asset ${terms.asset} the request names`, {
      mint,
      expected: terms.asset,
    });
  }
  if (terms.recipient !== undefined) {
    const expected = associatedTokenAddress(terms.recipient, mint, transfer.program);
    if (destination !== expected) {
      reject(
        'recipient_mismatch',
        `the transfer pays ${destination}, not ${terms.recipient}'s token account ${expected}`,
        { destination, expected },
      );
    }
  }
  if (terms.amount !== undefined && amount !== BigInt(terms.amount)) {
    reject('amount_mismatch', `the transfer moves ${amount} atomic units, the request says exactly ${terms.amount}`, {
      amount: amount.toString(),
      expected: terms.amount,
    });
  }

  return { tx, payer: authority, source, mint, destination, amount, tokenProgram: transfer.program, transferIndex };
}
