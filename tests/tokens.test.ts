import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSolanaRpc } from '@solana/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { USDC_DEVNET } from '@agent-economy/contracts';
import {
  BadRequestError,
  InternalServerError,
  NotFoundError,
  createClient,
  walletFromSecretKey,
  type AgentEconomyClient,
} from '@agent-economy/sdk';
import { associatedTokenAddress } from '../servers/src/solana/programs';
import { generateWallet, type Wallet } from '../servers/src/solana/keys';
import { createTokensApp } from '../servers/src/services/tokens';
import { gini } from '../servers/src/upstream/measures';
import { createMint, mintTokens, setMintAuthority } from '../servers/src/simulate/mints';
import { startEconomy, type Economy } from './support/economy';
import type { RunningService } from './support/servers';

// Token analysis over mints made with real transactions on the local ledger: every figure below is computed by
// hand from the amounts minted. Market data is read from a local server replaying DexScreener's documented shape.

describe('through the SDK, on the local ledger', () => {
  let economy: Economy;
  let service: RunningService;
  let buyer: AgentEconomyClient;
  let issuer: Wallet;
  let rugMint: string;
  let safeMint: string;
  const holders = Array.from({ length: 4 }, () => generateWallet());
  const usdBalance = () => economy.ledger.tokenBalance(economy.buyer.address);

  beforeAll(async () => {
    economy = await startEconomy();
    service = await economy.startPaidService(createTokensApp, { id: 'tokens' });
    buyer = createClient({
      baseUrls: { tokens: service.url },
      wallet: await walletFromSecretKey(economy.buyer.secretKey),
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    });
    issuer = generateWallet();
    await economy.ledger.airdrop(issuer.address, 5_000_000_000n);
    const rpc = createSolanaRpc(economy.rpcUrl);
    // A "rug": the issuer keeps minting and freezing power, and one wallet holds 70 % of the supply.
    rugMint = await createMint(rpc, issuer, { decimals: 6, freezeAuthority: issuer.address });
    await mintTokens(rpc, issuer, rugMint, issuer, 6, [
      { owner: holders[0]!.address, amount: 700_000_000n },
      { owner: holders[1]!.address, amount: 200_000_000n },
      { owner: holders[2]!.address, amount: 100_000_000n },
    ]);
    // A fair launch: four equal holders, then both authorities renounced.
    safeMint = await createMint(rpc, issuer, { decimals: 9, freezeAuthority: issuer.address });
    await mintTokens(
      rpc,
      issuer,
      safeMint,
      issuer,
      9,
      holders.map((h) => ({ owner: h.address, amount: 250n * 10n ** 9n })),
    );
    await setMintAuthority(rpc, issuer, safeMint, issuer, 'mint', null);
    await setMintAuthority(rpc, issuer, safeMint, issuer, 'freeze', null);
  });
  afterAll(async () => economy?.close());

  it('overview: supply and decimals from the chain, market fields null with the reason, and the price charged', async () => {
    const before = usdBalance();
    const o = await buyer.tokens.overview({ params: { mint: rugMint } });
    expect(o).toMatchObject({
      mint: rugMint,
      decimals: 6,
      tokenProgram: 'spl-token',
      supply: '1000000000',
      uiSupply: '1000',
      priceUsd: null,
      volume24hUsd: null,
      liquidityUsd: null,
      marketCapUsd: null,
      pairCount: 0,
      name: null,
    });
    expect(o.source).toMatchObject({ mode: 'chain', providers: ['local-ledger'] });
    expect(o.source.note).toMatch(/MARKET_DATA=live/);
    expect(before - usdBalance()).toBe(2000n); // 0.002 USD
  });

  it('security: authorities and concentration become warnings with their points', async () => {
    const s = await buyer.tokens.security({ params: { mint: rugMint } });
    expect(s).toMatchObject({
      mintAuthority: issuer.address,
      freezeAuthority: issuer.address,
      top10HolderPercent: 100,
      token2022Extensions: [],
      transferFeePercent: null,
      lpLockedPercent: null,
      liquidityUsd: null,
    });
    expect(s.warnings.map((w) => w.code)).toEqual([
      'mint_authority_enabled',
      'freeze_authority_enabled',
      'single_holder_concentration',
      'top10_concentration',
    ]);
    expect(s).toMatchObject({ riskScore: 85, riskLevel: 'critical' });
    const safe = await buyer.tokens.security({ params: { mint: safeMint } });
    expect(safe).toMatchObject({ mintAuthority: null, freezeAuthority: null, riskScore: 35, riskLevel: 'medium' });
    expect(safe.warnings.map((w) => w.code)).toEqual(['single_holder_concentration', 'top10_concentration']);
  });

  it('holders: the largest accounts with owners, whales at the threshold, Gini and HHI of the balances', async () => {
    const h = await buyer.tokens.holders({ params: { mint: rugMint }, query: { whaleThresholdPercent: 15 } });
    expect(
      h.topHolders.map((x) => [x.rank, x.owner, x.tokenAccount, x.amount, x.uiAmount, x.percent, x.whale]),
    ).toEqual([
      [1, holders[0]!.address, associatedTokenAddress(holders[0]!.address, rugMint), '700000000', '700', 70, true],
      [2, holders[1]!.address, associatedTokenAddress(holders[1]!.address, rugMint), '200000000', '200', 20, true],
      [3, holders[2]!.address, associatedTokenAddress(holders[2]!.address, rugMint), '100000000', '100', 10, false],
    ]);
    expect(h).toMatchObject({
      totalHolders: 3,
      whaleThresholdPercent: 15,
      whales: { count: 2, totalPercent: 90 },
      excluded: [],
    });
    expect(h.concentration).toEqual({
      top1Percent: 70,
      top10Percent: 100,
      top20Percent: 100,
      gini: gini([700, 200, 100]),
      hhi: 0.54,
    });
    const fair = await buyer.tokens.holders({ params: { mint: safeMint } });
    expect(fair.concentration).toMatchObject({ gini: 0, hhi: 0.25, top1Percent: 25 });
  });

  it('market, full and compare without a market provider', async () => {
    const m = await buyer.tokens.market({ params: { mint: safeMint } });
    expect(m).toMatchObject({
      priceUsd: null,
      pairs: [],
      buys24h: null,
      liquidityUsd: null,
      source: { mode: 'chain' },
    });
    const full = await buyer.tokens.full({ params: { mint: safeMint } });
    expect(full.security.riskScore).toBe(35);
    expect(full.holders.totalHolders).toBe(4);
    const c = await buyer.tokens.compare({ body: { mints: [rugMint, safeMint] } });
    expect(c.tokens.map((t) => [t.mint, t.overallRank, t.ranks.safety, t.ranks.distribution])).toEqual([
      [safeMint, 1, 1, 1],
      [rugMint, 2, 2, 1],
    ]);
    expect(c.leaders.safety).toBe(safeMint);
  });

  it('the stablecoin and the wrapped-SOL mint are readable on a fresh ledger (the contract examples work)', async () => {
    const usdc = await buyer.tokens.overview({ params: { mint: USDC_DEVNET } });
    expect(usdc.decimals).toBe(6);
    const sol = await buyer.tokens.security({ params: { mint: 'So11111111111111111111111111111111111111112' } });
    expect(sol).toMatchObject({ mintAuthority: null, freezeAuthority: null, riskScore: 0 });
  });

  it('refuses an address that is not a mint, and bad input, before any payment', async () => {
    const before = usdBalance();
    const wallet = await buyer.tokens.overview({ params: { mint: holders[0]!.address } }).catch((e: unknown) => e);
    expect(wallet).toBeInstanceOf(NotFoundError);
    expect((wallet as NotFoundError).code).toBe('token_not_found');
    const account = await buyer.tokens
      .holders({
        params: { mint: associatedTokenAddress(holders[0]!.address, rugMint) },
        query: { whaleThresholdPercent: 1 },
      })
      .catch((e: unknown) => e);
    expect(account).toBeInstanceOf(NotFoundError);
    const compare = await buyer.tokens
      .compare({ body: { mints: [rugMint, holders[1]!.address] } })
      .catch((e: unknown) => e);
    expect((compare as NotFoundError).details).toEqual({ mint: holders[1]!.address });
    const bad = await buyer.tokens
      .holders({ params: { mint: 'not-a-mint' }, query: { whaleThresholdPercent: 1 } })
      .catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(BadRequestError);
    const threshold = await fetch(`${service.url}/api/holders/${rugMint}?whaleThresholdPercent=90`);
    expect(threshold.status).toBe(400);
    const repeated = await buyer.tokens.compare({ body: { mints: [rugMint, rugMint] } }).catch((e: unknown) => e);
    expect(repeated).toBeInstanceOf(BadRequestError);
    expect(usdBalance()).toBe(before);
  });
});

