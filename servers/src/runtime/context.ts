import type { PaymentMeta } from '@agent-economy/contracts';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Reasoner } from '../ai';
import type { PaywallConfig } from './paywall';

/** What every service is built from: shared infrastructure, handed in by main.ts or a test. */
export interface ServiceContext {
  db: Kysely<any>;
  logger: Logger;
  reasoner: Reasoner;
  publicUrl: string;
  paywall: PaywallConfig;
  /** This deployment's prices by route key, where they differ from the contract's (`<ID>_PRICES`). */
  prices?: Record<string, PaymentMeta>;
}
