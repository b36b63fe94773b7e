import { createServer, type Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { Express } from 'express';
import { SOLANA_DEVNET, USDC_DEVNET } from '@agent-economy/contracts';
import { createClient, type AgentEconomyClient } from '@agent-economy/sdk';
import { builtinReasoner, type Reasoner } from '../../servers/src/ai';
import { openDatabase, type Database } from '../../servers/src/db';
import type { ServiceContext } from '../../servers/src/runtime/context';
import { createLogger } from '../../servers/src/runtime/logger';
import type { PaywallConfig } from '../../servers/src/runtime/paywall';
import { generateWallet, type Wallet } from '../../servers/src/runtime/wallet';

/** An in-memory PGlite database, or a fresh schema on PostgreSQL when TEST_DATABASE_URL is set. */
export function testDatabase(): Promise<Database> {
  const url = process.env.TEST_DATABASE_URL;
  return url ? openDatabase({ url, schema: `t_${randomBytes(6).toString('hex')}`, dropSchemaOnClose: true }) : openDatabase();
}

export interface RunningService {
  url: string;
  database: Database;
  context: ServiceContext;
  client: AgentEconomyClient;
  /** Stops the HTTP server only (for services sharing a database). */
  stopServer(): Promise<void>;
  close(): Promise<void>;
}

/** Starts a real service on a free loopback port, with its own database and pay-to wallet. */
export async function startService(
  factory: (context: ServiceContext) => Promise<Express>,
  options: { reasoner?: Reasoner; id?: string; wallet?: Wallet; rpcUrl?: string; paywall?: Partial<PaywallConfig>; database?: Database } = {},
): Promise<RunningService> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const database = options.database ?? (await testDatabase());
  const wallet = options.wallet ?? generateWallet();
  const context: ServiceContext = {
    db: database.db,
    logger: createLogger('silent'),
    reasoner: options.reasoner ?? builtinReasoner(),
    publicUrl: url,
    wallet,
    // No chain unless the test brings one: nothing listens on port 9.
    rpcUrl: options.rpcUrl ?? 'http://127.0.0.1:9',
    localChain: true,
    // Services a test starts find each other through the factories' own options; nothing else listens.
    serviceUrl: () => 'http://127.0.0.1:9',
    paywall: { payTo: wallet.address, network: SOLANA_DEVNET, asset: USDC_DEVNET, maxTimeoutSeconds: 60, ...options.paywall },
  };
  const app = await factory(context);
  server.on('request', app);
  const id = options.id ?? 'education';
  const stopServer = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return {
    url,
    database,
    context,
    client: createClient({ baseUrls: { [id]: url } as never, maxRetries: 0 }),
    stopServer,
    async close() {
      await stopServer();
      if (!options.database) await database.close();
    },
  };
}
