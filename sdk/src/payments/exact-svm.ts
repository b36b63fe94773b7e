import {
  address,
  blockhash as toBlockhash,
  fetchEncodedAccount,
  getAddressComparator,
  type Address,
  type GetAccountInfoApi,
  type Rpc,
} from '@solana/kit';
import { LEGACY_MEMO_PROGRAM_ADDRESS_V3 } from '@solana-program/memo';
import { TOKEN_PROGRAM_ADDRESS, findAssociatedTokenPda, getMintDecoder } from '@solana-program/token';
import {
  USDC_DEVNET,
  USDC_MAINNET,
  base58Decode,
  base58Encode,
  type PaymentRequirements,
} from '@agent-economy/contracts';
import { AgentEconomyError } from '../errors';
import { randomHex } from '../random';
import type { Signer } from '../wallet';

// The Solana `exact` scheme as x402 clients build it (research/x402.md §2.3), so that any x402
// facilitator, ours or the official one, accepts what we send.

export const TOKEN_2022_PROGRAM_ADDRESS = address('TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb');
/**
 * SPL Memo v2. @solana-program/memo 0.15 defaults to a newer memo program that facilitators do not
 * whitelist and clusters may not have deployed, so name the one they all know.
 */
export const MEMO_PROGRAM_ADDRESS = LEGACY_MEMO_PROGRAM_ADDRESS_V3;
/** Enough for the compute-budget, transfer and memo instructions (about 12,000 CU), as the official client sets. */
export const COMPUTE_UNIT_LIMIT = 20_000;
/** The lowest non-zero priority fee; the facilitator pays it, and caps it. */
export const COMPUTE_UNIT_PRICE_MICROLAMPORTS = 1n;

export interface MintInfo {
  decimals: number;
  tokenProgram: Address;
}

/** Mints whose layout we know without asking the chain (USDC lives under the original token program). */
export const KNOWN_MINTS: Readonly<Record<string, MintInfo>> = {
  [USDC_DEVNET]: { decimals: 6, tokenProgram: TOKEN_PROGRAM_ADDRESS },
  [USDC_MAINNET]: { decimals: 6, tokenProgram: TOKEN_PROGRAM_ADDRESS },
};

/** Reads a mint account: its owner must be a token program; decimals sit in the base layout both programs share. */
export async function fetchMintInfo(rpc: Rpc<GetAccountInfoApi>, mint: string): Promise<MintInfo | string> {
  const account = await fetchEncodedAccount(rpc, address(mint));
  if (!account.exists) return `mint ${mint} does not exist on this chain`;
  const owner = account.programAddress;
  if (owner !== TOKEN_PROGRAM_ADDRESS && owner !== TOKEN_2022_PROGRAM_ADDRESS)
    return `${mint} is not a token mint (owner ${owner})`;
  const size = 82; // the base Mint layout; Token-2022 extensions follow it
  if (account.data.length < size) return `${mint} is not a token mint (${account.data.length} bytes)`;
  const decoded = getMintDecoder().decode(account.data.subarray(0, size));
  if (!decoded.isInitialized) return `mint ${mint} is not initialized`;
  return { decimals: decoded.decimals, tokenProgram: owner };
}

export interface Lifetime {
  blockhash: string;
  lastValidBlockHeight: bigint;
}

/** The blockhash hint of a quote (extra.recentBlockhash + extra.lastValidBlockHeight), when it has a usable one. */
export function lifetimeHint(extra: Record<string, unknown> | undefined): Lifetime | undefined {
  const hash = extra?.recentBlockhash;
  const height = extra?.lastValidBlockHeight;
  if (typeof hash !== 'string' || hash.length < 32) return undefined;
  const text = typeof height === 'number' && Number.isSafeInteger(height) ? String(height) : height;
  if (typeof text !== 'string' || !/^\d{1,20}$/.test(text)) return undefined;
  try {
    toBlockhash(hash);
  } catch {
    return undefined;
  }
  return { blockhash: hash, lastValidBlockHeight: BigInt(text) };
}

// An associated token account is a pure function of owner, mint and token program, but deriving one costs a SHA-256
// per bump tried and an on-curve test in BigInt arithmetic: about a sixth of the SDK's CPU for a payment, measured.
// A buyer pays few sellers, so the addresses are remembered (the oldest forgotten past ATA_CACHE_SIZE).
const ATA_CACHE_SIZE = 1024;
const atas = new Map<string, Promise<Address>>();

