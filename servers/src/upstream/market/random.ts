// Counter-based deterministic randomness: every draw is a hash of (key, index), so any value of the
// simulation can be computed on its own, at any time, by any replica, without replaying a sequence.

/** 32-bit FNV-1a of a string, then avalanche-mixed: the key of a named random stream. */
export function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return mix32(h);
}

/** The murmur3 finalizer: a bijective avalanche on 32 bits. */
export function mix32(x: number): number {
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}

/** A stream key derived from a parent key and a label (a sub-stream), without string work at draw time. */
export function subKey(key: number, label: number): number {
  return mix32((key ^ Math.imul(label + 0x9e3779b9, 0x27d4eb2f)) >>> 0);
}

/** Uniform in (0, 1) from a key and an integer index (any safe integer, negative included). */
export function uniform(key: number, index: number): number {
  const lo = index % 4294967296;
  const hi = Math.floor(index / 4294967296);
  const h = mix32((mix32((key ^ lo) >>> 0) + Math.imul(hi + 1, 0x9e3779b1)) >>> 0);
  return (h + 0.5) / 4294967296;
}

/** Standard normal from a key and an index (Box-Muller over two independent uniforms). */
export function gaussian(key: number, index: number): number {
  const u1 = uniform(key, index);
  const u2 = uniform(key ^ 0x5bd1e995, index);
  return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
}

export const MS_PER_YEAR = 365.25 * 86_400_000;

/**
 * Multi-scale noise: at each scale a grid of independent standard normals, linearly interpolated, with
 * amplitudes given per scale. With amplitude c·sqrt(scale in years) at scales in ratio 4 (c ≈ 0.726, measured
 * so that realised volatility matches), the increments over horizons between the smallest and largest scale
 * have variance ≈ Δt (years): Brownian
 * motion locally, while the value itself stays stationary (it reverts beyond the largest scale). A pure
 * function of time: O(number of scales) per value.
 */
export class ScaleNoise {
  private readonly offsets: number[];
  private readonly keys: number[];

  constructor(
    key: number,
    private readonly scalesMs: readonly number[],
    private readonly amplitudes: readonly number[],
  ) {
    // Each scale's grid is shifted by a random phase so that grid nodes of different scales do not line up.
    this.keys = scalesMs.map((_, i) => subKey(key, i + 1));
    this.offsets = scalesMs.map((s, i) => uniform(this.keys[i]!, -1) * s);
  }

  at(timeMs: number): number {
    let sum = 0;
    for (let i = 0; i < this.scalesMs.length; i++) {
      const x = (timeMs + this.offsets[i]!) / this.scalesMs[i]!;
      const n = Math.floor(x);
      const f = x - n;
      const a = gaussian(this.keys[i]!, n);
      const b = gaussian(this.keys[i]!, n + 1);
      sum += this.amplitudes[i]! * (a + (b - a) * f);
    }
    return sum;
  }
}

/** Scales in ratio 4 from `smallestMs`, `count` of them. */
export function geometricScales(smallestMs: number, count: number): number[] {
  return Array.from({ length: count }, (_, i) => smallestMs * 4 ** i);
}

/** Brownian-calibrated amplitudes (unit annual volatility) for the given scales. */
export function brownianAmplitudes(scalesMs: readonly number[]): number[] {
  const c = 0.726;
  return scalesMs.map((s) => c * Math.sqrt(s / MS_PER_YEAR));
}

/** Equal amplitudes normalised so that the sum has unit stationary standard deviation (a mean-reverting process). */
export function stationaryAmplitudes(scalesMs: readonly number[]): number[] {
  // Linear interpolation of unit normals has variance (1 - 2f + 2f²) averaging 2/3 over a cell.
  const each = 1 / Math.sqrt(scalesMs.length * (2 / 3));
  return scalesMs.map(() => each);
}

/**
 * Mulberry32: a small, fast sequential 32-bit generator of uniform [0, 1) numbers; the same seed gives the
 * same stream. For reproducible draws that are consumed in order (a simulation run, a sampling analysis).
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
