import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SOLANA_DEVNET, USDC_DEVNET, usdToAtomic } from '@agent-economy/contracts';
import { createClient, walletFromSecretKey } from '@agent-economy/sdk';
import { startConsole } from '../servers/src/console';
import { createAdsApp } from '../servers/src/services/ads';
import { createEscrowApp } from '../servers/src/services/escrow';
import { createLogger } from '../servers/src/runtime/logger';
import { generateWallet } from '../servers/src/solana/keys';
import { isLocal, launchBrowser, recordRequests } from './support/browser';
import { startEconomy, type Economy } from './support/economy';
import { startService, type RunningService } from './support/servers';

// The console of `npm start` in a real headless Chromium, over a real economy: the ledger, the facilitator and the
// education service. A lesson bought through the SDK must show up in the page's live feed by its transaction, the
// faucet button must fund the demo wallet on the ledger, and the page must not ask anything of another machine. An
// escrow service shares the facilitator's database, as under `npm start`: the escrow a buyer opens is listed.

let economy: Economy;
let escrowService: RunningService;
let adsService: RunningService;
let console_: Awaited<ReturnType<typeof startConsole>>;
let browser: Browser;
let page: Page;
let requested: string[];
const demo = generateWallet();

beforeAll(async () => {
  economy = await startEconomy();
  escrowService = await startService((context) => createEscrowApp(context, { tickMs: false }), {
    id: 'escrow',
    rpcUrl: economy.rpcUrl,
    database: economy.facilitator.database,
    paywall: { feePayer: economy.feePayer.address, facilitatorUrl: economy.facilitator.url },
  });
  economy.sellers.add(escrowService.context.wallet.address);
  await economy.ledger.openTokenAccount(escrowService.context.wallet.address);
  adsService = await economy.startPaidService(
    (context) => createAdsApp(context, { catalog: () => [economy.education.url] }),
    { id: 'ads' },
  );
  console_ = await startConsole(
    {
      services: [
        {
          id: 'facilitator',
          title: 'Payment facilitator',
          url: economy.facilitator.url,
          wallet: economy.feePayer.address,
        },
        {
          id: 'education',
          title: 'Education',
          url: economy.education.url,
          wallet: economy.education.context.wallet.address,
        },
        { id: 'escrow', title: 'Escrow', url: escrowService.url, wallet: escrowService.context.wallet.address },
        { id: 'ads', title: 'Ad network', url: adsService.url, wallet: adsService.context.wallet.address },
      ],
      facilitatorUrl: economy.facilitator.url,
      chain: {
        network: SOLANA_DEVNET,
        rpcUrl: economy.rpcUrl,
        stablecoin: USDC_DEVNET,
        local: true,
        faucetUrl: `${economy.rpcUrl}/faucet`,
      },
      demoWallet: demo.address,
      db: economy.facilitator.database.db,
      logger: createLogger('silent'),
      pollMs: 200,
    },
    { port: 0 },
  );
  browser = await launchBrowser();
  page = await browser.newPage();
  requested = recordRequests(page);
  await page.setViewport({ width: 1280, height: 900 });
  await page.goto(`${console_.url}/`, { waitUntil: 'domcontentloaded' });
});

afterAll(async () => {
  await browser?.close();
  await console_?.close();
  await escrowService?.stopServer();
  await economy?.close();
});

// Page-side code is passed as strings: the repository's TypeScript has no DOM types.
const text = (selector: string) => page.$eval(selector, (node) => node.textContent ?? '');

