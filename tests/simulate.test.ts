import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, walletFromSecretKey } from '@agent-economy/sdk';
import { generateWallet } from '../servers/src/solana/keys';
import { createEntropyApp } from '../servers/src/services/entropy';
import { createIntelApp } from '../servers/src/services/intel';
import { createKnowledgeMarketApp } from '../servers/src/services/knowledge-market';
import { createTokensApp } from '../servers/src/services/tokens';
import { agentWallet, simulate, type SimulationSummary } from '../servers/src/simulate/economy';
import { startEconomy, type Economy } from './support/economy';
import type { RunningService } from './support/servers';

// The simulator against a small in-process economy: its agents pay real services and each other, launch tokens
// and move them, and the money on the ledger adds up afterwards.

describe('npm run simulate', () => {
  let economy: Economy;
  let entropy: RunningService;
  let market: RunningService;
  let tokens: RunningService;
  let intel: RunningService;
  let summary: SimulationSummary;
  // A fixed seed: the same steps every run (each run has its own ledger, so the agents start afresh).
  const seed = 'simulate-test';
  const agents = Array.from({ length: 4 }, (_, i) => agentWallet(seed, i));
  const usd = (address: string) => economy.ledger.tokenBalance(address);

  beforeAll(async () => {
    economy = await startEconomy();
    // Entropy also takes payment sessions, as under npm start: the agents that pay by voucher use them there.
    entropy = await economy.startPaidService(
      (context) =>
        createEntropyApp({
          ...context,
          paywall: { ...context.paywall, sessions: { idleSeconds: 300, sweepMs: 60_000 } },
        }),
      { id: 'entropy' },
    );
    market = await economy.startPaidService(createKnowledgeMarketApp, { id: 'knowledge-market' });
    tokens = await economy.startPaidService(createTokensApp, { id: 'tokens' });
    intel = await economy.startPaidService((context) => createIntelApp(context), { id: 'intel' });
    summary = await simulate({
      deployment: {
        rpcUrl: economy.rpcUrl,
        faucetUrl: `${economy.rpcUrl}/faucet`,
        network: economy.education.context.paywall.network,
        services: {
          education: economy.education.url,
          entropy: entropy.url,
          'knowledge-market': market.url,
          facilitator: economy.facilitator.url,
        },
        wallets: { education: economy.education.context.wallet.address, entropy: entropy.context.wallet.address },
      },
      seed,
      agents: 4,
      steps: 60,
    });
    // Bounded for a machine busy with the rest of the suite: the keepers alone take four 10 s periods.
  }, 300_000);
  afterAll(async () => economy?.close());

  it('takes every step, and most succeed', () => {
    const { keeper, ...steps } = summary.byAction;
    const counted = Object.values(steps).reduce((n, a) => n + a.ok + a.failed + a.skipped, 0);
    expect(counted).toBe(60);
    // Two of the four agents are keepers: bots paying on a schedule, at least four times each before a run of steps
    // ends.
    expect(summary.keepers.map((k) => k.wallet)).toEqual(agents.slice(0, 2).map((a) => a.address));
    expect(summary.keepers.every((k) => k.calls >= 4)).toBe(true);
    expect(keeper.ok).toBe(summary.keepers.reduce((n, k) => n + k.calls, 0));
    expect(summary.steps).toBe(60);
    expect(summary.agents).toEqual(agents.map((a) => a.address));
    // Nothing in this economy should fail; an action whose precondition is not met yet (no module to buy) is skipped.
    expect(summary.errorsByMessage).toEqual([]);
    expect(summary.paidCalls).toBeGreaterThan(0);
    expect(summary.byAction.lesson.ok + summary.byAction.tutor.ok + summary.byAction.entropy.ok).toBeGreaterThan(0);
    // One-shot charges through the facilitator are among the ways agents pay.
    expect(summary.byAction.charge.ok).toBeGreaterThan(0);
    // And payment sessions at the facilitator: onboarding, vouchers, and a close that settles each on chain.
    expect(summary.byAction.tab.ok).toBeGreaterThan(0);
  });

  it('paid real money: what the agents lost together is what the services earned, to the atomic unit', async () => {
    const granted = 20_000_000n * 4n; // the faucet's 20 USD each
    const held = agents.reduce((sum, a) => sum + usd(a.address), 0n);
    const earned = [economy.education, entropy, market].reduce((sum, s) => sum + usd(s.context.wallet.address), 0n);
    expect(held + earned).toBe(granted);
    // Some of it by vouchers in payment sessions, which the agents closed: their sellers settled them on chain.
    expect(summary.sessionCalls).toBeGreaterThan(0);
    const closes = await economy.facilitator.database.db
      .selectFrom('facilitator_settlements')
      .select('status')
      .where('kind', '=', 'session')
      .execute();
    expect(closes.filter((c) => c.status === 'settled').length).toBeGreaterThanOrEqual(summary.byAction.tab.ok);
    // Agent-to-agent module sales move money between agents, so the volume is at least the services' income.
    expect(summary.volumeAtomic).toBeGreaterThanOrEqual(earned);
    expect(earned).toBeGreaterThan(0n);
  });

  it('launched tokens that the token analysis reads back from the chain', async () => {
    expect(summary.launchedMints.length).toBeGreaterThan(0);
    const reader = createClient({
      baseUrls: { tokens: tokens.url },
      wallet: await walletFromSecretKey(economy.buyer.secretKey),
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    });
    const launch = summary.launchedMints[0]!;
    const holders = await reader.tokens.holders({ params: { mint: launch.mint }, query: { whaleThresholdPercent: 1 } });
    expect(holders.totalHolders).toBeGreaterThanOrEqual(2);
    expect(holders.topHolders.every((h) => summary.agents.includes(h.owner!))).toBe(true);
    const security = await reader.tokens.security({ params: { mint: launch.mint } });
    expect(security.mintAuthority).toBe(launch.renounced ? null : launch.creator);
  });

  it('npm run simulate reads the deployment from services.json, prints progress and a summary, and exits 0', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ae-simulate-'));
    try {
      const services = [
        { id: 'education', url: economy.education.url },
        { id: 'entropy', url: entropy.url },
      ];
      writeFileSync(
        join(dataDir, 'services.json'),
        JSON.stringify({
          chain: {
            rpcUrl: economy.rpcUrl,
            network: economy.education.context.paywall.network,
            faucet: `${economy.rpcUrl}/faucet`,
          },
          services,
        }),
      );
      const root = fileURLToPath(new URL('..', import.meta.url));
      const { stdout } = await promisify(execFile)(
        process.execPath,
        [
          '--import',
          'tsx',
          '--conditions=ae-source',
          'servers/src/simulate/main.ts',
          '--steps',
          '8',
          '--seconds',
          '0',
          '--agents',
          '2',
          '--seed',
          `${seed}-cli`,
        ],
        { cwd: root, env: { ...process.env, DATA_DIR: dataDir } },
      );
      expect(stdout).toContain('Simulating 2 agents');
      expect(stdout).toMatch(
        /Done: \[[\d.]+s\] 8 actions · \d+ calls \(\d+ paid, \d+ of them by session voucher, [\d.]+ USD\)/,
      );
      expect(stdout).toContain(
        `Agent wallets: ${agentWallet(`${seed}-cli`, 0).address}, ${agentWallet(`${seed}-cli`, 1).address}`,
      );
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('npm run simulate explains what is missing instead of failing with a stack', async () => {
    const root = fileURLToPath(new URL('..', import.meta.url));
    const empty = mkdtempSync(join(tmpdir(), 'ae-simulate-'));
    try {
      const failed = await promisify(execFile)(
        process.execPath,
        ['--import', 'tsx', '--conditions=ae-source', 'servers/src/simulate/main.ts'],
        { cwd: root, env: { ...process.env, DATA_DIR: empty } },
      ).catch((e: unknown) => e as { code: number; stderr: string });
      expect(failed).toMatchObject({ code: 2 });
      expect((failed as { stderr: string }).stderr).toContain('start the economy first with npm start');
      const bad = await promisify(execFile)(
        process.execPath,
        ['--import', 'tsx', '--conditions=ae-source', 'servers/src/simulate/main.ts', '--agents', 'many'],
        { cwd: root },
      ).catch((e: unknown) => e as { code: number; stderr: string });
      expect(bad).toMatchObject({ code: 2 });
      expect((bad as { stderr: string }).stderr).toContain('--agents must be a whole number');
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('intel tells the keepers from the traders by their timing, and reads the launched tokens’ transfers', async () => {
    const reader = createClient({
      baseUrls: { intel: intel.url },
      wallet: await walletFromSecretKey(economy.buyer.secretKey),
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    });
    const stablecoin = economy.education.context.paywall.asset;
    const shift = await reader.intel.metaShift({ body: { mint: stablecoin, window: '24h' } });
    expect(shift.source.mode).toBe('chain');
    const density = await reader.intel.agentDensity({ body: { mint: stablecoin, window: '1h' } });
    // The keepers pay every 10 s: periodic agents; the traders' random steps are not.
    expect(density.signals.timing.periodicWallets).toBeGreaterThanOrEqual(2);
    // A launched token: its grants and the agents' transfers between holders are what intel counts.
    const busiest = [...summary.launchedMints].sort((a, b) => b.transfers - a.transfers)[0]!;
    const answer = await reader.intel.agentDensity({ body: { mint: busiest.mint, window: '1h' } }).catch((e) => e);
    if (answer instanceof Error) {
      // Too few to analyse is refused before payment, and says how many it read: at least the transfers made.
      expect((answer as { code?: string }).code).toBe('insufficient_activity');
      expect((answer as unknown as { details: { transfers: number } }).details.transfers).toBeGreaterThanOrEqual(
        busiest.transfers,
      );
    } else {
      expect(answer.sampledTransactions).toBeGreaterThanOrEqual(busiest.transfers);
      expect(answer.source.mode).toBe('chain');
    }
  });

  it('intel reads the simulated agents’ payments from the chain', async () => {
    const reader = createClient({
      baseUrls: { intel: intel.url },
      wallet: await walletFromSecretKey(economy.buyer.secretKey),
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    });
    const stablecoin = economy.education.context.paywall.asset;
    const density = await reader.intel.agentDensity({ body: { mint: stablecoin, window: '1h' } });
    // Every x402 payment of the run is a stablecoin transfer from an agent: the agents are among the traders read.
    expect(density.sampledTransactions).toBeGreaterThanOrEqual(summary.paidCalls);
    expect(density.uniqueTraders).toBeGreaterThanOrEqual(agents.length);
    expect(density.source.mode).toBe('chain');
  });

  it('the same seed finds the same agents; another seed, others', () => {
    expect(agentWallet(seed, 0).address).toBe(agents[0]!.address);
    expect(agentWallet(`${seed}-other`, 0).address).not.toBe(agents[0]!.address);
    expect(generateWallet().address).not.toBe(agents[0]!.address);
  });
});

describe('npm run simulate within the limits', () => {
  // A facilitator that settles two x402 payments a payer per 5 s, and agents with a 0.25 USD budget: the run meets
  // both limits and goes on, with nothing failed and no money out of place.
  let economy: Economy;
  let summary: SimulationSummary;
  const seed = 'simulate-limits';
  const usd = (address: string) => economy.ledger.tokenBalance(address);

  beforeAll(async () => {
    economy = await startEconomy({ facilitator: { settleCaps: { perPayer: 2, windowSeconds: 5 } } });
    summary = await simulate({
      deployment: {
        rpcUrl: economy.rpcUrl,
        faucetUrl: `${economy.rpcUrl}/faucet`,
        network: economy.education.context.paywall.network,
        services: { education: economy.education.url },
      },
      seed,
      agents: 2,
      keepers: 0,
      steps: 40,
      budgetUsd: '0.25',
    });
  }, 300_000);
  afterAll(async () => economy?.close());

  it('rests an agent told 429 for its Retry-After, stops paying once its budget is spent, and fails nothing', () => {
    expect(summary.errorsByMessage).toEqual([]);
    const held = Object.fromEntries(summary.heldBack.map((h) => [h.reason, h.count]));
    expect(held['429 payer_settle_cap_exceeded']).toBeGreaterThan(0);
    expect(held['its total budget spent']).toBeGreaterThan(0);
    const { lesson, tutor } = summary.byAction;
    // Every step counted once; the held-back ones (all of them lessons and questions) as skipped, charging nothing.
    const counted = Object.values(summary.byAction).reduce((n, a) => n + a.ok + a.failed + a.skipped, 0);
    expect(counted).toBe(40);
    expect(lesson.skipped + tutor.skipped).toBe(summary.heldBack.reduce((n, h) => n + h.count, 0));
    // Each agent spent at most its budget with the services: what they lost is what education earned.
    const agents = summary.agents;
    const spent = agents.map((a) => 20_000_000n - usd(a));
    expect(spent.every((s) => s <= 250_000n)).toBe(true);
    expect(spent.reduce((a, b) => a + b, 0n)).toBe(usd(economy.education.context.wallet.address));
  });
});
