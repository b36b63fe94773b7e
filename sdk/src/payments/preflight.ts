import { address, createSolanaRpc, fetchEncodedAccount } from '@solana/kit';
import { getTokenDecoder } from '@solana-program/token';
import type { PaymentRequirements } from '@agent-economy/contracts';
import { AgentEconomyError, ChainMismatchError, InsufficientFundsError, SolanaRpcError } from '../errors';
import { associatedTokenAccount, type MintInfo } from './exact-svm';

// Checks on the chain before a payment is signed, so that what cannot settle fails here with a clear
// error instead of at the facilitator's simulation (a payer without a token account shows up there as
// an opaque `InvalidAccountData`).

type SolanaRpc = ReturnType<typeof createSolanaRpc>;
const rpcs = new Map<string, SolanaRpc>();
/** Genesis hash per RPC address: it never changes, so it is asked once. */
const genesis = new Map<string, Promise<string>>();

const rpcAt = (url: string): SolanaRpc => {
  let rpc = rpcs.get(url);
  if (!rpc) rpcs.set(url, (rpc = createSolanaRpc(url)));
  return rpc;
};

/** The RPC to read the chain from, or a clear error saying how to name one: it is never guessed. */
export function requireRpcUrl(rpcUrl: string | undefined): string {
  if (rpcUrl) return rpcUrl;
  throw new AgentEconomyError(
    'this client knows no Solana RPC to pay with: pass createClient({ deployment }) (the services.json `npm start` writes), ' +
      'payments.rpcUrl, or AGENT_ECONOMY_SOLANA_RPC_URL; nothing was signed',
  );
}

async function genesisHash(rpcUrl: string): Promise<string> {
  let hash = genesis.get(rpcUrl);
  if (!hash) {
    hash = rpcAt(rpcUrl).getGenesisHash().send().then(String);
    genesis.set(rpcUrl, hash);
    // A failed read is not cached: the RPC may answer next time.
    hash.catch(() => genesis.delete(rpcUrl));
  }
  try {
    return await hash;
  } catch (error) {
    throw new SolanaRpcError(
      `could not read the genesis hash from the Solana RPC at ${rpcUrl}: ${(error as Error).message}`,
      { cause: error },
    );
  }
}

/** A CAIP-2 Solana network names its chain by the start of the genesis hash (solana:<first 32 characters>). */
export async function checkChain(rpcUrl: string, network: string): Promise<void> {
  if (!network.startsWith('solana:')) return;
  const reference = network.slice('solana:'.length);
  const hash = await genesisHash(rpcUrl);
  if (!reference || !hash.startsWith(reference)) throw new ChainMismatchError(network, rpcUrl, hash);
}

/**
 * The payer's balance of the quoted asset in its associated token account (returned); throws when it cannot cover the
 * amount.
 */
export async function checkFunds(
  rpcUrl: string,
  payer: string,
  requirements: PaymentRequirements,
  mint: MintInfo,
): Promise<bigint> {
  const ata = await associatedTokenAccount(address(payer), address(requirements.asset), mint.tokenProgram);
  let account: Awaited<ReturnType<typeof fetchEncodedAccount>>;
  try {
    account = await fetchEncodedAccount(rpcAt(rpcUrl), ata);
  } catch (error) {
    throw new SolanaRpcError(
      `could not read the token account of ${payer} from the Solana RPC at ${rpcUrl}: ${(error as Error).message}`,
      { cause: error },
    );
  }
  const needed = BigInt(requirements.amount);
  // The base Account layout (165 bytes) is shared by both token programs; Token-2022 extensions follow it.
  const data =
    account.exists && account.programAddress === mint.tokenProgram && account.data.length >= 165
      ? account.data
      : undefined;
  const usable = data !== undefined;
  const held = data ? getTokenDecoder().decode(data.subarray(0, 165)).amount : 0n;
  if (held < needed)
    throw new InsufficientFundsError(payer, requirements.asset, needed.toString(), held.toString(), usable);
  return held;
}
