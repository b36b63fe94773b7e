import type { PaymentMeta } from '@agent-economy/contracts';
import type { Logger } from 'pino';
import type { Reasoner } from '../ai';
import type { PaywallConfig } from './paywall';
import type { Wallet } from '../solana/keys';
import type { SharedDb } from '../db';

/** What every service is built from: shared infrastructure, handed in by main.ts or a test. */
export interface ServiceContext {
  /** The process's shared handle: each store declares its own tables on it (camelCaseDb<Tables>(db)). */
  db: SharedDb;
  logger: Logger;
  reasoner: Reasoner;
  publicUrl: string;
  paywall: PaywallConfig;
  /** The service's own wallet: where it is paid, or what it signs with (the facilitator's fee payer). */
  wallet: Wallet;
  /** Solana JSON-RPC endpoint of the deployment's chain (the local ledger, or a cluster). */
  rpcUrl: string;
  /** True when rpcUrl is the local ledger (data from it is `embedded`), false for a real cluster (`live`). */
  localChain: boolean;
  /** Where another service of this deployment answers (services talk over HTTP through the SDK). */
  serviceUrl(id: string): string;
  /** This deployment's prices by route key, where they differ from the contract's (`<ID>_PRICES`). */
  prices?: Record<string, PaymentMeta>;
}
