import { readFileSync } from 'node:fs';
import express, { type Express, type Request, type Response } from 'express';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { address, createSolanaRpc } from '@solana/kit';
import { ads, atomicToUsd, escrow } from '@agent-economy/contracts';
import { createServiceClient } from '@agent-economy/sdk';
import { stateOf } from '../services/escrow/domain';
import { escrowStore } from '../services/escrow/store';
import { sessionStore } from '../services/facilitator/session-store';
import { wagerStore } from '../services/wagers/store';
import { associatedTokenAddress } from '../solana/programs';
import { listen } from '../runtime/server';
import { settlementFeed, WINDOWS, type SettlementFeed } from './feed';
import type { SharedDb } from '../db';

// The console: one page over the running economy, built from the services' own HTTP routes (health, OpenAPI
// prices, escrow stats, ad campaigns), the facilitator's settlement feed (pushed to the page as server-sent events)
// and, for what no route lists across all agents (open escrows, wagers, payment sessions), the services' records.
// Everything the page loads comes from this server: no CDN, no font, nothing off the machine.

export interface ConsoleService {
  id: string;
  title: string;
  url: string;
  wallet: string;
}

export interface ConsoleOptions {
  services: readonly ConsoleService[];
  /** Where the settlement feed is read: the deployment's facilitator. */
  facilitatorUrl: string;
  chain: { network: string; rpcUrl: string; stablecoin: string; local: boolean; faucetUrl?: string };
  /** The demo agent wallet whose balance the page shows (and the faucet funds, on the local ledger only). */
  demoWallet: string;
  /** The deployment's database: open escrows, wagers and sessions are read from the services' records in it. */
  db?: SharedDb;
  logger: Logger;
  /** The page's public address, whose origin may POST to the faucet. */
  publicUrl: string;
  pollMs?: number;
}

/** What one press of the faucet button grants the demo wallet. */
const FAUCET_USD = '10';
const HEALTH_TIMEOUT_MS = 3_000;
const PAGE_FILES: Record<string, string> = {
  '/': 'index.html',
  '/console.css': 'console.css',
  '/console.js': 'console.js',
  '/favicon.svg': 'favicon.svg',
};
const TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  css: 'text/css; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  svg: 'image/svg+xml',
};
// Only this server's own files and routes: the browser itself refuses anything else the page might try.
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

interface Price {
  method: string;
  path: string;
  summary: string;
  usd: string;
}

/** The paid operations of a served OpenAPI document and their prices (`x-payment`), as text: "0.05", "0.01–0.5". */
export function pricesOf(document: unknown): Price[] {
  const paths =
    (
      document as {
        paths?: Record<string, Record<string, { summary?: string; 'x-payment'?: Record<string, unknown> }>>;
      }
    ).paths ?? {};
  const prices: Price[] = [];
  for (const [path, operations] of Object.entries(paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const payment = operation?.['x-payment'];
      if (!payment || payment.kind === 'free') continue;
      const min =
        typeof payment.minUsd === 'string' ? payment.minUsd : typeof payment.usd === 'string' ? payment.usd : undefined;
      const max = typeof payment.maxUsd === 'string' ? payment.maxUsd : min;
      if (min === undefined) continue;
      prices.push({
        method: method.toUpperCase(),
        path,
        summary: operation.summary ?? '',
        usd: min === max ? min : `${min}–${max}`,
      });
    }
  }
  return prices;
}

/** Lamports as an exact SOL decimal string. */
function solOf(lamports: bigint): string {
  const fraction = (lamports % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '');
  return `${lamports / 1_000_000_000n}${fraction ? `.${fraction}` : ''}`;
}

async function fetchJson(url: string, timeoutMs = HEALTH_TIMEOUT_MS): Promise<{ status: number; body: unknown }> {
  const response = await fetch(url, {
    signal: AbortSignal.timeout(timeoutMs),
    headers: { accept: 'application/json' },
  });
  const text = await response.text();
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    // a body that is not JSON is reported by its status alone
  }
  return { status: response.status, body };
}

