import type { DataSource, IntelTarget, StrategyKind } from '@agent-economy/contracts';
import { intel } from '@agent-economy/contracts';
import type { RouterImplementation } from '../../runtime/app';
import type { SolanaSource } from '../../upstream/solana';
import { readMint } from '../../upstream/token-chain';
import type { UpstreamTracker } from '../../upstream/tracker';
import { agentDensity, alphaCrowding, capitalFlow, metaShift, responseTime, strategyCollision } from './domain';
import type { Reading } from './index';

export interface IntelDeps {
  read(mint: string | undefined, window: string): Promise<Reading>;
  target(reading: Reading, mint: string | undefined, strategy: StrategyKind | undefined): IntelTarget;
  tracker: UpstreamTracker;
  provider: string;
  stablecoin: string;
  chain: SolanaSource;
  maxTransactions: number;
}

const MEV_NOTE =
  'sandwiches and backruns are counted from the order of transfers within a slot and Jito tips from payments to Jito tip accounts; a ledger without DEX swaps or Jito has none';

// Handlers translate between the contract and the domain; the numbers come from domain.ts.
export function intelHandlers({
  read,
  target,
  tracker,
  provider,
  stablecoin,
  chain,
  maxTransactions,
}: IntelDeps): RouterImplementation<typeof intel.router> {
  const source = (reading: Reading, notes: string[]): DataSource => {
    const transfers = reading.land.events.length;
    const all = [
      `sample: ${reading.sampledTransactions} transactions of ${reading.facts.mint} with ${transfers} transfer${transfers === 1 ? '' : 's'}, ${reading.period.from} to ${reading.period.to}`,
      ...notes,
    ];
    if (reading.facts.mint === stablecoin) all.push('transfers of the stablecoin are read at 1 USD per token');
    if (reading.truncated)
      all.push(
        `the window held more than ${maxTransactions} transactions: the newest ${maxTransactions} were analysed`,
      );
    return { ...tracker.source([provider], reading.readAt), note: all.join('; ') };
  };
  const scope = (reading: Reading, mint: string | undefined, strategy: StrategyKind | undefined) => ({
    target: target(reading, mint, strategy),
    period: reading.period,
    slotTimeMs: reading.slotTimeMs,
  });

  return {
    agentDensity: async ({ body }) => {
      const reading = await read(body.mint, body.window);
      const result = agentDensity(reading.land, scope(reading, body.mint, body.strategy), reading.sampledTransactions);
      return { status: 200, body: { ...result, source: source(reading, [MEV_NOTE]) } };
    },

    alphaCrowding: async ({ body }) => {
      const reading = await read(body.mint, body.window);
      const { result, notes } = alphaCrowding(reading.land, scope(reading, body.mint, body.strategy));
      return { status: 200, body: { ...result, source: source(reading, notes) } };
    },

    strategyCollision: async ({ body }) => {
      const reading = await read(body.mint, body.window);
      const result = strategyCollision(
        reading.land,
        scope(reading, body.mint, body.strategy),
        {
          strategy: body.strategy,
          timeframe: body.timeframe,
          ...(body.wallet ? { wallet: body.wallet } : {}),
          fromSeconds: reading.fromSeconds,
          toSeconds: reading.toSeconds,
        },
        reading.sampledTransactions,
      );
      const notes = [
        'the prevailing move is the last change of the stablecoin price paid for the token, or, for unpriced transfers, each wallet’s previous direction',
      ];
      return { status: 200, body: { ...result, source: source(reading, notes) } };
    },

    responseTime: async ({ body }) => {
      const reading = await read(body.mint, body.window);
      const result = responseTime(reading.land, scope(reading, body.mint, undefined), {
        eventKind: body.eventKind,
        supply: reading.facts.supply,
      });
      const notes = [
        'market events are transfers of at least 1 % of the supply (large-swap); price-move, liquidity-change and new-pool events need DEX pool state, which this deployment does not read',
      ];
      if (reading.slotTimeMs === null)
        notes.push('the chain reported no performance samples: slot time and every duration in milliseconds are null');
      return { status: 200, body: { ...result, source: source(reading, notes) } };
    },

    capitalFlow: async ({ body }) => {
      const reading = await read(body.mint, body.window);
      const symbols = new Map<string, string>();
      const result = capitalFlow(reading.land, {
        mint: reading.facts.mint,
        symbol: reading.facts.metadata?.symbol ?? null,
        ...(body.wallets ? { wallets: body.wallets } : {}),
        stablecoin,
        period: reading.period,
        symbols,
      });
      // Symbols of the rotations' mints, from their on-chain metadata ("" when a mint has none).
      for (const r of result.rotations) {
        for (const [key, mint] of [
          ['fromSymbol', r.fromMint],
          ['toSymbol', r.toMint],
        ] as const) {
          if (!symbols.has(mint))
            symbols.set(mint, (await readMint(chain, mint).catch(() => null))?.metadata?.symbol ?? '');
          r[key] = symbols.get(mint)!;
        }
      }
      const { unpriced, ...body200 } = result;
      const notes: string[] = [];
      if (!body.mint) notes.push('without a mint the scope is the stablecoin, the money agents pay each other in');
      if (unpriced > 0)
        notes.push(
          `${unpriced} transfer${unpriced === 1 ? '' : 's'} had no stablecoin price in the window and count zero`,
        );
      return { status: 200, body: { ...body200, source: source(reading, notes) } };
    },

    metaShift: async ({ body }) => {
      const reading = await read(body.mint, body.window);
      const { emptyHalf, ...result } = metaShift(reading.land, {
        scope: { mint: body.mint ?? null, symbol: body.mint ? (reading.facts.metadata?.symbol ?? null) : null },
        period: reading.period,
      });
      const notes = [
        'liquidation needs lending-program data this deployment does not read: no wallet is classified as liquidation',
      ];
      if (emptyHalf)
        notes.push(
          'one half of the window holds no agent trade: there is no distribution to compare, so divergence is 0',
        );
      if (!body.mint) notes.push('without a mint the markets read are the stablecoin’s transfers');
      return { status: 200, body: { ...result, source: source(reading, notes) } };
    },
  };
}
