import { describe, expect, it } from 'vitest';
import { usdToAtomic } from '@agent-economy/contracts';
import { bm25, floorOf, tokenize } from '../../servers/src/services/knowledge-market/domain';

describe('domain', () => {
  it('rounds the floor up to the next 0.000001', () => {
    expect(floorOf(usdToAtomic('0.5'), 20)).toBe(400_000n);
    expect(floorOf(usdToAtomic('0.333333'), 20)).toBe(266_667n); // 0.2666664 rounded up
    expect(floorOf(usdToAtomic('1'), 0)).toBe(1_000_000n);
  });

  it('scores BM25 as the formula says', () => {
    expect(tokenize('Fee-Estimation, Solana!')).toEqual(['fee', 'estimation', 'solana']);
    // N = 2, n(c) = 1: idf = ln(1 + 1.5 / 1.5) = ln 2; avgdl = 2.5; f = 2, |d| = 3.
    const [a, b] = bm25(
      ['c'],
      [
        ['a', 'b'],
        ['b', 'c', 'c'],
      ],
    );
    expect(a).toBe(0);
    expect(b).toBeCloseTo((Math.LN2 * 2 * 2.2) / (2 + 1.2 * (0.25 + (0.75 * 3) / 2.5)), 12);
  });
});
