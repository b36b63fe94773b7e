import { createServer, type RequestListener, type Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { Express } from 'express';
import pg from 'pg';
import { expect, vi } from 'vitest';
import { SOLANA_DEVNET, USDC_DEVNET } from '@agent-economy/contracts';
import { createClient, type AgentEconomyClient, type ApiError } from '@agent-economy/sdk';
import { builtinReasoner, type Reasoner } from '../../servers/src/ai';
import { openDatabase, type Database } from '../../servers/src/db';
import type { ServiceContext } from '../../servers/src/runtime/context';
import { createLogger, type Logger } from '../../servers/src/runtime/logger';
import type { PaywallConfig } from '../../servers/src/runtime/paywall';
import { serveInProcess } from '../../servers/src/http/in-process';
import { generateWallet, type Wallet } from '../../servers/src/solana/keys';

/** Calls raced against each other, sorted: the answers of those that went through, the errors of those refused. */
export function raceOutcome<T>(results: PromiseSettledResult<T>[]): { won: T[]; lost: ApiError[] } {
  return {
    won: results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : [])),
    lost: results.flatMap((r) => (r.status === 'rejected' ? [r.reason as ApiError] : [])),
  };
}

/**
 * An HTTP server on a free loopback port, for a provider replay or a fake upstream: its base URL, and a close that
 * also drops kept-alive connections (a service's HTTP agent would otherwise hold the server open).
 */
export async function listenLocal(
  handler: RequestListener,
): Promise<{ server: Server; url: string; close(): Promise<void> }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    server,
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Whether a PostgreSQL server answers at url (tests that need one skip themselves when not). */
export async function postgresReachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Ports handed out by this process: never twice, so two children of one test file cannot be given the same one. */
const handedOut = new Set<number>();

/**
 * A TCP port free on 127.0.0.1 a moment ago, for a child process (or a server started later) to listen on. It is
 * drawn below Linux's ephemeral range (32768–60999): a port the OS chose for some other test's `listen(0)` (or
 * outgoing connection) in the meantime could otherwise be this very port when the child binds it.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = 10_000 + Math.floor(Math.random() * 22_000);
    if (handedOut.has(port)) continue;
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (!free) continue;
    handedOut.add(port);
    return port;
  }
}

/** An in-memory PGlite database, or a fresh schema on PostgreSQL when TEST_DATABASE_URL is set. */
export function testDatabase(): Promise<Database> {
  const url = process.env.TEST_DATABASE_URL;
  return url
    ? openDatabase({ url, schema: `t_${randomBytes(6).toString('hex')}`, dropSchemaOnClose: true })
    : openDatabase();
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
  options: {
    reasoner?: Reasoner;
    id?: string;
    wallet?: Wallet;
    rpcUrl?: string;
    paywall?: Partial<PaywallConfig>;
    database?: Database;
    logger?: Logger;
  } = {},
): Promise<RunningService> {
  const server: Server = createServer();
  // As `npm start` serves (runtime/server.ts): an idle connection is closed by the client first. With Node's 5 s
  // default, a test's fetch may reuse a socket the server is closing that instant and read ECONNRESET.
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const database = options.database ?? (await testDatabase());
  const wallet = options.wallet ?? generateWallet();
  const context: ServiceContext = {
    db: database.db,
    logger: options.logger ?? createLogger('silent'),
    reasoner: options.reasoner ?? builtinReasoner(),
    publicUrl: url,
    wallet,
    // No chain unless the test brings one: nothing listens on port 9.
    rpcUrl: options.rpcUrl ?? 'http://127.0.0.1:9',
    localChain: true,
    // Services a test starts find each other through the factories' own options; nothing else listens.
    serviceUrl: () => 'http://127.0.0.1:9',
    paywall: {
      payTo: wallet.address,
      network: SOLANA_DEVNET,
      asset: USDC_DEVNET,
      maxTimeoutSeconds: 60,
      ...options.paywall,
    },
  };
  const app = await factory(context);
  server.on('request', app);
  // As runtime/server.ts listen() does: what the service offers in process (http/in-process.ts) is called directly
  // while it serves.
  const unserve = serveInProcess(app, url);
  const id = options.id ?? 'education';
  const stopServer = () =>
    new Promise<void>((resolve) => {
      unserve();
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

/**
 * Waits until the paywall has recorded a payment's answer as served. It records that once the answer has left, so a
 * client can hold the answer before the record lands; a test that then rewrites the claim must wait for it first.
 */
export async function servedRecorded(db: Database['db'], key: string): Promise<void> {
  await vi.waitFor(async () => {
    const row = await db.selectFrom('runtime_payments').select('served_at').where('key', '=', key).executeTakeFirst();
    expect(row?.served_at ?? null).not.toBeNull();
  });
}
