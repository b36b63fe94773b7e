import {
  AuthorityType,
  getApproveCheckedInstruction,
  getCreateAssociatedTokenIdempotentInstruction,
  getSetAuthorityInstruction,
  getTransferCheckedInstruction,
} from '@solana-program/token';
import {
  AccountRole,
  address,
  createNoopSigner,
  type Address,
  type Instruction,
  type Rpc,
  type SolanaRpcApi,
} from '@solana/kit';
import { MEMO_PROGRAM, associatedTokenAddress, decodeTokenAccount } from '../../solana/programs';
import { onChain } from './settlement';

// The buyer's "smart wallet" and the delegation role the facilitator settles sessions through, behind one
// interface (research/mpp.md §3, §6). The published design uses a Swig smart wallet whose role lets the
// facilitator make only TransferChecked of the stablecoin up to a limit. Swig cannot run on the local
// ledger: no npm package ships its program binary, building one needs the Agave SBF toolchain, and it is
// AGPL. So the implementation here is the native equivalent every cluster (and LiteSVM) runs: the buyer's
// stablecoin token account is the wallet, and an SPL Token ApproveChecked makes the facilitator's delegate
// key its delegate for the spend limit. The token program then enforces what the role promises: the
// delegate can only transfer that mint, only from that account, only up to the delegated amount (which
// shrinks with every transfer), and the buyer can Revoke at any time. What SPL delegation cannot hold on
// chain, the role's time to live, the facilitator enforces itself (it refuses to use an expired role).
// A Swig implementation would provide the same interface; it is out of scope here.

/** What the chain says about a buyer's wallet and the facilitator's role on it. */
export interface DelegationState {
  /** The address funds stay in (known before it exists). */
  smartWallet: string;
  exists: boolean;
  /** Stablecoin held, atomic units. */
  balance: bigint;
  frozen: boolean;
  /** Who holds the role on chain now (null: nobody). */
  delegate: string | null;
  /** What the facilitator's role can still move (0 when the delegate is not the facilitator). */
  remaining: bigint;
}

export interface OnboardingStep {
  type: 'create_wallet' | 'grant_role';
  description: string;
  instructions: Instruction[];
}

export interface DelegationBackend {
  /** The program that enforces the role (a session's channelProgram). */
  readonly program: string;
  /** The programs the role may call (DelegationRole.programs). */
  readonly programs: string[];
  /** The key the role authorises. */
  readonly delegate: string;
  smartWalletOf(buyer: string): string;
  read(buyer: string): Promise<DelegationState>;
  /** What the buyer must sign to hold a role of `spendLimit` (create_wallet only when the wallet is missing). */
  onboarding(
    buyer: string,
    state: DelegationState,
    terms: { spendLimit: bigint; expiresAt: Date; round: string },
  ): OnboardingStep[];
  /**
   * The instructions that pay `amount` from the buyer's wallet to the seller through the role (signed by the delegate).
   */
  settlement(buyer: string, seller: string, amount: bigint, memo: string): Promise<Instruction[]>;
}

/** An SPL Memo, signed by `signers` (@solana-program/memo's builder targets another program id). */
function memo(text: string, signers: string[] = []): Instruction {
  return {
    programAddress: address(MEMO_PROGRAM),
    accounts: signers.map((signer) => ({ address: address(signer), role: AccountRole.READONLY_SIGNER })),
    data: new TextEncoder().encode(text),
  };
}

export interface SplDelegationOptions {
  rpc: Rpc<SolanaRpcApi>;
  /** The stablecoin. */
  mint: string;
  decimals: number;
  /** SPL Token or Token-2022: the program that owns the mint. */
  tokenProgram: string;
  /** The fee payer: pays rent of the accounts onboarding and settlement create. */
  feePayer: string;
  delegate: string;
}

