import { base58Encode } from '@agent-economy/contracts';
import {
  RpcError,
  checkVersion,
  encodeAccount,
  encodeTransactionAccounts,
  encodeTransactionWithMeta,
  invalidParams,
  memoOfRecord,
  statusOf,
  uiInnerInstructions,
  uiTokenBalances,
  type AccountEncoding,
  type DataSlice,
  type TransactionEncoding,
} from './encode';
import { JsonSyntaxError, parseJson, stringifyJson } from './json';
import {
  FINALITY_DEPTH,
  LedgerError,
  LocalLedger,
  SLOTS_PER_EPOCH,
  STATUS_CACHE_SLOTS,
  type LedgerAccount,
  type PreparedTransaction,
  type TxRecord,
} from './ledger';
import { decodeMint, decodeTokenAccount, feeOf, isTokenProgram, uiTokenAmount } from '../solana/programs';
import { describeTransactionError } from '../solana/tx-error';
import {
  MAX_BASE58_SIZE,
  MAX_BASE64_SIZE,
  MESSAGE_TYPE,
  PACKET_DATA_SIZE,
  TRANSACTION_TYPE,
  WireError,
  addressBytes,
  decodeBase58,
  decodeBase64,
  encodeTransaction,
  isAddress,
  parseMessage,
  parseTransaction,
  toBase64,
  verifySignatures,
  type ParsedTransaction,
} from '../solana/wire';

// Solana JSON-RPC 2.0 over the local ledger: method names, parameters, results and errors as an
// Agave node gives them, so @solana/kit and the official x402 packages work against it unchanged.

/** The solana-core version reported by getVersion and in every response context. */
export const API_VERSION = '3.0.0';
const FEATURE_SET = 3_294_202_862;
const MAX_MULTIPLE_ACCOUNTS = 100;
const MAX_SIGNATURE_STATUSES = 256;
const MAX_SIGNATURES_FOR_ADDRESS = 1000;
const MAX_SLOT_LEADERS = 5000;
const MAX_BLOCKS_RANGE = 500_000n;
const MAX_PERFORMANCE_SAMPLES = 720;
const MAX_PRIORITIZATION_FEE_ACCOUNTS = 128;
const MAX_PROGRAM_ACCOUNT_FILTERS = 4;
const MAX_PERMITTED_DATA_LENGTH = 10n * 1024n * 1024n;
const LARGEST_TOKEN_ACCOUNTS = 20;
const U64_MAX = 18_446_744_073_709_551_615n;
/** requestAirdrop and the faucet cap one request at 100 SOL. */
export const MAX_AIRDROP_LAMPORTS = 100n * 1_000_000_000n;

type Commitment = 'processed' | 'confirmed' | 'finalized';
const COMMITMENTS: Record<string, Commitment> = {
  processed: 'processed',
  confirmed: 'confirmed',
  finalized: 'finalized',
  // deprecated names a node still accepts
  recent: 'processed',
  single: 'confirmed',
  singleGossip: 'confirmed',
  root: 'finalized',
  max: 'finalized',
};

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'bigint' || typeof value === 'number') return `the number ${value}`;
  if (typeof value === 'string') return `the string "${value.length > 50 ? `${value.slice(0, 50)}...` : value}"`;
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

function asU64(value: unknown, what: string): bigint {
  if (typeof value === 'bigint' && value >= 0n && value <= U64_MAX) return value;
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0) return BigInt(value);
  throw invalidParams(`Invalid params: ${what} must be an unsigned 64-bit integer, not ${describe(value)}`);
}

function asUsize(value: unknown, what: string): number {
  const n = asU64(value, what);
  if (n > BigInt(Number.MAX_SAFE_INTEGER)) throw invalidParams(`Invalid params: ${what} is too large`);
  return Number(n);
}

/** An optional configuration object's fields, checked with messages naming the field. */
class Config {
  constructor(
    private readonly fields: Record<string, unknown>,
    private readonly at: string,
  ) {}

  private value(key: string): unknown {
    const v = this.fields[key];
    return v === null ? undefined : v;
  }

  has(key: string): boolean {
    return this.value(key) !== undefined;
  }

  raw(key: string): unknown {
    return this.value(key);
  }

  commitment(key = 'commitment'): Commitment | undefined {
    const v = this.value(key);
    if (v === undefined) return undefined;
    if (typeof v === 'string' && Object.hasOwn(COMMITMENTS, v)) return COMMITMENTS[v];
    throw invalidParams(
      `Invalid params: ${this.at}.${key} must be one of "processed", "confirmed", "finalized", not ${describe(v)}`,
    );
  }

  bool(key: string): boolean | undefined {
    const v = this.value(key);
    if (v === undefined || typeof v === 'boolean') return v;
    throw invalidParams(`Invalid params: ${this.at}.${key} must be a boolean, not ${describe(v)}`);
  }

  string(key: string): string | undefined {
    const v = this.value(key);
    if (v === undefined || typeof v === 'string') return v;
    throw invalidParams(`Invalid params: ${this.at}.${key} must be a string, not ${describe(v)}`);
  }

  u64(key: string): bigint | undefined {
    const v = this.value(key);
    return v === undefined ? undefined : asU64(v, `${this.at}.${key}`);
  }

  usize(key: string): number | undefined {
    const v = this.value(key);
    return v === undefined ? undefined : asUsize(v, `${this.at}.${key}`);
  }

  oneOf<T extends string>(key: string, allowed: readonly T[]): T | undefined {
    const v = this.value(key);
    if (v === undefined) return undefined;
    if (typeof v === 'string' && (allowed as readonly string[]).includes(v)) return v as T;
    throw invalidParams(
      `Invalid params: ${this.at}.${key} must be one of ${allowed.map((a) => `"${a}"`).join(', ')}, not ${describe(v)}`,
    );
  }

  dataSlice(): DataSlice | undefined {
    const v = this.value('dataSlice');
    if (v === undefined) return undefined;
    if (!isObject(v))
      throw invalidParams(`Invalid params: ${this.at}.dataSlice must be an object with offset and length`);
    const slice = new Config(v, `${this.at}.dataSlice`);
    const offset = slice.usize('offset');
    const length = slice.usize('length');
    if (offset === undefined || length === undefined)
      throw invalidParams(`Invalid params: ${this.at}.dataSlice needs both offset and length`);
    return { offset, length };
  }
}

