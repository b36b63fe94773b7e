import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { EntropyStream, drawInt, drawShuffle } from '../../servers/src/services/entropy/domain';
import { TWO_32, refReader } from '../support/entropy-reference';

describe('the algorithm against known vectors (research/domain.md §7)', () => {
  const key = createHash('sha256').update('example-seed').digest();

  it('the stream, its words and uniform(6) give the published values', () => {
    expect(key.toString('hex')).toBe('cd139b161afd30dee3e1924f98dbae55ed2206c803f2a1dff5f4b6b62ce0d9f7');
    const stream = new EntropyStream(key, 'draw');
    expect(stream.bytes(8).toString('hex')).toBe('c6c828b5976ff18b');
    const words = new EntropyStream(key, 'draw');
    expect(Array.from({ length: 5 }, () => words.word())).toEqual([
      3335006389, 2540695947, 1069666157, 1893608054, 10333973,
    ]);
    const dice = new EntropyStream(key, 'draw');
    expect(Array.from({ length: 10 }, () => dice.uniform(6))).toEqual([1, 3, 5, 2, 5, 4, 0, 1, 1, 1]);
    // and the test's own reference agrees with the vectors, so it can judge the service
    const ref = refReader(key, 'draw');
    expect(Array.from({ length: 10 }, () => ref.uniform(6))).toEqual([1, 3, 5, 2, 5, 4, 0, 1, 1, 1]);
  });

  it('Fisher-Yates of 0..9 over the "shuffle" stream gives the published order', () => {
    const result = drawShuffle(key, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(result.shuffled).toEqual([2, 1, 5, 3, 9, 4, 0, 6, 7, 8]);
    expect(result.permutation).toEqual([2, 1, 5, 3, 9, 4, 0, 6, 7, 8]);
    expect(result.derivation).toMatchObject({ label: 'shuffle', wordsDrawn: 9, blocksUsed: 1 });
  });

  it('rejection sampling rejects exactly the words at or above floor(2^32 / n) × n', () => {
    const n = 2 ** 31 + 1; // limit = n: nearly half of all words are rejected
    let seen = 0;
    for (let i = 0; seen < 3 && i < 200; i++) {
      const seed = createHash('sha512').update(`rejection-${i}`).digest();
      const ref = refReader(seed, 'int');
      const value = ref.uniform(n);
      if (ref.rejections() === 0) continue;
      seen++;
      const drawn = drawInt(seed, 10, 10 + n - 1);
      expect(drawn.value).toBe(10 + value);
      expect(drawn.derivation.rawWords).toEqual(ref.words);
      expect(drawn.derivation.rejections).toBe(ref.rejections());
      expect(drawn.derivation.rawWords.slice(0, -1).every((w) => w >= n)).toBe(true);
      expect(drawn.derivation.rawWords.at(-1)!).toBeLessThan(n);
    }
    expect(seen).toBe(3);
    // at the limits: a range of one draws one word and answers it; the full 2^32 range never rejects
    const seed = createHash('sha512').update('limits').digest();
    expect(drawInt(seed, 7, 7)).toMatchObject({ value: 7, derivation: { wordsDrawn: 1, rejections: 0 } });
    const full = drawInt(seed, -(2 ** 31), 2 ** 31 - 1);
    expect(full.value).toBe(-(2 ** 31) + full.derivation.rawWords[0]!);
    // uniform(n) for n outside [1, 2^32] is a programming error, never an answer
    const stream = new EntropyStream(seed, 'x');
    expect(() => stream.uniform(0)).toThrow(RangeError);
    expect(() => stream.uniform(TWO_32 + 1)).toThrow(RangeError);
  });
});