/** The associated token account of `owner` for `mint` under `tokenProgram`. */
export function associatedTokenAccount(owner: Address, mint: Address, tokenProgram: Address): Promise<Address> {
  const key = `${owner} ${mint} ${tokenProgram}`;
  let found = atas.get(key);
  if (!found) {
    found = findAssociatedTokenPda({ owner, mint, tokenProgram }).then(([pda]) => pda);
    if (atas.size >= ATA_CACHE_SIZE) atas.delete(atas.keys().next().value!);
    atas.set(key, found);
    // A derivation that failed (it does not, for valid addresses) is not remembered.
    const mine = found;
    found.catch(() => atas.get(key) === mine && atas.delete(key));
  }
  return found;
}

/** 16 random bytes as hex: two payments of one quote in one slot must differ, or the chain drops the second. */
export function randomMemo(): string {
  return randomHex(16);
}

export interface BuiltPayment {
  /** Base64 wire transaction for `payload.transaction`. */
  transaction: string;
  /** The payer's signature (signatures[1]), base58. */
  payerSignature: string;
  memo: string;
  /** The blockhash the transaction lives by. */
  blockhash: string;
}

/** The 32 bytes of a base58 address; throws naming `what` when it is not one. */
function addressBytes(text: string, what: string): Uint8Array {
  const bytes = base58Decode(text);
  if (bytes?.length !== 32) throw new AgentEconomyError(`${what} is not a Solana address: ${text}`);
  return bytes;
}

/** Solana's compact-u16 length prefix. */
function shortVec(n: number): number[] {
  const out: number[] = [];
  for (let rest = n; ; rest >>= 7) {
    if (rest < 0x80) return [...out, rest];
    out.push((rest & 0x7f) | 0x80);
  }
}

const COMPUTE_BUDGET_PROGRAM = 'ComputeBudget111111111111111111111111111111';
const encoder = new TextEncoder();
// The order @solana/kit gives accounts of one role (its address comparator): the transaction is byte for byte the one
// kit would compile, as the official client's is.
let compareAddresses: ((a: string, b: string) => number) | undefined;

interface AccountUse {
  signer: boolean;
  writable: boolean;
}

/**
 * The transaction message of an `exact` payment, compiled as @solana/kit compiles it (v0, no lookup tables): the fee
 * payer first, then signers before the rest and writable before read-only, each group in kit's address order. Written
 * out directly: through kit's message pipeline the same bytes cost the client about a millisecond of CPU a payment
 * (address checks in BigInt arithmetic, a collator made for each compilation), most of the SDK's CPU for a paid call.
 */
