import { describe, expect, it } from 'vitest';
import { cusumChangePoint, welch } from '../../servers/src/services/cognition/domain';
import { incompleteBeta, studentTwoSidedP } from '../../servers/src/services/cognition/stats';

describe('numerical building blocks', () => {
  it('Student t two-sided p-values at table critical values', () => {
    expect(studentTwoSidedP(2.228138852, 10)).toBeCloseTo(0.05, 8); // t(0.975, 10)
    expect(studentTwoSidedP(12.70620474, 1)).toBeCloseTo(0.05, 8); // t(0.975, 1)
    expect(studentTwoSidedP(3.169272673, 10)).toBeCloseTo(0.01, 8); // t(0.995, 10)
    expect(studentTwoSidedP(0, 7)).toBe(1);
    expect(incompleteBeta(0.5, 2, 3)).toBeCloseTo(0.6875, 12); // I_0.5(2, 3) = 11/16
  });

  it('Welch t and a CUSUM signal on a hand-sized series', () => {
    // a = [1, 2, 3], b = [4, 5, 6]: both variances 1, se = sqrt(2/3), t = 3 / 0.816497 = 3.674235, df = 4
    const w = welch([1, 2, 3], [4, 5, 6]);
    expect(w.t).toBeCloseTo(3.674235, 5);
    expect(w.df).toBeCloseTo(4, 10);
    expect(w.p).toBeCloseTo(0.021311641, 6); // scipy.stats.ttest_ind(equal_var=False)
    // target 0, σ 1: k = 0.5, h = 5; upper sums 0.5, 1.0, 1.5, … exceed 5 at the 11th point (index 10)
    expect(cusumChangePoint(Array(20).fill(1), 0, 1)).toBe(10);
    expect(cusumChangePoint(Array(20).fill(0.2), 0, 1)).toBeNull();
  });
});
