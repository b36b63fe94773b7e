import { createHash, randomBytes } from 'node:crypto';
import {
  Account,
  Clock,
  EpochSchedule,
  FailedTransactionMetadata,
  LiteSvm,
  type InnerInstruction,
  type TransactionMetadata,
} from 'litesvm/dist/internal.js';
import {
  address,
  appendTransactionMessageInstructions,
  compileTransaction,
  createNoopSigner,
  createTransactionMessage,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  type Blockhash,
  type Instruction,
} from '@solana/kit';
import { getCreateAssociatedTokenIdempotentInstruction, getMintToCheckedInstruction } from '@solana-program/token';
import { getTransferSolInstruction } from '@solana-program/system';
import { USDC_DEVNET, base58Decode, base58Encode } from '@agent-economy/contracts';
import { generateWallet, signEd25519, walletFromSecretKey, type Wallet } from '../solana/keys';
import {
  ADDRESS_LOOKUP_TABLE_PROGRAM,
  BPF_LOADER_UPGRADEABLE,
  MEMO_PROGRAM,
  RESERVED_KEYS,
  SYSTEM_PROGRAM,
  TOKEN_PROGRAM,
  TOKEN_2022_PROGRAM,
  associatedTokenAddress,
  computeBudgetOf,
  decodeMint,
  decodeTokenAccount,
  encodeMint,
  feeOf,
  isTokenProgram,
} from '../solana/programs';
import { LedgerStore } from './store';
import { transactionErrorFromLiteSvm, type TransactionErrorJson } from '../solana/tx-error';
import {
  addressBytes,
  encodeAddress,
  encodeTransaction,
  isAddress,
  isWritableIndex,
  parseMessage,
  parseTransaction,
  sanitizeTransaction,
  toBase64,
  type ParsedTransaction,
} from '../solana/wire';

// The local Solana ledger: LiteSVM executing real transactions, behind a clock, blockhashes and a
// transaction history that behave as a cluster's do.
//
// LiteSVM accepts only its own latest blockhash, so it runs with the blockhash check off and we check
// age ourselves: slot s has a deterministic blockhash (sha256 of a per-ledger seed and s), one slot
// passes every slotMs of wall time, and a blockhash stays valid for `blockhashLifetimeSlots` slots,
// as MAX_PROCESSING_AGE on a node. Signature verification stays on inside LiteSVM. LiteSVM's own
// transaction history is off: dedup (AlreadyProcessed) uses our history, which is persisted.
//
// Commitment: this is a single validator holding all stake, so a transaction is optimistically
// confirmed in the slot that includes it ("confirmed" at once); it is "finalized" once 32 slots have
// passed on top of it, as a root is on a cluster. Reads of accounts always see the latest state.

export const DEFAULT_SLOT_MS = 400;
export const DEFAULT_BLOCKHASH_LIFETIME_SLOTS = 150;
export const SLOTS_PER_EPOCH = 432_000n;
/** Slots on top of a block before it is rooted (finalized). */
export const FINALITY_DEPTH = 32n;
/** How many slots of signature statuses a node answers without searchTransactionHistory. */
export const STATUS_CACHE_SLOTS = 300n;
/** Devnet's genesis hash: the ledger poses as devnet so that clients accepting only known networks work. */
export const DEVNET_GENESIS_HASH = 'EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG';
const U64_MAX = 18_446_744_073_709_551_615n;
const CLOCK_SYSVAR = 'SysvarC1ock11111111111111111111111111111111';
const STABLECOIN_DECIMALS = 6;
const NATIVE_MINT = 'So11111111111111111111111111111111111111112';
const FAUCET_LAMPORTS = 500_000_000n * 1_000_000_000n;
const SNAPSHOT_EVERY_LOG_BYTES = 16 * 1024 * 1024;
const MAX_DROPPED = 10_000;
/** Committed transactions whose whole record stays in memory (with a data directory; see TxEntry). */
export const DEFAULT_RECORDS_IN_MEMORY = 1024;

export interface LocalLedgerOptions {
  /** Directory for persisted state (e.g. <DATA_DIR>/ledger); absent = in memory only. */
  dataDir?: string;
  /** Wall-clock milliseconds per slot (default 400). */
  slotMs?: number;
  /** How many slots a blockhash stays valid after its own slot (default 150, as on a cluster). */
  blockhashLifetimeSlots?: number;
  /** The stablecoin mint's address (default devnet USDC; 6 decimals). */
  mint?: string;
  /** The mint's authority; the faucet signs MintToChecked with it. */
  mintAuthority: Wallet;
  /** The wall clock in Unix ms (default Date.now): a test moves it instead of waiting for slots to pass. */
  now?: () => number;
  /**
   * With a data directory, how many of the latest committed transactions keep their whole record in
   * memory (default 1024); older ones are read back from the log when asked for. Without one, all do.
   */
  recordsInMemory?: number;
}

export interface LedgerAccount {
  lamports: bigint;
  data: Uint8Array;
  owner: string;
  executable: boolean;
  rentEpoch: bigint;
}

export interface TokenBalance {
  accountIndex: number;
  mint: string;
  owner: string;
  programId: string;
  amount: bigint;
  decimals: number;
}

/** An account as a balance reads it (balanceView). */
type BalanceView = Pick<LedgerAccount, 'lamports' | 'owner' | 'data'>;

/** A transaction's balances at one moment, with the accounts they were read from (by key index). */
interface Balances {
  lamports: bigint[];
  tokens: TokenBalance[];
  views: (BalanceView | null)[];
}

export interface InnerInstructionGroup {
  index: number;
  instructions: { programIdIndex: number; accounts: number[]; data: Uint8Array; stackHeight: number }[];
}

export interface ReturnData {
  programId: string;
  data: Uint8Array;
}

/** One committed transaction, as getTransaction and friends report it. */
export interface TxRecord {
  signature: string;
  slot: bigint;
  /** Position within its block. */
  index: number;
  blockTime: number;
  wire: Uint8Array;
  loadedWritable: string[];
  loadedReadonly: string[];
  err: TransactionErrorJson | null;
  fee: bigint;
  preBalances: bigint[];
  postBalances: bigint[];
  preTokenBalances: TokenBalance[];
  postTokenBalances: TokenBalance[];
  logs: string[];
  innerInstructions: InnerInstructionGroup[];
  computeUnits: bigint;
  returnData: ReturnData | null;
  /** Compute-unit price in micro-lamports (getRecentPrioritizationFees). */
  unitPrice: bigint;
}

/** A transaction that passed sanitization and address-table loading, with its full account list. */
export interface PreparedTransaction {
  tx: ParsedTransaction;
  keys: string[];
  loadedWritable: string[];
  loadedReadonly: string[];
  /** Whether each key is write-locked (after Agave's demotion of reserved keys and invoked programs). */
  writable: boolean[];
  instructions: { programId: string; accounts: number[]; data: Uint8Array }[];
}

export type SendOutcome = { landed: true; record: TxRecord } | { landed: false; err: TransactionErrorJson };

