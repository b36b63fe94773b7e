import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import v8 from 'node:v8';
import type { Express } from 'express';
import { sql } from 'kysely';
import { atomicToUsd, usdToAtomic } from '@agent-economy/contracts';
import { reasonerFromEnv } from './ai';
import { ConfigError, loadConfig } from './config';
import { openDatabase } from './db';
import { LocalLedger, startLedgerRpc } from './ledger';
import { facilitatorClient } from './runtime/facilitator-client';
import { createLogger } from './runtime/logger';
import { startOtlpTracing } from './runtime/otlp';
import { listen, type RunningServer } from './runtime/server';
import { loadOrCreateWallet } from './solana/keys';
import type { ServiceContext } from './runtime/context';
import { deployments, serviceApps, type DeploymentId } from './services';
// Service modules, the console and the simulator are imported where used: a SERVICES process loads only what it runs.
import type { startConsole } from './console';
import type { simulate as simulateEconomy } from './simulate/economy';

// V8 lets a busy heap grow to several times its live size between full collections: under paid load npm start went
// from 400 to 680 MB of RSS in 3,000 calls while its live heap stayed near 90 MB. Growing by a fifth at most keeps it
// near 420 MB, for more frequent full collections. A --heap-growing-percent on node's command line is left as is
// (Node refuses these V8 flags in NODE_OPTIONS: `npx tsx --heap-growing-percent=50 servers/src/main.ts`).
const nodeFlags = process.execArgv.join(' ');
if (!nodeFlags.includes('heap-growing-percent')) v8.setFlagsFromString('--heap-growing-percent=20');
// PGlite is PostgreSQL compiled to WebAssembly. V8 compiles it with Liftoff, then recompiles its hot functions with
// TurboFan in the background, whose compilations peak near 90 MB of malloc that the C allocator keeps: 40 to 75 MB
// more RSS (a two-service process at 360-400 MB instead of about 310), for about 5-10 % less server CPU a paid call
// on PGlite. Memory wins here; --no-liftoff-only on node's command line (or any liftoff/tier-up flag) keeps V8's
// default.
if (!/liftoff|wasm-tier-up|wasm-dynamic-tiering/.test(nodeFlags)) v8.setFlagsFromString('--liftoff-only');

const FEE_PAYER_FLOOR_LAMPORTS = 10_000_000_000n; // 10 SOL: tops the fee payer up below this
const SERVICE_SOL_FLOOR_LAMPORTS = 100_000_000n; // 0.1 SOL: tops a service wallet up below this
const SERVICE_SOL_GRANT_LAMPORTS = 1_000_000_000n; // 1 SOL
const DEMO_FLOOR = usdToAtomic('1');
const DEMO_GRANT = usdToAtomic('100');
const GATEWAY_FLOAT_FLOOR = usdToAtomic('1');
const GATEWAY_FLOAT_GRANT = usdToAtomic('20');

/** A URL with its password hidden, for messages. */
function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'DATABASE_URL';
  }
}

/** Calls `attempt` until it answers, waiting 1, 2, 4 … up to 30 s between tries, one line per failure. */
async function untilReachable<T>(what: string, attempt: () => Promise<T>): Promise<T> {
  for (let wait = 1; ; wait = Math.min(wait * 2, 30)) {
    try {
      return await attempt();
    } catch (error) {
      console.error(`${what} does not answer (${(error as Error).message}); trying again in ${wait} s`);
      await new Promise((resolve) => setTimeout(resolve, wait * 1000));
    }
  }
}

