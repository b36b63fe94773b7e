import { usdToAtomic } from '@agent-economy/contracts';
import { LocalLedger, startLedgerRpc } from '../../servers/src/ledger';
import { generateWallet, type Wallet } from '../../servers/src/solana/keys';
import { createEducationApp } from '../../servers/src/services/education';
import { createFacilitatorApp, type FacilitatorAppOptions } from '../../servers/src/services/facilitator';
import type { Express } from 'express';
import type { Reasoner } from '../../servers/src/ai';
import type { Logger } from '../../servers/src/runtime/logger';
import type { ServiceContext } from '../../servers/src/runtime/context';
import type { SessionPaywallOptions } from '../../servers/src/runtime/paywall-session';
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
   * The wallets the facilitator settles for (payTo wallets, and resource servers that sign their calls), as
   * `npm start` registers its services: the education service and every startPaidService; tests add more.
   */
  sellers: Set<string>;
  /**
   * Starts another service paid through this economy's facilitator and reading this ledger, with its own
   * database and a token account to be paid into; it stops with the economy.
   */
  startPaidService(
    factory: (context: ServiceContext) => Promise<Express>,
    options: { id: string; reasoner?: Reasoner; sol?: boolean; sessions?: SessionPaywallOptions },
  ): Promise<RunningService>;
  close(): Promise<void>;
}

/**
 * A small economy on loopback: the local ledger behind its JSON-RPC, the facilitator, and the education
 * service paid through it, as `npm start` wires them, each on a free port.
 */
export async function startEconomy(
  options: { facilitator?: FacilitatorAppOptions; logger?: Logger; ledgerNow?: () => number } = {},
): Promise<Economy> {
  // ledgerNow: the ledger's clock, for a test that moves block time forward rather than waiting for it.
  const ledger = await LocalLedger.open({
    mintAuthority: generateWallet(),
    ...(options.ledgerNow ? { now: options.ledgerNow } : {}),
  });
  const rpc = await startLedgerRpc(ledger, { port: 0 });
  const feePayer = generateWallet();
  await ledger.airdrop(feePayer.address, 10_000_000_000n);
  const database = await testDatabase();
  const sellers = new Set<string>();
  const facilitator = await startService(
    (context) =>
      createFacilitatorApp(context, {
        sellers,
        resourceServers: sellers,
        // A buyer's close waits for the seller's vouchers in production; tests that need it ask for a grace.
        sessionCloseGraceSeconds: 0,
        ...options.facilitator,
      }),
    {
      id: 'facilitator',
      wallet: feePayer,
      rpcUrl: rpc.url,
      database,
      ...(options.logger ? { logger: options.logger } : {}),
    },
  );
  const education = await startService(createEducationApp, {
    rpcUrl: rpc.url,
    database,
    paywall: { feePayer: feePayer.address, facilitatorUrl: facilitator.url },
    ...(options.logger ? { logger: options.logger } : {}),
  });
  await ledger.openTokenAccount(education.context.wallet.address);
  sellers.add(education.context.wallet.address);
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
    sellers,
    async startPaidService(factory, { sessions, ...options }) {
      const service = await startService(factory, {
        ...options,
        rpcUrl: rpc.url,
        paywall: { feePayer: feePayer.address, facilitatorUrl: facilitator.url, ...(sessions ? { sessions } : {}) },
      });
      others.push(service);
      sellers.add(service.context.wallet.address);
      await ledger.openTokenAccount(service.context.wallet.address);
      // A service that sends from its own wallet (the vault: refunds, payouts) pays its own fees.
      if (options.sol) await ledger.airdrop(service.context.wallet.address, 1_000_000_000n);
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