export interface SimulationOutcome {
  err: TransactionErrorJson | null;
  /** False when the transaction failed before execution (age, dedup, fee payer): no fee, no balances. */
  executed: boolean;
  logs: string[];
  unitsConsumed: bigint;
  loadedAccountsDataSize: number;
  returnData: ReturnData | null;
  innerInstructions: InnerInstructionGroup[];
  fee: bigint | null;
  preBalances: bigint[] | null;
  postBalances: bigint[] | null;
  preTokenBalances: TokenBalance[] | null;
  postTokenBalances: TokenBalance[] | null;
  /** Account states after simulation (only accounts it changed). */
  postAccounts: Map<string, LedgerAccount | null>;
}

/** A ledger operation that could not be carried out; `err` is the transaction error when there is one. */
export class LedgerError extends Error {
  constructor(
    message: string,
    readonly err?: TransactionErrorJson,
  ) {
    super(message);
    this.name = 'LedgerError';
  }
}

interface Anchor {
  slot: bigint;
  unixMs: number;
  slotMs: number;
}

interface Genesis {
  seed: Uint8Array;
  faucet: Wallet;
  identity: string;
  slot: bigint;
  createdMs: number;
}

type SerializedAccount = [string, string, string, boolean, string] | [string, null];

/**
 * A committed transaction in the history indexes. Its whole record (about 5 KB) stays in memory only
 * while it is among the latest `recordsInMemory`, so that a long-running ledger does not grow by a
 * record per transaction; after that it is read back from the log line at `offset` when asked for.
 * Signature and slot stay, as dedup, ordering and the slot filters need them without a read.
 */
interface TxEntry {
  readonly signature: string;
  readonly slot: bigint;
  /** Byte offset of its line in the log (-1 without a data directory, where the record always stays). */
  offset: number;
  record: TxRecord | undefined;
}

export class LocalLedger {
  readonly mint: string;
  readonly genesisHash = DEVNET_GENESIS_HASH;
  readonly blockhashLifetimeSlots: number;
  private readonly lifetime: bigint;
  private slotMs: number;
  private svm: LiteSvm;
  private svmSlot = -1n;
  private anchors: Anchor[] = [];
  private floorSlot: bigint;
  private readonly windowBySlot = new Map<bigint, string>();
  private readonly windowByHash = new Map<string, bigint>();
  private windowHigh = -1n;
  /** Every committed transaction in commit order, hence by slot (the clock never goes back). */
  private readonly txs: TxEntry[] = [];
  private readonly bySignature = new Map<string, TxEntry>();
  private readonly byAddress = new Map<string, TxEntry[]>();
  private readonly recordsInMemory: number;
  private readonly droppedErrors = new Map<string, TransactionErrorJson>();
  /**
   * What each executable account adds to a transaction's loaded size (its data, and its program data for an
   * upgradeable program): every payment's simulation counted the token program's 134 KB by copying it out of the SVM.
   * Forgotten whole when a transaction writes any account it was read from, or the ledger sets an account itself.
   */
  private readonly programSizes = new Map<string, number>();
  private readonly programSizeSources = new Set<string>();
  private internalNonce = 0;
  private closed = false;
  private readonly now: () => number;

  private constructor(
    svm: LiteSvm,
    private readonly genesis: Genesis,
    private readonly mintAuthority: Wallet,
    private readonly store: LedgerStore | undefined,
    options: { slotMs: number; lifetime: number; mint: string; now: () => number; recordsInMemory: number },
  ) {
    this.svm = svm;
    this.now = options.now;
    this.mint = options.mint;
    this.slotMs = options.slotMs;
    this.blockhashLifetimeSlots = options.lifetime;
    this.lifetime = BigInt(options.lifetime);
    this.floorSlot = genesis.slot;
    this.recordsInMemory = options.recordsInMemory;
  }

  /** Loads the ledger persisted in dataDir, or creates a new one (genesis) there or in memory. */
  static async open(options: LocalLedgerOptions): Promise<LocalLedger> {
    const slotMs = options.slotMs ?? DEFAULT_SLOT_MS;
    const lifetime = options.blockhashLifetimeSlots ?? DEFAULT_BLOCKHASH_LIFETIME_SLOTS;
    if (!Number.isFinite(slotMs) || slotMs < 1)
      throw new Error(`slotMs must be a positive number of milliseconds, not ${slotMs}`);
    if (!Number.isInteger(lifetime) || lifetime < 1)
      throw new Error(`blockhashLifetimeSlots must be a positive integer, not ${lifetime}`);
    const mint = options.mint ?? USDC_DEVNET;
    const now = options.now ?? Date.now;
    const recordsInMemory = options.recordsInMemory ?? DEFAULT_RECORDS_IN_MEMORY;
    if (!Number.isInteger(recordsInMemory) || recordsInMemory < 0)
      throw new Error(`recordsInMemory must be a non-negative integer, not ${recordsInMemory}`);
    if (!isAddress(mint)) throw new Error(`mint must be a base58 address, not ${mint}`);
    if (!isAddress(options.mintAuthority.address) || options.mintAuthority.secretKey.length !== 64)
      throw new Error('mintAuthority must be a wallet with a 64-byte secret key');

    const settings = { slotMs, lifetime, mint, now, recordsInMemory };
    const store = options.dataDir ? LedgerStore.open(options.dataDir) : undefined;
    try {
      const snapshot = store?.readSnapshot();
      let ledger: LocalLedger;
      if (snapshot) {
        const meta = snapshot.meta as {
          genesis: Record<string, string | number>;
          anchors: { slot: string; unixMs: number; slotMs: number }[];
          floorSlot: string;
        };
        const svm = LiteSvm.fromBytes(snapshot.svm);
        const genesis: Genesis = {
          seed: Buffer.from(String(meta.genesis.seed), 'hex'),
          faucet: walletFromSecretKey(base58Decode(String(meta.genesis.faucet))!),
          identity: String(meta.genesis.identity),
          slot: BigInt(meta.genesis.slot!),
          createdMs: Number(meta.genesis.createdMs),
        };
        ledger = new LocalLedger(svm, genesis, options.mintAuthority, store, settings);
        ledger.anchors = meta.anchors.map((a) => ({ slot: BigInt(a.slot), unixMs: a.unixMs, slotMs: a.slotMs }));
        ledger.floorSlot = BigInt(meta.floorSlot);
        ledger.replay(store!);
      } else {
        for (const line of store?.readLog() ?? []) {
          if (line.record.t === 'tx')
            throw new Error(
              `${options.dataDir} holds a transaction log but no snapshot.bin; restore the snapshot or move the directory away`,
            );
        }
        store?.truncateLog();
        const svm = new LiteSvm();
        const genesis: Genesis = {
          seed: randomBytes(32),
          faucet: generateWallet(),
          identity: generateWallet().address,
          // LiteSVM deploys its built-in programs at its initial slot and they only run from there on:
          // the clock starts there, never before (a cluster's slots are also well past zero)
          slot: svm.getClock().slot,
          createdMs: now(),
        };
        ledger = new LocalLedger(svm, genesis, options.mintAuthority, store, settings);
        ledger.anchors = [{ slot: genesis.slot, unixMs: genesis.createdMs, slotMs }];
        ledger.setAccountState(
          genesis.faucet.address,
          {
            lamports: FAUCET_LAMPORTS,
            data: new Uint8Array(0),
            owner: SYSTEM_PROGRAM,
            executable: false,
            rentEpoch: U64_MAX,
          },
          false,
        );
      }
      ledger.configureSvm();
      if (snapshot) ledger.resumeClock();
      ledger.ensureMint();
      ledger.ensureNativeMint();
      if (store && !snapshot) ledger.writeSnapshot();
      return ledger;
    } catch (error) {
      store?.close();
      throw error;
    }
  }

