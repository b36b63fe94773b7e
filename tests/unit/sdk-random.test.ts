import { describe, expect, it } from 'vitest';
import { randomHex } from '../../sdk/src/random';

// Trace ids, memos, payment identifiers and nonces come from one pool of random bytes: each byte is handed out once,
// across refills, and ids never repeat.
describe('SDK randomHex', () => {
  it('gives lowercase hex of the asked length, and no id twice across many refills of the pool', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 6000; i++) {
      const id = randomHex(i % 3 === 0 ? 8 : 16);
      expect(id).toMatch(i % 3 === 0 ? /^[0-9a-f]{16}$/ : /^[0-9a-f]{32}$/);
      seen.add(id);
    }
    expect(seen.size).toBe(6000);
    // A draw that does not fit what is left of the pool takes fresh bytes, whole.
    expect(randomHex(4096)).toMatch(/^[0-9a-f]{8192}$/);
    expect(randomHex(4000)).not.toBe(randomHex(4000));
    // Anything else is refused, never padded with "undefined".
    for (const bad of [0, 4097, 1.5, NaN]) expect(() => randomHex(bad)).toThrow(RangeError);
  });

  it('draws on every byte value', () => {
    const counts = new Map<string, number>();
    const hex = Array.from({ length: 64 }, () => randomHex(1024)).join('');
    for (let i = 0; i < hex.length; i += 2) counts.set(hex.slice(i, i + 2), (counts.get(hex.slice(i, i + 2)) ?? 0) + 1);
    // 65,536 bytes: every one of the 256 values turns up, none far from its expected 256.
    expect(counts.size).toBe(256);
    expect(Math.min(...counts.values())).toBeGreaterThan(150);
    expect(Math.max(...counts.values())).toBeLessThan(380);
  });
});
