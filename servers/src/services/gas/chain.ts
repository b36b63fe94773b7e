import {
  AccountRole,
  SOLANA_ERROR__JSON_RPC__INVALID_PARAMS,
  address,
  appendTransactionMessageInstructions,
  compileTransaction,
  createTransactionMessage,
  isSolanaError,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  type Address,
  type Base64EncodedWireTransaction,
  type Blockhash,
  type Instruction,
} from '@solana/kit';
import { describeTransactionError, type TransactionErrorJson } from '../../solana/tx-error';
import {
  PACKET_DATA_SIZE,
  WireError,
  decodeBase64,
  encodeTransaction,
  isWritableIndex,
  parseTransaction,
  sanitizeTransaction,
  toBase64,
  type ParsedTransaction,
} from '../../solana/wire';
import { HttpError, unprocessable } from '../../runtime/errors';
import type { SolanaSource } from '../../upstream/solana';
import type { PerformanceSample, SlotFee } from './domain';

// Reads of the chain through the shared Solana source (every call recorded for health; a failure is
// 502 upstream_unavailable), and the transaction decoding /api/simulate needs before it asks the chain.

/** Newest performance samples to read (60 s each): the last ten minutes. */
export const PERFORMANCE_SAMPLES = 10;

/** Per-slot prioritization fees of the node's cache (at most 150 slots), oldest first. */
export async function readSlotFees(chain: SolanaSource, accounts?: readonly string[]): Promise<SlotFee[]> {
  const fees = await chain.read((rpc) =>
    (accounts && accounts.length > 0
      ? rpc.getRecentPrioritizationFees(accounts.map((a) => address(a)))
      : rpc.getRecentPrioritizationFees()
    ).send(),
  );
  return fees.map((f) => ({ slot: Number(f.slot), fee: Number(f.prioritizationFee) })).sort((a, b) => a.slot - b.slot);
}

/** The newest performance samples, newest first. */
export async function readPerformanceSamples(chain: SolanaSource): Promise<PerformanceSample[]> {
  const samples = await chain.read((rpc) => rpc.getRecentPerformanceSamples(PERFORMANCE_SAMPLES).send());
  return samples.map((s) => ({
    slot: Number(s.slot),
    numTransactions: Number(s.numTransactions),
    numNonVoteTransactions: Number(s.numNonVoteTransactions),
    numSlots: Number(s.numSlots),
    samplePeriodSecs: Number(s.samplePeriodSecs),
  }));
}

export async function readEpoch(chain: SolanaSource): Promise<{ slot: number; epoch: number }> {
  const info = await chain.read((rpc) => rpc.getEpochInfo({ commitment: 'confirmed' }).send());
  return { slot: Number(info.absoluteSlot), epoch: Number(info.epoch) };
}

export async function readSlot(chain: SolanaSource): Promise<number> {
  return Number(await chain.read((rpc) => rpc.getSlot({ commitment: 'confirmed' }).send()));
}

// ---------------------------------------------------------------------------------------------------
// Transactions to simulate

/** A transaction ready to simulate, with what the response reports about it. */
export interface DecodedTransaction {
  wire: Uint8Array;
  signatures: number;
  instructions: { programId: string; data: Uint8Array }[];
  /** Static accounts the transaction write-locks: its local fee markets. */
  writableAccounts: string[];
}

function describe(tx: ParsedTransaction): DecodedTransaction {
  const m = tx.message;
  return {
    wire: tx.bytes,
    signatures: m.numRequiredSignatures,
    instructions: m.instructions.map((ix) => ({ programId: m.staticKeys[ix.programIdIndex]!, data: ix.data })),
    writableAccounts: m.staticKeys.filter((_, i) => isWritableIndex(m, i, 0)),
  };
}

/** Strict base64 (canonical padding and last symbol, as a node decodes it), or 400 naming the field. */
function base64Field(text: string, field: string): Uint8Array {
  try {
    return decodeBase64(text);
  } catch (error) {
    if (!(error instanceof WireError)) throw error;
    const message = `must be canonical standard base64 (${error.message})`;
    throw new HttpError(400, 'invalid_request', `Invalid request: ${field} ${message}`, {
      fields: [{ field, message }],
    });
  }
}

/** Decodes a base64 wire transaction: 422 transaction_undecodable when the bytes are not one. */
export function decodeTransaction(base64: string): DecodedTransaction {
  const bytes = base64Field(base64, 'body.transaction');
  if (bytes.length > PACKET_DATA_SIZE) {
    throw unprocessable(
      'transaction_too_large',
      `The transaction is ${bytes.length} bytes; a packet holds at most ${PACKET_DATA_SIZE}`,
      {
        field: 'body.transaction',
      },
    );
  }
  let tx: ParsedTransaction;
  try {
    tx = parseTransaction(bytes);
  } catch (error) {
    if (!(error instanceof WireError)) throw error;
    throw unprocessable(
      'transaction_undecodable',
      `The bytes are not a Solana transaction (legacy or v0): ${error.message}`,
      {
        field: 'body.transaction',
      },
    );
  }
  const problem = sanitizeTransaction(tx);
  if (problem) {
    throw unprocessable('transaction_invalid', `The transaction is malformed: ${describeTransactionError(problem)}`, {
      field: 'body.transaction',
      reason: problem,
    });
  }
  return describe(tx);
}