function exactMessage(input: {
  feePayer: string;
  payer: string;
  source: string;
  destination: string;
  mint: string;
  tokenProgram: string;
  amount: bigint;
  decimals: number;
  memo: string;
  blockhash: string;
}): { message: Uint8Array; signers: string[] } {
  const uses = new Map<string, AccountUse>();
  const use = (address: string, signer: boolean, writable: boolean) => {
    const known = uses.get(address);
    uses.set(address, { signer: signer || !!known?.signer, writable: writable || !!known?.writable });
  };
  use(input.feePayer, true, true);
  const transfer = [
    [input.source, false, true],
    [input.mint, false, false],
    [input.destination, false, true],
    [input.payer, true, false],
  ] as const;
  for (const [address, signer, writable] of transfer) use(address, signer, writable);
  for (const program of [COMPUTE_BUDGET_PROGRAM, input.tokenProgram, MEMO_PROGRAM_ADDRESS]) use(program, false, false);
  compareAddresses ??= getAddressComparator();
  const compare = compareAddresses;
  const rest = [...uses.keys()].filter((a) => a !== input.feePayer);
  rest.sort((a, b) => {
    const left = uses.get(a)!;
    const right = uses.get(b)!;
    if (left.signer !== right.signer) return left.signer ? -1 : 1;
    if (left.writable !== right.writable) return left.writable ? -1 : 1;
    return compare(a, b);
  });
  const accounts = [input.feePayer, ...rest];
  const index = new Map(accounts.map((a, i) => [a, i]));
  const flags = accounts.map((a) => uses.get(a)!);

  const data = new DataView(new ArrayBuffer(9));
  data.setUint32(0, COMPUTE_UNIT_LIMIT, true);
  const limit = [2, ...new Uint8Array(data.buffer, 0, 4)];
  data.setBigUint64(0, COMPUTE_UNIT_PRICE_MICROLAMPORTS, true);
  const price = [3, ...new Uint8Array(data.buffer, 0, 8)];
  data.setBigUint64(0, input.amount, true);
  const transferData = [12, ...new Uint8Array(data.buffer, 0, 8), input.decimals];
  const memo = encoder.encode(input.memo);
  const instruction = (program: string, keys: readonly string[], body: ArrayLike<number>) => [
    index.get(program)!,
    ...shortVec(keys.length),
    ...keys.map((k) => index.get(k)!),
    ...shortVec(body.length),
  ];

  const parts: (ArrayLike<number> | Uint8Array)[] = [
    [
      0x80, // version 0
      flags.filter((f) => f.signer).length,
      flags.filter((f) => f.signer && !f.writable).length,
      flags.filter((f) => !f.signer && !f.writable).length,
      ...shortVec(accounts.length),
    ],
    ...accounts.map((a) => addressBytes(a, 'an account of the payment')),
    addressBytes(input.blockhash, 'the blockhash'),
    shortVec(4),
    instruction(COMPUTE_BUDGET_PROGRAM, [], limit),
    limit,
    instruction(COMPUTE_BUDGET_PROGRAM, [], price),
    price,
    instruction(
      input.tokenProgram,
      transfer.map(([a]) => a),
      transferData,
    ),
    transferData,
    instruction(MEMO_PROGRAM_ADDRESS, [], memo),
    memo,
    shortVec(0), // address table lookups
  ];
  const size = parts.reduce((n, p) => n + p.length, 0);
  const message = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    message.set(part, at);
    at += part.length;
  }
  // Signers lead the accounts: their order is the order of the transaction's signatures.
  return { message, signers: accounts.filter((a) => uses.get(a)!.signer) };
}

/**
 * The transfer an `exact` requirement asks for: a v0 message paid for by the facilitator
 * (`extra.feePayer`), with compute limit, compute price, TransferChecked between the associated token
 * accounts of payer and payTo, and a memo; signed by the payer only (the fee payer's slot stays empty).
 */
export async function buildExactSvmTransaction(input: {
  requirements: PaymentRequirements;
  wallet: Signer;
  mint: MintInfo;
  lifetime: Lifetime;
}): Promise<BuiltPayment> {
  const { requirements, wallet, mint, lifetime } = input;
  const extra = requirements.extra ?? {};
  const memo = typeof extra.memo === 'string' ? extra.memo : randomMemo();
  const feePayer = String(extra.feePayer);
  // Checked here: the derivations below take them as they are.
  addressBytes(requirements.asset, 'the asset');
  addressBytes(requirements.payTo, 'payTo');
  addressBytes(feePayer, 'extra.feePayer');
  const mintAddress = requirements.asset as Address;
  const [source, destination] = await Promise.all([
    associatedTokenAccount(wallet.address as Address, mintAddress, mint.tokenProgram),
    associatedTokenAccount(requirements.payTo as Address, mintAddress, mint.tokenProgram),
  ]);
  const { message, signers } = exactMessage({
    feePayer,
    payer: wallet.address,
    source,
    destination,
    mint: mintAddress,
    tokenProgram: mint.tokenProgram,
    amount: BigInt(requirements.amount),
    decimals: mint.decimals,
    memo,
    blockhash: lifetime.blockhash,
  });
  const signature = await wallet.signMessage(message);
  if (signature.length !== 64) throw new AgentEconomyError('the wallet did not sign the payment');
  // The wire transaction: the signatures (the fee payer's left empty for the facilitator), then the message.
  const count = shortVec(signers.length);
  const wire = new Uint8Array(count.length + signers.length * 64 + message.length);
  wire.set(count, 0);
  wire.set(signature, count.length + signers.indexOf(wallet.address) * 64);
  wire.set(message, count.length + signers.length * 64);
  return {
    transaction: Buffer.from(wire).toString('base64'),
    payerSignature: base58Encode(signature),
    memo,
    blockhash: lifetime.blockhash,
  };
}