/** Runs a read, answering `{ available: false, reason }` instead of failing the whole response. */
async function section<T>(
  read: () => Promise<T>,
): Promise<({ available: true } & T) | { available: false; reason: string }> {
  try {
    return { available: true, ...(await read()) };
  } catch (error) {
    return { available: false, reason: (error as Error).message || 'does not answer' };
  }
}

export function createConsoleApp(options: ConsoleOptions): { app: Express; feed: SettlementFeed; close(): void } {
  const byId = new Map(options.services.map((s) => [s.id, s]));
  const feed = settlementFeed({
    facilitatorUrl: options.facilitatorUrl,
    sellers: new Map(options.services.map((s) => [s.wallet, s.id])),
    origins: new Map(options.services.map((s) => [new URL(s.url).origin, s.id])),
    logger: options.logger,
    ...(options.pollMs ? { pollMs: options.pollMs } : {}),
  });
  feed.start();
  const rpc = createSolanaRpc(options.chain.rpcUrl);
  const demoTokenAccount = associatedTokenAddress(options.demoWallet, options.chain.stablecoin);
  // The page's own origin, and the loopback names of its port (read when asked: the port may be picked at listen).
  const allowedOrigin = (origin: string) => {
    const own = new URL(options.publicUrl);
    return (
      origin === own.origin ||
      ['127.0.0.1', 'localhost', '[::1]'].some((host) => origin === `http://${host}${own.port ? `:${own.port}` : ''}`)
    );
  };

  // A document's prices do not change while a service runs: read once, again only after a failure.
  const prices = new Map<string, Promise<Price[]>>();
  const pricesFor = (service: ConsoleService) => {
    let cached = prices.get(service.id);
    if (!cached) {
      cached = fetchJson(`${service.url}/openapi.json`, 10_000).then(({ status, body }) => {
        if (status !== 200) throw new Error(`openapi.json answered ${status}`);
        return pricesOf(body);
      });
      cached.catch(() => prices.delete(service.id));
      prices.set(service.id, cached);
    }
    return cached.catch(() => [] as Price[]);
  };

  // Read the documents now, so the page's first load does not wait for two dozen of them.
  for (const service of options.services) void pricesFor(service);

  async function serviceRow(service: ConsoleService) {
    const health = await fetchJson(`${service.url}/health`).then(
      ({ status, body }) => ({
        ok: status === 200,
        status,
        detail: status === 200 ? 'ok' : ((body as { error?: { code?: string } })?.error?.code ?? `HTTP ${status}`),
      }),
      (error: Error) => ({
        ok: false,
        status: null,
        detail: error.name === 'TimeoutError' ? 'no answer' : 'unreachable',
      }),
    );
    return { ...service, docs: `${service.url}/docs`, health, prices: await pricesFor(service) };
  }

  async function balances() {
    const [lamports, token] = await Promise.all([
      rpc.getBalance(address(options.demoWallet)).send(),
      // A wallet never funded has no token account yet: that is a balance of zero.
      rpc
        .getTokenAccountBalance(address(demoTokenAccount))
        .send()
        .then((r) => BigInt(r.value.amount))
        .catch(() => 0n),
    ]);
    return { usd: atomicToUsd(token), usdAtomic: token.toString(), sol: solOf(BigInt(lamports.value)) };
  }

  const usd = (atomic: bigint | string) => atomicToUsd(BigInt(atomic));

  async function activity() {
    const now = new Date();
    const db = options.db;
    const escrowService = byId.get('escrow');
    const adsService = byId.get('ads');
    const [escrows, wagers, sessions, campaigns] = await Promise.all([
      section(async () => {
        if (!escrowService) throw new Error('the escrow service is not part of this deployment');
        const stats = await createServiceClient(escrow, escrowService.url, {
          payments: false,
          maxRetries: 0,
          timeoutMs: 5_000,
        }).stats();
        const open = db ? await escrowStore(db).open(20) : [];
        return {
          total: stats.totalEscrows,
          byState: stats.byState,
          lockedUsd: usd(stats.volumeLocked),
          open: open.map((e) => ({
            id: e.id,
            title: e.title,
            buyer: e.buyer,
            seller: e.seller,
            usd: usd(e.amount),
            milestones: e.milestones.length,
            createdAt: e.createdAt,
            state: stateOf(e),
          })),
        };
      }),
      section(async () => {
        if (!db || !byId.has('wagers')) throw new Error('the wager service is not part of this deployment');
        const open = await wagerStore(db).open(now, 20);
        return {
          active: open.wagers.map((w) => ({
            id: w.id,
            challenger: w.challengerName,
            opponent: w.opponentName,
            usd: usd(w.amount),
            createdAt: w.createdAt.toISOString(),
          })),
          challenges: open.challenges.map((c) => ({
            id: c.id,
            challenger: c.challengerName,
            opponent: c.opponentName,
            usd: usd(c.amount),
            expiresAt: c.expiresAt.toISOString(),
          })),
        };
      }),
      section(async () => {
        if (!db || !byId.has('facilitator')) throw new Error('the facilitator is not part of this process');
        const open = await sessionStore(db).unclosed(20);
        return {
          open: open.map((s) => ({
            channelId: s.channel_id,
            state: s.state,
            buyer: s.buyer,
            seller: byIdOfWallet(s.seller) ?? s.seller,
            depositUsd: usd(s.deposit),
            acceptedUsd: usd(s.accepted),
            vouchers: s.sequence,
            expiresAt: s.expires_at.toISOString(),
          })),
        };
      }),
      section(async () => {
        if (!adsService) throw new Error('the ad network is not part of this deployment');
        const page = await createServiceClient(ads, adsService.url, {
          payments: false,
          maxRetries: 0,
          timeoutMs: 5_000,
        }).campaigns.list({ query: { limit: 50 } });
        return {
          spentUsd: usd(page.items.reduce((sum, c) => sum + BigInt(c.spent_total), 0n)),
          campaigns: page.items.map((c) => ({
            id: c.id,
            name: c.name,
            advertiser: c.advertiser.name,
            status: c.status,
            budgetUsd: usd(c.budget_total),
            spentUsd: usd(c.spent_total),
            spentTodayUsd: usd(c.spent_today),
            settlements: c.stats.settlements,
            conversions: c.stats.conversions,
          })),
        };
      }),
    ]);
    return { escrows, wagers, sessions, campaigns };
  }
  const wallets = new Map(options.services.map((s) => [s.wallet, s.id]));
  const byIdOfWallet = (wallet: string) => wallets.get(wallet);

  const page = new Map(
    Object.entries(PAGE_FILES).map(([route, file]) => [
      route,
      { body: readFileSync(new URL(`./page/${file}`, import.meta.url)), type: TYPES[file.split('.').pop()!]! },
    ]),
  );

  const app = express();
  app.disable('x-powered-by');
  app.use((_req, res, next) => {
    res.setHeader('content-security-policy', CSP);
    res.setHeader('x-content-type-options', 'nosniff');
    res.setHeader('referrer-policy', 'no-referrer');
    next();
  });
  for (const [route, file] of page) {
    app.get(route, (_req, res) => {
      res.type(file.type).setHeader('cache-control', 'no-cache');
      res.send(file.body);
    });
  }
  const fail = (res: Response, status: number, code: string, message: string) =>
    res.status(status).json({ error: { code, message } });

  app.get('/api/overview', async (_req, res) => {
    const services = await Promise.all(options.services.map(serviceRow));
    const { rpcUrl, network, stablecoin, local } = options.chain;
    res.json({
      chain: { network, rpcUrl, stablecoin, local, faucet: local && !!options.chain.faucetUrl },
      demoWallet: options.demoWallet,
      feed: feed.status(),
      services,
    });
  });
  app.get('/api/settlements', (req, res) => {
    const limit = Number(req.query.limit ?? 50);
    if (!Number.isInteger(limit) || limit < 1 || limit > 200)
      return void fail(res, 400, 'invalid_request', 'limit must be an integer from 1 to 200');
    res.json({ feed: feed.status(), settlements: feed.recent(limit) });
  });
  app.get('/api/series', (req, res) => {
    const group = req.query.group ?? 'seller';
    const window = req.query.window ?? '1h';
    if (group !== 'seller' && group !== 'route')
      return void fail(res, 400, 'invalid_request', 'group must be seller or route');
    if (typeof window !== 'string' || !WINDOWS[window])
      return void fail(res, 400, 'invalid_request', `window must be one of ${Object.keys(WINDOWS).join(', ')}`);
    res.json(feed.series(group, window));
  });
  app.get('/api/activity', async (_req, res) => {
    res.json(await activity());
  });
  app.get('/api/wallet', async (_req, res) => {
    try {
      res.json({
        address: options.demoWallet,
        ...(await balances()),
        faucet: options.chain.local && !!options.chain.faucetUrl,
      });
    } catch (error) {
      fail(res, 503, 'chain_unavailable', `The chain does not answer: ${(error as Error).message}`);
    }
  });
  app.post('/api/faucet', async (req: Request, res: Response) => {
    // Minting is for this page only: a request from any other web origin (or a rebound DNS name) is refused.
    const origin = req.headers.origin;
    if (origin !== undefined && !allowedOrigin(origin))
      return void fail(res, 403, 'origin_not_allowed', 'The faucet answers the console page only');
    if (!options.chain.local || !options.chain.faucetUrl)
      return void fail(res, 409, 'faucet_unavailable', 'The faucet exists on the local ledger only');
    try {
      const response = await fetch(options.chain.faucetUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ address: options.demoWallet, usd: FAUCET_USD }),
        signal: AbortSignal.timeout(10_000),
      });
      const body = (await response.json()) as { signatures?: string[] };
      if (!response.ok) return void fail(res, 502, 'faucet_failed', `The ledger's faucet answered ${response.status}`);
      res.json({ grantedUsd: FAUCET_USD, signatures: body.signatures ?? [], ...(await balances()) });
    } catch (error) {
      fail(res, 503, 'chain_unavailable', `The ledger's faucet does not answer: ${(error as Error).message}`);
    }
  });
  app.get('/api/events', (req, res) => {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    const send = (event: string, data: unknown) => res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    res.write('retry: 2000\n\n');
    // The backlog first, then every settlement as the feed reads it: a page that reconnects starts over from here.
    send('hello', { feed: feed.status(), settlements: feed.recent(50) });
    const unsubscribe = feed.subscribe((s) => send('settlement', s));
    const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), 15_000);
    req.on('close', () => {
      unsubscribe();
      clearInterval(heartbeat);
    });
  });
  app.use((_req, res) => fail(res, 404, 'not_found', 'No such page'));
  return { app, feed, close: () => feed.stop() };
}

/** Serves the console on host:port (0 picks a free port); `publicUrl` defaults to the address it listens on. */
export async function startConsole(
  options: Omit<ConsoleOptions, 'publicUrl'> & { publicUrl?: string },
  listenOn: { host?: string; port: number },
): Promise<{ url: string; feed: SettlementFeed; close(): Promise<void> }> {
  const host = listenOn.host ?? '127.0.0.1';
  // The page's origin is only known once listening when the port is picked by the system.
  let publicUrl = options.publicUrl;
  const { app, feed, close } = createConsoleApp({
    ...options,
    get publicUrl() {
      return publicUrl ?? `http://${host}:${listenOn.port}`;
    },
  });
  const server = await listen(app, listenOn.port, host);
  publicUrl ??= server.url;
  return {
    url: publicUrl,
    feed,
    async close() {
      close();
      await server.close();
    },
  };
}
