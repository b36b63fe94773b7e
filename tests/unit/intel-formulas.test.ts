import { describe, expect, it } from 'vitest';
import {
  landscape,
  metaShift,
  periodOf,
  responseTime,
  signalOf,
  wilsonRange,
} from '../../servers/src/services/intel/domain';
import type { FlowEvent } from '../../servers/src/services/intel/chain';
import {
  coefficientOfVariation,
  gini,
  hhi,
  jensenShannon,
  logReturns,
  normalCdf,
  pearson,
  percentile,
  vpin,
} from '../../servers/src/upstream/measures';

describe('intel formulas (research/domain.md §4 vectors)', () => {
  it('gini and HHI on the research vectors', () => {
    expect(gini([1, 1, 1, 1])).toBe(0);
    expect(gini([0, 0, 0, 1])).toBe(0.75);
    expect(gini([1, 2, 3, 4, 5])).toBe(0.266667);
    expect(gini([10, 5, 3, 1, 1])).toBe(0.44);
    expect(gini([5, 10, 20, 50])).toBe(0.426471);
    const shares = [0.5, 0.3, 0.2];
    expect(hhi(shares)).toBe(0.38);
    expect((hhi(shares) - 1 / 3) / (1 - 1 / 3)).toBeCloseTo(0.07, 6);
    expect(hhi([0.25, 0.25, 0.25, 0.25])).toBe(0.25);
  });

  it('Pearson on log returns: ρ = 0.933449', () => {
    const a = logReturns([100, 102, 101, 105, 107]);
    const b = logReturns([50, 50.5, 50.2, 51.5, 52.6]);
    expect(a.map((x) => Math.round(x * 1e6) / 1e6)).toEqual([0.019803, -0.009852, 0.03884, 0.018868]);
    expect(pearson(a, b)).toBe(0.933449);
    expect(pearson([1, 2], [3, 3])).toBeNull();
  });

  it('VPIN over 5 buckets of V = 100: 0.483842', () => {
    expect(normalCdf(0)).toBeCloseTo(0.5, 8);
    expect(normalCdf(1.959964)).toBeCloseTo(0.975, 6);
    expect(vpin([0.5, -0.2, 1.0, -1.5, 0.1], 100)).toBe(0.483842);
    // constant prices carry no information: no VPIN
    expect(vpin([0, 0, 0], 100)).toBeNull();
    expect(vpin([], 100)).toBeNull();
  });

  it('coefficient of variation, percentiles, Jensen-Shannon, Wilson interval, capital signal', () => {
    expect(coefficientOfVariation([20, 20, 20])).toBe(0);
    expect(coefficientOfVariation([10, 30])).toBe(0.5);
    expect(coefficientOfVariation([5])).toBeNull();
    expect(percentile([1, 2, 3, 4], 50)).toBe(2.5);
    expect(percentile([0, 10], 95)).toBe(9.5);
    expect(jensenShannon([1, 0], [0, 1])).toBe(1);
    expect(jensenShannon([0.5, 0.5], [0.5, 0.5])).toBe(0);
    expect(jensenShannon([0.75, 0.25], [0.25, 0.75])).toBe(0.188722);
    expect(wilsonRange(0, 0)).toEqual({ low: 0, high: 0 });
    const r = wilsonRange(4, 12);
    expect(r.low).toBeLessThanOrEqual(4);
    expect(r.high).toBeGreaterThanOrEqual(4);
    // p = 1/3, z = 1.645: centre 0.3640, half-width 0.2045 → 1.91 to 6.82 wallets
    expect(r).toEqual({ low: 1, high: 7 });
    expect(signalOf(3_500_000n, 500_000n, 0n)).toEqual({ signal: 'accumulation', strength: 0.75 });
    expect(signalOf(500_000n, 3_500_000n, 0n)).toEqual({ signal: 'distribution', strength: 0.75 });
    expect(signalOf(1_000_000n, 1_000_000n, 800_000n)).toEqual({ signal: 'rotation', strength: 0.4 });
    expect(signalOf(1_000_000n, 1_000_000n, 0n)).toEqual({ signal: 'neutral', strength: 0 });
    expect(signalOf(0n, 0n, 0n)).toEqual({ signal: 'neutral', strength: 0 });
  });
});

describe('meta-shift over a landscape that changes strategy mid-window (pure)', () => {
  const now = new Date('2026-01-02T00:00:00.000Z');
  const period = periodOf('24h', now);
  const from = Date.parse(period.from) / 1000;
  const middle = from + 12 * 3600;
  const events: FlowEvent[] = [];
  const trade = (seller: string, buyer: string, slot: number, blockTime: number) =>
    events.push({
      signature: `sig${events.length}`,
      slot,
      blockTime,
      order: events.length,
      buyer,
      seller,
      amount: 10_000_000n,
      size: 10,
      paid: null,
      price: null,
    });
  // First half: two market makers pass the same size back and forth, each sending every 100 slots.
  for (let i = 0; i < 8; i++) {
    trade('MakerA', 'MakerB', 1000 + i * 100, from + 600 + i * 60);
    trade('MakerB', 'MakerA', 1050 + i * 100, from + 630 + i * 60);
  }
  // Second half: a momentum seller, every 100 slots, always the same direction.
  for (let i = 0; i < 8; i++) trade('Seller', `Buyer${i}`, 200_000 + i * 100, middle + 600 + i * 60);

  it('classifies both regimes and finds the change between them', () => {
    const land = landscape({ events, transactions: [] }, 'Mint');
    expect(land.profiles.get('MakerA')!.strategy).toBe('market-making');
    expect(land.profiles.get('Seller')!.strategy).toBe('momentum');
    const shift = metaShift(land, { scope: { mint: null, symbol: null }, period });
    expect(shift.previousRegime).toEqual({ dominantStrategy: 'market-making', dominantShare: 1 });
    expect(shift.currentRegime).toEqual({ dominantStrategy: 'momentum', dominantShare: 1 });
    expect(shift.divergence).toBe(1);
    expect(shift.regimeChange).toBe(true);
    expect(shift.changePoint).toBe(new Date((middle + 600) * 1000).toISOString());
    expect(shift.agentWalletsClassified).toBe(3);
    expect(shift.confidence).toBe(Math.round((3 / 8) * 1e6) / 1e6);
    expect(shift.strategies.find((s) => s.strategy === 'momentum')!.changePoints).toBe(100);
  });

  it('response time: its slot time from the chain’s samples, null (not a measured-looking 0) without them', () => {
    const land = landscape({ events, transactions: [] }, 'Mint');
    const target = { mint: 'Mint', symbol: null, strategy: null };
    const input = { eventKind: 'any' as const, supply: 100_000_000n };
    const timed = responseTime(land, { target, period, slotTimeMs: 400 }, input);
    expect(timed.eventsAnalyzed).toBe(events.length);
    expect(timed.slotTimeMs).toBe(400);
    const untimed = responseTime(land, { target, period, slotTimeMs: null }, input);
    expect(untimed.eventsAnalyzed).toBe(events.length);
    expect(untimed.slotTimeMs).toBeNull();
    expect(untimed.medianReactionMs).toBeNull();
  });

  it('a window with agent trades in one half only compares nothing', () => {
    const land = landscape({ events: events.slice(16), transactions: [] }, 'Mint');
    const shift = metaShift(land, { scope: { mint: null, symbol: null }, period });
    expect(shift.emptyHalf).toBe(true);
    expect(shift.divergence).toBe(0);
    expect(shift.regimeChange).toBe(false);
    expect(shift.changePoint).toBeNull();
  });
});
