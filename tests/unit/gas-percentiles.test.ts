import { describe, expect, it } from 'vitest';
import { feePercentiles, lamportsToSol } from '../../servers/src/services/gas/domain';

describe('nearest-rank percentiles', () => {
  it('match the textbook vectors', () => {
    // Nearest-rank method: for 15, 20, 35, 40, 50 the 30th percentile is 20, the 40th 20, the 50th 35, the 100th 50.
    expect(feePercentiles([50, 15, 40, 20, 35])).toEqual({ p0: 15, p25: 20, p50: 35, p75: 40, p95: 50, p100: 50 });
    // 3, 6, 7, 8, 8, 10, 13, 15, 16, 20: the 25th percentile is 7, the 50th 8, the 75th 15, the 100th 20.
    expect(feePercentiles([3, 6, 7, 8, 8, 10, 13, 15, 16, 20])).toEqual({
      p0: 3,
      p25: 7,
      p50: 8,
      p75: 15,
      p95: 20,
      p100: 20,
    });
    expect(feePercentiles([])).toEqual({ p0: 0, p25: 0, p50: 0, p75: 0, p95: 0, p100: 0 });
  });

  it('turn lamports into SOL strings exactly', () => {
    expect(lamportsToSol(15_000n)).toBe('0.000015');
    expect(lamportsToSol(1_000_000_000n)).toBe('1');
    expect(lamportsToSol(1_234_567_891n)).toBe('1.234567891');
    expect(lamportsToSol(0n)).toBe('0');
  });
});
