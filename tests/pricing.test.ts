import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { address, createNoopSigner, createSolanaRpc } from '@solana/kit';
import { getTransferSolInstruction } from '@solana-program/system';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  USDC_DEVNET,
  decodeX402Header,
  type PaymentRequired,
  type PaymentRequirements,
} from '@agent-economy/contracts';
import {
  BadRequestError,
  InternalServerError,
  NotFoundError,
  createClient,
  walletFromSecretKey,
  type AgentEconomyClient,
} from '@agent-economy/sdk';
import { generateWallet, type Wallet } from '../servers/src/solana/keys';
import { createPricingApp } from '../servers/src/services/pricing';
import { createMint, mintTokens, transferTokens } from '../servers/src/simulate/mints';
import { sendInstructions } from '../servers/src/solana/send';
import { gini } from '../servers/src/upstream/measures';
import { startEconomy, type Economy } from './support/economy';
import { buildPaymentTransaction, paymentHeader } from './support/payments';
import { startService, type RunningService } from './support/servers';

// The adaptive-pricing marketplace on the local ledger: demand is the settled payments of each endpoint, so the tests
// make real paid calls and watch the quoted price move; the clock is injected and moved, never waited on.

const rejection = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (e: unknown) => e,
  );

describe('through the SDK, on the local ledger', () => {
  let economy: Economy;
  let service: RunningService;
  let buyer: AgentEconomyClient;
  let issuer: Wallet;
  let mint: string;
  let time = Date.now();
  const clock = () => new Date(time);
  const holders = Array.from({ length: 3 }, () => generateWallet());
  const usdBalance = () => economy.ledger.tokenBalance(economy.buyer.address);
  const rpc = () => createSolanaRpc(economy.rpcUrl);

  beforeAll(async () => {
    economy = await startEconomy();
    // A baseline of 0.2 calls a minute: one paid call in the 5-minute window is ×1, three are ×3.
    service = await economy.startPaidService(
      (context) => createPricingApp(context, { baselineCallsPerMinute: 0.2, now: clock }),
      { id: 'pricing' },
    );
    buyer = createClient({
      baseUrls: { pricing: service.url },
      wallet: await walletFromSecretKey(economy.buyer.secretKey),
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    });
    issuer = generateWallet();
    await economy.ledger.airdrop(issuer.address, 5_000_000_000n);
    mint = await createMint(rpc(), issuer, { decimals: 6, freezeAuthority: issuer.address });
    await mintTokens(rpc(), issuer, mint, issuer, 6, [
      { owner: holders[0]!.address, amount: 700_000_000n },
      { owner: holders[1]!.address, amount: 200_000_000n },
      { owner: holders[2]!.address, amount: 100_000_000n },
    ]);
    await transferTokens(rpc(), issuer, mint, 6, holders[0]!, holders[2]!.address, 50_000_000n);
  });
  afterAll(async () => economy?.close());

  it('marketplace and price check: no demand yet, every endpoint at its 0.5× discount', async () => {
    const m = await buyer.pricing.overview({});
    expect(
      m.endpoints.map((e) => [
        e.endpoint,
        e.basePriceUsd,
        e.minPriceUsd,
        e.maxPriceUsd,
        e.currentPriceUsd,
        e.surgeMultiplier,
        e.demandZone,
      ]),
    ).toEqual([
      ['token-intel', '0.02', '0.01', '0.1', '0.01', '0.5', 'low'],
      ['wallet-scan', '0.05', '0.025', '0.25', '0.025', '0.5', 'low'],
      ['trending', '0.01', '0.005', '0.05', '0.005', '0.5', 'low'],
      ['whale-watch', '0.08', '0.04', '0.4', '0.04', '0.5', 'low'],
    ]);
    expect(m.endpoints[0]!.demand).toEqual({
      callsInWindow: 0,
      windowSeconds: 300,
      callsPerMinute: 0,
      baselineCallsPerMinute: 0.2,
      loadRatio: 0,
    });
    expect(m.demandZones.map((z) => [z.zone, z.fromMultiplier, z.toMultiplier])).toEqual([
      ['low', '0.5', '0.8'],
      ['normal', '0.8', '1.5'],
      ['high', '1.5', '3'],
      ['surge', '3', null],
    ]);
    const check = await buyer.pricing.priceCheck({ params: { endpoint: 'trending' } });
    expect(check).toMatchObject({
      endpoint: 'trending',
      path: '/api/trending',
      currentPriceUsd: '0.005',
      demandZone: 'low',
    });
  });

  it('token intel: chain facts, market null with the reason; a surge under load raises the quoted price', async () => {
    const before = usdBalance();
    const first = await buyer.pricing.tokenIntel({ body: { mint } });
    expect(first).toMatchObject({
      mint,
      name: null,
      symbol: null,
      decimals: 6,
      supply: '1000',
      market: null,
      holders: { total: 3, top10Percent: 100, largestHolderPercent: 65 },
      authorities: { mintAuthority: issuer.address, freezeAuthority: issuer.address, metadataMutable: null },
      appliedPrice: { priceUsd: '0.01', surgeMultiplier: '0.5', demandZone: 'low' },
    });
    // 30 (mint authority) + 20 (freeze authority) + 20 (one owner ≥ 20 %) + 15 (top 10 ≥ 50 %).
    expect(first.risk).toMatchObject({ score: 85, level: 'high' });
    expect(first.risk.warnings.map((w) => w.name)).toEqual([
      'mint_authority_enabled',
      'freeze_authority_enabled',
      'single_holder_concentration',
      'top10_concentration',
    ]);
    expect(first.source).toMatchObject({ mode: 'chain', providers: ['local-ledger'] });
    expect(first.source.note).toMatch(/MARKET_DATA=live/);
    expect(before - usdBalance()).toBe(10_000n);

    // Each settled call is demand: 1 call in the window → ×1, 2 → ×2, 3 → ×3 (surge).
    const second = await buyer.pricing.tokenIntel({ body: { mint } });
    expect(second.appliedPrice).toEqual({ priceUsd: '0.02', surgeMultiplier: '1', demandZone: 'normal' });
    const third = await buyer.pricing.tokenIntel({ body: { mint } });
    expect(third.appliedPrice).toEqual({ priceUsd: '0.04', surgeMultiplier: '2', demandZone: 'high' });
    expect(before - usdBalance()).toBe(70_000n);
    const now = await buyer.pricing.priceCheck({ params: { endpoint: 'token-intel' } });
    expect(now).toMatchObject({
      currentPriceUsd: '0.06',
      surgeMultiplier: '3',
      demandZone: 'surge',
      demand: { callsInWindow: 3, callsPerMinute: 0.6, loadRatio: 3 },
    });
    // The other endpoints' demand is their own.
    expect((await buyer.pricing.priceCheck({ params: { endpoint: 'wallet-scan' } })).currentPriceUsd).toBe('0.025');
    const quote = await fetch(`${service.url}/api/token-intel`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ mint }),
    });
    expect(quote.status).toBe(402);
    expect((decodeX402Header(quote.headers.get('payment-required')!) as PaymentRequired).accepts[0]!.amount).toBe(
      '60000',
    );
    // Five minutes later the window is empty again: back to the discount.
    time += 301_000;
    expect((await buyer.pricing.priceCheck({ params: { endpoint: 'token-intel' } })).currentPriceUsd).toBe('0.01');
  });

  async function quoteOf(path: string, body: unknown): Promise<PaymentRequirements> {
    const response = await fetch(`${service.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(response.status).toBe(402);
    return (decodeX402Header(response.headers.get('payment-required')!) as PaymentRequired).accepts[0]!;
  }
  async function payRaw(path: string, body: unknown, requirements: PaymentRequirements) {
    const blockhash = (await rpc().getLatestBlockhash().send()).value;
    const transaction = await buildPaymentTransaction({ payer: economy.buyer, requirements, blockhash });
    return fetch(`${service.url}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'payment-signature': paymentHeader(requirements, transaction, `${service.url}${path}`),
      },
      body: JSON.stringify(body),
    });
  }

  it('a quoted price is honoured after the surge moved, until the quote expires; never across endpoints', async () => {
    const body = { mint, minPercent: 15, limit: 10 };
    const cheap = await quoteOf('/api/whale-watch', body);
    expect(cheap.amount).toBe('40000'); // 0.04, ×0.5
    const trendingQuote = await quoteOf('/api/trending', { window: '1h', limit: 5 });
    await buyer.pricing.whaleWatch({ body });
    await buyer.pricing.whaleWatch({ body });
    expect((await buyer.pricing.priceCheck({ params: { endpoint: 'whale-watch' } })).currentPriceUsd).toBe('0.16');

    // The 0.04 quote is 20 seconds old and valid for 60: paying it is accepted, and charged 0.04.
    time += 20_000;
    let before = usdBalance();
    const honoured = await payRaw('/api/whale-watch', body, cheap);
    if (honoured.status !== 200) console.log(await honoured.clone().text());
    expect(honoured.status).toBe(200);
    expect(((await honoured.json()) as { appliedPrice: unknown }).appliedPrice).toEqual({
      priceUsd: '0.04',
      surgeMultiplier: '0.5',
      demandZone: 'low',
    });
    expect(before - usdBalance()).toBe(40_000n);

    // A price quoted for another endpoint does not buy this one.
    before = usdBalance();
    const crossed = await payRaw('/api/whale-watch', body, { ...cheap, amount: trendingQuote.amount });
    expect(crossed.status).toBe(402);
    expect(((await crossed.json()) as { error: { code: string } }).error.code).toBe('payment_invalid');

    // Once the quote expired, the same cheap price is refused with a fresh quote at the current price.
    time += 41_000;
    const expired = await payRaw('/api/whale-watch', body, cheap);
    expect(expired.status).toBe(402);
    const fresh = decodeX402Header(expired.headers.get('payment-required')!) as PaymentRequired;
    expect(fresh.accepts[0]!.amount).toBe('240000'); // 3 settled calls in the window: ×3
    expect(usdBalance()).toBe(before);
  });

  it('whale watch: owners over the threshold, concentration, and the whales’ moves from their token accounts', async () => {
    const w = await buyer.pricing.whaleWatch({ body: { mint, minPercent: 15 } });
    expect(w).toMatchObject({ mint, symbol: null, supply: '1000', holderCount: 3, thresholdPercent: 15 });
    expect(w.whales.map((x) => [x.rank, x.owner, x.amount, x.percentOfSupply, x.valueUsd, x.change24h])).toEqual([
      [1, holders[0]!.address, '650', 65, null, '650'],
      [2, holders[1]!.address, '200', 20, null, '200'],
      [3, holders[2]!.address, '150', 15, null, '150'],
    ]);
    expect(w.concentration).toEqual({
      top1Percent: 65,
      top10Percent: 100,
      top20Percent: 100,
      gini: gini([650e6, 200e6, 150e6]),
      hhi: 0.485,
      level: 'high',
    });
    expect(w.recentMoves.map((m) => [m.owner, m.direction, m.amount])).toEqual(
      expect.arrayContaining([
        [holders[0]!.address, 'transfer-in', '700'],
        [holders[0]!.address, 'transfer-out', '50'],
        [holders[1]!.address, 'transfer-in', '200'],
        [holders[2]!.address, 'transfer-in', '100'],
        [holders[2]!.address, 'transfer-in', '50'],
      ]),
    );
    expect(w.recentMoves).toHaveLength(5);
    const times = w.recentMoves.map((m) => m.at);
    expect(times).toEqual([...times].sort().reverse()); // newest first
    expect(w.source.mode).toBe('chain');
    // 3 calls in the window
    expect(w.appliedPrice).toEqual({ priceUsd: '0.24', surgeMultiplier: '3', demandZone: 'surge' });
  });

  it('wallet scan: balances, kind, funding source (first incoming SOL) and activity from the chain', async () => {
    const funder = generateWallet();
    await economy.ledger.airdrop(funder.address, 3_000_000_000n);
    const wallet = generateWallet();
    const funding = await sendInstructions(
      rpc(),
      [funder],
      [
        getTransferSolInstruction({
          source: createNoopSigner(address(funder.address)),
          destination: address(wallet.address),
          amount: 1_500_000_000n,
        }),
      ],
    );
    await mintTokens(rpc(), issuer, mint, issuer, 6, [{ owner: wallet.address, amount: 12_345_678n }]);
    const before = usdBalance();
    const scan = await buyer.pricing.walletScan({ body: { address: wallet.address } });
    expect(scan.balances).toEqual({
      lamports: '1500000000',
      sol: '1.5',
      solValueUsd: null,
      tokens: [{ mint, symbol: null, amount: '12.345678', decimals: 6, valueUsd: null }],
      tokenAccountCount: 1,
      totalValueUsd: null,
    });
    expect(scan.identity).toEqual({ kind: 'wallet', label: null, domains: null });
    expect(scan.fundingSource).toMatchObject({
      address: funder.address,
      kind: 'wallet',
      label: null,
      signature: funding,
      lamports: '1500000000',
    });
    expect(scan.activity).toMatchObject({ transactionCount: 2, transactionCountIsLowerBound: false });
    expect(scan.activity.firstSeenAt).toBe(scan.fundingSource!.fundedAt);
    expect(scan.appliedPrice).toEqual({ priceUsd: '0.025', surgeMultiplier: '0.5', demandZone: 'low' });
    expect(before - usdBalance()).toBe(25_000n);

    const program = await buyer.pricing.walletScan({
      body: { address: 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA' },
    });
    expect(program.identity).toEqual({ kind: 'program', label: 'SPL Token Program', domains: null });
    const unseen = await buyer.pricing.walletScan({ body: { address: generateWallet().address } });
    expect(unseen).toMatchObject({
      balances: { lamports: '0', tokens: [], tokenAccountCount: 0 },
      fundingSource: null,
      activity: { transactionCount: 0, firstSeenAt: null, lastActiveAt: null },
    });
  });

  it('trending offline: the tokens moved by the most transactions in the window, labelled chain', async () => {
    const t = await buyer.pricing.trending({ body: { window: '1h', limit: 5 } });
    expect(t.source.mode).toBe('chain');
    expect(t.tokens.length).toBeGreaterThanOrEqual(2);
    // The stablecoin moves with every payment; the test mint in its two mints and one transfer.
    expect(t.tokens[0]).toMatchObject({
      rank: 1,
      mint: USDC_DEVNET,
      priceUsd: null,
      volumeUsd: null,
      txns: null,
      listedBy: ['local-ledger'],
      trendScore: 100,
    });
    expect(t.tokens.find((x) => x.mint === mint)).toMatchObject({ transfers: 3, priceUsd: null, marketCapUsd: null });
    const counts = t.tokens.map((x) => x.transfers!);
    expect(counts).toEqual([...counts].sort((a, b) => b - a));
    expect(t.appliedPrice).toEqual({ priceUsd: '0.005', surgeMultiplier: '0.5', demandZone: 'low' });
  });

  it('analytics: revenue and calls from the settlements, price history in buckets', async () => {
    const a = await buyer.pricing.analytics({ query: { window: '1h', endpoint: 'token-intel' } });
    expect(a).toMatchObject({ window: '1h', bucketSeconds: 300 });
    expect(a.endpoints).toHaveLength(1);
    const e = a.endpoints[0]!;
    expect(e.revenue).toEqual({
      calls: 3,
      revenueUsd: '0.07',
      averagePriceUsd: '0.023333',
      lowestPriceUsd: '0.01',
      highestPriceUsd: '0.04',
    });
    expect(e.priceHistory).toHaveLength(12);
    expect(e.priceHistory.reduce((s, p) => s + p.calls, 0)).toBe(3);
    const all = await buyer.pricing.analytics({ query: { window: '24h' } });
    expect(all.endpoints.map((x) => [x.endpoint, x.revenue.calls, x.revenue.revenueUsd])).toEqual([
      ['token-intel', 3, '0.07'],
      ['wallet-scan', 3, '0.175'], // 0.025 (×0.5), 0.05 (×1), 0.1 (×2)
      ['trending', 1, '0.005'],
      ['whale-watch', 4, '0.4'], // 0.04, 0.08, the honoured 0.04, 0.24
    ]);
    expect(all.totals.calls).toBe(11);
  });

  it('refuses bad input (naming the field) and an unknown mint before any payment', async () => {
    const before = usdBalance();
    const bad = (await rejection(buyer.pricing.tokenIntel({ body: { mint: 'not-a-mint' } }))) as BadRequestError;
    expect(bad).toBeInstanceOf(BadRequestError);
    expect(JSON.stringify(bad.details)).toContain('body.mint');
    const unknown = (await rejection(
      buyer.pricing.tokenIntel({ body: { mint: holders[0]!.address } }),
    )) as NotFoundError;
    expect(unknown).toBeInstanceOf(NotFoundError);
    expect(unknown.code).toBe('token_not_found');
    expect(await rejection(buyer.pricing.whaleWatch({ body: { mint: holders[1]!.address } }))).toBeInstanceOf(
      NotFoundError,
    );
    const post = (path: string, body: unknown) =>
      fetch(`${service.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const cases: [Response, string][] = [
      [await post('/api/whale-watch', { mint, minPercent: 0 }), 'body.minPercent'],
      [await post('/api/whale-watch', { mint, limit: 101 }), 'body.limit'],
      [await post('/api/trending', { limit: 51 }), 'body.limit'],
      [await post('/api/trending', { window: '2h' }), 'body.window'],
      [await post('/api/wallet-scan', { address: 'x' }), 'body.address'],
      [await post('/api/wallet-scan', { address: holders[0]!.address, extra: 1 }), 'body.extra'],
      [await fetch(`${service.url}/api/price-check/everything`), 'params.endpoint'],
      [await fetch(`${service.url}/api/analytics?window=2d`), 'query.window'],
    ];
    for (const [response, field] of cases) {
      expect(response.status).toBe(400);
      expect(JSON.stringify(await response.json())).toContain(field);
    }
    // A payment header that is not a payment is refused with a quote at the current price, never a 5xx.
    const junk = await fetch(`${service.url}/api/trending`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'payment-signature': 'bm90IGEgcGF5bWVudA==' },
      body: '{}',
    });
    expect(junk.status).toBe(402);
    expect(usdBalance()).toBe(before);
  });
});

describe('with live market data (DexScreener replayed)', () => {
  let economy: Economy;
  let service: RunningService;
  let replay: Server;
  let replayUrl: string;
  let buyer: AgentEconomyClient;
  let mint: string;
  let holder: Wallet;
  let failing = false;
  /** SOL's pair answers no price (its list empty), the other tokens' as usual. */
  let solUnpriced = false;
  const listedOnlyByBoosts = generateWallet().address;
  const listedOnlyByProfiles = generateWallet().address;
  const WSOL = 'So11111111111111111111111111111111111111112';
  const clientFor = async (url: string) =>
    createClient({
      baseUrls: { pricing: url },
      wallet: await walletFromSecretKey(economy.buyer.secretKey),
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    });

  beforeAll(async () => {
    economy = await startEconomy();
    const issuer = generateWallet();
    holder = generateWallet();
    await economy.ledger.airdrop(issuer.address, 2_000_000_000n);
    await economy.ledger.airdrop(holder.address, 2_000_000_000n);
    const rpc = createSolanaRpc(economy.rpcUrl);
    mint = await createMint(rpc, issuer, { decimals: 6 });
    await mintTokens(rpc, issuer, mint, issuer, 6, [
      { owner: issuer.address, amount: 999_000_000_000n },
      { owner: holder.address, amount: 1_000_000_000n },
    ]);
    // DexScreener's documented shapes: /token-pairs/v1/{chain}/{token} (pairs), /token-boosts/top/v1 and
    // /token-profiles/latest/v1 (arrays of { chainId, tokenAddress, … }).
    const pair = (
      address: string,
      dexId: string,
      liquidity: number,
      price: string,
      base: string,
      quote = { address: WSOL, symbol: 'SOL' },
    ) => ({
      chainId: 'solana',
      dexId,
      pairAddress: address,
      baseToken: { address: base, name: 'Test', symbol: 'TST' },
      quoteToken: quote,
      priceUsd: price,
      txns: { h1: { buys: 5, sells: 2 }, h6: { buys: 20, sells: 10 }, h24: { buys: 100, sells: 50 } },
      volume: { h1: 100, h6: 600, h24: 2000.375 },
      priceChange: { h1: -0.5, h6: 2, h24: 12.5 },
      liquidity: { usd: liquidity },
      fdv: 15200,
      marketCap: 15200,
      pairCreatedAt: Date.parse('2026-11-18T00:00:00Z'),
    });
    replay = createServer((req, res) => {
      if (failing) return void res.writeHead(503).end();
      res.setHeader('content-type', 'application/json');
      const url = req.url ?? '';
      if (url === `/token-pairs/v1/solana/${mint}`) {
        return void res.end(
          JSON.stringify([
            pair('PairSmall1111111111111111111111111111111111', 'orca', 5_000.25, '0.0150', mint),
            pair('PairBig111111111111111111111111111111111111', 'raydium', 20_000.5, '0.0152', mint),
          ]),
        );
      }
      if (url === `/token-pairs/v1/solana/${WSOL}`) {
        if (solUnpriced) return void res.end('[]');
        return void res.end(
          JSON.stringify([
            pair('PairSoL111111111111111111111111111111111111', 'raydium', 9_000_000, '150', WSOL, {
              address: USDC_DEVNET,
              symbol: 'USDC',
            }),
          ]),
        );
      }
      if (url.startsWith('/token-pairs/v1/solana/')) return void res.end('[]');
      if (url === '/token-boosts/top/v1') {
        return void res.end(
          JSON.stringify([
            { chainId: 'solana', tokenAddress: listedOnlyByBoosts, amount: 500 },
            { chainId: 'ethereum', tokenAddress: '0xabc' },
            { chainId: 'solana', tokenAddress: mint, amount: 100 },
          ]),
        );
      }
      if (url === '/token-profiles/latest/v1')
        return void res.end(
          JSON.stringify([
            { chainId: 'solana', tokenAddress: mint },
            { chainId: 'solana', tokenAddress: listedOnlyByProfiles },
          ]),
        );
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => replay.listen(0, '127.0.0.1', resolve));
    replayUrl = `http://127.0.0.1:${(replay.address() as AddressInfo).port}`;
    service = await economy.startPaidService(
      (context) => createPricingApp(context, { market: 'live', dexScreenerUrl: replayUrl }),
      { id: 'pricing' },
    );
    buyer = await clientFor(service.url);
  });
  afterAll(async () => {
    replay?.close();
    await economy?.close();
  });

  it('token intel: the market of the most liquid pair, liquidity and volume summed, labelled live', async () => {
    const t = await buyer.pricing.tokenIntel({ body: { mint } });
    expect(t.market).toEqual({
      priceUsd: '0.0152',
      priceChange24hPercent: 12.5,
      volume24hUsd: '4000.75',
      liquidityUsd: '25000.75',
      marketCapUsd: '15200',
      fdvUsd: '15200',
      pairCount: 2,
      primaryPair: {
        dex: 'raydium',
        pairAddress: 'PairBig111111111111111111111111111111111111',
        quoteSymbol: 'SOL',
        liquidityUsd: '20000.5',
        createdAt: '2026-11-18T00:00:00.000Z',
      },
    });
    expect(t).toMatchObject({
      name: 'Test',
      symbol: 'TST',
      supply: '1000000',
      holders: { total: 2, largestHolderPercent: 99.9 },
    });
    expect(t.source).toMatchObject({ mode: 'live', providers: ['local-ledger', 'dexscreener'] });
  });

  it('trending: both lists fused by reciprocal rank, market figures over the window', async () => {
    const t = await buyer.pricing.trending({ body: { window: '6h', limit: 10 } });
    expect(t.tokens.map((x) => [x.rank, x.mint, x.listedBy])).toEqual([
      [1, mint, ['dexscreener-boosts', 'dexscreener-profiles']],
      [2, listedOnlyByBoosts, ['dexscreener-boosts']],
      [3, listedOnlyByProfiles, ['dexscreener-profiles']],
    ]);
    expect(t.tokens[0]).toMatchObject({
      symbol: 'TST',
      priceUsd: '0.0152',
      priceChangePercent: 2,
      volumeUsd: '1200',
      liquidityUsd: '25000.75',
      txns: { buys: 40, sells: 20 },
      transfers: null,
      trendScore: 100,
    });
    expect(t.tokens[1]).toMatchObject({
      priceUsd: null,
      txns: null,
      trendScore: Math.round((1 / 61 / (1 / 62 + 1 / 61)) * 10000) / 100,
    });
    expect(t.source).toMatchObject({
      mode: 'live',
      providers: ['dexscreener-boosts', 'dexscreener-profiles', 'dexscreener'],
    });
  });

  it('wallet scan and whale watch: USD values from the live prices', async () => {
    const scan = await buyer.pricing.walletScan({ body: { address: holder.address } });
    expect(scan.balances).toMatchObject({
      sol: '2',
      solValueUsd: '300',
      tokens: [{ mint, symbol: null, amount: '1000', valueUsd: '15.2' }],
      totalValueUsd: '315.2',
    });
    expect(scan.source.mode).toBe('live');
    const whales = await buyer.pricing.whaleWatch({ body: { mint, minPercent: 0.1 } });
    expect(whales.whales.map((w) => [w.owner, w.amount, w.valueUsd])).toEqual([
      [expect.any(String), '999000', '15184.8'],
      [holder.address, '1000', '15.2'],
    ]);
  });

  it('wallet scan: a holding valued from the market makes the answer live, even when SOL has no price', async () => {
    solUnpriced = true;
    try {
      // A fresh service: the first keeps its reads for 30 s.
      const fresh = await economy.startPaidService(
        (context) => createPricingApp(context, { market: 'live', dexScreenerUrl: replayUrl }),
        { id: 'pricing' },
      );
      const scan = await (await clientFor(fresh.url)).pricing.walletScan({ body: { address: holder.address } });
      expect(scan.balances).toMatchObject({
        solValueUsd: null,
        tokens: [{ mint, valueUsd: '15.2' }],
        totalValueUsd: null,
      });
      // The token's value is DexScreener's: labelled so, not as the chain's.
      expect(scan.source).toMatchObject({ mode: 'live', providers: ['local-ledger', 'dexscreener'] });
    } finally {
      solUnpriced = false;
    }
  });

  it('answers 502 upstream_unavailable, charging nothing, when the providers fail', async () => {
    failing = true;
    const before = economy.ledger.tokenBalance(economy.buyer.address);
    // The first service keeps its reads for 30 s; a fresh one asks the providers anew.
    const fresh = await economy.startPaidService(
      (context) => createPricingApp(context, { market: 'live', dexScreenerUrl: replayUrl }),
      { id: 'pricing' },
    );
    const client = await clientFor(fresh.url);
    for (const call of [
      () => client.pricing.trending({ body: {} }),
      () => client.pricing.tokenIntel({ body: { mint } }),
    ]) {
      const error = (await rejection(call())) as InternalServerError;
      expect(error).toBeInstanceOf(InternalServerError);
      expect(error.code).toBe('upstream_unavailable');
    }
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(before);
    const health = (await (await fetch(`${fresh.url}/health`)).json()) as { status: string };
    expect(health.status).toBe('degraded');
    failing = false;
  });
});