export interface InstructionInput {
  programId: string;
  accounts: { pubkey: string; isSigner: boolean; isWritable: boolean }[];
  data: string;
}

const roleOf = (meta: { isSigner: boolean; isWritable: boolean }) =>
  meta.isSigner
    ? meta.isWritable
      ? AccountRole.WRITABLE_SIGNER
      : AccountRole.READONLY_SIGNER
    : meta.isWritable
      ? AccountRole.WRITABLE
      : AccountRole.READONLY;

/**
 * Compiles instruction details into a v0 transaction paid by `payer`, with empty signatures (a
 * simulation does not verify them). 422 when they do not make a transaction a node would accept.
 */
export function compileInstructions(
  payer: string,
  inputs: readonly InstructionInput[],
  blockhash: { blockhash: string; lastValidBlockHeight: bigint },
): DecodedTransaction {
  let wire: Uint8Array;
  try {
    const instructions: Instruction[] = inputs.map((ix, i) => ({
      programAddress: address(ix.programId),
      accounts: ix.accounts.map((a) => ({ address: address(a.pubkey) as Address, role: roleOf(a) })),
      data: base64Field(ix.data, `body.instructions.${i}.data`),
    }));
    const message = pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayer(address(payer), m),
      (m) =>
        setTransactionMessageLifetimeUsingBlockhash(
          { blockhash: blockhash.blockhash as Blockhash, lastValidBlockHeight: blockhash.lastValidBlockHeight },
          m,
        ),
      (m) => appendTransactionMessageInstructions(instructions, m),
    );
    const compiled = compileTransaction(message);
    const messageBytes = new Uint8Array(compiled.messageBytes);
    const signers = Object.keys(compiled.signatures).length;
    wire = encodeTransaction(
      Array.from({ length: signers }, () => new Uint8Array(64)),
      messageBytes,
    );
  } catch (error) {
    if (error instanceof HttpError) throw error;
    const reason = error instanceof Error ? error.message : String(error);
    throw unprocessable('transaction_invalid', `The instructions do not compile into a transaction: ${reason}`, {
      field: 'body.instructions',
    });
  }
  if (wire.length > PACKET_DATA_SIZE) {
    throw unprocessable(
      'transaction_too_large',
      `The compiled transaction is ${wire.length} bytes; a packet holds at most ${PACKET_DATA_SIZE}`,
      {
        field: 'body.instructions',
      },
    );
  }
  const tx = parseTransaction(wire);
  const problem = sanitizeTransaction(tx);
  if (problem) {
    throw unprocessable(
      'transaction_invalid',
      `The instructions make a malformed transaction: ${describeTransactionError(problem)}`,
      {
        field: 'body.instructions',
        reason: problem,
      },
    );
  }
  return describe(tx);
}

/** A blockhash for checks that run before the chain is asked (the simulation replaces it anyway). */
export const PLACEHOLDER_BLOCKHASH = { blockhash: '11111111111111111111111111111111', lastValidBlockHeight: 0n };

export async function readLatestBlockhash(
  chain: SolanaSource,
): Promise<{ blockhash: string; lastValidBlockHeight: bigint }> {
  const { value } = await chain.read((rpc) => rpc.getLatestBlockhash({ commitment: 'confirmed' }).send());
  return { blockhash: value.blockhash, lastValidBlockHeight: value.lastValidBlockHeight };
}

export interface SimulationResult {
  slot: number;
  err: TransactionErrorJson | null;
  logs: string[];
  unitsConsumed: number;
}

/** kit reads every JSON number as a bigint: back to numbers for the error value. */
function plain(value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (Array.isArray(value)) return value.map(plain);
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  return value;
}

/**
 * Runs the transaction on the chain without committing it: signatures unchecked, blockhash replaced
 * by the latest. A transaction the node refuses to load is 422 transaction_invalid.
 */
export async function simulate(chain: SolanaSource, wire: Uint8Array): Promise<SimulationResult> {
  const response = await chain.read(async (rpc) => {
    try {
      return await rpc
        .simulateTransaction(toBase64(wire) as Base64EncodedWireTransaction, {
          encoding: 'base64',
          sigVerify: false,
          replaceRecentBlockhash: true,
          commitment: 'confirmed',
        })
        .send();
    } catch (error) {
      if (isSolanaError(error, SOLANA_ERROR__JSON_RPC__INVALID_PARAMS)) {
        throw unprocessable('transaction_invalid', `The node refused the transaction: ${error.message}`);
      }
      throw error;
    }
  });
  const { value, context } = response;
  return {
    slot: Number(context.slot),
    err: value.err === null ? null : (plain(value.err) as TransactionErrorJson),
    logs: [...(value.logs ?? [])],
    unitsConsumed: Number(value.unitsConsumed ?? 0n),
  };
}

export function simulationError(
  err: TransactionErrorJson | null,
): { code: string; message: string; instructionIndex: number | null } | null {
  if (err === null) return null;
  const code = typeof err === 'string' ? err : (Object.keys(err)[0] ?? 'TransactionError');
  const instructionIndex = typeof err === 'object' && 'InstructionError' in err ? err.InstructionError[0] : null;
  let message: string;
  try {
    message = describeTransactionError(err);
  } catch {
    message = JSON.stringify(err);
  }
  return { code, message, instructionIndex };
}