/** The positional parameters of one call. */
class Params {
  constructor(private readonly list: unknown[]) {}

  atMost(n: number): this {
    if (this.list.length > n)
      throw invalidParams(
        `Invalid params: expected at most ${n} parameter${n === 1 ? '' : 's'}, got ${this.list.length}`,
      );
    return this;
  }

  required(i: number): unknown {
    if (this.list.length <= i) throw invalidParams(`\`params\` should have at least ${i + 1} argument(s)`);
    return this.list[i];
  }

  optional(i: number): unknown {
    const v = this.list[i];
    return v === null ? undefined : v;
  }

  string(i: number, what: string): string {
    const v = this.required(i);
    if (typeof v !== 'string')
      throw invalidParams(`Invalid params: params[${i}] (${what}) must be a string, not ${describe(v)}`);
    return v;
  }

  address(i: number, what = 'address'): string {
    return checkAddress(this.string(i, what), `params[${i}] (${what})`);
  }

  signature(i: number): string {
    return checkSignature(this.string(i, 'signature'), `params[${i}] (signature)`);
  }

  u64(i: number, what: string): bigint {
    return asU64(this.required(i), `params[${i}] (${what})`);
  }

  config(i: number): Config {
    const v = this.optional(i);
    if (v === undefined) return new Config({}, `params[${i}]`);
    if (!isObject(v))
      throw invalidParams(`Invalid params: params[${i}] must be a configuration object, not ${describe(v)}`);
    return new Config(v, `params[${i}]`);
  }
}

function base58Problem(text: string, length: number): string | undefined {
  try {
    return decodeBase58(text).length === length && text.length <= 88 ? undefined : 'WrongSize';
  } catch {
    return 'Invalid';
  }
}

function checkAddress(text: string, where: string): string {
  if (isAddress(text)) return text;
  throw invalidParams(
    `Invalid param: ${base58Problem(text, 32) ?? 'WrongSize'} (${where} must be a base58-encoded 32-byte address)`,
  );
}

function checkSignature(text: string, where: string): string {
  const problem = base58Problem(text, 64);
  if (problem) throw invalidParams(`Invalid param: ${problem} (${where} must be a base58-encoded 64-byte signature)`);
  return text;
}

// ---------------------------------------------------------------------------------------------------

type Handler = (params: Params, rpc: RpcContext) => unknown;

class RpcContext {
  readonly current: bigint;
  constructor(readonly ledger: LocalLedger) {
    this.current = ledger.slot();
  }

  /** The slot of the bank a commitment reads (finalized: the last root; default finalized, as a node). */
  bankSlot(commitment: Commitment | undefined): bigint {
    return (commitment ?? 'finalized') === 'finalized' ? this.ledger.finalizedSlot(this.current) : this.current;
  }

  /**
   * The newest slot whose blocks and transactions a commitment may see; nothing is rooted before FINALITY_DEPTH slots.
   */
  visibleSlot(commitment: Commitment): bigint {
    return commitment === 'finalized' ? this.current - FINALITY_DEPTH : this.current;
  }

  /** Applies minContextSlot and returns the response context. */
  context(config: Config, slot = this.current): { apiVersion: string; slot: bigint } {
    const min = config.u64('minContextSlot');
    if (min !== undefined && slot < min)
      throw new RpcError(-32016, 'Minimum context slot has not been reached', { contextSlot: slot });
    return { apiVersion: API_VERSION, slot };
  }

  withContext(config: Config, value: unknown, slot = this.current): { context: unknown; value: unknown } {
    return { context: this.context(config, slot), value };
  }
}

function atLeastConfirmed(config: Config): Commitment {
  const commitment = config.commitment() ?? 'finalized';
  if (commitment === 'processed') throw invalidParams('Method does not support commitment below `confirmed`');
  return commitment;
}

function accountEncoding(config: Config, fallback: AccountEncoding): AccountEncoding {
  return config.oneOf('encoding', ['binary', 'base58', 'base64', 'base64+zstd', 'jsonParsed'] as const) ?? fallback;
}

function encodeMaybeAccount(
  rpc: RpcContext,
  account: LedgerAccount | null,
  encoding: AccountEncoding,
  slice?: DataSlice,
): unknown {
  return account ? encodeAccount(rpc.ledger, account, encoding, slice) : null;
}

function decodeWire(data: string, encoding: 'base58' | 'base64', type: string): Uint8Array {
  if (encoding === 'base58' && data.length > MAX_BASE58_SIZE) {
    throw invalidParams(
      `base58 encoded ${type} too large: ${data.length} bytes (max: encoded/raw ${MAX_BASE58_SIZE}/${PACKET_DATA_SIZE})`,
    );
  }
  if (encoding === 'base64' && data.length > MAX_BASE64_SIZE) {
    throw invalidParams(
      `base64 encoded ${type} too large: ${data.length} bytes (max: encoded/raw ${MAX_BASE64_SIZE}/${PACKET_DATA_SIZE})`,
    );
  }
  let bytes: Uint8Array;
  try {
    bytes = encoding === 'base58' ? decodeBase58(data) : decodeBase64(data);
  } catch (error) {
    throw invalidParams(`invalid ${encoding} encoding: ${(error as Error).message}`);
  }
  if (bytes.length > PACKET_DATA_SIZE)
    throw invalidParams(`decoded ${type} too large: ${bytes.length} bytes (max: ${PACKET_DATA_SIZE} bytes)`);
  return bytes;
}

function deserializeTransaction(bytes: Uint8Array): ParsedTransaction {
  try {
    return parseTransaction(bytes);
  } catch (error) {
    if (error instanceof WireError) throw invalidParams(`failed to deserialize ${TRANSACTION_TYPE}: ${error.message}`);
    throw error;
  }
}

function readTransaction(params: Params, config: Config): ParsedTransaction {
  const data = params.string(0, 'transaction');
  const encoding = config.oneOf('encoding', ['base58', 'base64', 'json', 'jsonParsed', 'binary'] as const) ?? 'base58';
  if (encoding !== 'base58' && encoding !== 'base64' && encoding !== 'binary') {
    throw invalidParams(`unsupported encoding: ${encoding}. Supported encodings: base58, base64`);
  }
  return deserializeTransaction(decodeWire(data, encoding === 'base64' ? 'base64' : 'base58', TRANSACTION_TYPE));
}

