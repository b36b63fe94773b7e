import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { services as registry } from '@agent-economy/contracts';
import { reasonerFromEnv } from './ai';
import { ConfigError, loadConfig } from './config';
import { openDatabase } from './db';
import { createLogger } from './runtime/logger';
import { listen, type RunningServer } from './runtime/server';
import { loadOrCreateWallet } from './runtime/wallet';
import { serviceApps } from './services';

// `npm start`: every service with real handlers, each on its own port, one process, one database.
async function main() {
  const mounted = registry.filter((s) => serviceApps[s.id]);
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
  const logger = createLogger(config.LOG_LEVEL);
  mkdirSync(config.DATA_DIR, { recursive: true });
  const database = await openDatabase(config.DATABASE_URL ? { url: config.DATABASE_URL } : { dataDir: join(config.DATA_DIR, 'db') });
  const reasoner = reasonerFromEnv({ LLM_BASE_URL: config.LLM_BASE_URL, LLM_MODEL: config.LLM_MODEL, LLM_API_KEY: config.LLM_API_KEY });

  const running: { id: string; title: string; server: RunningServer; publicUrl: string; payTo: string }[] = [];
  for (const service of mounted) {
    const settings = config.services[service.id]!;
    const wallet = loadOrCreateWallet(`${service.id}-payto`, {
      dataDir: config.DATA_DIR,
      ...(settings.walletSecret ? { envValue: settings.walletSecret } : {}),
    });
    const app = await serviceApps[service.id]!({
      db: database.db,
      logger,
      reasoner,
      publicUrl: settings.publicUrl,
      ...(settings.prices ? { prices: settings.prices } : {}),
      paywall: {
        payTo: wallet.address,
        network: config.SOLANA_NETWORK,
        asset: config.STABLECOIN_MINT,
        maxTimeoutSeconds: config.PAYMENT_TIMEOUT_SECONDS,
      },
    });
    const server = await listen(app, settings.port, config.HOST);
    running.push({ id: service.id, title: service.title, server, publicUrl: settings.publicUrl, payTo: wallet.address });
  }

  const table = running.map((r) => ({ id: r.id, title: r.title, url: r.publicUrl, docs: `${r.publicUrl}/docs`, payTo: r.payTo }));
  writeFileSync(join(config.DATA_DIR, 'services.json'), `${JSON.stringify({ database: database.engine, ai: reasoner.generator, services: table }, null, 2)}\n`);
  const width = Math.max(...table.map((t) => t.id.length));
  console.log(`\nAgent Economy: ${table.length} service(s), database ${database.engine}, AI ${reasoner.generator.engine} (${reasoner.generator.model})`);
  for (const t of table) console.log(`  ${t.id.padEnd(width)}  ${t.url.padEnd(24)}  docs ${t.docs}`);
  console.log(`Table written to ${join(config.DATA_DIR, 'services.json')}. Ctrl-C stops.\n`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    await Promise.allSettled(running.map((r) => r.server.close()));
    await database.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