// `npm start`: the local ledger, the facilitator and every service with real handlers, each on its own
// port, one process, one database.
async function main() {
  // SERVICES=education,facilitator runs some services only: one process per service or replica when scaling out.
  const only = process.env.SERVICES?.split(',')
    .map((id) => id.trim())
    .filter(Boolean);
  const unknown = only?.filter((id) => !serviceApps[id as DeploymentId]);
  if (unknown?.length) {
    console.error(
      `Invalid configuration:\n  SERVICES: ${unknown.join(', ')} ${unknown.length > 1 ? 'are' : 'is'} not a service this build serves (${Object.keys(serviceApps).join(', ')})`,
    );
    process.exit(2);
  }
  const mounted = deployments.filter(
    (s) => serviceApps[s.id as DeploymentId] && (!only?.length || only.includes(s.id)),
  );
  let config;
  try {
    config = loadConfig(mounted);
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(2);
    }
    throw error;
  }
  if (!config.FACILITATOR_URL && !mounted.some((s) => s.id === 'facilitator')) {
    console.error(
      'Invalid configuration:\n  FACILITATOR_URL: required when SERVICES leaves the facilitator out of this process',
    );
    process.exit(2);
  }
  const logger = createLogger(config.LOG_LEVEL);
  // OpenTelemetry spans over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set (runtime/otlp.ts); off by default.
  const stopTracing = await startOtlpTracing(logger);
  mkdirSync(config.DATA_DIR, { recursive: true });
  const wallet = (id: string) => {
    const secret = config.services[id]?.walletSecret;
    return loadOrCreateWallet(id, { dataDir: config.DATA_DIR, ...(secret ? { envValue: secret } : {}) });
  };
  const wallets = Object.fromEntries(mounted.map((s) => [s.id, wallet(s.id)]));
  // Every service wallet of the deployment the facilitator can know: the mounted services', and the key files
  // of services run by other processes on this data directory (SERVICES=...).
  const deploymentWallets = [
    ...Object.values(wallets).map((w) => w.address),
    ...deployments
      .filter((s) => !wallets[s.id] && existsSync(join(config.DATA_DIR, 'keys', `${s.id}.json`)))
      .map((s) => loadOrCreateWallet(s.id, { dataDir: config.DATA_DIR }).address),
  ];
  const demo = loadOrCreateWallet('demo-agent', {
    dataDir: config.DATA_DIR,
    ...(config.DEMO_WALLET_SECRET ? { envValue: config.DEMO_WALLET_SECRET } : {}),
  });

  // The chain: a real cluster when SOLANA_RPC_URL is set, else the local ledger posing as devnet.
  let ledger: LocalLedger | undefined;
  let ledgerRpc: { url: string; close(): Promise<void> } | undefined;
  if (!config.SOLANA_RPC_URL) {
    ledger = await LocalLedger.open({
      dataDir: join(config.DATA_DIR, 'ledger'),
      mint: config.STABLECOIN_MINT,
      mintAuthority: loadOrCreateWallet('ledger-mint-authority', { dataDir: config.DATA_DIR }),
    });
    ledgerRpc = await startLedgerRpc(ledger, {
      host: config.HOST,
      port: config.LEDGER_PORT,
      corsOrigins: config.LEDGER_CORS_ORIGINS,
      faucetCaps: { usd: config.LEDGER_FAUCET_MAX_USD, sol: config.LEDGER_FAUCET_MAX_SOL },
    });
    const feePayer = wallets.facilitator;
    if (feePayer && ledger.lamports(feePayer.address) < FEE_PAYER_FLOOR_LAMPORTS)
      await ledger.airdrop(feePayer.address, 100n * FEE_PAYER_FLOOR_LAMPORTS);
    // Payments go to the sellers' token accounts, which clients expect to exist.
    for (const s of mounted) if (s.id !== 'facilitator') await ledger.openTokenAccount(wallets[s.id]!.address);
    // Every service wallet pays its own fees when it sends (the vault: refunds, payouts): keep some SOL in it.
    for (const s of mounted) {
      const own = wallets[s.id]!.address;
      if (s.id !== 'facilitator' && ledger.lamports(own) < SERVICE_SOL_FLOOR_LAMPORTS)
        await ledger.airdrop(own, SERVICE_SOL_GRANT_LAMPORTS);
    }
    if (ledger.tokenBalance(demo.address) < DEMO_FLOOR) await ledger.mintTo(demo.address, DEMO_GRANT);
    // The gateway's float: it pays reputation lookups and negotiation fees for buyers (a purchase itself is paid
    // with the buyer's payment).
    const gatewayWallet = wallets.gateway?.address;
    if (gatewayWallet && ledger.tokenBalance(gatewayWallet) < GATEWAY_FLOAT_FLOOR)
      await ledger.mintTo(gatewayWallet, GATEWAY_FLOAT_GRANT);
  }
  const rpcUrl = config.SOLANA_RPC_URL ?? ledgerRpc!.url;

  // Services settle through FACILITATOR_URL when set, else through the facilitator mounted here.
  const facilitatorUrl = config.FACILITATOR_URL ?? config.services.facilitator?.publicUrl;
  let feePayer = wallets.facilitator?.address;
  if (config.FACILITATOR_URL) {
    // A replica started while its facilitator is down waits for it (a deployment starting everything at once).
    const supported = await untilReachable(`the facilitator at ${config.FACILITATOR_URL}`, () =>
      facilitatorClient(config.FACILITATOR_URL!).supported(),
    );
    const kind = supported.kinds.find((k) => k.network === config.SOLANA_NETWORK && k.scheme === 'exact');
    if (!kind) {
      console.error(
        `The facilitator at ${config.FACILITATOR_URL} does not settle "exact" payments on ${config.SOLANA_NETWORK} (its /supported lists ${supported.kinds.map((k) => `${k.scheme} on ${k.network}`).join(', ') || 'nothing'}).`,
      );
      process.exit(2);
    }
    feePayer = kind.extra.feePayer;
  }

  const database = await openDatabase(
    config.DATABASE_URL ? { url: config.DATABASE_URL } : { dataDir: join(config.DATA_DIR, 'db') },
  );
  try {
    await sql`select 1`.execute(database.db);
  } catch (error) {
    const where = config.DATABASE_URL ? redactUrl(config.DATABASE_URL) : join(config.DATA_DIR, 'db');
    console.error(
      `The database at ${where} cannot be reached: ${(error as Error).message || (error as { code?: string }).code}. Check DATABASE_URL and that PostgreSQL is running.`,
    );
    process.exit(1);
  }
  const reasoner = reasonerFromEnv({
    LLM_BASE_URL: config.LLM_BASE_URL,
    LLM_MODEL: config.LLM_MODEL,
    LLM_API_KEY: config.LLM_API_KEY,
  });

  const btcSources = {
    market: config.MARKET_DATA,
    ...(config.BTC_METRICS_COINMETRICS_URL ? { coinMetricsUrl: config.BTC_METRICS_COINMETRICS_URL } : {}),
    ...(config.BTC_METRICS_BGEOMETRICS_URL ? { bgeometricsUrl: config.BTC_METRICS_BGEOMETRICS_URL } : {}),
  };
  // Services with settings of their own beyond the context.
  const configured: Partial<Record<string, (context: ServiceContext) => Promise<Express>>> = {
    facilitator: async (context) =>
      (await import('./services/facilitator')).createFacilitatorApp(context, {
        settleCaps: {
          global: config.FACILITATOR_SETTLE_CAP,
          perSeller: config.FACILITATOR_SELLER_SETTLE_CAP,
          perPayer: config.FACILITATOR_PAYER_SETTLE_CAP,
        },
        maxComputeUnitPriceMicroLamports: BigInt(config.FACILITATOR_MAX_COMPUTE_UNIT_PRICE),
        // The fee payer settles for this deployment's services (their wallets pay and sign) and the configured ones.
        sellers: new Set([...deploymentWallets, ...config.FACILITATOR_SELLERS, ...config.FACILITATOR_RESOURCE_SERVERS]),
        resourceServers: new Set([...deploymentWallets, ...config.FACILITATOR_RESOURCE_SERVERS]),
        ads: config.FACILITATOR_ADS_TIMEOUT_MS > 0 && { timeoutMs: config.FACILITATOR_ADS_TIMEOUT_MS },
        sessionCloseGraceSeconds: config.SESSION_CLOSE_GRACE_SECONDS,
      }),
    // The ad network trusts this deployment's facilitator (its fee payer) and ADS_TRUSTED_FACILITATORS to report
    // settlements.
    ads: async (context) =>
      (await import('./services/ads')).createAdsApp(context, {
        facilitators: [
          ...(context.paywall.feePayer ? [context.paywall.feePayer] : []),
          ...config.ADS_TRUSTED_FACILITATORS,
        ],
      }),
    identity: async (context) =>
      (await import('./services/identity')).createIdentityApp(context, { trustAnchors: config.IDENTITY_TRUST_ANCHORS }),
    funding: async (context) =>
      (await import('./services/funding')).createFundingApp(context, {
        market: config.MARKET_DATA,
        seed: config.MARKET_SEED,
      }),
    'exchange-flows': async (context) =>
      (await import('./services/exchange-flows')).createExchangeFlowsApp(context, {
        market: config.MARKET_DATA,
        seed: config.MARKET_SEED,
        ...(config.EXCHANGE_FLOWS_COINMETRICS_URL ? { coinMetricsUrl: config.EXCHANGE_FLOWS_COINMETRICS_URL } : {}),
        ...(config.EXCHANGE_FLOWS_COINGECKO_URL ? { coinGeckoUrl: config.EXCHANGE_FLOWS_COINGECKO_URL } : {}),
        ...(config.COINGECKO_API_KEY ? { coinGeckoApiKey: config.COINGECKO_API_KEY } : {}),
      }),
    conviction: async (context) =>
      (await import('./services/conviction')).createConvictionApp(context, {
        market: config.MARKET_DATA,
        seed: config.MARKET_SEED,
        live: {
          ...(config.CONVICTION_BINANCE_URL ? { binanceUrl: config.CONVICTION_BINANCE_URL } : {}),
          ...(config.CONVICTION_OKX_URL ? { okxUrl: config.CONVICTION_OKX_URL } : {}),
          ...(config.CONVICTION_COINGECKO_URL ? { coingeckoUrl: config.CONVICTION_COINGECKO_URL } : {}),
        },
      }),
    tokens: async (context) =>
      (await import('./services/tokens')).createTokensApp(context, { market: config.MARKET_DATA }),
    pricing: async (context) =>
      (await import('./services/pricing')).createPricingApp(context, { market: config.MARKET_DATA }),
    'btc-metrics': async (context) =>
      (await import('./services/btc-metrics')).createBtcMetricsApp(context, { deployment: 'first', ...btcSources }),
    'btc-metrics-2': async (context) =>
      (await import('./services/btc-metrics')).createBtcMetricsApp(context, { deployment: 'second', ...btcSources }),
    escrow: async (context) =>
      (await import('./services/escrow')).createEscrowApp(context, {
        reviewSeconds: config.ESCROW_REVIEW_SECONDS,
        timeoutSeconds: config.ESCROW_TIMEOUT_SECONDS,
        tickMs: config.ESCROW_TICK_SECONDS * 1000,
      }),
    // The escrow and the gateway report trades they saw settle; run here, their wallets are trusted as they are.
    reputation: async (context) =>
      (await import('./services/reputation')).createReputationApp(context, {
        trustedReporters: [
          ...config.REPUTATION_TRUSTED_REPORTERS,
          ...(['escrow', 'gateway'] as const).flatMap((id) => (wallets[id] ? [wallets[id].address] : [])),
        ],
      }),
    // The gateway negotiates and buys for its buyers; run here, its wallet is a registered broker. The knowledge
    // market prices purchases with agreements; run here, its wallet is a trusted reader of them.
    negotiation: async (context) =>
      (await import('./services/negotiation')).createNegotiationApp(context, {
        brokers: [...config.NEGOTIATION_BROKERS, ...(wallets.gateway ? [wallets.gateway.address] : [])],
        trustedReaders: [
          ...config.NEGOTIATION_TRUSTED_READERS,
          ...(wallets['knowledge-market'] ? [wallets['knowledge-market'].address] : []),
        ],
      }),
    // CHAIN_RPC_URL (the spec's setting of the wager service) points its stakes, refunds and payouts at another
    // endpoint.
    wagers: async (context) =>
      (await import('./services/wagers')).createWagersApp(
        config.CHAIN_RPC_URL ? { ...context, rpcUrl: config.CHAIN_RPC_URL, localChain: false } : context,
        {
          minWagerUsd: config.MIN_WAGER_USD,
          maxWagerUsd: config.MAX_WAGER_USD,
          houseCutBps: config.HOUSE_CUT_PERCENT,
          challengeTtlSeconds: config.WAGER_CHALLENGE_TTL_SECONDS,
          voidAfterHours: config.WAGER_VOID_HOURS,
        },
      ),
  };

  const running: { id: string; title: string; server: RunningServer; publicUrl: string; wallet: string }[] = [];
  for (const service of mounted) {
    const settings = config.services[service.id]!;
    const own = wallets[service.id]!;
    const create = configured[service.id] ?? serviceApps[service.id as DeploymentId]!;
    const app = await create({
      db: database.db,
      logger,
      reasoner,
      publicUrl: settings.publicUrl,
      wallet: own,
      rpcUrl,
      localChain: !!ledger,
      serviceUrl: (id) => config.serviceUrls[id] ?? `http://${config.HOST}:0`,
      ...(settings.prices ? { prices: settings.prices } : {}),
      paywall: {
        payTo: own.address,
        network: config.SOLANA_NETWORK,
        asset: config.STABLECOIN_MINT,
        maxTimeoutSeconds: config.PAYMENT_TIMEOUT_SECONDS,
        ...(config.PAYWALL_FAULT ? { fault: config.PAYWALL_FAULT } : {}),
        ...(config.PAYWALL_SESSIONS === 'on' ? { sessions: { idleSeconds: config.PAYWALL_SESSION_IDLE_SECONDS } } : {}),
        ...(feePayer ? { feePayer } : {}),
        ...(facilitatorUrl ? { facilitatorUrl } : {}),
      },
    });
    const server = await listen(app, settings.port, config.HOST);
    running.push({ id: service.id, title: service.title, server, publicUrl: settings.publicUrl, wallet: own.address });
  }

  const table = running.map((r) => ({
    id: r.id,
    title: r.title,
    url: r.publicUrl,
    docs: `${r.publicUrl}/docs`,
    wallet: r.wallet,
  }));
  const chain = {
    network: config.SOLANA_NETWORK,
    rpcUrl,
    stablecoin: config.STABLECOIN_MINT,
    local: !!ledger,
    ...(ledgerRpc ? { faucet: `${ledgerRpc.url}/faucet` } : {}),
  };
  const demoWallet = ledger
    ? {
        address: demo.address,
        keyFile: join(config.DATA_DIR, 'keys', 'demo-agent.json'),
        usd: atomicToUsd(ledger.tokenBalance(demo.address)),
      }
    : { address: demo.address };
  writeFileSync(
    join(config.DATA_DIR, 'services.json'),
    `${JSON.stringify({ database: database.engine, ai: reasoner.generator, chain, demoWallet, services: table }, null, 2)}\n`,
  );
  // The web console: a full `npm start` serves it; a SERVICES process only when CONSOLE_PORT is set. A taken port
  // costs the console only, never the economy.
  let consoleServer: Awaited<ReturnType<typeof startConsole>> | undefined;
  if ((!only?.length || process.env.CONSOLE_PORT) && facilitatorUrl) {
    const { startConsole: start } = await import('./console');
    try {
      consoleServer = await start(
        {
          services: table,
          facilitatorUrl,
          chain: {
            network: config.SOLANA_NETWORK,
            rpcUrl,
            stablecoin: config.STABLECOIN_MINT,
            local: !!ledger,
            ...(ledgerRpc ? { faucetUrl: `${ledgerRpc.url}/faucet` } : {}),
          },
          demoWallet: demo.address,
          db: database.db,
          logger,
        },
        { host: config.HOST, port: config.CONSOLE_PORT },
      );
    } catch (error) {
      if ((error as { code?: string }).code !== 'EADDRINUSE') throw error;
      console.error(`Port ${config.CONSOLE_PORT} is taken: the console is not served (set CONSOLE_PORT).`);
    }
  }
  const width = Math.max(...table.map((t) => t.id.length), 'ledger'.length, 'console'.length);
  console.log(
    `\nAgent Economy: ${table.length} service(s), database ${database.engine}, AI ${reasoner.generator.engine} (${reasoner.generator.model})`,
  );
  if (consoleServer)
    console.log(
      `  ${'console'.padEnd(width)}  ${`${consoleServer.url}/`.padEnd(24)}  open in a browser: services, live settlements, charts, wallet`,
    );
  if (ledgerRpc) {
    console.log(
      `  ${'ledger'.padEnd(width)}  ${ledgerRpc.url.padEnd(24)}  local Solana ledger posing as devnet (${config.SOLANA_NETWORK}), faucet POST ${ledgerRpc.url}/faucet`,
    );
  } else {
    console.log(`  ${'chain'.padEnd(width)}  ${rpcUrl}  (${config.SOLANA_NETWORK})`);
  }
  for (const t of table) console.log(`  ${t.id.padEnd(width)}  ${t.url.padEnd(24)}  docs ${t.docs}`);
  if (ledger)
    console.log(
      `Demo agent wallet ${demo.address} holds ${demoWallet.usd} USD (key in ${join(config.DATA_DIR, 'keys', 'demo-agent.json')}).`,
    );
  console.log(`Table written to ${join(config.DATA_DIR, 'services.json')}. Ctrl-C stops.\n`);
  // SIMULATE_WARMUP_STEPS: a short burst of real traffic, so the chain services have history from the first minute;
  // SIMULATE_AGENTS: a seeded population trades through the economy for as long as it runs (see npm run simulate).
  const simulation = new AbortController();
  const simulate = async (...args: Parameters<typeof simulateEconomy>) =>
    (await import('./simulate/economy')).simulate(...args);
  const simulated = ledgerRpc && {
    rpcUrl,
    faucetUrl: `${ledgerRpc.url}/faucet`,
    network: config.SOLANA_NETWORK,
    services: Object.fromEntries(table.map((t) => [t.id, t.url])),
    wallets: Object.fromEntries(table.map((t) => [t.id, t.wallet])),
  };
  // A SERVICES process (one of several) leaves it to the whole economy's start, unless SIMULATE_WARMUP_STEPS is set.
  if (simulated && config.SIMULATE_WARMUP_STEPS > 0 && (!only?.length || process.env.SIMULATE_WARMUP_STEPS)) {
    simulate({
      deployment: simulated,
      seed: 'warm-up',
      agents: 4,
      steps: config.SIMULATE_WARMUP_STEPS,
      signal: simulation.signal,
    })
      .then((s) =>
        console.log(
          `Warm-up done: ${s.paidCalls} paid calls (${s.volumeUsd} USD), ${s.mints} token launches, ${s.tokenTransfers} token transfers on the local ledger (SIMULATE_WARMUP_STEPS=0 skips it).`,
        ),
      )
      .catch((error: unknown) => logger.error({ err: error }, 'warm-up stopped'));
  }
  if (simulated && config.SIMULATE_AGENTS) {
    console.log(`Simulating ${config.SIMULATE_AGENTS} agents trading through the services (SIMULATE_AGENTS).`);
    simulate({
      deployment: simulated,
      agents: config.SIMULATE_AGENTS,
      seconds: Number.MAX_SAFE_INTEGER / 1000,
      signal: simulation.signal,
    }).catch((error: unknown) => logger.error({ err: error }, 'simulation stopped'));
  }

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    simulation.abort();
    await consoleServer?.close();
    await Promise.allSettled(running.map((r) => r.server.close()));
    await ledgerRpc?.close();
    await ledger?.close();
    await database.close();
    await stopTracing?.().catch(() => undefined);
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((error) => {
  const { code, address, port } = error as { code?: string; address?: string; port?: number };
  if (code === 'EADDRINUSE') {
    console.error(
      `Port ${port} on ${address} is taken (another npm start?). Stop that process or set the port: LEDGER_PORT, <ID>_PORT.`,
    );
  } else console.error(error);
  process.exit(1);
});