function prepare(ledger: LocalLedger, tx: ParsedTransaction): PreparedTransaction {
  const prepared = ledger.prepare(tx);
  if ('error' in prepared) throw invalidParams(`invalid transaction: ${describeTransactionError(prepared.error)}`);
  return prepared;
}

function returnDataJson(returnData: { programId: string; data: Uint8Array } | null): unknown {
  return returnData ? { programId: returnData.programId, data: [toBase64(returnData.data), 'base64'] } : null;
}

function tokenAccountsOf(
  ledger: LocalLedger,
  program: string,
  match: (token: NonNullable<ReturnType<typeof decodeTokenAccount>>) => boolean,
) {
  return ledger.programAccounts(program).filter(({ account }) => {
    const token = decodeTokenAccount(account.owner, account.data);
    return token !== null && match(token);
  });
}

/** The token program of a mint, as getTokenAccountsByOwner and friends require (-32602 otherwise). */
function mintProgram(ledger: LocalLedger, mint: string): string {
  const account = ledger.getAccount(mint);
  if (!account) throw invalidParams('Invalid param: could not find mint');
  if (!isTokenProgram(account.owner)) throw invalidParams('Invalid param: not a Token mint');
  if (!decodeMint(account.owner, account.data)) throw invalidParams('Invalid param: mint could not be unpacked');
  return account.owner;
}

function encodeKeyedAccounts(
  rpc: RpcContext,
  accounts: { address: string; account: LedgerAccount }[],
  encoding: AccountEncoding,
  slice?: DataSlice,
) {
  return accounts.map(({ address, account }) => ({
    pubkey: address,
    account: encodeAccount(rpc.ledger, account, encoding, slice),
  }));
}

function transactionStatus(rpc: RpcContext, record: TxRecord) {
  const finalized = record.slot <= rpc.visibleSlot('finalized');
  return {
    slot: record.slot,
    confirmations: finalized ? null : Number(rpc.current - record.slot),
    err: record.err,
    status: statusOf(record.err),
    confirmationStatus: finalized ? 'finalized' : 'confirmed',
  };
}

function blockConfig(params: Params, i: number): Config {
  // the deprecated form passes the encoding alone instead of a configuration object
  const v = params.optional(i);
  return typeof v === 'string' ? new Config({ encoding: v }, `params[${i}]`) : params.config(i);
}

function checkBlockAvailable(rpc: RpcContext, slot: bigint, commitment: Commitment): void {
  if (slot < rpc.ledger.firstSlot) {
    throw new RpcError(
      -32001,
      `Block ${slot} cleaned up, does not exist on node. First available block: ${rpc.ledger.firstSlot}`,
    );
  }
  if (slot > rpc.visibleSlot(commitment)) throw new RpcError(-32004, `Block not available for slot ${slot}`);
}

function simulationJson(
  prepared: PreparedTransaction,
  outcome: ReturnType<LocalLedger['simulate']>,
  extra: { accounts: unknown; innerInstructions: boolean; replacementBlockhash: unknown },
) {
  return {
    accounts: extra.accounts,
    err: outcome.err,
    fee: outcome.fee,
    innerInstructions: extra.innerInstructions
      ? uiInnerInstructions(outcome.innerInstructions, prepared.keys, true)
      : null,
    loadedAccountsDataSize: outcome.loadedAccountsDataSize,
    loadedAddresses: outcome.executed ? { readonly: prepared.loadedReadonly, writable: prepared.loadedWritable } : null,
    logs: outcome.logs,
    postBalances: outcome.postBalances,
    postTokenBalances: outcome.postTokenBalances && uiTokenBalances(outcome.postTokenBalances),
    preBalances: outcome.preBalances,
    preTokenBalances: outcome.preTokenBalances && uiTokenBalances(outcome.preTokenBalances),
    replacementBlockhash: extra.replacementBlockhash,
    returnData: returnDataJson(outcome.returnData),
    unitsConsumed: outcome.unitsConsumed,
  };
}

