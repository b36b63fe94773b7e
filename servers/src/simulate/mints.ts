import { address, createNoopSigner, type Instruction } from '@solana/kit';
import { getCreateAccountInstruction } from '@solana-program/system';
import {
  AuthorityType,
  getCreateAssociatedTokenIdempotentInstruction,
  getInitializeMint2Instruction,
  getMintSize,
  getMintToCheckedInstruction,
  getSetAuthorityInstruction,
  getTransferCheckedInstruction,
} from '@solana-program/token';
import { ASSOCIATED_TOKEN_PROGRAM, SYSTEM_PROGRAM, TOKEN_PROGRAM, associatedTokenAddress } from '../solana/programs';
import { generateWallet, type Wallet } from '../solana/keys';
import { sendInstructions, type SolanaRpc } from '../solana/send';

// SPL token mints made with real transactions: the simulator's agents launch tokens with these, and tests build the
// holder distributions and authorities the token analysis reads back from the chain.

const signer = (wallet: Wallet | string) =>
  createNoopSigner(address(typeof wallet === 'string' ? wallet : wallet.address));

/** A token account of `owner` for `mint`, created when missing (paid by `payer`). */
function openAccount(payer: Wallet, owner: string, mint: string): Instruction {
  return getCreateAssociatedTokenIdempotentInstruction(
    {
      payer: signer(payer),
      ata: address(associatedTokenAddress(owner, mint)),
      owner: address(owner),
      mint: address(mint),
      systemProgram: address(SYSTEM_PROGRAM),
      tokenProgram: address(TOKEN_PROGRAM),
    },
    { programAddress: address(ASSOCIATED_TOKEN_PROGRAM) },
  );
}

export interface NewMint {
  decimals: number;
  /** Who may mint (default the payer). */
  mintAuthority?: Wallet;
  /** Who may freeze accounts; null: nobody (the default). */
  freezeAuthority?: string | null;
}

/** Creates an SPL Token mint at a fresh address and returns it. */
export async function createMint(rpc: SolanaRpc, payer: Wallet, options: NewMint): Promise<string> {
  const mint = generateWallet();
  const space = getMintSize();
  const lamports = await rpc.getMinimumBalanceForRentExemption(BigInt(space)).send();
  await sendInstructions(
    rpc,
    [payer, mint],
    [
      getCreateAccountInstruction({
        payer: signer(payer),
        newAccount: signer(mint),
        lamports,
        space,
        programAddress: address(TOKEN_PROGRAM),
      }),
      getInitializeMint2Instruction({
        mint: address(mint.address),
        decimals: options.decimals,
        mintAuthority: address((options.mintAuthority ?? payer).address),
        freezeAuthority: options.freezeAuthority ? address(options.freezeAuthority) : null,
      }),
    ],
  );
  return mint.address;
}

/** Grants per transaction: each opens an account and mints to it, and a transaction holds at most 1,232 bytes. */
const GRANTS_PER_TRANSACTION = 4;

/**
 * Mints `amount` base units of `mint` to each owner's token account (opened when missing), four grants a transaction;
 * returns the last transaction's signature.
 */
export async function mintTokens(
  rpc: SolanaRpc,
  payer: Wallet,
  mint: string,
  authority: Wallet,
  decimals: number,
  grants: readonly { owner: string; amount: bigint }[],
): Promise<string> {
  let signature = '';
  for (let at = 0; at < grants.length; at += GRANTS_PER_TRANSACTION) {
    const instructions = grants.slice(at, at + GRANTS_PER_TRANSACTION).flatMap(({ owner, amount }) => [
      openAccount(payer, owner, mint),
      getMintToCheckedInstruction({
        mint: address(mint),
        token: address(associatedTokenAddress(owner, mint)),
        mintAuthority: signer(authority),
        amount,
        decimals,
      }),
    ]);
    signature = await sendInstructions(
      rpc,
      payer.address === authority.address ? [payer] : [payer, authority],
      instructions,
    );
  }
  return signature;
}

/** Moves `amount` base units of `mint` from `from`'s token account to `to`'s (opened when missing). */
export async function transferTokens(
  rpc: SolanaRpc,
  payer: Wallet,
  mint: string,
  decimals: number,
  from: Wallet,
  to: string,
  amount: bigint,
): Promise<string> {
  const instructions = [
    openAccount(payer, to, mint),
    getTransferCheckedInstruction({
      source: address(associatedTokenAddress(from.address, mint)),
      mint: address(mint),
      destination: address(associatedTokenAddress(to, mint)),
      authority: signer(from),
      amount,
      decimals,
    }),
  ];
  return sendInstructions(rpc, payer.address === from.address ? [payer] : [payer, from], instructions);
}

/** Hands the mint's minting or freezing power to `next`, or renounces it for good (null). */
export async function setMintAuthority(
  rpc: SolanaRpc,
  payer: Wallet,
  mint: string,
  current: Wallet,
  kind: 'mint' | 'freeze',
  next: string | null,
): Promise<string> {
  const instruction = getSetAuthorityInstruction({
    owned: address(mint),
    owner: signer(current),
    authorityType: kind === 'mint' ? AuthorityType.MintTokens : AuthorityType.FreezeAccount,
    newAuthority: next ? address(next) : null,
  });
  return sendInstructions(rpc, payer.address === current.address ? [payer] : [payer, current], [instruction]);
}
