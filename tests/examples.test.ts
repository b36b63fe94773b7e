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
  const { stdout } = await run(process.execPath, ['--import', 'tsx', '--conditions=ae-source', 'examples/education-tour.ts'], {
    cwd: root,
    env: { ...process.env, AGENT_ECONOMY_EDUCATION_URL: service.url },
  });
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
    const { stdout } = await run(process.execPath, ['--import', 'tsx', '--conditions=ae-source', 'examples/buy-lesson.ts'], {
      cwd: root,
      env: { ...process.env, DATA_DIR: dataDir, AGENT_ECONOMY_WALLET: '' },
    });
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