const METHODS: Record<string, Handler> = {
  getHealth: (p) => (p.atMost(0), 'ok'),
  getVersion: (p) => (p.atMost(0), { 'feature-set': FEATURE_SET, 'solana-core': API_VERSION }),
  getGenesisHash: (p, rpc) => (p.atMost(0), rpc.ledger.genesisHash),
  getIdentity: (p, rpc) => (p.atMost(0), { identity: rpc.ledger.identity }),
  getFirstAvailableBlock: (p, rpc) => (p.atMost(0), rpc.ledger.firstSlot),
  minimumLedgerSlot: (p, rpc) => (p.atMost(0), rpc.ledger.firstSlot),
  getMaxRetransmitSlot: (p, rpc) => (p.atMost(0), rpc.current),
  getMaxShredInsertSlot: (p, rpc) => (p.atMost(0), rpc.current),
  getVoteAccounts: (p) => (p.atMost(1).config(0), { current: [], delinquent: [] }),

  getSlot: (p, rpc) => {
    const config = p.atMost(1).config(0);
    const slot = rpc.bankSlot(config.commitment());
    rpc.context(config, slot);
    return slot;
  },
  getBlockHeight: (p, rpc) => METHODS.getSlot!(p, rpc),
  getTransactionCount: (p, rpc) => {
    const config = p.atMost(1).config(0);
    rpc.context(config, rpc.bankSlot(config.commitment()));
    return rpc.ledger.transactionCount();
  },
  getSlotLeader: (p, rpc) => {
    const config = p.atMost(1).config(0);
    rpc.context(config, rpc.bankSlot(config.commitment()));
    return rpc.ledger.identity;
  },
  getSlotLeaders: (p, rpc) => {
    p.atMost(2);
    const start = p.u64(0, 'start slot');
    const limit = asUsize(p.required(1), 'params[1] (limit)');
    if (limit > MAX_SLOT_LEADERS) throw invalidParams(`Invalid limit; max ${MAX_SLOT_LEADERS}`);
    const lastEpoch = (start + BigInt(Math.max(limit, 1)) - 1n) / SLOTS_PER_EPOCH;
    if (lastEpoch > rpc.current / SLOTS_PER_EPOCH + 1n)
      throw invalidParams(`Invalid slot range: leader schedule for epoch ${lastEpoch} is unavailable`);
    return Array.from({ length: limit }, () => rpc.ledger.identity);
  },
  getEpochInfo: (p, rpc) => {
    const config = p.atMost(1).config(0);
    const slot = rpc.bankSlot(config.commitment());
    rpc.context(config, slot);
    return {
      absoluteSlot: slot,
      blockHeight: slot,
      epoch: slot / SLOTS_PER_EPOCH,
      slotIndex: slot % SLOTS_PER_EPOCH,
      slotsInEpoch: SLOTS_PER_EPOCH,
      transactionCount: rpc.ledger.transactionCount(),
    };
  },
  getEpochSchedule: (p) => (
    p.atMost(0),
    {
      firstNormalEpoch: 0,
      firstNormalSlot: 0,
      leaderScheduleSlotOffset: SLOTS_PER_EPOCH,
      slotsPerEpoch: SLOTS_PER_EPOCH,
      warmup: false,
    }
  ),

  getLatestBlockhash: (p, rpc) => {
    const config = p.atMost(1).config(0);
    const slot = rpc.bankSlot(config.commitment());
    return rpc.withContext(
      config,
      {
        blockhash: rpc.ledger.blockhashOf(slot),
        lastValidBlockHeight: slot + BigInt(rpc.ledger.blockhashLifetimeSlots),
      },
      slot,
    );
  },
  isBlockhashValid: (p, rpc) => {
    p.atMost(2);
    const hash = p.string(0, 'blockhash');
    const problem = base58Problem(hash, 32);
    if (problem) throw invalidParams(problem);
    const config = p.config(1);
    const slot = rpc.bankSlot(config.commitment());
    return rpc.withContext(config, rpc.ledger.isBlockhashValid(hash, slot), slot);
  },
  getFeeForMessage: (p, rpc) => {
    p.atMost(2);
    const bytes = decodeWire(p.string(0, 'message'), 'base64', MESSAGE_TYPE);
    const config = p.config(1);
    let message;
    try {
      message = parseMessage(bytes);
    } catch (error) {
      if (error instanceof WireError) throw invalidParams(`failed to deserialize ${MESSAGE_TYPE}: ${error.message}`);
      throw error;
    }
    // a message is checked as a transaction with placeholder signatures would be
    const prepared = rpc.ledger.prepare({
      bytes: encodeTransaction([], message.bytes),
      signatures: Array.from({ length: message.numRequiredSignatures }, () => new Uint8Array(64)),
      message,
      signature: base58Encode(new Uint8Array(64)),
    });
    if ('error' in prepared)
      throw invalidParams(`invalid transaction message: ${describeTransactionError(prepared.error)}`);
    const slot = rpc.bankSlot(config.commitment());
    const valid = rpc.ledger.isBlockhashValid(message.recentBlockhash, slot);
    return rpc.withContext(config, valid ? feeOf(message.numRequiredSignatures, prepared.instructions) : null, slot);
  },

  getBalance: (p, rpc) => {
    p.atMost(2);
    const address = p.address(0);
    const config = p.config(1);
    config.commitment();
    return rpc.withContext(config, rpc.ledger.getAccount(address)?.lamports ?? 0n);
  },
  getAccountInfo: (p, rpc) => {
    p.atMost(2);
    const address = p.address(0);
    const config = p.config(1);
    config.commitment();
    const encoding = accountEncoding(config, 'binary');
    const context = rpc.context(config);
    return { context, value: encodeMaybeAccount(rpc, rpc.ledger.getAccount(address), encoding, config.dataSlice()) };
  },
  getMultipleAccounts: (p, rpc) => {
    p.atMost(2);
    const list = p.required(0);
    if (!Array.isArray(list))
      throw invalidParams(`Invalid params: params[0] must be an array of addresses, not ${describe(list)}`);
    if (list.length > MAX_MULTIPLE_ACCOUNTS)
      throw invalidParams(`Too many inputs provided; max ${MAX_MULTIPLE_ACCOUNTS}`);
    const addresses = list.map((a, i) => {
      if (typeof a !== 'string')
        throw invalidParams(`Invalid params: params[0][${i}] must be a string, not ${describe(a)}`);
      return checkAddress(a, `params[0][${i}]`);
    });
    const config = p.config(1);
    config.commitment();
    const encoding = accountEncoding(config, 'base64');
    const slice = config.dataSlice();
    const context = rpc.context(config);
    return { context, value: addresses.map((a) => encodeMaybeAccount(rpc, rpc.ledger.getAccount(a), encoding, slice)) };
  },
  getProgramAccounts: (p, rpc) => {
    p.atMost(2);
    const program = p.address(0, 'program id');
    const config = p.config(1);
    config.commitment();
    const encoding = accountEncoding(config, 'binary');
    const slice = config.dataSlice();
    const filters = parseFilters(config.raw('filters'));
    const withContext = config.bool('withContext') ?? false;
    const context = rpc.context(config);
    const matching = rpc.ledger.programAccounts(program).filter(({ account }) => filters.every((f) => f(account)));
    const value = encodeKeyedAccounts(rpc, matching, encoding, slice);
    return withContext ? { context, value } : value;
  },
  getMinimumBalanceForRentExemption: (p, rpc) => {
    p.atMost(2);
    const size = p.u64(0, 'data length');
    p.config(1).commitment();
    if (size > MAX_PERMITTED_DATA_LENGTH) throw new RpcError(-32600, 'Invalid request');
    return rpc.ledger.minimumBalanceForRentExemption(size);
  },

  getTokenAccountBalance: (p, rpc) => {
    p.atMost(2);
    const address = p.address(0);
    const config = p.config(1);
    config.commitment();
    const account = rpc.ledger.getAccount(address);
    if (!account) throw invalidParams('Invalid param: could not find account');
    const token = decodeTokenAccount(account.owner, account.data);
    if (!token) throw invalidParams('Invalid param: not a Token account');
    mintProgram(rpc.ledger, token.mint);
    return rpc.withContext(config, uiTokenAmount(token.amount, rpc.ledger.mintDecimals(token.mint)!));
  },
  getTokenSupply: (p, rpc) => {
    p.atMost(2);
    const address = p.address(0, 'mint');
    const config = p.config(1);
    config.commitment();
    const account = rpc.ledger.getAccount(address);
    if (!account) throw invalidParams('Invalid param: could not find account');
    if (!isTokenProgram(account.owner)) throw invalidParams('Invalid param: not a Token mint');
    const mint = decodeMint(account.owner, account.data);
    if (!mint) throw invalidParams('Invalid param: mint could not be unpacked');
    return rpc.withContext(config, uiTokenAmount(mint.supply, mint.decimals));
  },
  getTokenLargestAccounts: (p, rpc) => {
    p.atMost(2);
    const mint = p.address(0, 'mint');
    const config = p.config(1);
    config.commitment();
    const program = mintProgram(rpc.ledger, mint);
    const decimals = rpc.ledger.mintDecimals(mint)!;
    const largest = tokenAccountsOf(rpc.ledger, program, (t) => t.mint === mint)
      .map(({ address, account }) => ({ address, amount: decodeTokenAccount(account.owner, account.data)!.amount }))
      .sort((a, b) =>
        a.amount === b.amount
          ? Buffer.compare(addressBytes(b.address), addressBytes(a.address))
          : a.amount < b.amount
            ? 1
            : -1,
      )
      .slice(0, LARGEST_TOKEN_ACCOUNTS)
      .map(({ address, amount }) => ({ address, ...uiTokenAmount(amount, decimals) }));
    return rpc.withContext(config, largest);
  },
  getTokenAccountsByOwner: (p, rpc) => tokenAccountsBy(p, rpc, 'owner'),
  getTokenAccountsByDelegate: (p, rpc) => tokenAccountsBy(p, rpc, 'delegate'),

  sendTransaction: (p, rpc) => {
    p.atMost(2);
    const config = p.config(1);
    const tx = readTransaction(p, config);
    const skipPreflight = config.bool('skipPreflight') ?? false;
    const preflightCommitment = config.commitment('preflightCommitment');
    config.usize('maxRetries');
    rpc.context(config, skipPreflight ? rpc.current : rpc.bankSlot(preflightCommitment ?? 'finalized'));
    const prepared = prepare(rpc.ledger, tx);
    if (skipPreflight) {
      // like a node, the signature comes back even when the leader will drop the transaction
      rpc.ledger.submit(prepared);
      return tx.signature;
    }
    if (!verifySignatures(tx)) throw new RpcError(-32003, 'Transaction signature verification failure');
    const sent = rpc.ledger.sendWithPreflight(prepared);
    if (!('preflight' in sent)) return tx.signature;
    const { err } = sent.preflight;
    // Should its simulation pass where its run failed, it is sent, as after a preflight that passed.
    if (err === null) {
      rpc.ledger.submit(prepared);
      return tx.signature;
    }
    const data = simulationJson(prepared, sent.preflight, {
      accounts: null,
      innerInstructions: false,
      replacementBlockhash: null,
    });
    throw new RpcError(-32002, `Transaction simulation failed: ${describeTransactionError(err)}`, data);
  },
  simulateTransaction: (p, rpc) => {
    p.atMost(2);
    const config = p.config(1);
    let tx = readTransaction(p, config);
    const sigVerify = config.bool('sigVerify') ?? false;
    const replace = config.bool('replaceRecentBlockhash') ?? false;
    const innerInstructions = config.bool('innerInstructions') ?? false;
    config.commitment();
    const accountsConfig = config.raw('accounts');
    rpc.context(config);
    let replacementBlockhash: unknown = null;
    if (replace) {
      if (sigVerify) throw invalidParams('sigVerify may not be used with replaceRecentBlockhash');
      const latest = rpc.ledger.latestBlockhash('processed');
      const messageBytes = new Uint8Array(tx.message.bytes);
      messageBytes.set(decodeBase58(latest.blockhash), tx.message.blockhashOffset);
      tx = parseTransaction(encodeTransaction(tx.signatures, messageBytes));
      replacementBlockhash = { blockhash: latest.blockhash, lastValidBlockHeight: latest.lastValidBlockHeight };
    }
    const prepared = prepare(rpc.ledger, tx);
    if (sigVerify && !verifySignatures(tx)) throw new RpcError(-32003, 'Transaction signature verification failure');
    const outcome = rpc.ledger.simulate(prepared, { sigVerify });
    let accounts: unknown = null;
    if (accountsConfig !== undefined) {
      if (!isObject(accountsConfig) || !Array.isArray(accountsConfig.addresses)) {
        throw invalidParams('Invalid params: params[1].accounts must be an object with an addresses array');
      }
      const accountConfig = new Config(accountsConfig, 'params[1].accounts');
      const encoding = accountEncoding(accountConfig, 'base64');
      if (encoding === 'binary' || encoding === 'base58') throw invalidParams('base58 encoding not supported');
      const addresses = accountsConfig.addresses.map((a, i) => {
        if (typeof a !== 'string')
          throw invalidParams(
            `Invalid params: params[1].accounts.addresses[${i}] must be a string, not ${describe(a)}`,
          );
        return a;
      });
      if (addresses.length > prepared.keys.length)
        throw invalidParams(`Too many accounts provided; max ${prepared.keys.length}`);
      accounts = addresses.map((a, i) => {
        checkAddress(a, `params[1].accounts.addresses[${i}]`);
        if (outcome.err !== null) return null;
        const account = outcome.postAccounts.has(a) ? outcome.postAccounts.get(a)! : rpc.ledger.getAccount(a);
        return encodeMaybeAccount(rpc, account, encoding);
      });
    }
    return rpc.withContext(
      config,
      simulationJson(prepared, outcome, { accounts, innerInstructions, replacementBlockhash }),
    );
  },
  requestAirdrop: (p, rpc) => {
    p.atMost(3);
    const address = p.address(0);
    const lamports = p.u64(1, 'lamports');
    const config = p.config(2);
    config.commitment();
    config.string('recentBlockhash');
    if (lamports === 0n || lamports > MAX_AIRDROP_LAMPORTS) {
      throw invalidParams(
        `Invalid params: an airdrop must be between 1 and ${MAX_AIRDROP_LAMPORTS} lamports (100 SOL), not ${lamports}`,
      );
    }
    return rpc.ledger.airdropNow(address, lamports);
  },

  getSignatureStatuses: (p, rpc) => {
    p.atMost(2);
    const list = p.required(0);
    if (!Array.isArray(list))
      throw invalidParams(`Invalid params: params[0] must be an array of signatures, not ${describe(list)}`);
    if (list.length > MAX_SIGNATURE_STATUSES)
      throw invalidParams(`Too many inputs provided; max ${MAX_SIGNATURE_STATUSES}`);
    const signatures = list.map((s, i) => {
      if (typeof s !== 'string')
        throw invalidParams(`Invalid params: params[0][${i}] must be a string, not ${describe(s)}`);
      return checkSignature(s, `params[0][${i}]`);
    });
    const config = p.config(1);
    const search = config.bool('searchTransactionHistory') ?? false;
    return rpc.withContext(
      config,
      signatures.map((signature) => {
        const record = rpc.ledger.transaction(signature);
        // without searchTransactionHistory a node answers only from its status cache of recent slots
        if (!record || (!search && rpc.current - record.slot > STATUS_CACHE_SLOTS)) return null;
        return transactionStatus(rpc, record);
      }),
    );
  },
  getTransaction: (p, rpc) => {
    p.atMost(2);
    const signature = p.signature(0);
    const config = blockConfig(p, 1);
    const encoding = config.oneOf('encoding', ['json', 'jsonParsed', 'base58', 'base64'] as const) ?? 'json';
    const maxVersion = config.usize('maxSupportedTransactionVersion');
    if (maxVersion !== undefined && maxVersion > 255)
      throw invalidParams('Invalid params: maxSupportedTransactionVersion must be at most 255');
    const commitment = atLeastConfirmed(config);
    const record = rpc.ledger.transaction(signature);
    if (!record || record.slot > rpc.visibleSlot(commitment)) return null;
    const encoded = encodeTransactionWithMeta(record, encoding as TransactionEncoding, maxVersion);
    return {
      blockTime: record.blockTime,
      meta: encoded.meta,
      slot: record.slot,
      transaction: encoded.transaction,
      ...('version' in encoded ? { version: encoded.version } : {}),
    };
  },
  getSignaturesForAddress: (p, rpc) => {
    p.atMost(2);
    const address = p.address(0);
    const config = p.config(1);
    const limit = config.usize('limit') ?? MAX_SIGNATURES_FOR_ADDRESS;
    if (limit === 0 || limit > MAX_SIGNATURES_FOR_ADDRESS)
      throw invalidParams(`Invalid limit; max ${MAX_SIGNATURES_FOR_ADDRESS}`);
    const before = config.string('before');
    const until = config.string('until');
    if (before !== undefined) checkSignature(before, 'params[1].before');
    if (until !== undefined) checkSignature(until, 'params[1].until');
    const commitment = atLeastConfirmed(config);
    const maxSlot = rpc.visibleSlot(commitment);
    rpc.context(config, rpc.bankSlot(commitment));
    const finalized = rpc.visibleSlot('finalized');
    return rpc.ledger.signaturesForAddress(address, { limit, before, until, maxSlot }).map((record) => ({
      blockTime: record.blockTime,
      confirmationStatus: record.slot <= finalized ? 'finalized' : 'confirmed',
      err: record.err,
      memo: memoOfRecord(record),
      signature: record.signature,
      slot: record.slot,
    }));
  },
  getBlock: (p, rpc) => {
    p.atMost(2);
    const slot = p.u64(0, 'slot');
    const config = blockConfig(p, 1);
    const encoding = config.oneOf('encoding', ['json', 'jsonParsed', 'base58', 'base64'] as const) ?? 'json';
    const details = config.oneOf('transactionDetails', ['full', 'signatures', 'none', 'accounts'] as const) ?? 'full';
    const rewards = config.bool('rewards') ?? true;
    const maxVersion = config.usize('maxSupportedTransactionVersion');
    const commitment = atLeastConfirmed(config);
    checkBlockAvailable(rpc, slot, commitment);
    const records = rpc.ledger.blockTransactions(slot);
    const block: Record<string, unknown> = {
      blockHeight: slot,
      blockTime: rpc.ledger.blockTime(slot),
      blockhash: rpc.ledger.blockhashOf(slot),
      parentSlot: slot > rpc.ledger.firstSlot ? slot - 1n : slot,
      previousBlockhash:
        slot > rpc.ledger.firstSlot ? rpc.ledger.blockhashOf(slot - 1n) : '11111111111111111111111111111111',
    };
    if (details === 'full')
      block.transactions = records.map((r) =>
        encodeTransactionWithMeta(r, encoding as TransactionEncoding, maxVersion, rewards),
      );
    else if (details === 'accounts') block.transactions = records.map((r) => encodeTransactionAccounts(r, maxVersion));
    else if (details === 'signatures') {
      records.forEach((r) => checkVersion(r, maxVersion));
      block.signatures = records.map((r) => r.signature);
    }
    if (rewards) block.rewards = [];
    return block;
  },
  getBlockTime: (p, rpc) => {
    p.atMost(1);
    const slot = p.u64(0, 'slot');
    checkBlockAvailable(rpc, slot, 'confirmed');
    return rpc.ledger.blockTime(slot);
  },
  getBlocks: (p, rpc) => {
    p.atMost(3);
    const start = p.u64(0, 'start slot');
    const second = p.optional(1);
    const config = isObject(second) ? new Config(second, 'params[1]') : p.config(2);
    const end = second === undefined || isObject(second) ? undefined : asU64(second, 'params[1] (end slot)');
    const commitment = atLeastConfirmed(config);
    const top = rpc.visibleSlot(commitment);
    rpc.context(config, rpc.bankSlot(commitment));
    const last = end === undefined ? start + MAX_BLOCKS_RANGE : end;
    const to = last < top ? last : top;
    if (to < start) return [];
    if (to - start > MAX_BLOCKS_RANGE) throw invalidParams(`Slot range too large; max ${MAX_BLOCKS_RANGE}`);
    const from = start > rpc.ledger.firstSlot ? start : rpc.ledger.firstSlot;
    const slots: bigint[] = [];
    for (let s = from; s <= to; s++) slots.push(s);
    return slots;
  },
  getBlocksWithLimit: (p, rpc) => {
    p.atMost(3);
    const start = p.u64(0, 'start slot');
    const limit = asUsize(p.required(1), 'params[1] (limit)');
    if (BigInt(limit) > MAX_BLOCKS_RANGE) throw invalidParams(`Limit too large; max ${MAX_BLOCKS_RANGE}`);
    const config = p.config(2);
    const commitment = atLeastConfirmed(config);
    const top = rpc.visibleSlot(commitment);
    rpc.context(config, rpc.bankSlot(commitment));
    const from = start > rpc.ledger.firstSlot ? start : rpc.ledger.firstSlot;
    const slots: bigint[] = [];
    for (let s = from; s <= top && slots.length < limit; s++) slots.push(s);
    return slots;
  },

  getRecentPrioritizationFees: (p, rpc) => {
    p.atMost(1);
    const list = p.optional(0) ?? [];
    if (!Array.isArray(list))
      throw invalidParams(`Invalid params: params[0] must be an array of addresses, not ${describe(list)}`);
    if (list.length > MAX_PRIORITIZATION_FEE_ACCOUNTS)
      throw invalidParams(`Too many inputs provided; max ${MAX_PRIORITIZATION_FEE_ACCOUNTS}`);
    const addresses = list.map((a, i) => {
      if (typeof a !== 'string')
        throw invalidParams(`Invalid params: params[0][${i}] must be a string, not ${describe(a)}`);
      return checkAddress(a, `params[0][${i}]`);
    });
    const window = 150n;
    const from = rpc.current - window + 1n > rpc.ledger.firstSlot ? rpc.current - window + 1n : rpc.ledger.firstSlot;
    const bySlot = new Map<bigint, TxRecord[]>();
    for (const record of rpc.ledger.recentTransactions(from)) {
      const list = bySlot.get(record.slot) ?? [];
      list.push(record);
      bySlot.set(record.slot, list);
    }
    const out = [];
    for (let slot = from; slot <= rpc.current; slot++) {
      const records = bySlot.get(slot) ?? [];
      // the block's lowest fee, raised to the lowest fee paid by transactions write-locking a given account
      let fee = records.length > 0 ? records.reduce((min, r) => (r.unitPrice < min ? r.unitPrice : min), U64_MAX) : 0n;
      for (const address of addresses) {
        const locking = records.filter((r) => writableKeysOf(r).includes(address));
        if (locking.length === 0) continue;
        const accountFee = locking.reduce((min, r) => (r.unitPrice < min ? r.unitPrice : min), U64_MAX);
        if (accountFee > fee) fee = accountFee;
      }
      out.push({ prioritizationFee: fee, slot });
    }
    return out;
  },
  getRecentPerformanceSamples: (p, rpc) => {
    p.atMost(1);
    const raw = p.optional(0);
    const limit = raw === undefined ? MAX_PERFORMANCE_SAMPLES : asUsize(raw, 'params[0] (limit)');
    if (limit > MAX_PERFORMANCE_SAMPLES) throw invalidParams(`Invalid limit; max ${MAX_PERFORMANCE_SAMPLES}`);
    // one sample per 60 s of slots, newest first, as a node records them
    const perSample = 150n;
    const samples = [];
    for (
      let end = rpc.current;
      samples.length < limit && end - perSample + 1n >= rpc.ledger.firstSlot;
      end -= perSample
    ) {
      samples.push({ end, count: 0n });
    }
    const oldest = samples.length > 0 ? samples[samples.length - 1]!.end - perSample + 1n : rpc.current + 1n;
    for (const slot of rpc.ledger.recentTransactionSlots(oldest)) {
      const index = Number((rpc.current - slot) / perSample);
      if (samples[index]) samples[index]!.count++;
    }
    return samples.map((s) => ({
      numNonVoteTransactions: s.count,
      numSlots: perSample,
      numTransactions: s.count,
      samplePeriodSecs: 60,
      slot: s.end,
    }));
  },
};