  private configureSvm(): void {
    this.svm.setSigverify(true);
    this.svm.setBlockhashCheck(false);
    this.svm.setTransactionHistory(0n);
    this.svm.setEpochSchedule(new EpochSchedule(SLOTS_PER_EPOCH, SLOTS_PER_EPOCH, false, 0n, 0n));
    this.svmSlot = -1n;
  }

  /** After a restart the clock continues from where it was (never backwards), at the configured pace. */
  private resumeClock(): void {
    const now = this.now();
    const slot = this.slot(now);
    this.pushAnchor({ slot, unixMs: now, slotMs: this.slotMs });
  }

  private ensureMint(): void {
    const existing = this.getAccount(this.mint);
    if (existing) {
      const state = decodeMint(existing.owner, existing.data);
      if (!state) throw new Error(`${this.mint} exists on this ledger but is not a token mint`);
      if (state.mintAuthority !== this.mintAuthority.address) {
        throw new Error(
          `the mint ${this.mint} on this ledger has authority ${state.mintAuthority ?? 'none'}, not ${this.mintAuthority.address}`,
        );
      }
      return;
    }
    const data = encodeMint({
      mintAuthority: this.mintAuthority.address,
      supply: 0n,
      decimals: STABLECOIN_DECIMALS,
      freezeAuthority: null,
    });
    this.setAccountState(
      this.mint,
      {
        lamports: this.minimumBalanceForRentExemption(data.length),
        data,
        owner: TOKEN_PROGRAM,
        executable: false,
        rentEpoch: U64_MAX,
      },
      true,
    );
  }

  /** The wrapped-SOL mint every cluster has (9 decimals, no authorities), so tools that name it find it here too. */
  private ensureNativeMint(): void {
    if (this.getAccount(NATIVE_MINT)) return;
    const data = encodeMint({ mintAuthority: null, supply: 0n, decimals: 9, freezeAuthority: null });
    this.setAccountState(
      NATIVE_MINT,
      {
        lamports: this.minimumBalanceForRentExemption(data.length),
        data,
        owner: TOKEN_PROGRAM,
        executable: false,
        rentEpoch: U64_MAX,
      },
      true,
    );
  }

  // -------------------------------------------------------------------------------------------------
  // Clock and blockhashes

  /** The current slot: one per slotMs of wall time since the last anchor, never going backwards. */
  slot(now = this.now()): bigint {
    const anchor = this.anchors[this.anchors.length - 1]!;
    const elapsed = Math.max(0, now - anchor.unixMs);
    const slot = anchor.slot + BigInt(Math.floor(elapsed / anchor.slotMs));
    if (slot > this.floorSlot) this.floorSlot = slot;
    return this.floorSlot;
  }

  /** Block height equals the slot: every slot produces a block here. */
  blockHeight(): bigint {
    return this.slot();
  }

  /** The newest rooted slot (32 slots behind the tip, never before genesis). */
  finalizedSlot(current = this.slot()): bigint {
    const slot = current - FINALITY_DEPTH;
    return slot > this.genesis.slot ? slot : this.genesis.slot;
  }

  get firstSlot(): bigint {
    return this.genesis.slot;
  }

  get identity(): string {
    return this.genesis.identity;
  }

  /** Moves the clock n slots ahead at once (tests use it to expire blockhashes). */
  warp(slots: number): void {
    if (!Number.isInteger(slots) || slots < 0)
      throw new Error(`warp takes a non-negative whole number of slots, not ${slots}`);
    const now = this.now();
    this.pushAnchor({ slot: this.slot(now) + BigInt(slots), unixMs: now, slotMs: this.slotMs });
    this.slot(now);
  }

  private pushAnchor(anchor: Anchor): void {
    this.anchors.push(anchor);
    this.store?.append({ t: 'anchor', slot: anchor.slot.toString(), unixMs: anchor.unixMs, slotMs: anchor.slotMs });
  }

