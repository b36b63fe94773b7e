// An in-process closed-loop load generator: `concurrency` workers each call `fn` back to back for
// `seconds`; the rate counts completed calls, the latencies are per call. A failed call stops the run.

export interface LoadResult {
  calls: number;
  seconds: number;
  perSecond: number;
  p50Ms: number;
  p95Ms: number;
}

/** A run's calls one by one: what `interleave` adds up over rounds. */
export interface Segment {
  calls: number;
  seconds: number;
  /** Each measured call's latency, ms. */
  times: number[];
  /** Calls made before the measured ones (warm-up): they cost CPU too. */
  warmupCalls: number;
}

export async function load(
  fn: (worker: number) => Promise<unknown>,
  options: { concurrency: number; seconds: number; warmup?: boolean },
): Promise<LoadResult & Segment> {
  // Warm-up (on by default): twice the concurrency in calls before the measured ones.
  const warmup = options.warmup === false ? 0 : options.concurrency * 2;
  for (let i = 0; i < warmup; i += options.concurrency) {
    await Promise.all(Array.from({ length: Math.min(options.concurrency, warmup - i) }, (_, w) => fn(w)));
  }
  const times: number[] = [];
  const started = performance.now();
  const until = started + options.seconds * 1000;
  await Promise.all(
    Array.from({ length: options.concurrency }, async (_, w) => {
      while (performance.now() < until) {
        const t = performance.now();
        await fn(w);
        times.push(performance.now() - t);
      }
    }),
  );
  const segment = { calls: times.length, seconds: (performance.now() - started) / 1000, times, warmupCalls: warmup };
  return { ...summary([segment]), ...segment };
}

/** Segments of one kind of call taken together: their rate and latency percentiles. */
export function summary(segments: Segment[]): LoadResult {
  const times = segments.flatMap((s) => s.times).sort((a, b) => a - b);
  const seconds = segments.reduce((sum, s) => sum + s.seconds, 0);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? NaN;
  return { calls: times.length, seconds, perSecond: times.length / seconds, p50Ms: at(0.5), p95Ms: at(0.95) };
}

/**
 * Runs each side `rounds` times for `seconds / rounds`, one side after another, the order rotated by one each round
 * (so over as many rounds as sides each side runs once in each place). A shared machine's speed drifts by a fifth over
 * minutes: run one after the other in one block each, two sides are measured on different machines. Interleaved, the
 * drift falls on every side alike, so their ratio holds. Only a side's first segment warms up.
 */
export async function interleave(
  sides: Record<string, (seconds: number, warmup: boolean) => Promise<unknown>>,
  options: { seconds: number; rounds: number },
): Promise<void> {
  const order = Object.keys(sides);
  for (let round = 0; round < options.rounds; round++) {
    for (let i = 0; i < order.length; i++)
      await sides[order[(i + round) % order.length]!]!(options.seconds / options.rounds, round === 0);
  }
}

/** Runs `fn` `total` times with `concurrency` in flight; resolves with the elapsed seconds. */
export async function runCount(
  total: number,
  concurrency: number,
  fn: (i: number) => Promise<unknown>,
): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < total; i = next++) await fn(i);
    }),
  );
  return (performance.now() - started) / 1000;
}
