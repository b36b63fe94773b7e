import { createHash } from 'node:crypto';
import { isOffCurveAddress, type Address } from '@solana/kit';
import { base58Encode } from '@agent-economy/contracts';
import { addressBytes, encodeAddress } from './wire';

// What the ledger knows about the programs it hosts: ids, SPL Token layouts, the jsonParsed forms a
// node gives accounts and instructions, and the fee and compute-budget arithmetic.

export const SYSTEM_PROGRAM = '11111111111111111111111111111111';
export const TOKEN_PROGRAM = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
export const TOKEN_2022_PROGRAM = 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb';
export const ASSOCIATED_TOKEN_PROGRAM = 'ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL';
export const MEMO_PROGRAM = 'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr';
export const MEMO_V1_PROGRAM = 'Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo';
export const COMPUTE_BUDGET_PROGRAM = 'ComputeBudget111111111111111111111111111111';
export const ADDRESS_LOOKUP_TABLE_PROGRAM = 'AddressLookupTab1e1111111111111111111111111';
export const BPF_LOADER_UPGRADEABLE = 'BPFLoaderUpgradeab1e11111111111111111111111';
const ED25519_PROGRAM = 'Ed25519SigVerify111111111111111111111111111';
const SECP256K1_PROGRAM = 'KeccakSecp256k11111111111111111111111111111';
const SECP256R1_PROGRAM = 'Secp256r1SigVerify1111111111111111111111111';

export const LAMPORTS_PER_SIGNATURE = 5000n;
const MAX_COMPUTE_UNIT_LIMIT = 1_400_000n;
const DEFAULT_INSTRUCTION_COMPUTE_UNITS = 200_000n;
const BUILTIN_INSTRUCTION_COMPUTE_UNITS = 3_000n;

const SYSVARS = [
  'SysvarC1ock11111111111111111111111111111111',
  'SysvarEpochRewards1111111111111111111111111',
  'SysvarEpochSchedu1e111111111111111111111111',
  'SysvarFees111111111111111111111111111111111',
  'Sysvar1nstructions1111111111111111111111111',
  'SysvarLastRestartS1ot1111111111111111111111',
  'SysvarRecentB1ockHashes11111111111111111111',
  'SysvarRent111111111111111111111111111111111',
  'SysvarRewards111111111111111111111111111111',
  'SysvarS1otHashes111111111111111111111111111',
  'SysvarS1otHistory11111111111111111111111111',
  'SysvarStakeHistory1111111111111111111111111',
  'Sysvar1111111111111111111111111111111111111',
];
const BUILTINS = [
  SYSTEM_PROGRAM,
  COMPUTE_BUDGET_PROGRAM,
  ADDRESS_LOOKUP_TABLE_PROGRAM,
  BPF_LOADER_UPGRADEABLE,
  'BPFLoader1111111111111111111111111111111111',
  'BPFLoader2111111111111111111111111111111111',
  'LoaderV411111111111111111111111111111111111',
  'Vote111111111111111111111111111111111111111',
  'Stake11111111111111111111111111111111111111',
  'Config1111111111111111111111111111111111111',
  ED25519_PROGRAM,
  SECP256K1_PROGRAM,
  SECP256R1_PROGRAM,
];
/** Accounts a transaction may list as writable but never write (Agave demotes them to read-only). */
export const RESERVED_KEYS = new Set([
  ...SYSVARS,
  ...BUILTINS,
  'Feature111111111111111111111111111111111111',
  'NativeLoader1111111111111111111111111111111',
  'ZkE1Gama1Proof11111111111111111111111111111',
  'ZkTokenProof1111111111111111111111111111111',
]);
const BUILTIN_SET = new Set(BUILTINS);

export function isTokenProgram(program: string): boolean {
  return program === TOKEN_PROGRAM || program === TOKEN_2022_PROGRAM;
}

// ---------------------------------------------------------------------------------------------------
// SPL Token state

export interface TokenAccountState {
  mint: string;
  owner: string;
  amount: bigint;
  delegate: string | null;
  state: 'initialized' | 'frozen';
  isNative: bigint | null;
  delegatedAmount: bigint;
  closeAuthority: string | null;
}

export interface MintState {
  mintAuthority: string | null;
  supply: bigint;
  decimals: number;
  freezeAuthority: string | null;
}

const view = (data: Uint8Array) => new DataView(data.buffer, data.byteOffset, data.byteLength);