  /** Unix time (ms) of a slot: wall time while the clock ran, squeezed where it was warped. */
  private slotTimeMs(slot: bigint): number {
    let lo = 0;
    let hi = this.anchors.length - 1;
    if (slot < this.anchors[0]!.slot) {
      const first = this.anchors[0]!;
      return first.unixMs - Number(first.slot - slot) * first.slotMs;
    }
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.anchors[mid]!.slot <= slot) lo = mid;
      else hi = mid - 1;
    }
    const anchor = this.anchors[lo]!;
    const time = anchor.unixMs + Number(slot - anchor.slot) * anchor.slotMs;
    const next = this.anchors[lo + 1];
    return next && time > next.unixMs ? next.unixMs : time;
  }

  /** Unix timestamp (seconds) of a slot, as the Clock sysvar and getBlockTime report it. */
  blockTime(slot: bigint): number {
    return Math.floor(this.slotTimeMs(slot) / 1000);
  }

  blockhashOf(slot: bigint): string {
    const height = Buffer.alloc(8);
    height.writeBigUInt64LE(slot);
    return base58Encode(
      new Uint8Array(createHash('sha256').update(this.genesis.seed).update('blockhash').update(height).digest()),
    );
  }

  /** The blockhash clients should use at a commitment, and the last block height at which it is valid. */
  latestBlockhash(commitment: 'processed' | 'confirmed' | 'finalized' = 'finalized'): {
    slot: bigint;
    blockhash: string;
    lastValidBlockHeight: bigint;
  } {
    const current = this.slot();
    const slot = commitment === 'finalized' ? this.finalizedSlot(current) : current;
    return { slot, blockhash: this.blockhashOf(slot), lastValidBlockHeight: slot + this.lifetime };
  }

  /**
   * The slot of a blockhash still valid for a bank at `bankSlot` (the tip by default), or undefined:
   * BlockhashNotFound. The finalized bank sits FINALITY_DEPTH slots back, hence the wider window kept.
   */
  slotOfBlockhash(blockhash: string, bankSlot?: bigint): bigint | undefined {
    const current = this.slot();
    const bank = bankSlot ?? current;
    const keepFrom = current - this.lifetime - FINALITY_DEPTH;
    const low = keepFrom > this.genesis.slot ? keepFrom : this.genesis.slot;
    // the hashes of recent slots are kept in maps slid forward as the clock moves
    for (const [slot, hash] of this.windowBySlot) {
      if (slot >= low) break;
      this.windowBySlot.delete(slot);
      this.windowByHash.delete(hash);
    }
    for (let slot = this.windowHigh + 1n > low ? this.windowHigh + 1n : low; slot <= current; slot++) {
      const hash = this.blockhashOf(slot);
      this.windowBySlot.set(slot, hash);
      this.windowByHash.set(hash, slot);
    }
    if (current > this.windowHigh) this.windowHigh = current;
    const slot = this.windowByHash.get(blockhash);
    return slot !== undefined && slot <= bank && bank - slot <= this.lifetime ? slot : undefined;
  }

  isBlockhashValid(blockhash: string, bankSlot?: bigint): boolean {
    return this.slotOfBlockhash(blockhash, bankSlot) !== undefined;
  }

  private syncClock(slot: bigint): void {
    if (slot === this.svmSlot) return;
    const epoch = slot / SLOTS_PER_EPOCH;
    const epochStart = BigInt(this.blockTime(epoch * SLOTS_PER_EPOCH));
    this.svm.setClock(new Clock(slot, epochStart, epoch, epoch + 1n, BigInt(this.blockTime(slot))));
    // a durable nonce may advance once per slot: give LiteSVM a fresh blockhash for each slot
    this.svm.expireBlockhash();
    this.svmSlot = slot;
  }

  // -------------------------------------------------------------------------------------------------
  // Accounts

  /** The account at an address, or null when it does not exist (zero lamports counts as absent). */
  getAccount(addr: string): LedgerAccount | null {
    if (addr === CLOCK_SYSVAR) this.syncClock(this.slot());
    const account = this.svm.getAccount(addressBytes(addr));
    if (!account || account.lamports() === 0n) return null;
    return toLedgerAccount(account);
  }

  /** Every account owned by a program, as getProgramAccounts scans them. */
  programAccounts(program: string): { address: string; account: LedgerAccount }[] {
    return (
      this.svm
        .getProgramAccounts(addressBytes(program))
        .map((entry) => ({ address: encodeAddress(entry.address), account: entry.account() }))
        .filter((entry) => entry.account.lamports() > 0n)
        .map((entry) => ({ address: entry.address, account: toLedgerAccount(entry.account) }))
        // by key bytes, as a node sorts
        .sort((a, b) => Buffer.compare(addressBytes(a.address), addressBytes(b.address)))
    );
  }

  lamports(addr: string): bigint {
    if (!isAddress(addr)) throw new LedgerError(`not a base58 address: ${addr}`);
    return this.getAccount(addr)?.lamports ?? 0n;
  }

  /** Atomic balance of the owner's associated token account for the stablecoin mint; 0n if none. */
  tokenBalance(owner: string): bigint {
    if (!isAddress(owner)) throw new LedgerError(`not a base58 address: ${owner}`);
    const account = this.getAccount(associatedTokenAddress(owner, this.mint));
    return (account && decodeTokenAccount(account.owner, account.data)?.amount) ?? 0n;
  }

  /** Decimals of a mint, or undefined when the address holds no mint. */
  mintDecimals(mint: string): number | undefined {
    const account = this.getAccount(mint);
    return account ? decodeMint(account.owner, account.data)?.decimals : undefined;
  }

  minimumBalanceForRentExemption(dataLength: number | bigint): bigint {
    return this.svm.minimumBalanceForRentExemption(BigInt(dataLength));
  }

  private setAccountState(addr: string, account: LedgerAccount, log: boolean): void {
    this.forgetProgramSizes();
    this.svm.setAccount(
      addressBytes(addr),
      new Account(account.lamports, account.data, addressBytes(account.owner), account.executable, account.rentEpoch),
    );
    if (log) this.store?.append({ t: 'accounts', a: [serializeAccount(addr, account)] });
  }

  // -------------------------------------------------------------------------------------------------
  // Transactions

  /**
   * Sanitizes a transaction and loads its address tables, as a node does before simulating or
   * sending; returns the error a node reports as "invalid transaction: ..." when that fails.
   */
  prepare(tx: ParsedTransaction): PreparedTransaction | { error: TransactionErrorJson } {
    const sanitized = sanitizeTransaction(tx);
    if (sanitized) return { error: sanitized };
    const m = tx.message;
    const loadedWritable: string[] = [];
    const loadedReadonly: string[] = [];
    const current = this.slot();
    for (const lookup of m.lookups) {
      const table = this.getAccount(lookup.accountKey);
      if (!table) return { error: 'AddressLookupTableNotFound' };
      if (table.owner !== ADDRESS_LOOKUP_TABLE_PROGRAM) return { error: 'InvalidAddressLookupTableOwner' };
      const data = table.data;
      if (data.length < 56 || (data.length - 56) % 32 !== 0 || data[0] !== 1)
        return { error: 'InvalidAddressLookupTableData' };
      const dv = new DataView(data.buffer, data.byteOffset, data.byteLength);
      const deactivation = dv.getBigUint64(4, true);
      if (deactivation !== U64_MAX && current - deactivation > 512n) return { error: 'AddressLookupTableNotFound' };
      const lastExtended = dv.getBigUint64(12, true);
      const total = (data.length - 56) / 32;
      const active = current > lastExtended ? total : Math.min(total, data[20]!);
      const at = (i: number) => base58Encode(data.subarray(56 + i * 32, 88 + i * 32));
      if ([...lookup.writableIndexes, ...lookup.readonlyIndexes].some((i) => i >= active))
        return { error: 'InvalidAddressLookupTableIndex' };
      loadedWritable.push(...lookup.writableIndexes.map(at));
      loadedReadonly.push(...lookup.readonlyIndexes.map(at));
    }
    const keys = [...m.staticKeys, ...loadedWritable, ...loadedReadonly];
    if (new Set(keys).size !== keys.length) return { error: 'AccountLoadedTwice' };
    const instructions = m.instructions.map((ix) => ({
      programId: keys[ix.programIdIndex]!,
      accounts: ix.accounts,
      data: ix.data,
    }));
    const invoked = new Set(m.instructions.map((ix) => ix.programIdIndex));
    const upgradeableLoaderPresent = keys.includes(BPF_LOADER_UPGRADEABLE);
    const writable = keys.map(
      (key, i) =>
        isWritableIndex(m, i, loadedWritable.length) &&
        !RESERVED_KEYS.has(key) &&
        !(invoked.has(i) && !upgradeableLoaderPresent),
    );
    return { tx, keys, loadedWritable, loadedReadonly, writable, instructions };
  }

  /** The age and dedup checks a bank runs before loading a transaction. */
  private check(prepared: PreparedTransaction, current: bigint): TransactionErrorJson | null {
    const m = prepared.tx.message;
    if (this.slotOfBlockhash(m.recentBlockhash, current) === undefined && !this.isDurableNonce(prepared))
      return 'BlockhashNotFound';
    if (this.bySignature.has(prepared.tx.signature)) return 'AlreadyProcessed';
    return null;
  }

  /** A durable-nonce transaction: AdvanceNonceAccount first, and the nonce account holds its blockhash. */
  private isDurableNonce(prepared: PreparedTransaction): boolean {
    const first = prepared.instructions[0];
    if (!first || first.programId !== SYSTEM_PROGRAM || first.data.length < 4) return false;
    if (new DataView(first.data.buffer, first.data.byteOffset).getUint32(0, true) !== 4) return false;
    const nonceKey = prepared.keys[first.accounts[0] ?? -1];
    const nonce = nonceKey ? this.getAccount(nonceKey) : null;
    if (!nonce || nonce.owner !== SYSTEM_PROGRAM || nonce.data.length !== 80 || nonce.data[4] !== 1) return false;
    return base58Encode(nonce.data.subarray(40, 72)) === prepared.tx.message.recentBlockhash;
  }

  /**
   * The lamports and token balances of `keys`. Given the balances `before` the transaction ran and which keys it may
   * write, a read-only key's account is the one read before: the runtime lets no transaction change it.
   */
  private balances(
    keys: string[],
    overrides?: Map<string, LedgerAccount | null>,
    before?: { balances: Balances; writable: readonly boolean[] },
  ): Balances {
    const lamports: bigint[] = [];
    const tokens: TokenBalance[] = [];
    const views: (BalanceView | null)[] = [];
    const decimals = new Map<string, number | undefined>();
    keys.forEach((key, accountIndex) => {
      const account = overrides?.has(key)
        ? overrides.get(key)!
        : before && !before.writable[accountIndex]
          ? before.balances.views[accountIndex]!
          : this.balanceView(key);
      views.push(account);
      lamports.push(account?.lamports ?? 0n);
      if (!account || !isTokenProgram(account.owner)) return;
      const token = decodeTokenAccount(account.owner, account.data);
      if (!token) return;
      if (!decimals.has(token.mint)) {
        const mintAccount = overrides?.has(token.mint) ? overrides.get(token.mint) : this.balanceView(token.mint);
        decimals.set(token.mint, mintAccount ? decodeMint(mintAccount.owner, mintAccount.data)?.decimals : undefined);
      }
      const d = decimals.get(token.mint);
      if (d === undefined) return;
      tokens.push({
        accountIndex,
        mint: token.mint,
        owner: token.owner,
        programId: account.owner,
        amount: token.amount,
        decimals: d,
      });
    });
    return { lamports, tokens, views };
  }

  /**
   * An account as a balance reads it: its lamports, and its owner and data only when a token program owns it. Every
   * transaction's balances are read before and after it runs, and most of its accounts are programs and wallets:
   * reading them whole (data copied out of the SVM, the owner in base58) was most of the cost of a balance.
   */
  private balanceView(key: string): BalanceView | null {
    const account = this.svm.getAccount(addressBytes(key));
    const lamports = account?.lamports() ?? 0n;
    if (!account || lamports === 0n) return null;
    const owner = account.owner();
    const program = sameBytes(owner, TOKEN_PROGRAM_BYTES)
      ? TOKEN_PROGRAM
      : sameBytes(owner, TOKEN_2022_PROGRAM_BYTES)
        ? TOKEN_2022_PROGRAM
        : undefined;
    return program ? { lamports, owner: program, data: account.data() } : { lamports, owner: '', data: NO_DATA };
  }

  private loadedAccountsDataSize(keys: string[]): number {
    let size = 0;
    for (const key of keys) {
      const known = this.programSizes.get(key);
      if (known !== undefined) {
        size += known;
        continue;
      }
      const account = this.getAccount(key);
      if (!account) continue;
      let own = account.data.length + 64;
      if (!account.executable) {
        size += own;
        continue;
      }
      this.programSizeSources.add(key);
      if (account.owner === BPF_LOADER_UPGRADEABLE && account.data.length >= 36) {
        const programDataAddress = base58Encode(account.data.subarray(4, 36));
        const programData = this.getAccount(programDataAddress);
        if (programData) own += programData.data.length + 64;
        this.programSizeSources.add(programDataAddress);
      }
      this.programSizes.set(key, own);
      size += own;
    }
    return size;
  }

  /** Drops the executable accounts' sizes if any of `written` is one they were read from (`undefined`: all). */
  private forgetProgramSizes(written?: readonly string[]): void {
    if (this.programSizes.size === 0) return;
    if (written && !written.some((key) => this.programSizeSources.has(key))) return;
    this.programSizes.clear();
    this.programSizeSources.clear();
  }

  /**
   * Executes a transaction as the leader would: it lands (fee charged, recorded, persisted) unless
   * it fails the age, dedup, signature or fee-payer checks, in which case it is dropped as a
   * cluster drops it, and the error says why.
   */
  submit(prepared: PreparedTransaction): SendOutcome {
    return this.execute(prepared, false) as SendOutcome;
  }

  /**
   * sendTransaction with its preflight: `preflight` (the failure simulated in full, as a node's preflight reports it)
   * when the transaction would fail, and then nothing lands and no fee is charged; else as submit. A node simulates
   * and then sends; this ledger runs one transaction at a time, so it runs the transaction once and, should it fail,
   * puts back every account it could write. The outcome is the same, and a payment costs one run instead of two.
   */
  sendWithPreflight(prepared: PreparedTransaction): SendOutcome | { preflight: SimulationOutcome } {
    return this.execute(prepared, true);
  }

  private execute(prepared: PreparedTransaction, preflight: boolean): SendOutcome | { preflight: SimulationOutcome } {
    const { current, refused } = this.begin(prepared);
    if (refused)
      return preflight ? { preflight: this.simulate(prepared, { sigVerify: true }) } : this.drop(prepared, refused);
    const { tx, keys } = prepared;
    const written = keys.filter((_, i) => prepared.writable[i]);
    const before = preflight ? written.map((key) => this.svm.getAccount(addressBytes(key))) : [];
    const pre = this.balances(keys);
    const result =
      tx.message.version === 'legacy'
        ? this.svm.sendLegacyTransaction(tx.bytes)
        : this.svm.sendVersionedTransaction(tx.bytes);
    const failed = result instanceof FailedTransactionMetadata;
    this.forgetProgramSizes(written);
    if (failed && preflight) {
      // Only what the failed run changed is put back (the fee, a durable nonce's advance), the fee payer first: writing
      // back a program it left alone would have the SVM load and verify it again.
      written.forEach((key, i) => {
        const was = before[i] ?? null;
        if (sameAccount(was, this.svm.getAccount(addressBytes(key)))) return;
        this.svm.setAccount(
          addressBytes(key),
          was ?? new Account(0n, new Uint8Array(0), addressBytes(SYSTEM_PROGRAM), false, U64_MAX),
        );
      });
      return { preflight: this.simulate(prepared, { sigVerify: true }) };
    }
    const meta: TransactionMetadata = failed ? result.meta() : result;
    const err = failed ? transactionErrorFromLiteSvm(result.err()) : null;
    const post = this.balances(keys, undefined, { balances: pre, writable: prepared.writable });
    // a failed transaction that charged its fee was committed; one that did not never made it into a block
    if (failed && post.lamports[0] === pre.lamports[0]) return this.drop(prepared, err!);
    const record: TxRecord = {
      signature: tx.signature,
      slot: current,
      index: this.txs.length - this.blockStart(current),
      blockTime: this.blockTime(current),
      wire: tx.bytes,
      loadedWritable: prepared.loadedWritable,
      loadedReadonly: prepared.loadedReadonly,
      err,
      fee: feeOf(tx.message.numRequiredSignatures, prepared.instructions),
      preBalances: pre.lamports,
      postBalances: post.lamports,
      preTokenBalances: pre.tokens,
      postTokenBalances: post.tokens,
      logs: meta.logs(),
      innerInstructions: innerInstructionsOf(meta),
      computeUnits: meta.computeUnitsConsumed(),
      returnData: returnDataOf(meta),
      unitPrice: computeBudgetOf(prepared.instructions).unitPriceMicroLamports,
    };
    // indexed before the log write, so that dedup holds even if that write fails
    const entry = this.index(record, keys, -1);
    if (this.store) {
      entry.offset = this.store.append({
        t: 'tx',
        r: serializeRecord(record),
        a: written.map((key) => serializeAccount(key, this.getAccount(key))),
      });
      this.releaseOldRecord();
      if (this.store.bytesSinceSnapshot > SNAPSHOT_EVERY_LOG_BYTES) this.writeSnapshot();
    }
    return { landed: true, record };
  }

  private drop(prepared: PreparedTransaction, err: TransactionErrorJson): SendOutcome {
    if (!this.bySignature.has(prepared.tx.signature)) {
      if (this.droppedErrors.size >= MAX_DROPPED) this.droppedErrors.delete(this.droppedErrors.keys().next().value!);
      this.droppedErrors.set(prepared.tx.signature, err);
    }
    return { landed: false, err };
  }

  /** Why a transaction accepted by sendTransaction never landed (kept for the last 10,000). */
  droppedTransactionError(signature: string): TransactionErrorJson | undefined {
    return this.droppedErrors.get(signature);
  }

  /** Runs a transaction without committing anything; sigVerify false skips signature checks. */
  simulate(prepared: PreparedTransaction, options: { sigVerify: boolean }): SimulationOutcome {
    const notExecuted = (err: TransactionErrorJson): SimulationOutcome => ({
      err,
      executed: false,
      logs: [],
      unitsConsumed: 0n,
      loadedAccountsDataSize: 0,
      returnData: null,
      innerInstructions: [],
      fee: null,
      preBalances: null,
      postBalances: null,
      preTokenBalances: null,
      postTokenBalances: null,
      postAccounts: new Map(),
    });
    const { refused } = this.begin(prepared);
    if (refused) return notExecuted(refused);
    const { tx, keys } = prepared;
    const pre = this.balances(keys);
    const result = this.runSimulation(tx, options.sigVerify);
    const failed = result instanceof FailedTransactionMetadata;
    const err = result instanceof FailedTransactionMetadata ? transactionErrorFromLiteSvm(result.err()) : null;
    const meta = result.meta();
    if (failed && meta.computeUnitsConsumed() === 0n && meta.logs().length === 0 && typeof err === 'string')
      return notExecuted(err);
    const postAccounts = new Map<string, LedgerAccount | null>();
    if (!(result instanceof FailedTransactionMetadata)) {
      for (const entry of result.postAccounts()) {
        const account = entry.account();
        postAccounts.set(encodeAddress(entry.address), account.lamports() === 0n ? null : toLedgerAccount(account));
      }
    }
    const fee = feeOf(tx.message.numRequiredSignatures, prepared.instructions);
    let post = failed
      ? { lamports: [...pre.lamports], tokens: pre.tokens }
      : this.balances(keys, postAccounts, { balances: pre, writable: prepared.writable });
    if (failed && post.lamports.length > 0) {
      post = { ...post, lamports: post.lamports.map((l, i) => (i === 0 ? l - fee : l)) };
    }
    return {
      err,
      executed: true,
      logs: meta.logs(),
      unitsConsumed: meta.computeUnitsConsumed(),
      loadedAccountsDataSize: this.loadedAccountsDataSize(keys),
      returnData: returnDataOf(meta),
      innerInstructions: innerInstructionsOf(meta),
      fee,
      preBalances: pre.lamports,
      postBalances: post.lamports,
      preTokenBalances: pre.tokens,
      postTokenBalances: post.tokens,
      postAccounts,
    };
  }

  /**
   * What every run of a transaction (sent, simulated or preflighted) does first: the clock moved to the current slot,
   * the leader's checks (age, dedup, signatures, fee payer; `refused` names the one that fails), then SlotHashes for
   * address-table instructions, which read it.
   */
  private begin(prepared: PreparedTransaction): { current: bigint; refused: TransactionErrorJson | null } {
    this.assertOpen();
    const current = this.slot();
    this.syncClock(current);
    const refused = this.check(prepared, current);
    if (!refused && prepared.instructions.some((ix) => ix.programId === ADDRESS_LOOKUP_TABLE_PROGRAM))
      this.syncSlotHashes(current);
    return { current, refused };
  }

  private runSimulation(tx: ParsedTransaction, sigVerify: boolean) {
    if (!sigVerify) this.svm.setSigverify(false);
    try {
      return tx.message.version === 'legacy'
        ? this.svm.simulateLegacyTransaction(tx.bytes)
        : this.svm.simulateVersionedTransaction(tx.bytes);
    } finally {
      if (!sigVerify) this.svm.setSigverify(true);
    }
  }

  /** Address-table instructions read SlotHashes; it is filled only when one is about to run. */
  private syncSlotHashes(current: bigint): void {
    const hashes = [];
    for (let slot = current; slot >= this.genesis.slot && hashes.length < 512; slot--)
      hashes.push({ slot, hash: this.blockhashOf(slot) });
    this.svm.setSlotHashes(hashes);
  }

  private index(record: TxRecord, keys: string[], offset: number): TxEntry {
    const entry: TxEntry = { signature: record.signature, slot: record.slot, offset, record };
    this.txs.push(entry);
    this.bySignature.set(entry.signature, entry);
    this.droppedErrors.delete(entry.signature);
    for (const key of new Set(keys)) {
      let list = this.byAddress.get(key);
      if (!list) this.byAddress.set(key, (list = []));
      list.push(entry);
    }
    if (record.slot > this.floorSlot) this.floorSlot = record.slot;
    return entry;
  }

  /** Lets go of the record that has just left the latest `recordsInMemory`: its log line holds it. */
  private releaseOldRecord(): void {
    const old = this.txs[this.txs.length - 1 - this.recordsInMemory];
    if (old && old.offset >= 0) old.record = undefined;
  }

  /** An entry's whole record: in memory while recent, else read back from its log line. */
  private recordOf(entry: TxEntry): TxRecord {
    if (entry.record) return entry.record;
    const line = this.store!.readLine(entry.offset);
    return deserializeRecord(line.r as SerializedRecord);
  }

  /** Index in txs of the first transaction at `slot` or later (txs is ordered by slot). */
  private blockStart(slot: bigint): number {
    let lo = 0;
    let hi = this.txs.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.txs[mid]!.slot < slot) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  // -------------------------------------------------------------------------------------------------
  // History

  transaction(signature: string): TxRecord | undefined {
    const entry = this.bySignature.get(signature);
    return entry && this.recordOf(entry);
  }

  /** Committed transactions of a slot, in block order. */
  blockTransactions(slot: bigint): TxRecord[] {
    const out: TxRecord[] = [];
    for (let i = this.blockStart(slot); i < this.txs.length && this.txs[i]!.slot === slot; i++)
      out.push(this.recordOf(this.txs[i]!));
    return out;
  }

  transactionCount(): bigint {
    return BigInt(this.txs.length);
  }

  /** Transactions touching an address, newest first, within [.., maxSlot], after `before`, down to `until`. */
  signaturesForAddress(
    addr: string,
    options: { limit: number; before?: string; until?: string; maxSlot: bigint },
  ): TxRecord[] {
    const list = this.byAddress.get(addr) ?? [];
    let end = list.length;
    if (options.before !== undefined) {
      const before = this.bySignature.get(options.before);
      if (!before) return [];
      end = list.lastIndexOf(before);
      if (end === -1) return [];
    }
    const out: TxRecord[] = [];
    for (let i = end - 1; i >= 0 && out.length < options.limit; i--) {
      const entry = list[i]!;
      if (entry.signature === options.until) break;
      if (entry.slot <= options.maxSlot) out.push(this.recordOf(entry));
    }
    return out;
  }

  /** Committed transactions from `fromSlot` on, oldest first (getRecentPrioritizationFees). */
  recentTransactions(fromSlot: bigint): TxRecord[] {
    return this.txs.slice(this.blockStart(fromSlot)).map((entry) => this.recordOf(entry));
  }

  /**
   * The slots of the committed transactions from `fromSlot` on, oldest first (getRecentPerformanceSamples,
   * which counts hours of them and needs no record).
   */
  recentTransactionSlots(fromSlot: bigint): bigint[] {
    return this.txs.slice(this.blockStart(fromSlot)).map((entry) => entry.slot);
  }

  /** The account keys of a recorded transaction (static, then loaded writable, then loaded read-only). */
  static keysOf(record: TxRecord): string[] {
    return [...parseTransaction(record.wire).message.staticKeys, ...record.loadedWritable, ...record.loadedReadonly];
  }

  // -------------------------------------------------------------------------------------------------
  // Faucet and helpers (real transactions, paid by the internal faucet key)

  private buildInternal(instructions: Instruction[], signers: Wallet[]): ParsedTransaction {
    const slot = this.slot();
    for (;;) {
      const message = pipe(
        createTransactionMessage({ version: 'legacy' }),
        (m) => setTransactionMessageFeePayer(address(this.genesis.faucet.address), m),
        (m) =>
          setTransactionMessageLifetimeUsingBlockhash(
            { blockhash: this.blockhashOf(slot) as Blockhash, lastValidBlockHeight: slot + this.lifetime },
            m,
          ),
        (m) => appendTransactionMessageInstructions(instructions, m),
      );
      const messageBytes = new Uint8Array(compileTransaction(message).messageBytes);
      const parsed = parseMessage(messageBytes);
      const wallets = new Map([this.genesis.faucet, ...signers].map((w) => [w.address, w]));
      const signatures = parsed.staticKeys.slice(0, parsed.numRequiredSignatures).map((key) => {
        const wallet = wallets.get(key);
        if (!wallet) throw new LedgerError(`no key to sign for ${key}`);
        return signEd25519(wallet, messageBytes);
      });
      const tx = parseTransaction(encodeTransaction(signatures, messageBytes));
      if (!this.bySignature.has(tx.signature)) return tx;
      // the same request twice in one slot would be byte-identical (AlreadyProcessed): a memo tells them apart
      // (@solana-program/memo's builder targets another program id, so the SPL Memo instruction is written out)
      instructions = [
        ...instructions,
        {
          programAddress: address(MEMO_PROGRAM),
          data: new TextEncoder().encode(`agent-economy ledger #${++this.internalNonce}`),
        },
      ];
    }
  }

  private runInternal(instructions: Instruction[], signers: Wallet[], what: string): string {
    const prepared = this.prepare(this.buildInternal(instructions, signers));
    if ('error' in prepared) throw new LedgerError(`${what}: invalid transaction`, prepared.error);
    const outcome = this.submit(prepared);
    if (!outcome.landed) throw new LedgerError(`${what} did not land: ${JSON.stringify(outcome.err)}`, outcome.err);
    if (outcome.record.err)
      throw new LedgerError(`${what} failed: ${JSON.stringify(outcome.record.err)}`, outcome.record.err);
    return outcome.record.signature;
  }

  /** Sends lamports from the faucet in a real System transfer; returns its signature. */
  async airdrop(to: string, lamports: bigint): Promise<string> {
    return this.airdropNow(to, lamports);
  }

  /** The owner's associated token account for the mint, created (paid by the faucet) if missing. */
  async openTokenAccount(owner: string): Promise<string> {
    return this.openTokenAccountNow(owner);
  }

  /**
   * Mints stablecoins to the owner's associated token account (opened if needed); returns the MintToChecked signature.
   */
  async mintTo(owner: string, atomic: bigint): Promise<string> {
    return this.mintToNow(owner, atomic);
  }

  // The synchronous forms serve the RPC layer: a request is answered without yielding to another.

  airdropNow(to: string, lamports: bigint): string {
    if (!isAddress(to)) throw new LedgerError(`not a base58 address: ${to}`);
    if (typeof lamports !== 'bigint' || lamports <= 0n)
      throw new LedgerError('an airdrop needs a positive number of lamports');
    const faucet = createNoopSigner(address(this.genesis.faucet.address));
    return this.runInternal(
      [getTransferSolInstruction({ source: faucet, destination: address(to), amount: lamports })],
      [],
      'airdrop',
    );
  }

  openTokenAccountNow(owner: string): string {
    if (!isAddress(owner)) throw new LedgerError(`not a base58 address: ${owner}`);
    const ata = associatedTokenAddress(owner, this.mint);
    if (this.getAccount(ata)) return ata;
    const payer = createNoopSigner(address(this.genesis.faucet.address));
    this.runInternal(
      [
        getCreateAssociatedTokenIdempotentInstruction({
          payer,
          ata: address(ata),
          owner: address(owner),
          mint: address(this.mint),
        }),
      ],
      [],
      'opening a token account',
    );
    return ata;
  }

  mintToNow(owner: string, atomic: bigint): string {
    if (typeof atomic !== 'bigint' || atomic <= 0n) throw new LedgerError('minting needs a positive atomic amount');
    const ata = this.openTokenAccountNow(owner);
    const decimals = this.mintDecimals(this.mint) ?? STABLECOIN_DECIMALS;
    const authority = createNoopSigner(address(this.mintAuthority.address));
    return this.runInternal(
      [
        getMintToCheckedInstruction({
          mint: address(this.mint),
          token: address(ata),
          mintAuthority: authority,
          amount: atomic,
          decimals,
        }),
      ],
      [this.mintAuthority],
      'minting',
    );
  }

  // -------------------------------------------------------------------------------------------------
  // Persistence

  private replay(store: LedgerStore): void {
    const accounts = new Map<string, SerializedAccount>();
    for (const { offset, record } of store.readLog()) {
      const fresh = offset >= store.snapshotOffset;
      if (record.t === 'tx') {
        const tx = deserializeRecord(record.r as SerializedRecord);
        this.index(tx, LocalLedger.keysOf(tx), offset);
        this.releaseOldRecord();
      } else if (record.t === 'anchor' && fresh) {
        this.anchors.push({
          slot: BigInt(record.slot as string),
          unixMs: record.unixMs as number,
          slotMs: record.slotMs as number,
        });
      }
      if (fresh && Array.isArray(record.a))
        for (const entry of record.a as SerializedAccount[]) accounts.set(entry[0], entry);
    }
    for (const entry of accounts.values()) {
      const [addr, lamports, owner, executable, data] = entry;
      if (lamports === null)
        this.svm.setAccount(
          addressBytes(addr),
          new Account(0n, new Uint8Array(0), addressBytes(SYSTEM_PROGRAM), false, U64_MAX),
        );
      else
        this.svm.setAccount(
          addressBytes(addr),
          new Account(
            BigInt(lamports),
            new Uint8Array(Buffer.from(data!, 'base64')),
            addressBytes(owner!),
            executable!,
            U64_MAX,
          ),
        );
    }
  }

  private writeSnapshot(): void {
    if (!this.store) return;
    const meta = {
      format: 1,
      genesis: {
        seed: Buffer.from(this.genesis.seed).toString('hex'),
        faucet: base58Encode(this.genesis.faucet.secretKey),
        identity: this.genesis.identity,
        slot: this.genesis.slot.toString(),
        createdMs: this.genesis.createdMs,
      },
      anchors: this.anchors.map((a) => ({ slot: a.slot.toString(), unixMs: a.unixMs, slotMs: a.slotMs })),
      floorSlot: this.slot().toString(),
    };
    this.store.writeSnapshot(meta, this.svm.toBytes());
  }

  /** Cuts a snapshot now (every write is already in the log; this bounds the replay at the next start). */
  async save(): Promise<void> {
    this.assertOpen();
    this.writeSnapshot();
  }

  /** Saves and releases the data directory. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.writeSnapshot();
    this.closed = true;
    this.store?.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new LedgerError('the ledger is closed');
  }
}

const TOKEN_PROGRAM_BYTES = addressBytes(TOKEN_PROGRAM);
const TOKEN_2022_PROGRAM_BYTES = addressBytes(TOKEN_2022_PROGRAM);
const NO_DATA = new Uint8Array(0);
const sameBytes = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((byte, i) => byte === b[i]);

/** Two reads of an account hold the same state (an account of no lamports is none). */
function sameAccount(a: Account | null, b: Account | null): boolean {
  const gone = (x: Account | null) => !x || x.lamports() === 0n;
  if (gone(a) || gone(b)) return gone(a) && gone(b);
  return (
    a!.lamports() === b!.lamports() &&
    a!.executable() === b!.executable() &&
    a!.rentEpoch() === b!.rentEpoch() &&
    sameBytes(a!.owner(), b!.owner()) &&
    Buffer.compare(a!.data(), b!.data()) === 0
  );
}