function writableKeysOf(record: TxRecord): string[] {
  const tx = parseTransaction(record.wire);
  const m = tx.message;
  const writableStatic = m.staticKeys.filter((_, i) =>
    i < m.numRequiredSignatures
      ? i < m.numRequiredSignatures - m.numReadonlySigned
      : i < m.staticKeys.length - m.numReadonlyUnsigned,
  );
  return [...writableStatic, ...record.loadedWritable];
}

function tokenAccountsBy(p: Params, rpc: RpcContext, by: 'owner' | 'delegate') {
  p.atMost(3);
  const key = p.address(0, by);
  const filter = p.required(1);
  if (
    !isObject(filter) ||
    Object.keys(filter).length !== 1 ||
    (typeof filter.mint !== 'string' && typeof filter.programId !== 'string')
  ) {
    throw invalidParams('Invalid params: params[1] must be {"mint": <address>} or {"programId": <address>}');
  }
  const config = p.config(2);
  config.commitment();
  const encoding = accountEncoding(config, 'binary');
  const slice = config.dataSlice();
  const context = rpc.context(config);
  let program: string;
  let mint: string | undefined;
  if (typeof filter.mint === 'string') {
    mint = checkAddress(filter.mint, 'params[1].mint');
    program = mintProgram(rpc.ledger, mint);
  } else {
    program = checkAddress(filter.programId as string, 'params[1].programId');
    if (!isTokenProgram(program)) throw invalidParams('Invalid param: unrecognized Token program id');
  }
  const accounts = tokenAccountsOf(
    rpc.ledger,
    program,
    (t) => (by === 'owner' ? t.owner === key : t.delegate === key) && (mint === undefined || t.mint === mint),
  );
  return { context, value: encodeKeyedAccounts(rpc, accounts, encoding, slice) };
}

