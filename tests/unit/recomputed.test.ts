import { describe, expect, it } from 'vitest';
import { recomputed } from '../../servers/src/runtime/recomputed';

describe('recomputed (figures over a table, for free routes)', () => {
  const at = (ms: number) => new Date(Date.UTC(2026, 10, 27) + ms);

  it('computes again only when the fingerprint changes, or once older than maxAgeMs (a clock set back included)', async () => {
    let computations = 0;
    const compute = async () => ++computations;
    const once = recomputed<number>({ maxAgeMs: 60_000 });
    expect(await once('3:7', at(0), compute)).toBe(1);
    expect(await once('3:7', at(59_999), compute)).toBe(1);
    expect(await once('4:8', at(59_999), compute)).toBe(2);
    expect(await once('4:8', at(120_000), compute)).toBe(3);
    expect(await once('4:8', at(60_000), compute)).toBe(4);
    // Without maxAgeMs only the fingerprint counts.
    const forever = recomputed<number>();
    expect([await forever('a', at(0), compute), await forever('a', at(1e9), compute)]).toEqual([5, 5]);
  });

  it('shares one computation among concurrent callers, and forgets a failed one', async () => {
    let calls = 0;
    let fail = true;
    const compute = async () => {
      calls++;
      await new Promise((resolve) => setTimeout(resolve, 5));
      if (fail) throw new Error('database gone');
      return calls;
    };
    const once = recomputed<number>();
    const results = await Promise.allSettled([once('f', at(0), compute), once('f', at(1), compute)]);
    expect([calls, results.map((r) => r.status)]).toEqual([1, ['rejected', 'rejected']]);
    fail = false;
    expect(await once('f', at(2), compute)).toBe(2);
    expect(await once('f', at(3), compute)).toBe(2);
  });
});
