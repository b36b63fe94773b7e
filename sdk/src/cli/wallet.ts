import { resolve } from 'node:path';
import { homedir } from 'node:os';
import {
  fetchBalances,
  fundWallet,
  generateWallet,
  usdToAtomic,
  walletFromEnv,
  walletFromFile,
  walletToFile,
  type Signer,
} from '../index';
import type { Deployment } from './deployment';
import { UsageError } from './failure';

/**
 * The paying wallet: --wallet <file>, else AGENT_ECONOMY_WALLET (a key or a key file's path), else the
 * deployment's demo wallet key file (npm start writes one on the local ledger).
 */
export async function resolveWallet(
  flag: string | undefined,
  deployment: Deployment | undefined,
): Promise<{ wallet: Signer; from: string }> {
  if (flag) return { wallet: await walletFromFile(flag), from: flag };
  if (process.env.AGENT_ECONOMY_WALLET?.trim()) return { wallet: await walletFromEnv(), from: 'AGENT_ECONOMY_WALLET' };
  const keyFile = deployment?.demoWallet?.keyFile;
  if (keyFile) return { wallet: await walletFromFile(keyFile), from: keyFile };
  throw new UsageError(
    'no wallet: pass --wallet <key file>, set AGENT_ECONOMY_WALLET, or use a deployment with a demo wallet (npm start); `agent-economy wallet new` makes one',
  );
}

/** Writes a new solana-keygen key file (readable by its owner only; never over an existing file). */
export async function writeNewKeyFile(path: string): Promise<{ address: string; keyFile: string }> {
  const keyFile = resolve(path.startsWith('~/') ? `${homedir()}${path.slice(1)}` : path);
  const wallet = await generateWallet();
  await walletToFile(wallet, keyFile);
  return { address: wallet.address, keyFile };
}

/** Atomic units as a decimal string with `decimals` places, trailing zeros dropped. */
export function formatUnits(atomic: bigint, decimals: number): string {
  const scale = 10n ** BigInt(decimals);
  const fraction = (atomic % scale).toString().padStart(decimals, '0').replace(/0+$/, '');
  return fraction ? `${atomic / scale}.${fraction}` : `${atomic / scale}`;
}

export interface Balance {
  address: string;
  sol: string;
  lamports: string;
  usd: string;
  usdAtomic: string;
  stablecoin: string;
  network: string;
}

/** SOL and stablecoin balances of an address, read from the deployment's chain. */
export async function readBalance(deployment: Deployment, address: string): Promise<Balance> {
  const { lamports, tokenAtomic, usd } = await fetchBalances({ address, deployment });
  const { stablecoin, network } = deployment.chain;
  return {
    address,
    sol: formatUnits(lamports, 9),
    lamports: lamports.toString(),
    usd,
    usdAtomic: tokenAtomic.toString(),
    stablecoin,
    network,
  };
}

/** Tops a wallet up from the local ledger's faucet; answers the new balances. */
export async function fundFromFaucet(deployment: Deployment, address: string, amounts: { usd?: string; sol?: string }) {
  if (amounts.usd !== undefined) {
    try {
      usdToAtomic(amounts.usd);
    } catch {
      throw new UsageError(`--usd must be a USD amount such as 10 or 2.5 (got "${amounts.usd}")`);
    }
  }
  return fundWallet({ address, deployment, ...amounts });
}
