import { address, getProgramDerivedAddress, isOffCurveAddress, type Base64EncodedBytes } from '@solana/kit';
import { notFound } from '../runtime/errors';
import { TOKEN_2022_PROGRAM, TOKEN_PROGRAM, decodeMint, decodeTokenAccount } from '../solana/programs';
import { addressBytes, encodeAddress } from '../solana/wire';
import type { SolanaSource } from './solana';

// What the chain itself says about a token: the mint (authorities, supply, Token-2022 extensions), its metadata
// (Token-2022 metadata extension or the Metaplex metadata account) and its largest holders. Raw account bytes are
// decoded here, so a real cluster and the local ledger are read the same way.

export const METAPLEX_METADATA_PROGRAM = 'metaqbxxUerdq28cj1RbAWkYQm3ybzjb6a8bt518x1s';
const INCINERATOR = '1nc1nerator11111111111111111111111111111111';
/** Pool authorities of AMMs whose vaults are owned by one program-wide authority rather than by the pool account. */
const AMM_AUTHORITIES = new Set([
  '5Q544fKrFoe6tsEbD7S8EmxGTJYAKtTVhAW5Q5pge4j1', // Raydium AMM v4
  'GpMZbSM2GgvTKHJirzeGfMFoaZ8UR2X7F4v8vHTvxFbL', // Raydium CPMM
]);

/** Token-2022 extension types (spl-token-2022 ExtensionType) a mint can carry, by their TLV tag. */
const EXTENSION_NAMES: Record<number, string> = {
  1: 'transferFeeConfig',
  3: 'mintCloseAuthority',
  4: 'confidentialTransferMint',
  6: 'defaultAccountState',
  9: 'nonTransferable',
  10: 'interestBearingConfig',
  12: 'permanentDelegate',
  14: 'transferHook',
  16: 'confidentialTransferFeeConfig',
  18: 'metadataPointer',
  19: 'tokenMetadata',
  20: 'groupPointer',
  21: 'tokenGroup',
  22: 'groupMemberPointer',
  23: 'tokenGroupMember',
  24: 'confidentialMintBurn',
  25: 'scaledUiAmountConfig',
  26: 'pausableConfig',
};

/** A token account among a mint's largest, with its owner and why it is left out of concentration figures, if it is. */
export interface HolderAccount {
  tokenAccount: string;
  owner: string | null;
  amount: bigint;
  excluded?: 'amm_vault' | 'burn' | 'program';
}

export interface TokenMetadata {
  name: string;
  symbol: string;
  uri: string;
  updateAuthority: string | null;
  mutable: boolean;
}

export interface MintFacts {
  mint: string;
  tokenProgram: 'spl-token' | 'token-2022';
  decimals: number;
  supply: bigint;
  mintAuthority: string | null;
  freezeAuthority: string | null;
  extensions: string[];
  transferFeePercent: number | null;
  permanentDelegate: string | null;
  transferHookProgram: string | null;
  metadata: TokenMetadata | null;
}

const ZERO_KEY = '11111111111111111111111111111111';
const optionalKey = (bytes: Uint8Array): string | null => {
  const key = encodeAddress(bytes);
  return key === ZERO_KEY ? null : key;
};

/** A Borsh string (u32 length, then UTF-8) at `at`; null when it runs past the data. */
function borshString(data: Uint8Array, at: number): { value: string; next: number } | null {
  if (at + 4 > data.length) return null;
  const length = new DataView(data.buffer, data.byteOffset + at, 4).getUint32(0, true);
  if (at + 4 + length > data.length) return null;
  return {
    value: new TextDecoder().decode(data.subarray(at + 4, at + 4 + length)).replace(/\0+$/, ''),
    next: at + 4 + length,
  };
}

/** The Token-2022 TokenMetadata extension: update authority, mint, name, symbol, uri (additional fields ignored). */
function decodeTokenMetadata(value: Uint8Array): TokenMetadata | null {
  if (value.length < 64) return null;
  const updateAuthority = optionalKey(value.subarray(0, 32));
  const name = borshString(value, 64);
  const symbol = name && borshString(value, name.next);
  const uri = symbol && borshString(value, symbol.next);
  if (!name || !symbol || !uri) return null;
  return { name: name.value, symbol: symbol.value, uri: uri.value, updateAuthority, mutable: updateAuthority !== null };
}

/** A Metaplex token metadata account (key 4 = MetadataV1): update authority, then name, symbol, uri, …, is_mutable. */
export function decodeMetaplexMetadata(data: Uint8Array): TokenMetadata | null {
  if (data.length < 66 || data[0] !== 4) return null;
  const updateAuthority = encodeAddress(data.subarray(1, 33));
  const name = borshString(data, 65);
  const symbol = name && borshString(data, name.next);
  const uri = symbol && borshString(data, symbol.next);
  if (!name || !symbol || !uri) return null;
  let at = uri.next + 2; // seller_fee_basis_points
  if (at >= data.length) return null;
  if (data[at] === 1) {
    if (at + 5 > data.length) return null;
    const creators = new DataView(data.buffer, data.byteOffset + at + 1, 4).getUint32(0, true);
    at += 5 + creators * 34;
  } else at += 1;
  at += 1; // primary_sale_happened
  if (at >= data.length) return null;
  const mutable = data[at] === 1;
  return {
    name: name.value,
    symbol: symbol.value,
    uri: uri.value,
    updateAuthority: mutable ? updateAuthority : null,
    mutable,
  };
}

