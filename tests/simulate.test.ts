import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, walletFromSecretKey } from '@agent-economy/sdk';
import { generateWallet } from '../servers/src/runtime/wallet';
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
  const seed = `test-${Date.now()}`;
  const agents = Array.from({ length: 4 }, (_, i) => agentWallet(seed, i));
  const usd = (address: string) => economy.ledger.tokenBalance(address);

  beforeAll(async () => {
    economy = await startEconomy();
    entropy = await economy.startPaidService(createEntropyApp, { id: 'entropy' });
    market = await economy.startPaidService(createKnowledgeMarketApp, { id: 'knowledge-market' });
    tokens = await economy.startPaidService(createTokensApp, { id: 'tokens' });
    intel = await economy.startPaidService((context) => createIntelApp(context), { id: 'intel' });
    summary = await simulate({
      deployment: {
        rpcUrl: economy.rpcUrl,
        faucetUrl: `${economy.rpcUrl}/faucet`,
        network: economy.education.context.paywall.network,
        services: { education: economy.education.url, entropy: entropy.url, 'knowledge-market': market.url, facilitator: economy.facilitator.url },
        wallets: { education: economy.education.context.wallet.address, entropy: entropy.context.wallet.address },
      },
      seed,
      agents: 4,
      steps: 60,
    });
  });
  afterAll(async () => economy?.close());

  it('takes every step, and most succeed', () => {
    const counted = Object.values(summary.byAction).reduce((n, a) => n + a.ok + a.failed + a.skipped, 0);
    expect(counted).toBe(60);
    expect(summary.steps).toBe(60);
    expect(summary.agents).toEqual(agents.map((a) => a.address));
    // Nothing in this economy should fail; an action whose precondition is not met yet (no module to buy) is skipped.
    expect(summary.errorsByMessage).toEqual([]);
    expect(summary.paidCalls).toBeGreaterThan(0);
    expect(summary.byAction.lesson.ok + summary.byAction.tutor.ok + summary.byAction.entropy.ok).toBeGreaterThan(0);
    // One-shot charges through the facilitator are among the ways agents pay.
    expect(summary.byAction.charge.ok).toBeGreaterThan(0);
  });

  it('paid real money: what the agents lost together is what the services earned, to the atomic unit', () => {
    const granted = 20_000_000n * 4n; // the faucet's 20 USD each
    const held = agents.reduce((sum, a) => sum + usd(a.address), 0n);
    const earned = [economy.education, entropy, market].reduce((sum, s) => sum + usd(s.context.wallet.address), 0n);
    expect(held + earned).toBe(granted);
    // Agent-to-agent module sales move money between agents, so the volume is at least the services' income.
    expect(summary.volumeAtomic).toBeGreaterThanOrEqual(earned);
    expect(earned).toBeGreaterThan(0n);
  });

  it('launched tokens that the token analysis reads back from the chain', async () => {
    expect(summary.launchedMints.length).toBeGreaterThan(0);
    const reader = createClient({ baseUrls: { tokens: tokens.url }, wallet: await walletFromSecretKey(economy.buyer.secretKey), payments: { rpcUrl: economy.rpcUrl }, maxRetries: 0 });
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
        JSON.stringify({ chain: { rpcUrl: economy.rpcUrl, network: economy.education.context.paywall.network, faucet: `${economy.rpcUrl}/faucet` }, services }),
      );
      const root = fileURLToPath(new URL('..', import.meta.url));
      const { stdout } = await promisify(execFile)(
        process.execPath,
        ['--import', 'tsx', '--conditions=ae-source', 'servers/src/simulate/main.ts', '--steps', '8', '--seconds', '0', '--agents', '2', '--seed', `${seed}-cli`],
        { cwd: root, env: { ...process.env, DATA_DIR: dataDir } },
      );
      expect(stdout).toContain('Simulating 2 agents');
      expect(stdout).toMatch(/Done: \[[\d.]+s\] 8 actions · \d+ calls \(\d+ paid, [\d.]+ USD\)/);
      expect(stdout).toContain(`Agent wallets: ${agentWallet(`${seed}-cli`, 0).address}, ${agentWallet(`${seed}-cli`, 1).address}`);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('npm run simulate explains what is missing instead of failing with a stack', async () => {
    const root = fileURLToPath(new URL('..', import.meta.url));
    const empty = mkdtempSync(join(tmpdir(), 'ae-simulate-'));
    try {
      const failed = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--conditions=ae-source', 'servers/src/simulate/main.ts'], { cwd: root, env: { ...process.env, DATA_DIR: empty } }).catch((e: unknown) => e as { code: number; stderr: string });
      expect(failed).toMatchObject({ code: 2 });
      expect((failed as { stderr: string }).stderr).toContain('start the economy first with npm start');
      const bad = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--conditions=ae-source', 'servers/src/simulate/main.ts', '--agents', 'many'], { cwd: root }).catch((e: unknown) => e as { code: number; stderr: string });
      expect(bad).toMatchObject({ code: 2 });
      expect((bad as { stderr: string }).stderr).toContain('--agents must be a whole number');
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('intel reads the simulated agents’ payments from the chain', async () => {
    const reader = createClient({ baseUrls: { intel: intel.url }, wallet: await walletFromSecretKey(economy.buyer.secretKey), payments: { rpcUrl: economy.rpcUrl }, maxRetries: 0 });
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