/** Reads a COption<T>: u32 tag (0 none, 1 some) then the value; undefined for a malformed tag. */
function optionAt<T>(data: Uint8Array, offset: number, read: (at: number) => T): T | null | undefined {
  const tag = view(data).getUint32(offset, true);
  if (tag === 0) return null;
  if (tag === 1) return read(offset + 4);
  return undefined;
}

const keyAt = (data: Uint8Array) => (at: number) => encodeAddress(data.subarray(at, at + 32));

/** An initialized SPL Token (or Token-2022) account's base state, or null for anything else. */
export function decodeTokenAccount(program: string, data: Uint8Array): TokenAccountState | null {
  if (!isTokenProgram(program)) return null;
  const base = data.length === 165 || (program === TOKEN_2022_PROGRAM && data.length > 165 && data[165] === 2);
  if (!base) return null;
  const stateByte = data[108];
  if (stateByte !== 1 && stateByte !== 2) return null;
  const dv = view(data);
  const delegate = optionAt(data, 72, keyAt(data));
  const isNative = optionAt(data, 109, (at) => dv.getBigUint64(at, true));
  const closeAuthority = optionAt(data, 129, keyAt(data));
  if (delegate === undefined || isNative === undefined || closeAuthority === undefined) return null;
  return {
    mint: encodeAddress(data.subarray(0, 32)),
    owner: encodeAddress(data.subarray(32, 64)),
    amount: dv.getBigUint64(64, true),
    delegate,
    state: stateByte === 1 ? 'initialized' : 'frozen',
    isNative,
    delegatedAmount: dv.getBigUint64(121, true),
    closeAuthority,
  };
}

/** An initialized mint's state, or null. */
export function decodeMint(program: string, data: Uint8Array): MintState | null {
  if (!isTokenProgram(program)) return null;
  const base = data.length === 82 || (program === TOKEN_2022_PROGRAM && data.length > 165 && data[165] === 1);
  if (!base || data[45] !== 1) return null;
  const mintAuthority = optionAt(data, 0, keyAt(data));
  const freezeAuthority = optionAt(data, 46, keyAt(data));
  if (mintAuthority === undefined || freezeAuthority === undefined) return null;
  return { mintAuthority, supply: view(data).getBigUint64(36, true), decimals: data[44]!, freezeAuthority };
}

/** An 82-byte SPL Token mint. */
export function encodeMint(mint: MintState): Uint8Array {
  const data = new Uint8Array(82);
  const dv = view(data);
  if (mint.mintAuthority) {
    dv.setUint32(0, 1, true);
    data.set(addressBytes(mint.mintAuthority), 4);
  }
  dv.setBigUint64(36, mint.supply, true);
  data[44] = mint.decimals;
  data[45] = 1;
  if (mint.freezeAuthority) {
    dv.setUint32(46, 1, true);
    data.set(addressBytes(mint.freezeAuthority), 50);
  }
  return data;
}

export interface UiTokenAmount {
  amount: string;
  decimals: number;
  uiAmount: number | null;
  uiAmountString: string;
}

/** An atomic amount as a decimal string without trailing zeros ("1.5", "0"). */
export function decimalString(amount: bigint, decimals: number): string {
  if (decimals === 0) return amount.toString();
  const digits = amount.toString().padStart(decimals + 1, '0');
  const fraction = digits.slice(-decimals).replace(/0+$/, '');
  const whole = digits.slice(0, -decimals);
  return fraction ? `${whole}.${fraction}` : whole;
}

export function uiTokenAmount(amount: bigint, decimals: number): UiTokenAmount {
  // uiAmount is informational and a double on the node too (amount as f64 / 10^decimals)
  return {
    amount: amount.toString(),
    decimals,
    uiAmount: Number(amount) / 10 ** decimals,
    uiAmountString: decimalString(amount, decimals),
  };
}

// ---------------------------------------------------------------------------------------------------
// Program derived addresses

/** The program derived address of `seeds` under `programId`, computed synchronously. */
export function findProgramAddress(seeds: Uint8Array[], programId: string): [string, number] {
  const program = addressBytes(programId);
  for (let bump = 255; bump >= 0; bump--) {
    const hash = createHash('sha256');
    for (const seed of seeds) hash.update(seed);
    hash.update(Uint8Array.of(bump)).update(program).update('ProgramDerivedAddress');
    const candidate = base58Encode(new Uint8Array(hash.digest()));
    if (isOffCurveAddress(candidate as Address)) return [candidate, bump];
  }
  throw new Error('no viable bump seed');
}