describe('replicas on one database', () => {
  let economy: Economy;
  let first: RunningService;
  let second: RunningService;
  let time = Date.now();
  const clock = () => new Date(time);

  beforeAll(async () => {
    economy = await startEconomy();
    const factory = (context: Parameters<typeof createPricingApp>[0]) =>
      createPricingApp(context, { baselineCallsPerMinute: 0.2, now: clock });
    first = await economy.startPaidService(factory, { id: 'pricing' });
    // The second replica: the same wallet and database, its own address.
    second = await startService(factory, {
      id: 'pricing',
      database: first.database,
      wallet: first.context.wallet,
      rpcUrl: economy.rpcUrl,
      paywall: { feePayer: economy.feePayer.address, facilitatorUrl: economy.facilitator.url },
    });
  });
  afterAll(async () => {
    await second?.stopServer();
    await economy?.close();
  });

  it('share the demand and honour each other’s quotes', async () => {
    const buyer = createClient({
      baseUrls: { pricing: first.url },
      wallet: await walletFromSecretKey(economy.buyer.secretKey),
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    });
    const sold = await buyer.pricing.trending({ body: { window: '1h', limit: 3 } });
    expect(sold.appliedPrice.priceUsd).toBe('0.005');
    // A sale through the first replica is demand the second one prices by.
    const onSecond = createClient({ baseUrls: { pricing: second.url }, maxRetries: 0 });
    expect(await onSecond.pricing.priceCheck({ params: { endpoint: 'trending' } })).toMatchObject({
      currentPriceUsd: '0.01',
      surgeMultiplier: '1',
      demand: { callsInWindow: 1 },
    });
    // A quote the second replica gave is paid on the first, after the price moved again.
    const body = JSON.stringify({ window: '1h', limit: 3 });
    const quoted = await fetch(`${second.url}/api/trending`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    const requirements = (decodeX402Header(quoted.headers.get('payment-required')!) as PaymentRequired).accepts[0]!;
    expect(requirements.amount).toBe('10000');
    await buyer.pricing.trending({ body: { window: '1h', limit: 3 } });
    expect((await onSecond.pricing.priceCheck({ params: { endpoint: 'trending' } })).currentPriceUsd).toBe('0.02');
    time += 30_000;
    const before = economy.ledger.tokenBalance(economy.buyer.address);
    const blockhash = (await createSolanaRpc(economy.rpcUrl).getLatestBlockhash().send()).value;
    const transaction = await buildPaymentTransaction({ payer: economy.buyer, requirements, blockhash });
    const paid = await fetch(`${first.url}/api/trending`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'payment-signature': paymentHeader(requirements, transaction, `${first.url}/api/trending`),
      },
      body,
    });
    expect(paid.status).toBe(200);
    expect(((await paid.json()) as { appliedPrice: unknown }).appliedPrice).toEqual({
      priceUsd: '0.01',
      surgeMultiplier: '1',
      demandZone: 'normal',
    });
    expect(before - economy.ledger.tokenBalance(economy.buyer.address)).toBe(10_000n);
    const analytics = await onSecond.pricing.analytics({ query: { window: '1h', endpoint: 'trending' } });
    expect(analytics.totals).toEqual({ calls: 3, revenueUsd: '0.025' });
  });
});