/** The mint's base fields and, on Token-2022, its extensions (TLV entries after the account-type byte at 165). */
export function decodeMintFacts(mint: string, owner: string, data: Uint8Array): MintFacts | null {
  const base = decodeMint(owner, data);
  if (!base) return null;
  const facts: MintFacts = {
    mint,
    tokenProgram: owner === TOKEN_2022_PROGRAM ? 'token-2022' : 'spl-token',
    decimals: base.decimals,
    supply: base.supply,
    mintAuthority: base.mintAuthority,
    freezeAuthority: base.freezeAuthority,
    extensions: [],
    transferFeePercent: null,
    permanentDelegate: null,
    transferHookProgram: null,
    metadata: null,
  };
  if (owner !== TOKEN_2022_PROGRAM || data.length <= 166) return facts;
  const view = new DataView(data.buffer, data.byteOffset, data.length);
  for (let at = 166; at + 4 <= data.length;) {
    const type = view.getUint16(at, true);
    const length = view.getUint16(at + 2, true);
    const value = data.subarray(at + 4, at + 4 + length);
    at += 4 + length;
    if (type === 0 || value.length < length) break;
    facts.extensions.push(EXTENSION_NAMES[type] ?? `extension${type}`);
    if (type === 1 && length >= 108) {
      // Authorities (2 × 32), withheld amount (8), older fee (18), newer fee: epoch 8, maximum 8, basis points 2.
      const basisPoints = new DataView(value.buffer, value.byteOffset + 106, 2).getUint16(0, true);
      facts.transferFeePercent = basisPoints > 0 ? basisPoints / 100 : null;
    }
    if (type === 12 && length >= 32) facts.permanentDelegate = optionalKey(value.subarray(0, 32));
    if (type === 14 && length >= 64) facts.transferHookProgram = optionalKey(value.subarray(32, 64));
    if (type === 19) facts.metadata = decodeTokenMetadata(value);
  }
  return facts;
}

const bytesOf = (account: { data: readonly [string, string] | unknown }): Uint8Array => {
  const [encoded] = account.data as [string, string];
  return new Uint8Array(Buffer.from(encoded, 'base64'));
};

export const tokenNotFound = (mint: string) =>
  notFound('token_not_found', `${mint} is not a token mint on the chain this deployment reads`, { mint });

/** Reads the mint and its metadata from the chain; 404 token_not_found when the address is not a mint. */
export async function readMint(chain: SolanaSource, mint: string): Promise<MintFacts> {
  const { value } = await chain.read((rpc) => rpc.getAccountInfo(address(mint), { encoding: 'base64' }).send());
  if (!value) throw tokenNotFound(mint);
  const facts = decodeMintFacts(mint, value.owner, bytesOf(value));
  if (!facts) throw tokenNotFound(mint);
  if (!facts.metadata) {
    const [pda] = await getProgramDerivedAddress({
      programAddress: address(METAPLEX_METADATA_PROGRAM),
      seeds: ['metadata', addressBytes(METAPLEX_METADATA_PROGRAM), addressBytes(mint)],
    });
    const { value: metadata } = await chain.read((rpc) => rpc.getAccountInfo(pda, { encoding: 'base64' }).send());
    if (metadata && metadata.owner === METAPLEX_METADATA_PROGRAM)
      facts.metadata = decodeMetaplexMetadata(bytesOf(metadata));
  }
  return facts;
}

/**
 * The mint's largest token accounts (up to 20, from getTokenLargestAccounts) with their owners, each marked when it
 * is left out of concentration figures: burn addresses, AMM pool vaults (owned by a known pool authority or by one
 * of `poolAddresses`), and other program-owned accounts (an owner off the Ed25519 curve is a program address).
 */
export async function readLargestHolders(
  chain: SolanaSource,
  facts: MintFacts,
  poolAddresses: ReadonlySet<string>,
): Promise<HolderAccount[]> {
  const { value: largest } = await chain.read((rpc) =>
    rpc.getTokenLargestAccounts(address(facts.mint), { commitment: 'confirmed' }).send(),
  );
  if (!largest.length) return [];
  const { value: accounts } = await chain.read((rpc) =>
    rpc
      .getMultipleAccounts(
        largest.map((l) => l.address),
        { encoding: 'base64' },
      )
      .send(),
  );
  return largest.map((entry, i) => {
    const account = accounts[i];
    const state = account ? decodeTokenAccount(account.owner, bytesOf(account)) : null;
    const owner = state?.owner ?? null;
    let excluded: HolderAccount['excluded'];
    if (owner === INCINERATOR) excluded = 'burn';
    else if (owner && (AMM_AUTHORITIES.has(owner) || poolAddresses.has(owner))) excluded = 'amm_vault';
    else if (owner && isOffCurveAddress(address(owner))) excluded = 'program';
    return { tokenAccount: entry.address, owner, amount: BigInt(entry.amount), ...(excluded ? { excluded } : {}) };
  });
}

/**
 * Token accounts of the mint holding a non-zero balance, counted with getProgramAccounts (a filter on the mint and
 * the account size, reading only the 8 amount bytes). Only on the local ledger: public clusters refuse or throttle
 * such scans for popular mints, so there the count is null ("when a provider counts them").
 */
export async function countHolders(chain: SolanaSource, facts: MintFacts, localChain: boolean): Promise<number | null> {
  if (!localChain || facts.tokenProgram !== 'spl-token') return null;
  const accounts = await chain.read((rpc) =>
    rpc
      .getProgramAccounts(address(TOKEN_PROGRAM), {
        encoding: 'base64',
        dataSlice: { offset: 64, length: 8 },
        filters: [{ dataSize: 165n }, { memcmp: { offset: 0n, bytes: facts.mint as never, encoding: 'base58' } }],
      })
      .send(),
  );
  return (accounts as unknown as { account: { data: [Base64EncodedBytes, string] } }[]).filter(({ account }) => {
    const bytes = Buffer.from(account.data[0], 'base64');
    return bytes.length === 8 && bytes.readBigUInt64LE(0) > 0n;
  }).length;
}
