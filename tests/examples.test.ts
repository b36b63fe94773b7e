import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SOLANA_DEVNET, USDC_DEVNET } from '@agent-economy/contracts';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createEducationApp } from '../servers/src/services/education';
import { startService, type RunningService } from './support/servers';

const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));
let service: RunningService;

beforeAll(async () => {
  service = await startService(createEducationApp);
});
afterAll(() => service?.close());

it('education-tour browses the catalog and reads a lesson price from its 402 quote', async () => {
  const { stdout } = await run(
    process.execPath,
    ['--import', 'tsx', '--conditions=ae-source', 'examples/education-tour.ts'],
    {
      cwd: root,
      env: { ...process.env, AGENT_ECONOMY_EDUCATION_URL: service.url },
    },
  );
  expect(stdout).toContain('6 courses, 30 lessons');
  expect(stdout).toContain('1. Function Calling');
  expect(stdout).toContain(`costs 0.05 USD: 50000 atomic units of 4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU`);
  expect(stdout).toContain(`paid to ${service.context.paywall.payTo} on solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1`);
});

it('buy-lesson pays for a lesson with the demo wallet and prints the receipt and both balances', async () => {
  const { startEconomy } = await import('./support/economy');
  const economy = await startEconomy();
  const dataDir = mkdtempSync(join(tmpdir(), 'ae-example-'));
  try {
    const keyFile = join(dataDir, 'demo-agent.json');
    writeFileSync(keyFile, JSON.stringify([...economy.buyer.secretKey]));
    const seller = economy.education.context.wallet.address;
    writeFileSync(
      join(dataDir, 'services.json'),
      JSON.stringify({
        chain: { rpcUrl: economy.rpcUrl, stablecoin: USDC_DEVNET, network: SOLANA_DEVNET },
        demoWallet: { address: economy.buyer.address, keyFile },
        services: [{ id: 'education', url: economy.education.url, wallet: seller }],
      }),
    );
    const { stdout } = await run(
      process.execPath,
      ['--import', 'tsx', '--conditions=ae-source', 'examples/buy-lesson.ts'],
      {
        cwd: root,
        env: { ...process.env, DATA_DIR: dataDir, AGENT_ECONOMY_WALLET: '' },
      },
    );
    expect(stdout).toContain(`Agent wallet   ${economy.buyer.address}: 10 USD`);
    expect(stdout).toContain('Bought "Function Calling"');
    expect(stdout).toContain(`Receipt: 0.05 USD (50000 atomic units of ${USDC_DEVNET})`);
    expect(stdout).toContain(`from ${economy.buyer.address} to ${seller} on ${SOLANA_DEVNET}`);
    expect(stdout).toContain('Agent wallet   9.95 USD (was 10)');
    expect(stdout).toContain('Education      0.05 USD (was 0)');
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(9_950_000n);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
    await economy.close();
  }
}, 60_000);

it('escrow opens a two-milestone escrow, confirms one milestone, disputes the other and prints every transfer', async () => {
  const { startEconomy } = await import('./support/economy');
  const { createEscrowApp } = await import('../servers/src/services/escrow');
  const { createReputationApp } = await import('../servers/src/services/reputation');
  const { createVerificationApp } = await import('../servers/src/services/verification');
  const economy = await startEconomy();
  const dataDir = mkdtempSync(join(tmpdir(), 'ae-example-'));
  try {
    let reputationUrl = '';
    const verification = await economy.startPaidService(
      (c) => createVerificationApp(c, { marketUrl: 'http://127.0.0.1:9' }),
      { id: 'verification' },
    );
    const escrow = await economy.startPaidService(
      (c) =>
        createEscrowApp(c, { tickMs: false, reputationUrl: () => reputationUrl, verificationUrl: verification.url }),
      { id: 'escrow', sol: true },
    );
    const reputation = await economy.startPaidService(
      (c) => createReputationApp(c, { trustedReporters: [escrow.context.wallet.address] }),
      { id: 'reputation' },
    );
    reputationUrl = reputation.url;
    const keyFile = join(dataDir, 'demo-agent.json');
    writeFileSync(keyFile, JSON.stringify([...economy.buyer.secretKey]));
    const vault = escrow.context.wallet.address;
    writeFileSync(
      join(dataDir, 'services.json'),
      JSON.stringify({
        chain: {
          rpcUrl: economy.rpcUrl,
          stablecoin: USDC_DEVNET,
          network: SOLANA_DEVNET,
          faucet: `${economy.rpcUrl}/faucet`,
        },
        demoWallet: { address: economy.buyer.address, keyFile },
        services: [{ id: 'escrow', url: escrow.url, wallet: vault }],
      }),
    );
    const { stdout } = await run(
      process.execPath,
      ['--import', 'tsx', '--conditions=ae-source', 'examples/escrow.ts'],
      {
        cwd: root,
        env: { ...process.env, DATA_DIR: dataDir, AGENT_ECONOMY_WALLET: '' },
      },
    );
    expect(stdout).toContain(`Buyer  ${economy.buyer.address}: 10 USD`);
    expect(stdout).toContain('2.5 USD + fee 0.025 USD paid into the vault');
    expect(stdout).toContain('The buyer confirmed m1: 1 USD released to the seller');
    expect(stdout).toContain('reputation report sent');
    expect(stdout).toContain('The buyer disputed m2: 1.5 USD frozen');
    expect(stdout).toContain('decided refund_to_buyer: 0% to the seller');
    expect(stdout).toContain(`refund 1.5 USD to ${economy.buyer.address}: transaction`);
    // 10 − 2.525 − 0.001 (confirm) − 0.05 (dispute) + 1.5 (refund)
    expect(stdout).toContain('Buyer  8.924 USD (was 10)');
    // 1 from the faucet − 2 × 0.005 (deliveries) − 0.05 (answer) − 0.05 (resolve) + 1 (m1)
    expect(stdout).toContain('Seller 1.89 USD (was 1)');
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(8_924_000n);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
    await economy.close();
  }
}, 180_000);