function toLedgerAccount(account: Account): LedgerAccount {
  // rent collection is gone: every live account reports the rent-exempt epoch, as on current clusters
  return {
    lamports: account.lamports(),
    data: account.data(),
    owner: encodeAddress(account.owner()),
    executable: account.executable(),
    rentEpoch: U64_MAX,
  };
}

function innerInstructionsOf(meta: TransactionMetadata): InnerInstructionGroup[] {
  const groups: InnerInstructionGroup[] = [];
  meta.innerInstructions().forEach((group: InnerInstruction[], index: number) => {
    if (group.length === 0) return;
    groups.push({
      index,
      instructions: group.map((inner) => {
        const ix = inner.instruction();
        return {
          programIdIndex: ix.programIdIndex(),
          accounts: Array.from(ix.accounts()),
          data: ix.data(),
          stackHeight: inner.stackHeight(),
        };
      }),
    });
  });
  return groups;
}

function returnDataOf(meta: TransactionMetadata): ReturnData | null {
  const returnData = meta.returnData();
  const data = returnData.data();
  return data.length > 0 ? { programId: base58Encode(returnData.programId()), data } : null;
}

function serializeAccount(addr: string, account: LedgerAccount | null): SerializedAccount {
  if (!account) return [addr, null];
  return [addr, account.lamports.toString(), account.owner, account.executable, toBase64(account.data)];
}