describe('with live market data (DexScreener replayed)', () => {
  let economy: Economy;
  let service: RunningService;
  let replay: Server;
  let buyer: AgentEconomyClient;
  let mint: string;
  let failing = false;
  const now = new Date('2026-11-20T12:00:00.000Z');

  beforeAll(async () => {
    economy = await startEconomy();
    const issuer = generateWallet();
    await economy.ledger.airdrop(issuer.address, 2_000_000_000n);
    const rpc = createSolanaRpc(economy.rpcUrl);
    mint = await createMint(rpc, issuer, { decimals: 6 });
    await mintTokens(rpc, issuer, mint, issuer, 6, [{ owner: issuer.address, amount: 1_000_000_000_000n }]);
    await setMintAuthority(rpc, issuer, mint, issuer, 'mint', null);
    // DexScreener's /token-pairs/v1/{chain}/{token}: every pair where the token is base or quote.
    const pair = (
      address: string,
      dexId: string,
      liquidity: number,
      volume: number,
      price: string,
      createdAt: number,
      base = mint,
    ) => ({
      chainId: 'solana',
      dexId,
      url: `https://dexscreener.com/solana/${address}`,
      pairAddress: address,
      baseToken: { address: base, name: 'Test', symbol: 'TST' },
      quoteToken: { address: 'So11111111111111111111111111111111111111112', name: 'Wrapped SOL', symbol: 'SOL' },
      priceNative: '0.0001',
      priceUsd: price,
      txns: {
        m5: { buys: 1, sells: 0 },
        h1: { buys: 5, sells: 2 },
        h6: { buys: 20, sells: 10 },
        h24: { buys: 100, sells: 50 },
      },
      volume: { m5: 10, h1: 100, h6: 600, h24: volume },
      priceChange: { m5: 0.1, h1: -0.5, h6: 2, h24: 12.5 },
      liquidity: { usd: liquidity, base: 1, quote: 1 },
      fdv: 1,
      marketCap: 1,
      pairCreatedAt: createdAt,
      info: { imageUrl: 'https://img/tst.png' },
    });
    replay = createServer((req, res) => {
      if (failing) return void res.writeHead(503).end();
      if (req.url !== `/token-pairs/v1/solana/${mint}`) return void res.writeHead(404).end();
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify([
          pair(
            'PairSmall1111111111111111111111111111111111',
            'orca',
            5_000.25,
            1_000,
            '0.0150',
            Date.parse('2026-11-18T00:00:00Z'),
          ),
          pair(
            'PairBig111111111111111111111111111111111111',
            'raydium',
            20_000.5,
            4_000.75,
            '0.0152',
            Date.parse('2026-11-19T00:00:00Z'),
          ),
          pair(
            'PairQuote11111111111111111111111111111111111',
            'meteora',
            99_999,
            9,
            '1',
            0,
            'So11111111111111111111111111111111111111112',
          ),
        ]),
      );
    });
    await new Promise<void>((resolve) => replay.listen(0, '127.0.0.1', resolve));
    const dexScreenerUrl = `http://127.0.0.1:${(replay.address() as AddressInfo).port}`;
    service = await economy.startPaidService(
      (context) => createTokensApp(context, { market: 'live', dexScreenerUrl, now: () => now }),
      { id: 'tokens' },
    );
    buyer = createClient({
      baseUrls: { tokens: service.url },
      wallet: await walletFromSecretKey(economy.buyer.secretKey),
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    });
  });
  afterAll(async () => {
    replay?.close();
    await economy?.close();
  });

  it('prices from the most liquid base pair, sums liquidity and volume across pairs, labelled live', async () => {
    const m = await buyer.tokens.market({ params: { mint } });
    expect(m).toMatchObject({
      priceUsd: '0.0152',
      referencePair: 'PairBig111111111111111111111111111111111111',
      liquidityUsd: '25000.75',
      buys24h: 200,
      sells24h: 100,
    });
    expect(m.volumeUsd).toEqual({ m5: '20', h1: '200', h6: '1200', h24: '5000.75' });
    expect(m.pairs.map((p) => p.dex)).toEqual(['raydium', 'orca']);
    expect(m.source).toMatchObject({ mode: 'live', providers: ['local-ledger', 'dexscreener'] });
    expect(m.source.note).toBeUndefined();
    const o = await buyer.tokens.overview({ params: { mint } });
    expect(o).toMatchObject({
      priceUsd: '0.0152',
      marketCapUsd: '15200',
      fdvUsd: '15200',
      pairCount: 2,
      createdAt: '2026-11-18T00:00:00.000Z',
      imageUrl: 'https://img/tst.png',
    });
    const s = await buyer.tokens.security({ params: { mint } });
    // Only the issuer holds it (single holder, top 10) and the first pair is two days old.
    expect(s.warnings.map((w) => w.code)).toEqual(['single_holder_concentration', 'top10_concentration', 'new_token']);
  });

  it('answers 502 upstream_unavailable, charging nothing, when the provider fails', async () => {
    failing = true;
    const before = economy.ledger.tokenBalance(economy.buyer.address);
    // The first service keeps its reads for 30 s; a fresh one asks the provider anew.
    const fresh = await economy.startPaidService(
      (context) =>
        createTokensApp(context, {
          market: 'live',
          dexScreenerUrl: `http://127.0.0.1:${(replay.address() as AddressInfo).port}`,
        }),
      { id: 'tokens' },
    );
    const client = createClient({
      baseUrls: { tokens: fresh.url },
      wallet: await walletFromSecretKey(economy.buyer.secretKey),
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    });
    const error = await client.tokens.overview({ params: { mint } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InternalServerError);
    expect((error as InternalServerError).code).toBe('upstream_unavailable');
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(before);
    const health = (await (await fetch(`${fresh.url}/health`)).json()) as {
      status: string;
      upstream: { mode: string };
    };
    expect(health).toMatchObject({ status: 'degraded', upstream: { mode: 'live' } });
    failing = false;
  });
});