function parseFilters(raw: unknown): ((account: LedgerAccount) => boolean)[] {
  if (raw === undefined) return [];
  if (!Array.isArray(raw)) throw invalidParams('Invalid params: params[1].filters must be an array');
  if (raw.length > MAX_PROGRAM_ACCOUNT_FILTERS)
    throw invalidParams(`Too many filters provided; max ${MAX_PROGRAM_ACCOUNT_FILTERS}`);
  return raw.map((filter, i) => {
    if (filter === 'tokenAccountState')
      return (account: LedgerAccount) => decodeTokenAccount(account.owner, account.data) !== null;
    if (isObject(filter) && filter.dataSize !== undefined) {
      const size = asU64(filter.dataSize, `params[1].filters[${i}].dataSize`);
      return (account: LedgerAccount) => BigInt(account.data.length) === size;
    }
    if (isObject(filter) && isObject(filter.memcmp)) {
      const memcmp = new Config(filter.memcmp, `params[1].filters[${i}].memcmp`);
      const offset = memcmp.usize('offset');
      const text = memcmp.string('bytes');
      const encoding = memcmp.oneOf('encoding', ['base58', 'base64'] as const) ?? 'base58';
      if (offset === undefined || text === undefined)
        throw invalidParams(`Invalid params: params[1].filters[${i}].memcmp needs offset and bytes`);
      let bytes: Uint8Array;
      try {
        bytes = encoding === 'base58' ? decodeBase58(text) : decodeBase64(text);
      } catch {
        throw invalidParams(`Invalid param: DecodeError (params[1].filters[${i}].memcmp.bytes is not ${encoding})`);
      }
      if (bytes.length > 128) throw invalidParams('Invalid param: DataTooLarge');
      return (account: LedgerAccount) =>
        account.data.length >= offset + bytes.length && bytes.every((b, j) => account.data[offset + j] === b);
    }
    throw invalidParams(
      `Invalid params: params[1].filters[${i}] must be {"dataSize": n}, {"memcmp": {...}} or "tokenAccountState"`,
    );
  });
}

