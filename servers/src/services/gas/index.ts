import { gas } from '@agent-economy/contracts';
import { migrate } from '../../db';
import { createServiceApp, fromContext } from '../../runtime/app';
import type { ServiceContext } from '../../runtime/context';
import { solanaSource } from '../../upstream/solana';
import { PLACEHOLDER_BLOCKHASH } from './chain';
import { gasHandlers, transactionOf } from './handlers';
import { gasStore, migrations } from './store';

/**
 * The gas fee optimizer: priority-fee recommendations, network status, transaction simulation and fee
 * history, all read from the deployment's chain (the local ledger, or a cluster's JSON-RPC).
 */
export interface GasOptions {
  /** The clock (tests pin it inside a quarter hour, where the forecast's windows start). */
  now?: () => Date;
}

export async function createGasApp(context: ServiceContext, options: GasOptions = {}) {
  await migrate(context.db, 'gas', migrations);
  const chain = solanaSource(context);
  return await createServiceApp({
    service: gas,
    handlers: gasHandlers({
      chain,
      store: gasStore(context.db),
      db: context.db,
      now: options.now ?? (() => new Date()),
    }),
    ...fromContext(context),
    upstream: chain.tracker,
    // Bytes that are not a transaction, or instructions that do not compile, fail before the 402:
    // nobody pays for a simulation that cannot run (the real blockhash is fetched after payment).
    preflight: {
      simulate: ({ body }) => void transactionOf(body, PLACEHOLDER_BLOCKHASH),
    },
  });
}
