import { base58Encode } from '@agent-economy/contracts';
import {
  LocalLedger,
  type InnerInstructionGroup,
  type LedgerAccount,
  type TokenBalance,
  type TxRecord,
} from './ledger';
import {
  BPF_LOADER_UPGRADEABLE,
  RESERVED_KEYS,
  decimalString,
  isTokenProgram,
  memoOf,
  parseInstruction,
  parseTokenAccountData,
  type UiInstructionParsed,
} from '../solana/programs';
import { isSignerIndex, isWritableIndex, parseTransaction, toBase64, type ParsedTransaction } from '../solana/wire';

// Accounts and transactions in the shapes a Solana node (Agave) writes them.

export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

export const invalidParams = (message: string) => new RpcError(-32602, message);

export type AccountEncoding = 'binary' | 'base58' | 'base64' | 'base64+zstd' | 'jsonParsed';
export type TransactionEncoding = 'json' | 'jsonParsed' | 'base58' | 'base64';

const MAX_BASE58_BYTES = 128;

export interface DataSlice {
  offset: number;
  length: number;
}

/** A zstd frame holding `data` in raw (stored) blocks: valid for any zstd decoder, no compressor needed. */
export function zstdStoredFrame(data: Uint8Array): Uint8Array {
  const size = data.length;
  let fcs: Buffer;
  let fcsFlag: number;
  if (size < 256) {
    fcsFlag = 0;
    fcs = Buffer.from([size]);
  } else if (size < 65_536 + 256) {
    fcsFlag = 1;
    fcs = Buffer.alloc(2);
    fcs.writeUInt16LE(size - 256);
  } else {
    fcsFlag = 2;
    fcs = Buffer.alloc(4);
    fcs.writeUInt32LE(size);
  }
  const parts: Uint8Array[] = [Buffer.from([0x28, 0xb5, 0x2f, 0xfd, (fcsFlag << 6) | 0x20]), fcs];
  const blockMax = 128 * 1024;
  let offset = 0;
  do {
    const chunk = data.subarray(offset, offset + blockMax);
    offset += chunk.length;
    const last = offset >= size ? 1 : 0;
    const header = (chunk.length << 3) | last; // block type 0: raw
    parts.push(Buffer.from([header & 0xff, (header >> 8) & 0xff, (header >> 16) & 0xff]), chunk);
  } while (offset < size);
  return Buffer.concat(parts);
}

/** One account as getAccountInfo returns it; throws the node's -32600 for base58 of large data. */
export function encodeAccount(
  ledger: LocalLedger,
  account: LedgerAccount,
  encoding: AccountEncoding,
  slice?: DataSlice,
): Record<string, unknown> {
  let data: unknown;
  if (encoding === 'jsonParsed') {
    const parsed = isTokenProgram(account.owner)
      ? parseTokenAccountData(account.owner, account.data, (mint) => ledger.mintDecimals(mint))
      : undefined;
    data = parsed ?? [toBase64(account.data), 'base64'];
  } else {
    const bytes = slice
      ? account.data.subarray(
          Math.min(slice.offset, account.data.length),
          Math.min(slice.offset + slice.length, account.data.length),
        )
      : account.data;
    if ((encoding === 'binary' || encoding === 'base58') && bytes.length > MAX_BASE58_BYTES) {
      throw new RpcError(
        -32600,
        `Encoded binary (base 58) data should be less than ${MAX_BASE58_BYTES} bytes, please use Base64 encoding.`,
      );
    }
    if (encoding === 'binary') data = base58Encode(bytes);
    else if (encoding === 'base58') data = [base58Encode(bytes), 'base58'];
    else if (encoding === 'base64') data = [toBase64(bytes), 'base64'];
    else data = [toBase64(zstdStoredFrame(bytes)), 'base64+zstd'];
  }
  return {
    data,
    executable: account.executable,
    lamports: account.lamports,
    owner: account.owner,
    rentEpoch: account.rentEpoch,
    space: BigInt(account.data.length),
  };
}

