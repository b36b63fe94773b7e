import { describe, expect, it } from 'vitest';
import {
  adjustedSopr,
  cyclePhase,
  mvrv,
  mvrvZScores,
  mvrvZone,
  nupl,
  nuplZone,
  populationStdDev,
  realizedCap,
  sopr,
  soprZone,
  statsOf,
  zScoreZone,
  type SpentOutput,
} from '../../servers/src/services/btc-metrics/domain';
import { ANCHORS, buildModel } from '../../servers/src/services/btc-metrics/model';

describe('formulas (pure) against the reference values', () => {
  // Coin Metrics: CapMrktCurUSD, CapRealUSD, CapMVRVCur (8 decimals), NUPL = 1 − 1/MVRV and its band.
  const rows = [
    {
      date: '2015-04-15',
      mc: 3_139_171_565,
      rc: 4_134_472_766,
      mvrv: 0.75926768,
      nupl: -0.317,
      band: 'capitulation',
      phase: 'capitulation',
    },
    {
      date: '2017-12-17',
      mc: 322_411_617_616,
      rc: 75_827_043_368,
      mvrv: 4.25193445,
      nupl: 0.7648,
      band: 'euphoria_greed',
      phase: 'euphoria',
    },
    {
      date: '2018-01-18',
      mc: 189_059_547_788,
      rc: 90_306_893_903,
      mvrv: 2.09352287,
      nupl: 0.5223,
      band: 'belief_denial',
      phase: 'belief',
    },
    {
      date: '2020-03-29',
      mc: 108_023_566_971,
      rc: 101_441_674_689,
      mvrv: 1.06488351,
      nupl: 0.0609,
      band: 'hope_fear',
      phase: 'accumulation',
    },
  ] as const;

  it('MVRV = MC / RC equals CapMVRVCur to its 8 decimals; NUPL = 1 − 1/MVRV, in its band', () => {
    for (const r of rows) {
      expect(Math.abs(mvrv(r.mc, r.rc) - r.mvrv)).toBeLessThan(5e-9);
      expect(nupl(r.mc, r.rc)).toBeCloseTo(1 - 1 / mvrv(r.mc, r.rc), 12);
      expect(Number(nupl(r.mc, r.rc).toFixed(r.date === '2015-04-15' ? 3 : 4))).toBe(r.nupl);
      expect(nuplZone(nupl(r.mc, r.rc))).toBe(r.band);
      expect(cyclePhase({ mvrv: mvrv(r.mc, r.rc), mvrvZScore: 1, nupl: nupl(r.mc, r.rc) })).toBe(r.phase);
    }
    // Realized price 2017-12-17 = RC / supply = 75.83e9 / 16,748,248.59 = 4,527.46.
    expect((75_827_043_368 / 16_748_248.59).toFixed(2)).toBe('4527.46');
    // Max MVRV of Dec-2017 (4.7166582 on 2017-12-07) is overvalued, 2015-04-15 undervalued.
    expect([mvrvZone(4.7166582), mvrvZone(0.75926768), mvrvZone(2.09352287)]).toEqual([
      'overvalued',
      'undervalued',
      'neutral',
    ]);
    expect(() => mvrv(1, 0)).toThrow(RangeError);
  });

  it('MVRV Z-Score uses the population σ of the market cap from the first day (toy vector 1.76256, not 1.57648)', () => {
    const z = mvrvZScores([100, 120, 150, 200, 180], [90, 100, 110, 120, 115]);
    expect(z[0]).toBeNull(); // no spread on the first day
    expect(populationStdDev([100, 120, 150, 200, 180])).toBeCloseTo(36.8782, 4);
    expect(z[4]).toBeCloseTo(1.76256, 5);
    // each day's own expanding window: day 2 has σ = 10 and (120 − 100) / 10 = 2
    expect(z[1]).toBeCloseTo(2, 12);
  });

  it('SOPR and aSOPR: the toy outputs give 1.75; a 10-minute output moves SOPR to 1.30261 but not aSOPR', () => {
    const aged = (valueBtc: number, createdPriceUsd: number, spentPriceUsd: number): SpentOutput => ({
      valueBtc,
      createdPriceUsd,
      spentPriceUsd,
      lifespanSeconds: 86_400 * 30,
    });
    const outputs = [aged(1, 20_000, 30_000), aged(0.5, 40_000, 30_000), aged(2, 10_000, 30_000)];
    expect(sopr(outputs)).toBe(1.75);
    const withShort = [
      ...outputs,
      { valueBtc: 3, createdPriceUsd: 29_900, spentPriceUsd: 30_000, lifespanSeconds: 600 },
    ];
    expect(sopr(withShort)).toBeCloseTo(1.30261, 5);
    expect(adjustedSopr(withShort)).toBe(1.75);
    expect(sopr([])).toBeNull();
    expect(
      realizedCap([
        { valueBtc: 1, createdPriceUsd: 20_000 },
        { valueBtc: 0.5, createdPriceUsd: 40_000 },
      ]),
    ).toBe(40_000);
    expect([soprZone(0.98), soprZone(0.99), soprZone(1.01), soprZone(1.0101)]).toEqual([
      'loss_realization',
      'break_even',
      'break_even',
      'profit_taking',
    ]);
  });

  it('zones and phase at the band edges', () => {
    expect([zScoreZone(-0.01), zScoreZone(0), zScoreZone(6.99), zScoreZone(7)]).toEqual([
      'undervalued',
      'neutral',
      'neutral',
      'overvalued',
    ]);
    expect([mvrvZone(0.999), mvrvZone(1), mvrvZone(3.5)]).toEqual(['undervalued', 'neutral', 'overvalued']);
    expect([0, 0.25, 0.5, 0.75].map(nuplZone)).toEqual([
      'hope_fear',
      'optimism_anxiety',
      'belief_denial',
      'euphoria_greed',
    ]);
    // Z ≥ 7 raises to euphoria; MVRV < 1 lowers to capitulation whatever else says
    expect(cyclePhase({ mvrv: 2, mvrvZScore: 7, nupl: 0.3 })).toBe('euphoria');
    expect(cyclePhase({ mvrv: 0.99, mvrvZScore: 8, nupl: -0.01 })).toBe('capitulation');
  });

  it('statistics: count, min/max with dates, mean, median, population σ, first, last, change', () => {
    const s = statsOf(['a', 'b', 'c', 'd'].map((date, i) => ({ date, value: [2, 4, 4, 5][i]! })))!;
    expect(s).toEqual({
      count: 4,
      min: 2,
      minDate: 'a',
      max: 5,
      maxDate: 'd',
      mean: 3.75,
      median: 4,
      stdDev: Math.sqrt(1.1875),
      first: 2,
      last: 5,
      change: 3,
      changePercent: 150,
    });
    expect(statsOf([])).toBeNull();
    expect(
      statsOf([
        { date: 'a', value: 0 },
        { date: 'b', value: 1 },
      ])!.changePercent,
    ).toBeNull();
  });

  it('the embedded model is deterministic and lands on every reference row', () => {
    const a = buildModel();
    const b = buildModel();
    expect(a.market).toEqual(b.market);
    expect(buildModel(7).market[100]!.priceUsd).not.toBe(a.market[100]!.priceUsd);
    for (const anchor of ANCHORS) {
      const day = a.market.find((d) => d.date === anchor.date)!;
      expect([day.priceUsd.toFixed(2), day.marketCapUsd.toFixed(2), day.realizedCapUsd.toFixed(2)]).toEqual([
        anchor.priceUsd.toFixed(2),
        anchor.marketCapUsd.toFixed(2),
        anchor.realizedCapUsd.toFixed(2),
      ]);
    }
    // SOPR counts the short-lived outputs, aSOPR does not: they differ on days the realized P/L is not zero.
    const spent = [...a.spent.values()];
    expect(spent.every((s) => s.sopr! > 0 && s.asopr! > 0)).toBe(true);
    expect(spent.filter((s) => s.sopr !== s.asopr).length).toBe(spent.length);
  });
});
