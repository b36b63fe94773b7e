import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../servers/src/config';
import { decayedWeight, reportPoints, scoreOf, tierOf } from '../../servers/src/services/reputation/domain';
import { generateWallet } from '../../servers/src/solana/keys';

const DAY = 86_400_000;

describe('formulas', () => {
  it('gives the contract’s points per outcome, averaged with the rating', () => {
    expect(reportPoints('completed')).toBe(100);
    expect(reportPoints('completed', 5)).toBe(100);
    expect(reportPoints('completed', 1)).toBe(50);
    expect(reportPoints('auto_released', 3)).toBe(65);
    expect(reportPoints('dispute_won')).toBe(90);
    expect(reportPoints('dispute_split', 2)).toBe(37.5);
    expect(reportPoints('dispute_lost', 5)).toBe(50);
    expect(reportPoints('expired')).toBe(0);
  });

  it('halves a weight every 180 days and smooths toward 50 with weight 5', () => {
    const t0 = new Date('2026-01-01T00:00:00.000Z');
    expect(decayedWeight({ weight: 1, createdAt: t0 }, new Date(t0.getTime() + 180 * DAY))).toBeCloseTo(0.5, 12);
    expect(decayedWeight({ weight: 0.25, createdAt: t0 }, new Date(t0.getTime() + 360 * DAY))).toBeCloseTo(0.0625, 12);
    expect(scoreOf([], t0)).toEqual({ score: 50, totalWeight: 0 });
    // (250 + 1×100 + 0.25×0) / (5 + 1.25) = 56
    expect(
      scoreOf(
        [
          { weight: 1, points: 100, createdAt: t0 },
          { weight: 0.25, points: 0, createdAt: t0 },
        ],
        t0,
      ).score,
    ).toBeCloseTo(56, 12);
  });

  it('assigns tiers by score and trade count', () => {
    expect(tierOf(50, 0, 0)).toBe('unrated');
    expect(tierOf(99, 4, 4)).toBe('new');
    expect(tierOf(59.99, 5, 5)).toBe('bronze');
    expect(tierOf(60, 5, 5)).toBe('silver');
    expect(tierOf(75, 5, 5)).toBe('gold');
    expect(tierOf(95, 19, 19)).toBe('gold');
    expect(tierOf(90, 20, 20)).toBe('platinum');
  });

  it('reads trusted reporters from REPUTATION_TRUSTED_REPORTERS and names a bad one', () => {
    const a = generateWallet().address;
    const b = generateWallet().address;
    expect(loadConfig([], { REPUTATION_TRUSTED_REPORTERS: ` ${a}, ${b} ,` }).REPUTATION_TRUSTED_REPORTERS).toEqual([
      a,
      b,
    ]);
    expect(loadConfig([], {}).REPUTATION_TRUSTED_REPORTERS).toEqual([]);
    expect(() => loadConfig([], { REPUTATION_TRUSTED_REPORTERS: `${a},not-an-address` })).toThrow(
      /REPUTATION_TRUSTED_REPORTERS: "not-an-address" /,
    );
  });
});
