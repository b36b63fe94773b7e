import { describe, expect, it } from 'vitest';
import {
  annualize,
  assessSqueeze,
  per8h,
  sentimentOf,
  usd,
  weightedMean,
  zScore,
} from '../../servers/src/services/funding/domain';

describe('formulas', () => {
  it('annualises and normalises funding as research/domain.md §3.2 computes', () => {
    expect(annualize(0.0001, 8)).toBeCloseTo(0.1095, 15);
    expect(annualize(0.0000125, 1)).toBeCloseTo(0.1095, 15);
    expect(annualize(0.0005, 4)).toBeCloseTo(1.095, 15);
    expect(per8h(0.0000125, 1)).toBeCloseTo(0.0001, 15);
    expect(per8h(0.0002, 4)).toBeCloseTo(0.0004, 15);
  });

  it('weights, z-scores and rates sentiment', () => {
    expect(weightedMean([0.0001, 0.0003], [3e9, 1e9])).toBeCloseTo(0.00015, 15);
    expect(weightedMean([1], [0])).toBeNull();
    expect(zScore(3, [1, 2, 3, 4, 5])).toBe(0);
    expect(zScore(5, [1, 2, 3, 4, 5])).toBeCloseTo(2 / Math.sqrt(2), 12);
    expect(zScore(1, [2, 2, 2])).toBeNull();
    expect(zScore(1, [2])).toBeNull();
    expect(sentimentOf(0.0003)).toEqual({ score: 50, label: 'strongly_bullish' });
    expect(sentimentOf(0.0001)).toEqual({ score: 0, label: 'neutral' });
    expect(sentimentOf(0.00004)).toEqual({ score: -15, label: 'neutral' });
    expect(sentimentOf(0.0000398)).toEqual({ score: -15.05, label: 'bearish' });
    expect(sentimentOf(0.00016)).toEqual({ score: 15, label: 'neutral' });
    expect(sentimentOf(0.0002)).toEqual({ score: 25, label: 'bullish' });
    expect(sentimentOf(-0.0001)).toEqual({ score: -50, label: 'strongly_bearish' });
    expect(sentimentOf(0.01)).toEqual({ score: 100, label: 'strongly_bullish' });
  });

  it('scores squeeze risk from its four components', () => {
    // Crowded longs: z 2.4 → 40 × 0.8 = 32; ΔOI 10 % → 25 × 0.5 = 12.5; premium 0.002 → 15 × 0.4 = 6; L/S 1.5 → 20 ×
    // 0.5 = 10.
    expect(
      assessSqueeze({
        fundingRate8h: 0.001,
        fundingZScore: 2.4,
        openInterestChange24hPercent: 10,
        premium: 0.002,
        longShortRatio: 1.5,
      }),
    ).toEqual({
      score: 60.5,
      direction: 'long_squeeze',
      components: { funding: 32, openInterest: 12.5, premium: 6, longShort: 10 },
    });
    // Crowded shorts without history: APR −0.0003 × 1095 = −0.3285 → 40 × 0.3285 = 13.14; falling OI → 0;
    // |premium| 0.006 caps at 15; L/S 0.85 → 20 × 0.15 / 0.3 = 10.
    expect(
      assessSqueeze({
        fundingRate8h: -0.0003,
        fundingZScore: null,
        openInterestChange24hPercent: -5,
        premium: -0.006,
        longShortRatio: 0.85,
      }),
    ).toEqual({
      score: 38.14,
      direction: 'short_squeeze',
      components: { funding: 13.14, openInterest: 0, premium: 15, longShort: 10 },
    });
    // Baseline funding is not "very" positive: no direction, whatever the score.
    expect(
      assessSqueeze({
        fundingRate8h: 0.0001,
        fundingZScore: 1,
        openInterestChange24hPercent: 40,
        premium: null,
        longShortRatio: null,
      }),
    ).toEqual({
      score: 38.33,
      direction: 'none',
      components: { funding: 13.33, openInterest: 25, premium: 0, longShort: 0 },
    });
    // A z-score of 2 is "very" even at a modest APR; −2 with negative funding is a short squeeze.
    expect(
      assessSqueeze({
        fundingRate8h: 0.00015,
        fundingZScore: 2,
        openInterestChange24hPercent: null,
        premium: null,
        longShortRatio: null,
      }).direction,
    ).toBe('long_squeeze');
    expect(
      assessSqueeze({
        fundingRate8h: -0.00002,
        fundingZScore: -2.1,
        openInterestChange24hPercent: null,
        premium: null,
        longShortRatio: null,
      }).direction,
    ).toBe('short_squeeze');
    // Everything at its cap sums to 100.
    expect(
      assessSqueeze({
        fundingRate8h: 0.01,
        fundingZScore: 9,
        openInterestChange24hPercent: 90,
        premium: 0.05,
        longShortRatio: 4,
      }).score,
    ).toBe(100);
  });

  it('writes USD figures as plain decimal strings', () => {
    expect(usd(95_010.123456, 'price')).toBe('95010.123');
    expect(usd(1.5, 'price')).toBe('1.5');
    expect(usd(0.0000000123456, 'price')).toBe('0.0000000123456');
    expect(usd(9_501_000_000)).toBe('9501000000');
    expect(usd(1234.5678)).toBe('1234.57');
    expect(usd(0)).toBe('0');
  });
});
