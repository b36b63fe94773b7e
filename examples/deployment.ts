// What the examples share: the deployment `npm start` wrote (its services.json, through the SDK's
// loadDeployment) and the demo wallet it funds. DATA_DIR points at another data directory.
import { join } from 'node:path';
import { loadDeployment, walletFromEnv, walletFromFile, type Deployment, type Signer } from '@agent-economy/sdk';

export const dataDir = process.env.DATA_DIR ?? join(import.meta.dirname, '..', '.data');

/** The running deployment, or an error saying to start it. */
export async function localDeployment(): Promise<Deployment> {
  const file = join(dataDir, 'services.json');
  try {
    return await loadDeployment(file);
  } catch {
    throw new Error(`No ${file}: start the economy first with npm start`);
  }
}

/** The address of one of the deployment's services, or an error naming it. */
export function serviceOf(deployment: Deployment, id: string): { id: string; url: string; wallet?: string } {
  const service = deployment.services.find((s) => s.id === id);
  if (!service) throw new Error(`npm start does not run the ${id} service here (SERVICES leaves it out?)`);
  return service;
}

/** The local ledger's faucet is needed to fund a new wallet; a deployment on a real cluster has none. */
export function requireFaucet(deployment: Deployment): void {
  if (!deployment.chain.faucet)
    throw new Error(
      'This example funds a new wallet from the local ledger’s faucet: run npm start without SOLANA_RPC_URL',
    );
}

/** AGENT_ECONOMY_WALLET when set, else the demo agent wallet `npm start` funds. */
export async function demoWallet(deployment: Deployment): Promise<Signer> {
  if (process.env.AGENT_ECONOMY_WALLET) return walletFromEnv();
  return walletFromFile(deployment.demoWallet?.keyFile ?? join(dataDir, 'keys', 'demo-agent.json'));
}
