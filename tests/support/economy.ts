import { usdToAtomic } from '@agent-economy/contracts';
import { LocalLedger, startLedgerRpc } from '../../servers/src/ledger';
import { generateWallet, type Wallet } from '../../servers/src/runtime/wallet';
import { createEducationApp } from '../../servers/src/services/education';
import { createFacilitatorApp } from '../../servers/src/services/facilitator';
import { startService, testDatabase, type RunningService } from './servers';

export interface Economy {
  ledger: LocalLedger;
  rpcUrl: string;
  feePayer: Wallet;
  facilitator: RunningService;
  education: RunningService;
  /** A buyer funded with 10 USD of the stablecoin. */
  buyer: Wallet;
  close(): Promise<void>;
}

/**
 * A small economy on loopback: the local ledger behind its JSON-RPC, the facilitator, and the education
 * service paid through it, as `npm start` wires them, each on a free port.
 */
export async function startEconomy(): Promise<Economy> {
  const ledger = await LocalLedger.open({ mintAuthority: generateWallet() });
  const rpc = await startLedgerRpc(ledger, { port: 0 });
  const feePayer = generateWallet();
  await ledger.airdrop(feePayer.address, 10_000_000_000n);
  const database = await testDatabase();
  const facilitator = await startService(createFacilitatorApp, { id: 'facilitator', wallet: feePayer, rpcUrl: rpc.url, database });
  const education = await startService(createEducationApp, {
    rpcUrl: rpc.url,
    database,
    paywall: { feePayer: feePayer.address, facilitatorUrl: facilitator.url },
  });
  await ledger.openTokenAccount(education.context.wallet.address);
  const buyer = generateWallet();
  await ledger.mintTo(buyer.address, usdToAtomic('10'));
  return {
    ledger,
    rpcUrl: rpc.url,
    feePayer,
    facilitator,
    education,
    buyer,
    async close() {
      // Both services share one database: close the servers first, then it, once.
      await Promise.all([facilitator.stopServer(), education.stopServer()]);
      await database.close();
      await rpc.close();
      await ledger.close();
    },
  };
}