/** The delegation backend on SPL Token delegation: the one used on the local ledger (see the note above). */
export function splDelegation(options: SplDelegationOptions): DelegationBackend {
  const { rpc, mint, decimals, feePayer, delegate, tokenProgram } = options;
  const walletOf = (owner: string) => associatedTokenAddress(owner, mint, tokenProgram);
  const program = { programAddress: address(tokenProgram) };

  async function tokenAccount(account: string) {
    const { value } = await onChain('getAccountInfo', () =>
      rpc.getAccountInfo(account as Address, { encoding: 'base64', commitment: 'confirmed' }).send(),
    );
    if (!value) return null;
    return decodeTokenAccount(value.owner, new Uint8Array(Buffer.from(value.data[0], 'base64')));
  }

  return {
    program: tokenProgram,
    programs: [tokenProgram],
    delegate,
    smartWalletOf: walletOf,

    async read(buyer) {
      const smartWallet = walletOf(buyer);
      const account = await tokenAccount(smartWallet);
      if (!account || account.mint !== mint)
        return { smartWallet, exists: false, balance: 0n, frozen: false, delegate: null, remaining: 0n };
      return {
        smartWallet,
        exists: true,
        balance: account.amount,
        frozen: account.state === 'frozen',
        delegate: account.delegate,
        remaining: account.delegate === delegate ? account.delegatedAmount : 0n,
      };
    },

    onboarding(buyer, state, terms) {
      const owner = createNoopSigner(address(buyer));
      const smartWallet = address(walletOf(buyer));
      const steps: OnboardingStep[] = [];
      if (!state.exists) {
        steps.push({
          type: 'create_wallet',
          description:
            `Creates your stablecoin wallet ${smartWallet} (the facilitator pays the rent and the fee) and makes the facilitator's ` +
            `fee payer its close authority, so that the rent it paid goes back to it if the account is ever closed; your signature is on its memo.`,
          instructions: [
            getCreateAssociatedTokenIdempotentInstruction({
              payer: createNoopSigner(address(feePayer)),
              ata: smartWallet,
              owner: address(buyer),
              mint: address(mint),
              tokenProgram: address(tokenProgram),
            }),
            // Without it the owner could close the account it did not pay for and keep the rent: a new wallet per
            // onboarding would drain the fee payer one rent at a time.
            getSetAuthorityInstruction(
              { owned: smartWallet, owner, authorityType: AuthorityType.CloseAccount, newAuthority: address(feePayer) },
              program,
            ),
            memo(`agent-economy payment sessions: create wallet ${smartWallet} (${terms.round})`, [buyer]),
          ],
        });
      }
      steps.push({
        type: 'grant_role',
        description:
          `Approves ${delegate} as delegate of ${smartWallet} for at most ${terms.spendLimit} atomic units of ${mint}, used only to settle ` +
          `your payment sessions until ${terms.expiresAt.toISOString()}; revoke it at any time.`,
        instructions: [
          getApproveCheckedInstruction(
            {
              source: smartWallet,
              mint: address(mint),
              delegate: address(delegate),
              owner,
              amount: terms.spendLimit,
              decimals,
            },
            program,
          ),
          memo(
            `agent-economy payment sessions: role for ${delegate}, limit ${terms.spendLimit}, until ${terms.expiresAt.toISOString()} (${terms.round})`,
            [buyer],
          ),
        ],
      });
      return steps;
    },

    async settlement(buyer, seller, amount, note) {
      const destination = walletOf(seller);
      const instructions: Instruction[] = [];
      // A seller without a stablecoin account gets one, paid by the facilitator, so the close can land.
      if (!(await tokenAccount(destination))) {
        instructions.push(
          getCreateAssociatedTokenIdempotentInstruction({
            payer: createNoopSigner(address(feePayer)),
            ata: address(destination),
            owner: address(seller),
            mint: address(mint),
            tokenProgram: address(tokenProgram),
          }),
        );
      }
      instructions.push(
        getTransferCheckedInstruction(
          {
            source: address(walletOf(buyer)),
            mint: address(mint),
            destination: address(destination),
            authority: createNoopSigner(address(delegate)),
            amount,
            decimals,
          },
          program,
        ),
        memo(note),
      );
      return instructions;
    },
  };
}
