import { join } from 'node:path';
import { builtinReasoner } from '../../servers/src/ai';
import { loadConfig } from '../../servers/src/config';
import { openDatabase } from '../../servers/src/db';
import { facilitatorClient } from '../../servers/src/runtime/facilitator-client';
import { createLogger } from '../../servers/src/runtime/logger';
import { listen } from '../../servers/src/runtime/server';
import { loadOrCreateWallet } from '../../servers/src/solana/keys';
import { createDeskApp, desk } from './desk';

// The settle-first fixture as its own process, configured like `npm start` (DESK_PORT, DESK_WALLET_SECRET,
// DATABASE_URL or DATA_DIR, SOLANA_RPC_URL, FACILITATOR_URL, PAYWALL_FAULT): the chaos test kills it.

const config = loadConfig([desk]);
const settings = config.services.desk!;
const database = await openDatabase(
  config.DATABASE_URL ? { url: config.DATABASE_URL } : { dataDir: join(config.DATA_DIR, 'db') },
);
const wallet = loadOrCreateWallet('desk', {
  dataDir: config.DATA_DIR,
  ...(settings.walletSecret ? { envValue: settings.walletSecret } : {}),
});
// The fee payer, as main.ts learns it: from the facilitator's /supported.
const supported = await facilitatorClient(config.FACILITATOR_URL!).supported();
const feePayer = supported.kinds.find((k) => k.network === config.SOLANA_NETWORK && k.scheme === 'exact')!.extra
  .feePayer as string;
const app = await createDeskApp({
  db: database.db,
  logger: createLogger(config.LOG_LEVEL),
  reasoner: builtinReasoner(),
  publicUrl: settings.publicUrl,
  wallet,
  rpcUrl: config.SOLANA_RPC_URL!,
  localChain: true,
  serviceUrl: () => 'http://127.0.0.1:9',
  paywall: {
    payTo: wallet.address,
    network: config.SOLANA_NETWORK,
    asset: config.STABLECOIN_MINT,
    maxTimeoutSeconds: config.PAYMENT_TIMEOUT_SECONDS,
    facilitatorUrl: config.FACILITATOR_URL!,
    feePayer,
    ...(config.PAYWALL_FAULT ? { fault: config.PAYWALL_FAULT } : {}),
  },
});
await listen(app, settings.port, config.HOST);
console.log('desk listening. Ctrl-C stops');
process.on('SIGINT', () => void database.close().then(() => process.exit(0)));
