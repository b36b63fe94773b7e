import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Express } from 'express';
import { atomicToUsd, usdToAtomic } from '@agent-economy/contracts';
import { reasonerFromEnv } from './ai';
import { ConfigError, loadConfig } from './config';
import { openDatabase } from './db';
import { LocalLedger, startLedgerRpc } from './ledger';
import { facilitatorClient } from './runtime/facilitator-client';
import { createLogger } from './runtime/logger';
import { listen, type RunningServer } from './runtime/server';
import { loadOrCreateWallet } from './runtime/wallet';
import type { ServiceContext } from './runtime/context';
import { deployments, serviceApps, type DeploymentId } from './services';
import { createBtcMetricsApp } from './services/btc-metrics';
import { createFacilitatorApp } from './services/facilitator';
import { createFundingApp } from './services/funding';
import { createIdentityApp } from './services/identity';
import { createReputationApp } from './services/reputation';

const FEE_PAYER_FLOOR_LAMPORTS = 10_000_000_000n; // 10 SOL: tops the fee payer up below this
const DEMO_FLOOR = usdToAtomic('1');
const DEMO_GRANT = usdToAtomic('100');

// `npm start`: the local ledger, the facilitator and every service with real handlers, each on its own
// port, one process, one database.
async function main() {
  // SERVICES=education,facilitator runs some services only: one process per service or replica when scaling out.
  const only = process.env.SERVICES?.split(',').map((id) => id.trim()).filter(Boolean);
  const unknown = only?.filter((id) => !serviceApps[id as DeploymentId]);
  if (unknown?.length) {
    console.error(`Invalid configuration:\n  SERVICES: ${unknown.join(', ')} ${unknown.length > 1 ? 'are' : 'is'} not a service this build serves (${Object.keys(serviceApps).join(', ')})`);
    process.exit(2);
  }
  const mounted = deployments.filter((s) => serviceApps[s.id as DeploymentId] && (!only?.length || only.includes(s.id)));
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
    console.error('Invalid configuration:\n  FACILITATOR_URL: required when SERVICES leaves the facilitator out of this process');
    process.exit(2);
  }
  const logger = createLogger(config.LOG_LEVEL);
  mkdirSync(config.DATA_DIR, { recursive: true });
  const wallet = (id: string) => {
    const secret = config.services[id]?.walletSecret;
    return loadOrCreateWallet(id, { dataDir: config.DATA_DIR, ...(secret ? { envValue: secret } : {}) });
  };
  const wallets = Object.fromEntries(mounted.map((s) => [s.id, wallet(s.id)]));
  const demo = loadOrCreateWallet('demo-agent', { dataDir: config.DATA_DIR, ...(config.DEMO_WALLET_SECRET ? { envValue: config.DEMO_WALLET_SECRET } : {}) });

  // The chain: a real cluster when SOLANA_RPC_URL is set, else the local ledger posing as devnet.
  let ledger: LocalLedger | undefined;
  let ledgerRpc: { url: string; close(): Promise<void> } | undefined;
  if (!config.SOLANA_RPC_URL) {
    ledger = await LocalLedger.open({
      dataDir: join(config.DATA_DIR, 'ledger'),
      mint: config.STABLECOIN_MINT,
      mintAuthority: loadOrCreateWallet('ledger-mint-authority', { dataDir: config.DATA_DIR }),
    });
    ledgerRpc = await startLedgerRpc(ledger, { host: config.HOST, port: config.LEDGER_PORT });
    const feePayer = wallets.facilitator;
    if (feePayer && ledger.lamports(feePayer.address) < FEE_PAYER_FLOOR_LAMPORTS) await ledger.airdrop(feePayer.address, 100n * FEE_PAYER_FLOOR_LAMPORTS);
    // Payments go to the sellers' token accounts, which clients expect to exist.
    for (const s of mounted) if (s.id !== 'facilitator') await ledger.openTokenAccount(wallets[s.id]!.address);
    if (ledger.tokenBalance(demo.address) < DEMO_FLOOR) await ledger.mintTo(demo.address, DEMO_GRANT);
  }
  const rpcUrl = config.SOLANA_RPC_URL ?? ledgerRpc!.url;

  // Services settle through FACILITATOR_URL when set, else through the facilitator mounted here.
  const facilitatorUrl = config.FACILITATOR_URL ?? config.services.facilitator?.publicUrl;
  let feePayer = wallets.facilitator?.address;
  if (config.FACILITATOR_URL) {
    const supported = await facilitatorClient(config.FACILITATOR_URL).supported();
    const kind = supported.kinds.find((k) => k.network === config.SOLANA_NETWORK && k.scheme === 'exact');
    if (!kind) throw new Error(`the facilitator at ${config.FACILITATOR_URL} does not settle "exact" payments on ${config.SOLANA_NETWORK}`);
    feePayer = kind.extra.feePayer;
  }

  const database = await openDatabase(config.DATABASE_URL ? { url: config.DATABASE_URL } : { dataDir: join(config.DATA_DIR, 'db') });
  const reasoner = reasonerFromEnv({ LLM_BASE_URL: config.LLM_BASE_URL, LLM_MODEL: config.LLM_MODEL, LLM_API_KEY: config.LLM_API_KEY });

  const btcSources = {
    market: config.MARKET_DATA,
    ...(config.BTC_METRICS_COINMETRICS_URL ? { coinMetricsUrl: config.BTC_METRICS_COINMETRICS_URL } : {}),
    ...(config.BTC_METRICS_BGEOMETRICS_URL ? { bgeometricsUrl: config.BTC_METRICS_BGEOMETRICS_URL } : {}),
  };
  // Services with settings of their own beyond the context.
  const configured: Partial<Record<string, (context: ServiceContext) => Promise<Express>>> = {
    facilitator: (context) =>
      createFacilitatorApp(context, { settleCaps: { global: config.FACILITATOR_SETTLE_CAP, perSeller: config.FACILITATOR_SELLER_SETTLE_CAP } }),
    identity: (context) => createIdentityApp(context, { trustAnchors: config.IDENTITY_TRUST_ANCHORS }),
    funding: (context) => createFundingApp(context, { market: config.MARKET_DATA, seed: config.MARKET_SEED }),
    'btc-metrics': (context) => createBtcMetricsApp(context, { deployment: 'first', ...btcSources }),
    'btc-metrics-2': (context) => createBtcMetricsApp(context, { deployment: 'second', ...btcSources }),
    // The escrow and the gateway report trades they saw settle; run here, their wallets are trusted as they are.
    reputation: (context) =>
      createReputationApp(context, {
        trustedReporters: [...config.REPUTATION_TRUSTED_REPORTERS, ...(['escrow', 'gateway'] as const).flatMap((id) => (wallets[id] ? [wallets[id].address] : []))],
      }),
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
        ...(feePayer ? { feePayer } : {}),
        ...(facilitatorUrl ? { facilitatorUrl } : {}),
      },
    });
    const server = await listen(app, settings.port, config.HOST);
    running.push({ id: service.id, title: service.title, server, publicUrl: settings.publicUrl, wallet: own.address });
  }

  const table = running.map((r) => ({ id: r.id, title: r.title, url: r.publicUrl, docs: `${r.publicUrl}/docs`, wallet: r.wallet }));
  const chain = {
    network: config.SOLANA_NETWORK,
    rpcUrl,
    stablecoin: config.STABLECOIN_MINT,
    local: !!ledger,
    ...(ledgerRpc ? { faucet: `${ledgerRpc.url}/faucet` } : {}),
  };
  const demoWallet = ledger
    ? { address: demo.address, keyFile: join(config.DATA_DIR, 'keys', 'demo-agent.json'), usd: atomicToUsd(ledger.tokenBalance(demo.address)) }
    : { address: demo.address };
  writeFileSync(
    join(config.DATA_DIR, 'services.json'),
    `${JSON.stringify({ database: database.engine, ai: reasoner.generator, chain, demoWallet, services: table }, null, 2)}\n`,
  );
  const width = Math.max(...table.map((t) => t.id.length), 'ledger'.length);
  console.log(`\nAgent Economy: ${table.length} service(s), database ${database.engine}, AI ${reasoner.generator.engine} (${reasoner.generator.model})`);
  if (ledgerRpc) {
    console.log(`  ${'ledger'.padEnd(width)}  ${ledgerRpc.url.padEnd(24)}  local Solana ledger posing as devnet (${config.SOLANA_NETWORK}), faucet POST ${ledgerRpc.url}/faucet`);
  } else {
    console.log(`  ${'chain'.padEnd(width)}  ${rpcUrl}  (${config.SOLANA_NETWORK})`);
  }
  for (const t of table) console.log(`  ${t.id.padEnd(width)}  ${t.url.padEnd(24)}  docs ${t.docs}`);
  if (ledger) console.log(`Demo agent wallet ${demo.address} holds ${demoWallet.usd} USD (key in ${join(config.DATA_DIR, 'keys', 'demo-agent.json')}).`);
  console.log(`Table written to ${join(config.DATA_DIR, 'services.json')}. Ctrl-C stops.\n`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    await Promise.allSettled(running.map((r) => r.server.close()));
    await ledgerRpc?.close();
    await ledger?.close();
    await database.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((error) => {
  const { code, address, port } = error as { code?: string; address?: string; port?: number };
  if (code === 'EADDRINUSE') {
    console.error(`Port ${port} on ${address} is taken (another npm start?). Stop that process or set the port: LEDGER_PORT, <ID>_PORT.`);
  } else console.error(error);
  process.exit(1);
});