const ataCache = new Map<string, string>();

export function associatedTokenAddress(owner: string, mint: string, tokenProgram = TOKEN_PROGRAM): string {
  const key = `${owner}:${mint}:${tokenProgram}`;
  let ata = ataCache.get(key);
  if (!ata) {
    ata = findProgramAddress(
      [addressBytes(owner), addressBytes(tokenProgram), addressBytes(mint)],
      ASSOCIATED_TOKEN_PROGRAM,
    )[0];
    if (ataCache.size > 50_000) ataCache.clear();
    ataCache.set(key, ata);
  }
  return ata;
}

// ---------------------------------------------------------------------------------------------------
// jsonParsed accounts

type MintDecimals = (mint: string) => number | undefined;

/** The node's jsonParsed form of a token account or mint, or undefined when it does not parse. */
export function parseTokenAccountData(program: string, data: Uint8Array, decimalsOf: MintDecimals): object | undefined {
  const programName = program === TOKEN_PROGRAM ? 'spl-token' : 'spl-token-2022';
  // Token-2022 extensions are not parsed here; such accounts fall back to base64 as unparsable ones do
  const account = data.length === 165 ? decodeTokenAccount(program, data) : null;
  if (account) {
    const decimals = decimalsOf(account.mint);
    if (decimals === undefined) return undefined;
    const info: Record<string, unknown> = {
      isNative: account.isNative !== null,
      mint: account.mint,
      owner: account.owner,
      state: account.state,
      tokenAmount: uiTokenAmount(account.amount, decimals),
    };
    if (account.delegate) {
      info.delegate = account.delegate;
      info.delegatedAmount = uiTokenAmount(account.delegatedAmount, decimals);
    }
    if (account.isNative !== null) info.rentExemptReserve = uiTokenAmount(account.isNative, decimals);
    if (account.closeAuthority) info.closeAuthority = account.closeAuthority;
    return { program: programName, parsed: { info, type: 'account' }, space: data.length };
  }
  const mint = data.length === 82 ? decodeMint(program, data) : null;
  if (mint) {
    return {
      program: programName,
      parsed: {
        info: {
          decimals: mint.decimals,
          freezeAuthority: mint.freezeAuthority,
          isInitialized: true,
          mintAuthority: mint.mintAuthority,
          supply: mint.supply.toString(),
        },
        type: 'mint',
      },
      space: data.length,
    };
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------------
// jsonParsed instructions

export type UiInstructionParsed =
  | { program: string; programId: string; parsed: unknown; stackHeight: number | null }
  | { programId: string; accounts: string[]; data: string; stackHeight: number | null };

class Unparsable extends Error {}

function need(accounts: string[], n: number): void {
  if (accounts.length < n) throw new Unparsable();
}

function u64At(data: Uint8Array, at: number): bigint {
  if (data.length < at + 8) throw new Unparsable();
  return view(data).getBigUint64(at, true);
}

const EXTENSION_TYPES: Record<number, string> = {
  1: 'transferFeeConfig',
  2: 'transferFeeAmount',
  3: 'mintCloseAuthority',
  6: 'defaultAccountState',
  7: 'immutableOwner',
  8: 'memoTransfer',
  9: 'nonTransferable',
  10: 'interestBearingConfig',
  11: 'cpiGuard',
  12: 'permanentDelegate',
  13: 'nonTransferableAccount',
  14: 'transferHook',
  15: 'transferHookAccount',
};

function parseToken(data: Uint8Array, a: string[]): { type: string; info: object } {
  const tag = data[0];
  switch (tag) {
    case 1:
      need(a, 4);
      return { type: 'initializeAccount', info: { account: a[0], mint: a[1], owner: a[2], rentSysvar: a[3] } };
    case 3:
      need(a, 3);
      return {
        type: 'transfer',
        info: { source: a[0], destination: a[1], authority: a[2], amount: u64At(data, 1).toString() },
      };
    case 4:
      need(a, 3);
      return {
        type: 'approve',
        info: { source: a[0], delegate: a[1], owner: a[2], amount: u64At(data, 1).toString() },
      };
    case 5:
      need(a, 2);
      return { type: 'revoke', info: { source: a[0], owner: a[1] } };
    case 7:
      need(a, 3);
      return {
        type: 'mintTo',
        info: { mint: a[0], account: a[1], mintAuthority: a[2], amount: u64At(data, 1).toString() },
      };
    case 8:
      need(a, 3);
      return { type: 'burn', info: { account: a[0], mint: a[1], authority: a[2], amount: u64At(data, 1).toString() } };
    case 9:
      need(a, 3);
      return { type: 'closeAccount', info: { account: a[0], destination: a[1], owner: a[2] } };
    case 12:
    case 13:
    case 14:
    case 15: {
      need(a, tag === 12 || tag === 13 ? 4 : 3);
      if (data.length < 10) throw new Unparsable();
      const tokenAmount = uiTokenAmount(u64At(data, 1), data[9]!);
      if (tag === 12)
        return {
          type: 'transferChecked',
          info: { source: a[0], mint: a[1], destination: a[2], authority: a[3], tokenAmount },
        };
      if (tag === 13)
        return { type: 'approveChecked', info: { source: a[0], mint: a[1], delegate: a[2], owner: a[3], tokenAmount } };
      if (tag === 14)
        return { type: 'mintToChecked', info: { mint: a[0], account: a[1], mintAuthority: a[2], tokenAmount } };
      return { type: 'burnChecked', info: { account: a[0], mint: a[1], authority: a[2], tokenAmount } };
    }
    case 17:
      need(a, 1);
      return { type: 'syncNative', info: { account: a[0] } };
    case 18:
      need(a, 2);
      if (data.length < 33) throw new Unparsable();
      return {
        type: 'initializeAccount3',
        info: { account: a[0], mint: a[1], owner: base58Encode(data.subarray(1, 33)) },
      };
    case 20: {
      need(a, 1);
      if (data.length < 35) throw new Unparsable();
      const info: Record<string, unknown> = {
        mint: a[0],
        decimals: data[1],
        mintAuthority: base58Encode(data.subarray(2, 34)),
      };
      if (data[34] === 1 && data.length >= 67) info.freezeAuthority = base58Encode(data.subarray(35, 67));
      return { type: 'initializeMint2', info };
    }
    case 21: {
      need(a, 1);
      const info: Record<string, unknown> = { mint: a[0] };
      const types: string[] = [];
      for (let i = 1; i + 1 < data.length; i += 2) {
        const name = EXTENSION_TYPES[view(data).getUint16(i, true)];
        if (!name) throw new Unparsable();
        types.push(name);
      }
      if (types.length > 0) info.extensionTypes = types;
      return { type: 'getAccountDataSize', info };
    }
    case 22:
      need(a, 1);
      return { type: 'initializeImmutableOwner', info: { account: a[0] } };
    default:
      throw new Unparsable();
  }
}

function parseSystem(data: Uint8Array, a: string[]): { type: string; info: object } {
  if (data.length < 4) throw new Unparsable();
  const dv = view(data);
  switch (dv.getUint32(0, true)) {
    case 0:
      need(a, 2);
      if (data.length < 52) throw new Unparsable();
      return {
        type: 'createAccount',
        info: {
          source: a[0],
          newAccount: a[1],
          lamports: dv.getBigUint64(4, true),
          space: dv.getBigUint64(12, true),
          owner: base58Encode(data.subarray(20, 52)),
        },
      };
    case 1:
      need(a, 1);
      if (data.length < 36) throw new Unparsable();
      return { type: 'assign', info: { account: a[0], owner: base58Encode(data.subarray(4, 36)) } };
    case 2:
      need(a, 2);
      return { type: 'transfer', info: { source: a[0], destination: a[1], lamports: u64At(data, 4) } };
    case 4:
      need(a, 3);
      return {
        type: 'advanceNonce',
        info: { nonceAccount: a[0], recentBlockhashesSysvar: a[1], nonceAuthority: a[2] },
      };
    case 8:
      need(a, 1);
      return { type: 'allocate', info: { account: a[0], space: u64At(data, 4) } };
    default:
      throw new Unparsable();
  }
}

function parseAssociatedToken(data: Uint8Array, a: string[]): { type: string; info: object } {
  const kind = data.length === 0 ? 0 : data[0];
  if (data.length > 1 || (kind !== 0 && kind !== 1)) throw new Unparsable();
  need(a, 6);
  return {
    type: kind === 0 ? 'create' : 'createIdempotent',
    info: { source: a[0], account: a[1], wallet: a[2], mint: a[3], systemProgram: a[4], tokenProgram: a[5] },
  };
}

/** The node's jsonParsed form of one instruction: parsed for the programs it knows, else partially decoded. */
export function parseInstruction(
  programId: string,
  accounts: string[],
  data: Uint8Array,
  stackHeight: number | null,
): UiInstructionParsed {
  try {
    if (programId === MEMO_PROGRAM || programId === MEMO_V1_PROGRAM) {
      const text = new TextDecoder('utf-8', { fatal: true }).decode(data);
      return { program: 'spl-memo', programId, parsed: text, stackHeight };
    }
    if (programId === SYSTEM_PROGRAM)
      return { program: 'system', programId, parsed: parseSystem(data, accounts), stackHeight };
    if (isTokenProgram(programId)) {
      return {
        program: programId === TOKEN_PROGRAM ? 'spl-token' : 'spl-token-2022',
        programId,
        parsed: parseToken(data, accounts),
        stackHeight,
      };
    }
    if (programId === ASSOCIATED_TOKEN_PROGRAM) {
      return {
        program: 'spl-associated-token-account',
        programId,
        parsed: parseAssociatedToken(data, accounts),
        stackHeight,
      };
    }
  } catch (error) {
    if (!(error instanceof Unparsable) && !(error instanceof TypeError)) throw error;
  }
  return { programId, accounts, data: base58Encode(data), stackHeight };
}

// ---------------------------------------------------------------------------------------------------
// Fees, compute budget, memos

export interface BudgetInstruction {
  programId: string;
  data: Uint8Array;
}

export interface ComputeBudget {
  unitLimit: bigint;
  unitPriceMicroLamports: bigint;
}

/** The compute-unit limit and price a transaction asks for, with Agave's defaults. */
export function computeBudgetOf(instructions: BudgetInstruction[]): ComputeBudget {
  let limit: bigint | undefined;
  let price = 0n;
  let defaultLimit = 0n;
  for (const ix of instructions) {
    if (ix.programId === COMPUTE_BUDGET_PROGRAM) {
      const dv = view(ix.data);
      if (ix.data[0] === 2 && ix.data.length >= 5) limit = BigInt(dv.getUint32(1, true));
      else if (ix.data[0] === 3 && ix.data.length >= 9) price = dv.getBigUint64(1, true);
    }
    defaultLimit += BUILTIN_SET.has(ix.programId)
      ? BUILTIN_INSTRUCTION_COMPUTE_UNITS
      : DEFAULT_INSTRUCTION_COMPUTE_UNITS;
  }
  const unitLimit = limit ?? defaultLimit;
  return {
    unitLimit: unitLimit > MAX_COMPUTE_UNIT_LIMIT ? MAX_COMPUTE_UNIT_LIMIT : unitLimit,
    unitPriceMicroLamports: price,
  };
}

/** The fee in lamports: 5000 per signature (precompile signatures included) plus the priority fee. */
export function feeOf(numRequiredSignatures: number, instructions: BudgetInstruction[]): bigint {
  let signatures = BigInt(numRequiredSignatures);
  for (const ix of instructions) {
    if (
      (ix.programId === ED25519_PROGRAM || ix.programId === SECP256K1_PROGRAM || ix.programId === SECP256R1_PROGRAM) &&
      ix.data.length > 0
    ) {
      signatures += BigInt(ix.data[0]!);
    }
  }
  const { unitLimit, unitPriceMicroLamports } = computeBudgetOf(instructions);
  const priority = (unitLimit * unitPriceMicroLamports + 999_999n) / 1_000_000n;
  return signatures * LAMPORTS_PER_SIGNATURE + priority;
}

/** The memo column of getSignaturesForAddress: "[len] text" per memo instruction, joined by "; ". */
export function memoOf(instructions: BudgetInstruction[]): string | null {
  const memos = instructions
    .filter((ix) => ix.programId === MEMO_PROGRAM || ix.programId === MEMO_V1_PROGRAM)
    .map((ix) => {
      let text: string;
      try {
        text = new TextDecoder('utf-8', { fatal: true }).decode(ix.data);
      } catch {
        text = '(unparseable)';
      }
      return `[${ix.data.length}] ${text}`;
    });
  return memos.length > 0 ? memos.join('; ') : null;
}