describe('the console', () => {
  it('lists every service with its health, prices and docs link', async () => {
    await page.waitForSelector('tr[data-service="education"]');
    const education = await text('tr[data-service="education"]');
    expect(education).toContain('ok');
    // POST /api/lesson costs 0.05 USD in the contract: read from the service's served OpenAPI document.
    expect(education).toContain('POST /api/lesson $0.05');
    expect(await page.$eval('tr[data-service="education"] a[href$="/docs"]', (a) => a.getAttribute('href'))).toBe(
      `${economy.education.url}/docs`,
    );
    expect(await text('tr[data-service="facilitator"]')).toContain('ok');
    expect(await text('#kpi-up')).toBe('4/4');
    expect(await text('#chain')).toContain('local ledger');
  });

  it('shows a paid call in the live feed as it settles, and in the chart', async () => {
    await page.waitForFunction(`document.querySelector('#live')?.classList.contains('on')`);
    const buyer = createClient({
      baseUrls: { education: economy.education.url },
      wallet: await walletFromSecretKey(economy.buyer.secretKey),
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    });
    const lesson = await buyer.education.lesson.withResponse({
      body: { courseId: 'tool-use', lessonId: 'function-calling' },
    });
    const transaction = lesson.payment!.transaction;
    expect(transaction).toMatch(/^[1-9A-HJ-NP-Za-km-z]{64,88}$/);

    // Pushed over server-sent events: no reload.
    await page.waitForSelector(`#feed tr[data-tx="${transaction}"]`);
    const row = await text(`#feed tr[data-tx="${transaction}"]`);
    expect(row).toContain(transaction);
    expect(row).toContain('education/api/lesson');
    expect(row).toContain('0.05');
    expect(await page.evaluate('document.body.innerText')).toContain(transaction);
    expect(await text('#kpi-calls')).toBe('1');
    expect(await text('#kpi-volume')).toBe('$0.05');

    // The chart redraws after a settlement: a bar for the education service, and its total in the legend.
    await page.waitForFunction(`document.querySelectorAll('#chart svg rect').length > 0`);
    expect(await text('#legend')).toContain('education');
    expect(await text('#legend')).toContain('$0.05');
    await page.click('.seg[data-name="group"] button[data-value="route"]');
    await page.waitForFunction(`document.querySelector('#legend')?.textContent?.includes('education/api/lesson')`);
  });

  it('lists an open escrow and its settlement, and the ad campaigns', async () => {
    const seller = generateWallet();
    // An escrow's seller needs its stablecoin account open: the vault opens none.
    await economy.ledger.openTokenAccount(seller.address);
    const buyer = createClient({
      baseUrls: { escrow: escrowService.url },
      wallet: await walletFromSecretKey(economy.buyer.secretKey),
      payments: { rpcUrl: economy.rpcUrl, maxPerCallUsd: '5' },
      maxRetries: 0,
    });
    const created = await buyer.escrow.create.withResponse({
      body: { seller: seller.address, title: 'Vector search tuning guide', amount: '1500000' },
    });
    await page.waitForSelector(`#feed tr[data-tx="${created.payment!.transaction}"]`);
    expect(await text(`#feed tr[data-tx="${created.payment!.transaction}"]`)).toContain('escrow/api/escrow/create');
    // Read every 5 s by the page from the escrow's records (open escrows) and its GET /api/stats (locked volume).
    await page.waitForFunction(
      `document.querySelector('#escrows')?.textContent?.includes('Vector search tuning guide')`,
      { timeout: 20_000 },
    );
    expect(await text('#escrows')).toContain('$1.50');
    expect(await text('#escrows')).toContain('funded');
    expect(await text('#escrow-note')).toBe('$1.50 locked');
    // The ad network answers its public campaign list (empty here), the wager service is not part of this deployment.
    expect(await text('#campaigns')).toContain('No campaign yet.');
    expect(await text('#wagers')).toContain('not part of this deployment');
  });

  it('funds the demo wallet from the faucet button on the local ledger', async () => {
    await page.waitForSelector('#faucet:not([hidden])');
    await page.waitForFunction(`document.querySelector('#wallet-usd')?.textContent === '0.00'`);
    await page.click('#faucet');
    await page.waitForFunction(`document.querySelector('#wallet-usd')?.textContent === '10.00'`);
    expect(economy.ledger.tokenBalance(demo.address)).toBe(usdToAtomic('10'));
    expect(await text('#faucet-note')).toContain('+10 USD');
  });

  it('refuses the faucet to another web origin', async () => {
    const response = await fetch(`${console_.url}/api/faucet`, {
      method: 'POST',
      headers: { origin: 'http://evil.example' },
    });
    expect(response.status).toBe(403);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('origin_not_allowed');
    expect(economy.ledger.tokenBalance(demo.address)).toBe(usdToAtomic('10'));
  });

  it('fits a phone screen', async () => {
    await page.setViewport({ width: 390, height: 844, isMobile: true, hasTouch: true });
    await page.waitForSelector('#feed tr');
    // Nothing wider than the screen: no sideways scrolling of the page itself.
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    await page.setViewport({ width: 1280, height: 900 });
  });

  it('takes a screenshot when asked (CONSOLE_SCREENSHOT=docs/console.png)', async () => {
    const path = process.env.CONSOLE_SCREENSHOT;
    if (!path) return;
    mkdirSync(dirname(path), { recursive: true });
    await page.screenshot({ path, fullPage: true });
  });

  it('requested nothing off this machine', () => {
    expect(requested.length).toBeGreaterThan(3);
    expect(requested.filter((url) => !isLocal(url))).toEqual([]);
  });
});
