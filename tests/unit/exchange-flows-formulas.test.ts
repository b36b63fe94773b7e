import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  btcText,
  combineSignal,
  directionOf,
  netflowZScore,
  populationStdDev,
  satsOf,
  sentimentOf,
  signalFactors,
  usdText,
} from '../../servers/src/services/exchange-flows/domain';
import { supplyAtHeight } from '../../servers/src/services/exchange-flows/sources';

describe('formulas on known vectors', () => {
  it('BTC amounts: satoshis ↔ 8-decimal strings, rounded half up; USD at the day’s price, exact', () => {
    expect([btcText(0n), btcText(1n), btcText(-150_000_000n), btcText(2_100_000_000_000_000n)]).toEqual([
      '0',
      '0.00000001',
      '-1.5',
      '21000000',
    ]);
    expect([
      satsOf('31234.567891234567'),
      satsOf('0.000000005'),
      satsOf('0.0000000049'),
      satsOf(12.5),
      satsOf('-3.1'),
    ]).toEqual([3_123_456_789_123n, 1n, 0n, 1_250_000_000n, -310_000_000n]);
    expect(satsOf('abc')).toBeNull();
    // 1.23456789 BTC at 67 000.0000000001 USD = 82 716.04863 + 0.000000000123456789
    expect(usdText(123_456_789n, '67000.0000000001')).toBe('82716.048630000123456789');
    expect(usdText(-100_000_000n, '95000.5')).toBe('-95000.5');
  });

  it('direction: netflow beyond ±1 % of the gross flow', () => {
    // gross 200: net 2 is exactly 1 % (balanced), 2.00000002 just over
    expect(directionOf(101n, 99n)).toBe('balanced');
    expect(directionOf(10_100_000_001n, 9_900_000_000n)).toBe('inflow');
    expect(directionOf(99n, 101n)).toBe('balanced');
    expect(directionOf(9_899_999_999n, 10_100_000_000n)).toBe('outflow');
    expect(directionOf(0n, 0n)).toBe('balanced');
  });

  it('netflow z-score: (mean of the period − mean of the history) / population σ of the history', () => {
    const history = [2, 4, 4, 4, 5, 5, 7, 9]; // mean 5, σ 2
    expect(populationStdDev(history)).toBe(2);
    expect(netflowZScore([9, 11], history)).toBe(2.5); // mean 10
    expect(netflowZScore([-1], history)).toBe(-3);
    expect(netflowZScore([1], [3])).toBeNull(); // one day of history
    expect(netflowZScore([1], [3, 3, 3])).toBeNull(); // no spread
    expect([
      sentimentOf('outflow', -1),
      sentimentOf('outflow', -0.99),
      sentimentOf('inflow', 1),
      sentimentOf('balanced', 3),
      sentimentOf('inflow', null),
    ]).toEqual(['bullish', 'neutral', 'bearish', 'neutral', 'neutral']);
  });

  it('signal: weights 0.3/0.25/0.2/0.15/0.1 sum to 1, a missing factor’s weight goes to the others; graded score and confidence', () => {
    const all = signalFactors({
      netflowPercent: -5,
      netflowZScore: -1.5,
      reserveChangePercent: -1,
      priceChangePercent: 4,
      topVenueSharePercent: 40,
    });
    expect(all.map((f) => [f.name, f.weight, f.reading])).toEqual([
      ['netflow', 0.3, 'bullish'],
      ['netflow_zscore', 0.25, 'bullish'],
      ['reserve_trend', 0.2, 'bullish'],
      ['price_momentum', 0.15, 'bullish'],
      ['exchange_concentration', 0.1, 'bullish'],
    ]);
    // graded: 0.5, 0.75, 0.5, 0.4, 0.5 × 0.6 = 0.3 → S = 0.15 + 0.1875 + 0.1 + 0.06 + 0.03 = 0.5275
    expect(all.map((f) => f.graded)).toEqual([0.5, 0.75, 0.5, 0.4, 0.3]);
    const s = combineSignal(all);
    expect(s).toEqual({
      signal: 'bullish',
      score: 0.5275,
      confidence: Number((0.5 + (0.5 * (0.5275 - 0.15)) / 0.85).toFixed(4)),
    });

    // Live: no per-exchange data, no z-score history: their weights go to the others, in proportion.
    const live = signalFactors({
      netflowPercent: 3,
      netflowZScore: null,
      reserveChangePercent: 0.1,
      priceChangePercent: -25,
      topVenueSharePercent: null,
    });
    expect(live.map((f) => f.weight)).toEqual([0.461538, 0, 0.307692, 0.23077, 0]);
    expect(live.reduce((a, f) => a + f.weight, 0)).toBeCloseTo(1, 12);
    expect(live.map((f) => f.reading)).toEqual(['bearish', 'neutral', 'neutral', 'bearish', 'neutral']);
    // S = 0.461538 × −0.3 + 0.307692 × −0.05 + 0.23077 × −1 = −0.384616
    expect(combineSignal(live)).toMatchObject({ signal: 'bearish', score: -0.384616 });

    // Neutral: confidence is the weight reading neutral, scaled by how near S is to 0.
    const flat = signalFactors({
      netflowPercent: 0,
      netflowZScore: 0,
      reserveChangePercent: 0,
      priceChangePercent: 0,
      topVenueSharePercent: 20,
    });
    expect(combineSignal(flat)).toEqual({ signal: 'neutral', score: 0, confidence: 1 });
  });

  it('properties: BTC strings round-trip; direction is antisymmetric and follows the 1 % rule exactly', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(21n * 10n ** 14n), max: 21n * 10n ** 14n }), (x) => {
        expect(satsOf(btcText(x))).toBe(x);
        expect(btcText(x)).toMatch(/^-?(0|[1-9]\d*)(\.\d{1,8})?$/);
      }),
    );
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 16n }), fc.bigInt({ min: 0n, max: 10n ** 16n }), (a, b) => {
        const mirrored = { inflow: 'outflow', outflow: 'inflow', balanced: 'balanced' } as const;
        expect(directionOf(b, a)).toBe(mirrored[directionOf(a, b)]);
        const ratio = a + b === 0n ? 0 : Number(a - b) / Number(a + b);
        if (Math.abs(Math.abs(ratio) - 0.01) > 1e-9)
          expect(directionOf(a, b)).toBe(ratio > 0.01 ? 'inflow' : ratio < -0.01 ? 'outflow' : 'balanced');
      }),
    );
  });

  it('supply follows the subsidy schedule: 19 687 503.125 BTC after block 840 000', () => {
    expect(btcText(supplyAtHeight(840_000))).toBe('19687503.125');
    expect(btcText(supplyAtHeight(0))).toBe('50');
    expect(btcText(supplyAtHeight(10_000_000))).toBe('20999999.9769');
  });
});