// ---------------------------------------------------------------------------------------------------

const errorBody = (code: number, message: string, data?: unknown) =>
  data === undefined ? { code, message } : { code, message, data };

type Response = { jsonrpc: '2.0'; id: unknown; result?: unknown; error?: unknown };

/** Answers one JSON-RPC request object (undefined for a notification). */
function handleRequest(
  ledger: LocalLedger,
  request: unknown,
  onError?: (error: unknown) => void,
): Response | undefined {
  const validId = (id: unknown) =>
    id === null || typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) || typeof id === 'bigint';
  if (!isObject(request)) return { jsonrpc: '2.0', error: errorBody(-32600, 'Invalid request'), id: null };
  const isNotification = !Object.hasOwn(request, 'id');
  const id = isNotification ? null : request.id;
  if (request.jsonrpc !== '2.0' || !validId(id) || typeof request.method !== 'string') {
    return { jsonrpc: '2.0', error: errorBody(-32600, 'Invalid request'), id: validId(id) ? id : null };
  }
  const respond = (body: Omit<Response, 'jsonrpc' | 'id'>): Response | undefined =>
    isNotification ? undefined : { jsonrpc: '2.0', ...body, id };
  const handler = Object.hasOwn(METHODS, request.method) ? METHODS[request.method] : undefined;
  if (!handler) return respond({ error: errorBody(-32601, 'Method not found') });
  const params = request.params;
  if (params !== undefined && params !== null && !Array.isArray(params)) {
    return respond({ error: errorBody(-32602, 'Invalid params: params must be an array of positional parameters') });
  }
  try {
    const result = handler(new Params(params ?? []), new RpcContext(ledger));
    return respond({ result });
  } catch (error) {
    if (error instanceof RpcError) return respond({ error: errorBody(error.code, error.message, error.data) });
    if (error instanceof LedgerError) return respond({ error: errorBody(-32603, `Internal error: ${error.message}`) });
    onError?.(error);
    return respond({ error: errorBody(-32603, 'Internal error') });
  }
}