interface SerializedRecord {
  s: string;
  i: number;
  bt: number;
  w: string;
  lw: string[];
  lr: string[];
  e: TransactionErrorJson | null;
  f: string;
  pb: string[];
  qb: string[];
  pt: SerializedTokenBalance[];
  qt: SerializedTokenBalance[];
  l: string[];
  ii: [number, [number, number[], string, number][]][];
  cu: string;
  rd: [string, string] | null;
  up: string;
}
type SerializedTokenBalance = [number, string, string, string, string, number];

function serializeRecord(r: TxRecord): SerializedRecord {
  const tokens = (list: TokenBalance[]): SerializedTokenBalance[] =>
    list.map((t) => [t.accountIndex, t.mint, t.owner, t.programId, t.amount.toString(), t.decimals]);
  return {
    s: r.slot.toString(),
    i: r.index,
    bt: r.blockTime,
    w: toBase64(r.wire),
    lw: r.loadedWritable,
    lr: r.loadedReadonly,
    e: r.err,
    f: r.fee.toString(),
    pb: r.preBalances.map(String),
    qb: r.postBalances.map(String),
    pt: tokens(r.preTokenBalances),
    qt: tokens(r.postTokenBalances),
    l: r.logs,
    ii: r.innerInstructions.map((g) => [
      g.index,
      g.instructions.map((ix) => [ix.programIdIndex, ix.accounts, toBase64(ix.data), ix.stackHeight]),
    ]),
    cu: r.computeUnits.toString(),
    rd: r.returnData ? [r.returnData.programId, toBase64(r.returnData.data)] : null,
    up: r.unitPrice.toString(),
  };
}

