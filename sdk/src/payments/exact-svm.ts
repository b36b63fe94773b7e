import {
  address,
  appendTransactionMessageInstructions,
  blockhash as toBlockhash,
  createTransactionMessage,
  fetchEncodedAccount,
  getBase64EncodedWireTransaction,
  partiallySignTransactionMessageWithSigners,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  type Address,
  type GetAccountInfoApi,
  type Rpc,
  type SignatureBytes,
  type SignatureDictionary,
  type TransactionPartialSigner,
} from '@solana/kit';
import { getSetComputeUnitLimitInstruction, getSetComputeUnitPriceInstruction } from '@solana-program/compute-budget';
import { LEGACY_MEMO_PROGRAM_ADDRESS_V3, getAddMemoInstruction } from '@solana-program/memo';
import {
  TOKEN_PROGRAM_ADDRESS,
  findAssociatedTokenPda,
  getMintDecoder,
  getTransferCheckedInstruction,
} from '@solana-program/token';
import { USDC_DEVNET, USDC_MAINNET, base58Encode, type PaymentRequirements } from '@agent-economy/contracts';
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

/** Our wallet as a kit signer that signs only the message bytes, so the fee payer's slot stays empty. */
function partialSigner(wallet: Signer): TransactionPartialSigner {
  const self = address(wallet.address);
  return {
    address: self,
    async signTransactions(transactions) {
      return Promise.all(
        transactions.map(
          async (tx) =>
            ({
              [self]: (await wallet.signMessage(new Uint8Array(tx.messageBytes))) as SignatureBytes,
            }) as SignatureDictionary,
        ),
      );
    },
  };
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

/**
 * The transfer an `exact` requirement asks for: a v0 message paid for by the facilitator
 * (`extra.feePayer`), with compute limit, compute price, TransferChecked between the associated token
 * accounts of payer and payTo, and a memo; signed by the payer only.
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
  const signer = partialSigner(wallet);
  const mintAddress = address(requirements.asset);
  const [source, destination] = await Promise.all([
    associatedTokenAccount(signer.address, mintAddress, mint.tokenProgram),
    associatedTokenAccount(address(requirements.payTo), mintAddress, mint.tokenProgram),
  ]);
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayer(address(String(extra.feePayer)), m),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash(
        { blockhash: toBlockhash(lifetime.blockhash), lastValidBlockHeight: lifetime.lastValidBlockHeight },
        m,
      ),
    (m) =>
      appendTransactionMessageInstructions(
        [
          getSetComputeUnitLimitInstruction({ units: COMPUTE_UNIT_LIMIT }),
          getSetComputeUnitPriceInstruction({ microLamports: COMPUTE_UNIT_PRICE_MICROLAMPORTS }),
          getTransferCheckedInstruction(
            {
              source,
              mint: mintAddress,
              destination,
              authority: signer,
              amount: BigInt(requirements.amount),
              decimals: mint.decimals,
            },
            { programAddress: mint.tokenProgram },
          ),
          getAddMemoInstruction({ memo }, { programAddress: MEMO_PROGRAM_ADDRESS }),
        ],
        m,
      ),
  );
  const signed = await partiallySignTransactionMessageWithSigners(message);
  const signature = signed.signatures[signer.address];
  if (!signature) throw new AgentEconomyError('the wallet did not sign the payment');
  return {
    transaction: getBase64EncodedWireTransaction(signed),
    payerSignature: base58Encode(signature),
    memo,
    blockhash: lifetime.blockhash,
  };
}