function uiTokenBalance(balance: TokenBalance): Record<string, unknown> {
  // stored token balances read back with uiAmount null for zero, as a node's do
  const uiAmount = balance.amount === 0n ? null : Number(balance.amount) / 10 ** balance.decimals;
  return {
    accountIndex: balance.accountIndex,
    mint: balance.mint,
    owner: balance.owner,
    programId: balance.programId,
    uiTokenAmount: {
      amount: balance.amount.toString(),
      decimals: balance.decimals,
      uiAmount,
      uiAmountString: decimalString(balance.amount, balance.decimals),
    },
  };
}

export const uiTokenBalances = (balances: TokenBalance[]) => balances.map(uiTokenBalance);

/** Inner instructions, compiled (json) or parsed (jsonParsed and simulateTransaction). */
export function uiInnerInstructions(groups: InnerInstructionGroup[], keys: string[], parsed: boolean): unknown[] {
  return groups.map((group) => ({
    index: group.index,
    instructions: group.instructions.map((ix) =>
      parsed
        ? parsedInstruction(keys, ix.programIdIndex, ix.accounts, ix.data, ix.stackHeight)
        : {
            programIdIndex: ix.programIdIndex,
            accounts: ix.accounts,
            data: base58Encode(ix.data),
            stackHeight: ix.stackHeight,
          },
    ),
  }));
}

function parsedInstruction(
  keys: string[],
  programIdIndex: number,
  accounts: number[],
  data: Uint8Array,
  stackHeight: number | null,
): UiInstructionParsed {
  return parseInstruction(
    keys[programIdIndex] ?? '',
    accounts.map((a) => keys[a] ?? ''),
    data,
    stackHeight,
  );
}

export const statusOf = (err: unknown) => (err === null ? { Ok: null } : { Err: err });

function parsedAccountKeys(tx: ParsedTransaction, record: TxRecord): Record<string, unknown>[] {
  const keys = LocalLedger.keysOf(record);
  const staticCount = tx.message.staticKeys.length;
  const invoked = new Set(tx.message.instructions.map((ix) => ix.programIdIndex));
  const upgradeableLoaderPresent = keys.includes(BPF_LOADER_UPGRADEABLE);
  return keys.map((pubkey, i) => ({
    pubkey,
    signer: isSignerIndex(tx.message, i),
    source: i < staticCount ? 'transaction' : 'lookupTable',
    // writable as the runtime locks it: reserved accounts and invoked programs are demoted
    writable:
      isWritableIndex(tx.message, i, record.loadedWritable.length) &&
      !RESERVED_KEYS.has(pubkey) &&
      !(invoked.has(i) && !upgradeableLoaderPresent),
  }));
}

function encodeTransactionBody(record: TxRecord, tx: ParsedTransaction, encoding: TransactionEncoding): unknown {
  if (encoding === 'base64') return [toBase64(record.wire), 'base64'];
  if (encoding === 'base58') return [base58Encode(record.wire), 'base58'];
  const m = tx.message;
  const message: Record<string, unknown> = {};
  if (encoding === 'jsonParsed') {
    const keys = LocalLedger.keysOf(record);
    message.accountKeys = parsedAccountKeys(tx, record);
    message.recentBlockhash = m.recentBlockhash;
    message.instructions = m.instructions.map((ix) =>
      parsedInstruction(keys, ix.programIdIndex, ix.accounts, ix.data, null),
    );
  } else {
    message.accountKeys = m.staticKeys;
    message.header = {
      numReadonlySignedAccounts: m.numReadonlySigned,
      numReadonlyUnsignedAccounts: m.numReadonlyUnsigned,
      numRequiredSignatures: m.numRequiredSignatures,
    };
    message.recentBlockhash = m.recentBlockhash;
    message.instructions = m.instructions.map((ix) => ({
      programIdIndex: ix.programIdIndex,
      accounts: ix.accounts,
      data: base58Encode(ix.data),
      stackHeight: null,
    }));
  }
  if (m.version === 0) message.addressTableLookups = m.lookups;
  return { message, signatures: tx.signatures.map((s) => base58Encode(s)) };
}