/**
 * Largest batch, and the work one batch may ask for: the handlers run synchronously, so one huge batch would freeze
 * every service in the process.
 */
export const MAX_BATCH_REQUESTS = 100;
export const MAX_BATCH_WORK = 100;
/** Work units of the methods that scan the ledger; every other method counts 1. */
const BATCH_WORK: Record<string, number> = {
  getProgramAccounts: 25,
  getTokenLargestAccounts: 10,
  getSignaturesForAddress: 5,
  getTokenAccountsByOwner: 5,
  getMultipleAccounts: 2,
  simulateTransaction: 2,
  sendTransaction: 2,
};

/** Why a batch is refused whole (too many requests, too much work), or undefined. */
function batchRefusal(batch: unknown[]): string | undefined {
  if (batch.length > MAX_BATCH_REQUESTS)
    return `Invalid request: a batch holds at most ${MAX_BATCH_REQUESTS} requests, this one ${batch.length}; split it`;
  let work = 0;
  const heavy = new Map<string, number>();
  for (const request of batch) {
    const method = isObject(request) && typeof request.method === 'string' ? request.method : '';
    const units = Object.hasOwn(BATCH_WORK, method) ? BATCH_WORK[method]! : 1;
    work += units;
    if (units > 1) heavy.set(method, (heavy.get(method) ?? 0) + 1);
  }
  if (work <= MAX_BATCH_WORK) return undefined;
  const named = [...heavy].map(([method, count]) => `${count} ${method} (${BATCH_WORK[method]} each)`).join(', ');
  return `Invalid request: the batch asks for ${work} work units (${named}), more than the ${MAX_BATCH_WORK} a batch may; split it`;
}

/**
 * Answers a JSON-RPC request body (one request or a batch) with the response text, or undefined when
 * nothing is to be sent back (notifications only). Never throws.
 */
export function handleRpcBody(
  ledger: LocalLedger,
  text: string,
  onError?: (error: unknown) => void,
): string | undefined {
  let body: unknown;
  try {
    body = parseJson(text);
  } catch (error) {
    if (!(error instanceof JsonSyntaxError)) onError?.(error);
    return stringifyJson({ jsonrpc: '2.0', error: errorBody(-32700, 'Parse error'), id: null });
  }
  const response = handleRpcValue(ledger, body, onError);
  return response === undefined ? undefined : stringifyJson(response);
}

/**
 * handleRpcBody without the text: a request as parseJson reads it (integers beyond 2^53 as bigint), answered in the
 * shape stringifyJson writes (undefined: nothing to send back). Never throws.
 */
export function handleRpcValue(ledger: LocalLedger, body: unknown, onError?: (error: unknown) => void): unknown {
  // handlers run synchronously, so the ledger never changes in the middle of a request
  const handle = (request: unknown) => handleRequest(ledger, request, onError);
  if (Array.isArray(body)) {
    if (body.length === 0) return { jsonrpc: '2.0', error: errorBody(-32600, 'Invalid request'), id: null };
    const refusal = batchRefusal(body);
    if (refusal) return { jsonrpc: '2.0', error: errorBody(-32600, refusal), id: null };
    const responses = body.map(handle).filter((r): r is Response => r !== undefined);
    return responses.length > 0 ? responses : undefined;
  }
  return handle(body);
}
