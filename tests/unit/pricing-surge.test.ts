import { describe, expect, it } from 'vitest';
import { fuseRanks } from '../../servers/src/services/pricing/market';
import { endpointOfResource } from '../../servers/src/services/pricing/store';
import {
  demandReading,
  endpointAnalytics,
  multiplierText,
  priceAtomic,
  priceState,
  surgeHundredths,
  zoneOf,
} from '../../servers/src/services/pricing/surge';

describe('surge curve and zones', () => {
  it('multiplier = clamp(loadRatio, 0.5, 5), rounded half-up to hundredths', () => {
    const vectors: [number, number][] = [
      [0, 50],
      [0.2, 50],
      [0.5, 50],
      [0.794, 79],
      [0.795, 80],
      [1, 100],
      [1.005, 101],
      [1.234, 123],
      [2.5, 250],
      [4.999, 500],
      [5, 500],
      [12, 500],
      [Number.NaN, 50],
      [-1, 50],
    ];
    for (const [ratio, hundredths] of vectors) expect([ratio, surgeHundredths(ratio)]).toEqual([ratio, hundredths]);
  });

  it('zones: low < 0.8 ≤ normal < 1.5 ≤ high < 3 ≤ surge', () => {
    expect([50, 79, 80, 149, 150, 299, 300, 500].map(zoneOf)).toEqual([
      'low',
      'low',
      'normal',
      'normal',
      'high',
      'high',
      'surge',
      'surge',
    ]);
    expect([50, 80, 100, 125, 300, 305].map(multiplierText)).toEqual(['0.5', '0.8', '1', '1.25', '3', '3.05']);
  });

  it('prices: base × multiplier in atomic units, half-up; the load ratio from calls in the 5-minute window', () => {
    expect(priceAtomic(20_000n, 50)).toBe(10_000n); // token-intel: 0.02 × 0.5 = the 0.01 minimum
    expect(priceAtomic(20_000n, 500)).toBe(100_000n); // × 5 = the 0.10 maximum
    expect(priceAtomic(50_000n, 133)).toBe(66_500n);
    expect(priceAtomic(10_001n, 50)).toBe(5_001n); // 5000.5 rounds up
    expect(demandReading(5, 1)).toEqual({
      callsInWindow: 5,
      windowSeconds: 300,
      callsPerMinute: 1,
      baselineCallsPerMinute: 1,
      loadRatio: 1,
    });
    expect(demandReading(3, 0.2).loadRatio).toBe(3);
    expect(priceState(80_000n, 2, 0.2)).toMatchObject({ hundredths: 200, zone: 'high', amount: 160_000n });
  });

  it('analytics: buckets, revenue statistics and trend from settled sales', () => {
    const to = new Date('2026-11-20T12:00:00.000Z');
    const at = (minutesAgo: number) => new Date(to.getTime() - minutesAgo * 60_000);
    const sales = [53, 51, 9, 8, 7].map((m, i) => ({
      endpoint: 'trending' as const,
      amount: [5_000n, 10_000n, 5_000n, 10_000n, 15_000n][i]!,
      at: at(m),
    }));
    const a = endpointAnalytics({ sales, baseAtomic: 10_000n, baselineCallsPerMinute: 0.2, window: '1h', to });
    expect(a.priceHistory).toHaveLength(12);
    // Bucket 1 is 55-50 minutes ago: two sales, average 0.0075 (×0.75, low); bucket 10 is 10-5 minutes ago: three.
    expect(a.priceHistory[1]).toMatchObject({
      calls: 2,
      revenueUsd: '0.015',
      priceUsd: '0.0075',
      surgeMultiplier: '0.75',
      demandZone: 'low',
    });
    expect(a.priceHistory[10]).toMatchObject({
      calls: 3,
      revenueUsd: '0.03',
      priceUsd: '0.01',
      surgeMultiplier: '1',
      demandZone: 'normal',
    });
    // No sale in bucket 11: the price quoted at its end from the demand then (none in its last 5 minutes).
    expect(a.priceHistory[11]).toMatchObject({ calls: 0, revenueUsd: '0', surgeMultiplier: '0.5', demandZone: 'low' });
    // A bucket is as wide as the demand window or wider, so a bucket without sales ends a window without demand.
    expect(a.priceHistory[2]).toMatchObject({ calls: 0, priceUsd: '0.005', surgeMultiplier: '0.5' });
    expect(a.revenue).toEqual({ calls: 5, revenue: 45_000n, average: 9_000n, lowest: 5_000n, highest: 15_000n });
    // Last quarter (15 minutes): 3 calls = 0.2/min against 5/60 for the hour: +140 %.
    expect(a.demandTrend).toMatchObject({
      direction: 'rising',
      changePercent: 140,
      callsPerMinuteNow: 0,
      callsPerMinuteAverage: 0.0833,
    });
    const share = a.demandTrend.zoneShare;
    expect(share.low + share.normal + share.high + share.surge).toBeCloseTo(1, 5);
  });

  it('a payment counts for the endpoint its resource path names, whatever its case or query', () => {
    expect(endpointOfResource('http://127.0.0.1:4106/api/token-intel')).toBe('token-intel');
    expect(endpointOfResource('http://h/API/Whale-Watch/?x=1')).toBe('whale-watch');
    expect(endpointOfResource('http://h/api/marketplace')).toBeNull();
    expect(endpointOfResource('not a url')).toBeNull();
  });

  it('reciprocal-rank fusion: a token on both lists outranks one on a single list', () => {
    const fused = fuseRanks([
      { name: 'a', mints: ['X', 'Y', 'Z'] },
      { name: 'b', mints: ['Z', 'W'] },
    ]);
    expect(fused.map((f) => [f.mint, f.listedBy])).toEqual([
      ['Z', ['a', 'b']],
      ['X', ['a']],
      ['Y', ['a']],
      ['W', ['b']],
    ]);
    expect(fused[0]!.score).toBe(100);
    expect(fused[1]!.score).toBeCloseTo((1 / 61 / (1 / 63 + 1 / 61)) * 100, 2);
  });
});