function deserializeRecord(s: SerializedRecord): TxRecord {
  const bytes = (b64: string) => new Uint8Array(Buffer.from(b64, 'base64'));
  const tokens = (list: SerializedTokenBalance[]): TokenBalance[] =>
    list.map(([accountIndex, mint, owner, programId, amount, decimals]) => ({
      accountIndex,
      mint,
      owner,
      programId,
      amount: BigInt(amount),
      decimals,
    }));
  const wire = bytes(s.w);
  return {
    signature: parseTransaction(wire).signature,
    slot: BigInt(s.s),
    index: s.i,
    blockTime: s.bt,
    wire,
    loadedWritable: s.lw,
    loadedReadonly: s.lr,
    err: s.e,
    fee: BigInt(s.f),
    preBalances: s.pb.map(BigInt),
    postBalances: s.qb.map(BigInt),
    preTokenBalances: tokens(s.pt),
    postTokenBalances: tokens(s.qt),
    logs: s.l,
    innerInstructions: s.ii.map(([index, list]) => ({
      index,
      instructions: list.map(([programIdIndex, accounts, data, stackHeight]) => ({
        programIdIndex,
        accounts,
        data: bytes(data),
        stackHeight,
      })),
    })),
    computeUnits: BigInt(s.cu),
    returnData: s.rd ? { programId: s.rd[0], data: bytes(s.rd[1]) } : null,
    unitPrice: BigInt(s.up),
  };
}