function encodeMeta(record: TxRecord, encoding: TransactionEncoding, showRewards: boolean): Record<string, unknown> {
  const parsed = encoding === 'jsonParsed';
  const keys = LocalLedger.keysOf(record);
  const meta: Record<string, unknown> = {
    err: record.err,
    status: statusOf(record.err),
    fee: record.fee,
    preBalances: record.preBalances,
    postBalances: record.postBalances,
    innerInstructions: uiInnerInstructions(record.innerInstructions, keys, parsed),
    logMessages: record.logs,
    preTokenBalances: uiTokenBalances(record.preTokenBalances),
    postTokenBalances: uiTokenBalances(record.postTokenBalances),
    rewards: showRewards ? [] : null,
  };
  if (!parsed) meta.loadedAddresses = { writable: record.loadedWritable, readonly: record.loadedReadonly };
  if (record.returnData)
    meta.returnData = { programId: record.returnData.programId, data: [toBase64(record.returnData.data), 'base64'] };
  meta.computeUnitsConsumed = record.computeUnits;
  return meta;
}

export const versionOf = (record: TxRecord): 'legacy' | 0 => parseTransaction(record.wire).message.version;

/** Refuses a v0 transaction to a client that did not say it understands them, as a node does (-32015). */
export function checkVersion(record: TxRecord, maxSupportedTransactionVersion: number | undefined): 'legacy' | 0 {
  const version = versionOf(record);
  if (version === 0 && maxSupportedTransactionVersion === undefined) {
    throw new RpcError(
      -32015,
      'Transaction version (0) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": 0',
    );
  }
  return version;
}

/** A transaction with its status meta, as getTransaction and getBlock (full details) return it. */
export function encodeTransactionWithMeta(
  record: TxRecord,
  encoding: TransactionEncoding,
  maxSupportedTransactionVersion: number | undefined,
  showRewards = true,
): Record<string, unknown> {
  const version = checkVersion(record, maxSupportedTransactionVersion);
  const tx = parseTransaction(record.wire);
  const out: Record<string, unknown> = {
    meta: encodeMeta(record, encoding, showRewards),
    transaction: encodeTransactionBody(record, tx, encoding),
  };
  if (maxSupportedTransactionVersion !== undefined) out.version = version;
  return out;
}

/** getBlock with transactionDetails "accounts": signatures and account keys, balances only. */
export function encodeTransactionAccounts(
  record: TxRecord,
  maxSupportedTransactionVersion: number | undefined,
): Record<string, unknown> {
  const version = checkVersion(record, maxSupportedTransactionVersion);
  const tx = parseTransaction(record.wire);
  const out: Record<string, unknown> = {
    meta: {
      err: record.err,
      status: statusOf(record.err),
      fee: record.fee,
      preBalances: record.preBalances,
      postBalances: record.postBalances,
      preTokenBalances: uiTokenBalances(record.preTokenBalances),
      postTokenBalances: uiTokenBalances(record.postTokenBalances),
    },
    transaction: { accountKeys: parsedAccountKeys(tx, record), signatures: tx.signatures.map((s) => base58Encode(s)) },
  };
  if (maxSupportedTransactionVersion !== undefined) out.version = version;
  return out;
}

export function memoOfRecord(record: TxRecord): string | null {
  const tx = parseTransaction(record.wire);
  const keys = LocalLedger.keysOf(record);
  return memoOf(tx.message.instructions.map((ix) => ({ programId: keys[ix.programIdIndex] ?? '', data: ix.data })));
}
