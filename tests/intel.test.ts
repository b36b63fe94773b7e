import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { intel as intelContract, routeMeta, usdToAtomic } from '@agent-economy/contracts';
import {
  BadRequestError,
  NotFoundError,
  UnprocessableEntityError,
  ApiError,
  createClient,
  walletFromSecretKey,
  type AgentEconomyClient,
} from '@agent-economy/sdk';
import { address, createNoopSigner, createSolanaRpc } from '@solana/kit';
import { getTransferCheckedInstruction } from '@solana-program/token';
import { associatedTokenAddress } from '../servers/src/solana/programs';
import { sendInstructions } from '../servers/src/solana/send';
import { generateWallet, type Wallet } from '../servers/src/solana/keys';
import { createMint, mintTokens, transferTokens } from '../servers/src/simulate/mints';
import { createIntelApp } from '../servers/src/services/intel';
import { MIN_EVENTS, wilsonRange } from '../servers/src/services/intel/domain';
import { hhi } from '../servers/src/upstream/measures';
import { startEconomy, type Economy } from './support/economy';
import { startService, type RunningService } from './support/servers';

describe('intel over real transfers on the local ledger', () => {
  let economy: Economy;
  let intel: RunningService;
  let client: AgentEconomyClient;
  let payer: Wallet;
  let mint: string;
  const bots = Array.from({ length: 4 }, () => generateWallet());
  const people = Array.from({ length: 8 }, () => generateWallet());
  /** Whole tokens each wallet moved (both sides), to check the concentration figures. */
  const volume = new Map<string, number>();
  let botVolume = 0;
  let totalVolume = 0;
  let transfers = 0;
  const payers = Array.from({ length: 3 }, () => generateWallet());

  const count = (from: string, to: string, tokens: number) => {
    volume.set(from, (volume.get(from) ?? 0) + tokens);
    volume.set(to, (volume.get(to) ?? 0) + tokens);
    totalVolume += tokens;
    transfers++;
  };

  beforeAll(async () => {
    economy = await startEconomy();
    intel = await economy.startPaidService((context) => createIntelApp(context), { id: 'intel' });
    client = createClient({
      baseUrls: { intel: intel.url },
      wallet: await walletFromSecretKey(economy.buyer.secretKey),
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    });
    const rpc = createSolanaRpc(economy.rpcUrl);
    payer = generateWallet();
    await economy.ledger.airdrop(payer.address, 100_000_000_000n);
    mint = await createMint(rpc, payer, { decimals: 6 });
    const holders = [...bots, ...people];
    for (let i = 0; i < holders.length; i += 4) {
      await mintTokens(
        rpc,
        payer,
        mint,
        payer,
        6,
        holders.slice(i, i + 4).map((w) => ({ owner: w.address, amount: 1_000_000_000n })),
      );
    }

    // Twelve rounds of 20 slots. Bots pass 10 tokens along a ring every round, all in the round's slot (periodic
    // and reacting in the same slot); people trade on an irregular schedule, each in a slot of its own.
    const schedule: Record<number, [number, number, number][]> = {
      0: [[0, 1, 7]],
      1: [[2, 3, 5]],
      2: [[0, 4, 3]],
      5: [[1, 5, 9]],
      6: [[6, 7, 2]],
      7: [[0, 2, 4]],
      10: [
        [3, 0, 6],
        [4, 5, 1],
      ],
      11: [[7, 6, 8]],
    };
    for (let round = 0; round < 12; round++) {
      economy.ledger.warp(10);
      for (let i = 0; i < bots.length; i++) {
        const to = bots[(i + 1) % bots.length]!;
        await transferTokens(rpc, payer, mint, 6, bots[i]!, to.address, 10_000_000n);
        count(bots[i]!.address, to.address, 10);
        botVolume += 10;
      }
      const trades = schedule[round] ?? [];
      for (const [from, to, tokens] of trades) {
        economy.ledger.warp(3);
        await transferTokens(rpc, payer, mint, 6, people[from]!, people[to]!.address, BigInt(tokens) * 1_000_000n);
        count(people[from]!.address, people[to]!.address, tokens);
      }
      economy.ledger.warp(10 - 3 * trades.length);
    }

    // Stablecoin payments between three agent wallets: 2 + 1 USD from the first, 0.5 USD from the second to the third.
    for (const w of payers) await economy.ledger.mintTo(w.address, usdToAtomic('5'));
    await transferTokens(rpc, payer, economy.ledger.mint, 6, payers[0]!, payers[1]!.address, 2_000_000n);
    await transferTokens(rpc, payer, economy.ledger.mint, 6, payers[0]!, payers[2]!.address, 1_000_000n);
    await transferTokens(rpc, payer, economy.ledger.mint, 6, payers[1]!, payers[2]!.address, 500_000n);
  }, 180_000);

  afterAll(async () => {
    await economy?.close();
  });

  it('agent density: the four periodic bots among twelve traders, paid for in real money', async () => {
    const before = economy.ledger.tokenBalance(economy.buyer.address);
    const earned = economy.ledger.tokenBalance(intel.context.wallet.address);
    const density = await client.intel.agentDensity({ body: { mint, window: '1h' } });
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(before - usdToAtomic('0.03'));
    expect(economy.ledger.tokenBalance(intel.context.wallet.address)).toBe(earned + usdToAtomic('0.03'));

    expect(density.source.mode).toBe('chain');
    expect(density.source.providers).toEqual(['local-ledger']);
    expect(density.target).toEqual({ mint, symbol: null, strategy: null });
    expect(density.period.window).toBe('1h');
    expect(density.uniqueTraders).toBe(12);
    expect(density.agentCountEstimate).toBe(4);
    expect(density.signals.timing.periodicWallets).toBe(4);
    expect(density.agentShareOfTraders).toBe(0.333333);
    expect(density.range).toEqual(wilsonRange(4, 12));
    // Bot transfers have agents on both sides; people's on neither.
    expect(density.agentShareOfVolume).toBe(Math.round((botVolume / totalVolume) * 1e6) / 1e6);
    expect(density.densityLevel).toBe(botVolume / totalVolume >= 0.75 ? 'saturated' : 'dense');
    expect(density.byStrategy.reduce((s, x) => s + x.agents, 0)).toBe(4);
    expect(density.signals.mev.jitoTipShare).toBe(0);
    // the mint’s creation and its three mint-tos are transactions of the mint, not trades
    expect(density.sampledTransactions).toBe(transfers + 4);
    expect(density.source.note).toContain(
      `sample: ${transfers + 4} transactions of ${mint} with ${transfers} transfers, ${density.period.from} to ${density.period.to}`,
    );
    expect(density.signals.timing.sameSlotTradeShare).toBeGreaterThan(0);
    expect(density.signals.timing.medianInterTradeSeconds).not.toBeNull();
  });

  it('alpha crowding: HHI of the traders’ volume shares, unique traders, no spread or VPIN without prices', async () => {
    const crowding = await client.intel.alphaCrowding({ body: { mint, window: '1h' } });
    const total = [...volume.values()].reduce((a, b) => a + b, 0);
    const shares = [...volume.values()].map((v) => v / total);
    const h = hhi(shares);
    const normalized = Math.round(((h - 1 / 12) / (1 - 1 / 12)) * 1e6) / 1e6;
    expect(crowding.sampledTrades).toBe(transfers);
    expect(crowding.components.volumeConcentration.hhi).toBe(h);
    expect(crowding.components.volumeConcentration.normalizedHhi).toBe(normalized);
    expect(crowding.components.volumeConcentration.topTraderShare).toBe(Math.round(Math.max(...shares) * 1e6) / 1e6);
    expect(crowding.components.uniqueTraderDensity.uniqueTraders).toBe(12);
    expect(crowding.components.uniqueTraderDensity.tradesPerTrader).toBe(Math.round((transfers / 12) * 1e4) / 1e4);
    expect(crowding.components.orderFlowToxicity).toEqual({ score: 0, vpin: 0, buckets: 0, bucketVolumeUsd: '0' });
    expect(crowding.weights).toEqual({
      volumeConcentration: 0.5,
      uniqueTraderDensity: 0.5,
      spreadCompression: 0,
      orderFlowToxicity: 0,
    });
    const density = Math.round((Math.log(12) / Math.log(1000)) * 100 * 100) / 100;
    expect(crowding.components.uniqueTraderDensity.score).toBe(density);
    expect(crowding.crowdingScore).toBe(Math.round((0.5 * Math.round(normalized * 100 * 100)) / 100 + 0.5 * density));
    expect(crowding.source.note).toMatch(/spread compression/);
  });

  it('capital flow: exact stablecoin in- and outflows of the given wallets', async () => {
    const flow = await client.intel.capitalFlow({
      body: { mint: economy.ledger.mint, wallets: [payers[1]!.address, payers[2]!.address], window: '24h' },
    });
    expect(flow.scope).toEqual({ mint: economy.ledger.mint, symbol: null, walletsTracked: 2 });
    expect(flow.inflowUsd).toBe('3.5');
    expect(flow.outflowUsd).toBe('0.5');
    expect(flow.netFlowUsd).toBe('3');
    expect(flow.signal).toBe('accumulation');
    expect(flow.signalStrength).toBe(0.75);
    expect(flow.wallets).toEqual([
      { wallet: payers[1]!.address, inflowUsd: '2', outflowUsd: '0.5', netFlowUsd: '1.5', signal: 'accumulation' },
      { wallet: payers[2]!.address, inflowUsd: '1.5', outflowUsd: '0', netFlowUsd: '1.5', signal: 'accumulation' },
    ]);
    expect(flow.rotations).toEqual([]);
    // A wallet with no activity counts zero.
    const idle = generateWallet().address;
    const none = await client.intel.capitalFlow({ body: { wallets: [idle], window: '24h' } });
    expect(none.wallets).toEqual([
      { wallet: idle, inflowUsd: '0', outflowUsd: '0', netFlowUsd: '0', signal: 'neutral' },
    ]);
    expect(none.signal).toBe('neutral');
  });

  it('capital flow of the identified agents on the bots’ token: unpriced transfers count zero, and say so', async () => {
    const flow = await client.intel.capitalFlow({ body: { mint, window: '24h' } });
    expect(flow.scope.walletsTracked).toBe(4);
    expect(flow.inflowUsd).toBe('0');
    expect(flow.source.note).toMatch(/no stablecoin price/);
  });

  it('strategy collision, response time and meta-shift answer from the same transfers', async () => {
    const collision = await client.intel.strategyCollision({
      body: { strategy: 'momentum', mint, timeframe: '1m', window: '1h' },
    });
    expect(collision.sampledTransactions).toBe(transfers + 4);
    expect(collision.collisionProbability).toBeGreaterThanOrEqual(0);
    expect(collision.collisionProbability).toBeLessThanOrEqual(1);
    expect(collision.topOverlaps.length).toBe(4);
    expect(collision.mitigations.length).toBeGreaterThan(0);

    // Every transfer of 10 tokens or more is ≥ 1 % of the 12,000 supply... only 120 tokens and up are large.
    const response = await client.intel.responseTime({ body: { mint, eventKind: 'large-swap', window: '1h' } });
    expect(response.eventsAnalyzed).toBe(0);
    expect(response.reactionSlots).toBeNull();
    expect(response.source.note).toMatch(/1 % of the supply/);

    const shift = await client.intel.metaShift({ body: { mint, window: '24h' } });
    expect(shift.agentWalletsClassified).toBe(4);
    expect(shift.threshold).toBe(0.1);
    expect(shift.strategies.map((s) => s.strategy)).toHaveLength(7);
    expect(shift.regimeChange).toBe(shift.divergence >= 0.1);
  });

  it('a priced market: response time to a large swap, VPIN, rotations and capital flow at the prices paid', async () => {
    const rpc = createSolanaRpc(economy.rpcUrl);
    const stable = economy.ledger.mint;
    const makers = Array.from({ length: 3 }, () => generateWallet());
    const whales = Array.from({ length: 2 }, () => generateWallet());
    const market = await createMint(rpc, payer, { decimals: 6 });
    await mintTokens(
      rpc,
      payer,
      market,
      payer,
      6,
      [...makers, ...whales].map((w) => ({ owner: w.address, amount: 1_000_000_000n })),
    );
    for (const w of [...makers, ...whales]) await economy.ledger.mintTo(w.address, usdToAtomic('5'));
    const leg = (mintOf: string, from: Wallet, to: Wallet, amount: bigint) =>
      getTransferCheckedInstruction({
        source: address(associatedTokenAddress(from.address, mintOf)),
        mint: address(mintOf),
        destination: address(associatedTokenAddress(to.address, mintOf)),
        authority: createNoopSigner(address(from.address)),
        amount,
        decimals: 6,
      });
    // One transaction: the seller's tokens for the buyer's stablecoin.
    const swap = (seller: Wallet, buyer: Wallet, tokens: bigint, usd: bigint) =>
      sendInstructions(
        rpc,
        [payer, seller, buyer],
        [leg(market, seller, buyer, tokens), leg(stable, buyer, seller, usd)],
      );

    let makerPaid = 0n;
    let largeSlot = 0;
    for (let round = 0; round < 10; round++) {
      // The large swap (100 tokens: 2 % of the 5,000 supply) lands 2 slots before the makers' round.
      if (round === 5) {
        economy.ledger.warp(8);
        await swap(whales[0]!, whales[1]!, 100_000_000n, 1_500_000n);
        largeSlot = Number(economy.ledger.slot());
        economy.ledger.warp(2);
      } else economy.ledger.warp(10);
      const paid = 100_000n + 10_000n * BigInt((round * 7) % 5); // 0.010 to 0.014 USD a token
      for (let i = 0; i < makers.length; i++) {
        await swap(makers[i]!, makers[(i + 1) % makers.length]!, 10_000_000n, paid);
        makerPaid += paid;
      }
      economy.ledger.warp(10);
    }

    const response = await client.intel.responseTime({ body: { mint: market, eventKind: 'any', window: '1h' } });
    expect(response.eventsAnalyzed).toBe(1);
    expect(response.events).toHaveLength(1);
    expect(response.events[0]!.slot).toBeGreaterThanOrEqual(largeSlot - 1);
    expect(response.events[0]!.responders).toBe(3);
    expect(response.reactionSlots!.fastest).toBeGreaterThanOrEqual(2);
    expect(response.reactionSlots!.fastest).toBeLessThanOrEqual(4);
    expect(response.sameSlotShare).toBe(0);
    expect(response.slotTimeMs).toBeGreaterThan(0);
    expect(response.medianReactionMs).toBe(
      Math.round(response.reactionSlots!.median * response.slotTimeMs! * 1000) / 1000,
    );
    const none = await client.intel.responseTime({ body: { mint: market, eventKind: 'new-pool', window: '1h' } });
    expect(none.eventsAnalyzed).toBe(0);
    expect(none.reactionSlots).toBeNull();

    const crowding = await client.intel.alphaCrowding({ body: { mint: market, window: '1h' } });
    expect(crowding.components.orderFlowToxicity.buckets).toBe(50);
    expect(crowding.components.orderFlowToxicity.vpin).toBeGreaterThan(0);
    expect(crowding.components.orderFlowToxicity.vpin).toBeLessThanOrEqual(1);
    expect(crowding.weights.orderFlowToxicity).toBe(0.333333);

    const flow = await client.intel.capitalFlow({ body: { mint: market, window: '24h' } });
    expect(flow.scope.walletsTracked).toBe(3);
    const usd = (atomic: bigint) => (Number(atomic) / 1e6).toString();
    // Every maker bought and sold; in and out are the stablecoin paid in the makers' swaps, exactly.
    expect(flow.inflowUsd).toBe(usd(makerPaid));
    expect(flow.outflowUsd).toBe(usd(makerPaid));
    expect(flow.netFlowUsd).toBe('0');
    expect(flow.signal).toBe('rotation');
    expect(flow.signalStrength).toBe(1);
    expect(flow.rotations.map((r) => [r.fromMint, r.toMint, r.volumeUsd, r.wallets]).sort()).toEqual(
      [
        [market, stable, usd(makerPaid), 3],
        [stable, market, usd(makerPaid), 3],
      ].sort(),
    );
  });

  it('every route’s contract example answers on this ledger’s stablecoin, each charged its contract price', async () => {
    for (const [key, route] of Object.entries(intelContract.router)) {
      const example = routeMeta(route).example as { body: unknown };
      const meta = routeMeta(route).payment;
      const before = economy.ledger.tokenBalance(economy.buyer.address);
      const answer = (await (
        client.intel as unknown as Record<string, (args: unknown) => Promise<{ source: { mode: string } }>>
      )[key]!({ body: example.body })) as { source: { mode: string } };
      expect(answer.source.mode, key).toBe('chain');
      expect(economy.ledger.tokenBalance(economy.buyer.address), key).toBe(
        before - usdToAtomic(meta.kind === 'fixed' ? meta.usd : '0'),
      );
    }
  });

  it('targets a strategy: density of the family’s agents, and collision of a real wallet’s entries with theirs', async () => {
    const all = await client.intel.agentDensity({ body: { mint, window: '1h' } });
    const family = all.byStrategy[0]!;
    const density = await client.intel.agentDensity({ body: { mint, strategy: family.strategy, window: '1h' } });
    expect(density.target).toEqual({ mint, symbol: null, strategy: family.strategy });
    expect(density.agentCountEstimate).toBe(family.agents);
    const collision = await client.intel.strategyCollision({
      body: { strategy: 'momentum', mint, wallet: bots[0]!.address, timeframe: '1m', window: '1h' },
    });
    // Your own wallet is left out of the others.
    expect(collision.topOverlaps.map((o) => o.wallet)).not.toContain(bots[0]!.address);
    expect(collision.topOverlaps).toHaveLength(3);
    expect(collision.collisionProbability).toBe(
      Math.round(
        Math.min(
          1,
          0.4 * Math.max(0, collision.components.entryExitCorrelation) +
            0.3 * collision.components.momentumCrowding +
            0.3 * collision.components.meanReversionCollision,
        ) * 1e6,
      ) / 1e6,
    );
  });

  it('refuses before payment: unknown mint 404, too little activity 422, bad input 400 naming the field', async () => {
    const before = economy.ledger.tokenBalance(economy.buyer.address);
    const unknown = generateWallet().address;
    const notFound = await client.intel.agentDensity({ body: { mint: unknown, window: '1h' } }).catch((e) => e);
    expect(notFound).toBeInstanceOf(NotFoundError);
    expect((notFound as ApiError).code).toBe('token_not_found');
    const flowNotFound = await client.intel.capitalFlow({ body: { mint: unknown } }).catch((e) => e);
    expect(flowNotFound).toBeInstanceOf(NotFoundError);

    const quiet = await createMint(createSolanaRpc(economy.rpcUrl), payer, { decimals: 6 });
    const thin = await client.intel.alphaCrowding({ body: { mint: quiet, window: '1h' } }).catch((e) => e);
    expect(thin).toBeInstanceOf(UnprocessableEntityError);
    expect((thin as ApiError).code).toBe('insufficient_activity');
    expect((thin as ApiError).message).toContain(`at least ${MIN_EVENTS}`);

    const bad = await client.intel.agentDensity({ body: { window: '1h' } as never }).catch((e) => e);
    expect(bad).toBeInstanceOf(BadRequestError);
    expect(bad.message).toMatch(/mint, a strategy, or both/);
    const badMint = await client.intel.responseTime({ body: { mint: 'not-a-mint' } }).catch((e) => e);
    expect(badMint).toBeInstanceOf(BadRequestError);
    expect(JSON.stringify((badMint as ApiError).details)).toContain('body.mint');
    const tooMany = await client.intel
      .capitalFlow({ body: { wallets: Array.from({ length: 26 }, () => generateWallet().address) } })
      .catch((e) => e);
    expect(tooMany).toBeInstanceOf(BadRequestError);
    expect(JSON.stringify((tooMany as ApiError).details)).toContain('body.wallets');
    const badStrategy = await client.intel
      .strategyCollision({ body: { strategy: 'hodl' as never, mint } })
      .catch((e) => e);
    expect(badStrategy).toBeInstanceOf(BadRequestError);
    expect(JSON.stringify((badStrategy as ApiError).details)).toContain('body.strategy');
    const badWindow = await client.intel.responseTime({ body: { mint, window: '7d' as never } }).catch((e) => e);
    expect(badWindow).toBeInstanceOf(BadRequestError);
    expect(JSON.stringify((badWindow as ApiError).details)).toContain('body.window');
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(before);
  });

  it('a window that ends later than the transfers (injected clock) holds no activity: 422, not charged', async () => {
    const later = await economy.startPaidService(
      (context) => createIntelApp(context, { now: () => new Date(Date.now() + 2 * 3600_000) }),
      { id: 'intel' },
    );
    const buyer = createClient({
      baseUrls: { intel: later.url },
      wallet: await walletFromSecretKey(economy.buyer.secretKey),
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    });
    const before = economy.ledger.tokenBalance(economy.buyer.address);
    const error = await buyer.intel.agentDensity({ body: { mint, window: '1h' } }).catch((e) => e);
    expect(error).toBeInstanceOf(UnprocessableEntityError);
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(before);
  });

  it('502 upstream_unavailable when the chain does not answer, before any payment', async () => {
    const offline = await startService((context) => createIntelApp(context), { id: 'intel' });
    try {
      const buyer = createClient({
        baseUrls: { intel: offline.url },
        wallet: await walletFromSecretKey(economy.buyer.secretKey),
        payments: { rpcUrl: economy.rpcUrl },
        maxRetries: 0,
      });
      const before = economy.ledger.tokenBalance(economy.buyer.address);
      const error = await buyer.intel.agentDensity({ body: { mint, window: '1h' } }).catch((e) => e);
      expect(error).toBeInstanceOf(ApiError);
      expect((error as ApiError).status).toBe(502);
      expect((error as ApiError).code).toBe('upstream_unavailable');
      expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(before);
    } finally {
      await offline.close();
    }
  });
});
