import { usdToAtomic } from '@agent-economy/contracts';
import { LocalLedger, startLedgerRpc } from '../../servers/src/ledger';
import { generateWallet, type Wallet } from '../../servers/src/runtime/wallet';
import { createEducationApp } from '../../servers/src/services/education';
import { createFacilitatorApp } from '../../servers/src/services/facilitator';
import type { Express } from 'express';
import type { Reasoner } from '../../servers/src/ai';
import type { ServiceContext } from '../../servers/src/runtime/context';
import { startService, testDatabase, type RunningService } from './servers';

export interface Economy {
  ledger: LocalLedger;
  rpcUrl: string;
  feePayer: Wallet;
  facilitator: RunningService;
  education: RunningService;
  /** A buyer funded with 10 USD of the stablecoin. */
  buyer: Wallet;
  /**
   * Starts another service paid through this economy's facilitator and reading this ledger, with its own
   * database and a token account to be paid into; it stops with the economy.
   */
  startPaidService(factory: (context: ServiceContext) => Promise<Express>, options: { id: string; reasoner?: Reasoner }): Promise<RunningService>;
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
  const others: RunningService[] = [];
  return {
    ledger,
    rpcUrl: rpc.url,
    feePayer,
    facilitator,
    education,
    buyer,
    async startPaidService(factory, options) {
      const service = await startService(factory, {
        ...options,
        rpcUrl: rpc.url,
        paywall: { feePayer: feePayer.address, facilitatorUrl: facilitator.url },
      });
      others.push(service);
      await ledger.openTokenAccount(service.context.wallet.address);
      return service;
    },
    async close() {
      await Promise.all(others.map((s) => s.close()));
      // Both services share one database: close the servers first, then it, once.
      await Promise.all([facilitator.stopServer(), education.stopServer()]);
      await database.close();
      await rpc.close();
      await ledger.close();
    },
  };
}
