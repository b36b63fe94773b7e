// An in-process closed-loop load generator: `concurrency` workers each call `fn` back to back for
// `seconds`; the rate counts completed calls, the latencies are per call. A failed call stops the run.

export interface LoadResult {
  calls: number;
  seconds: number;
  perSecond: number;
  p50Ms: number;
  p95Ms: number;
}

export async function load(
  fn: (worker: number) => Promise<unknown>,
  options: { concurrency: number; seconds: number; warmupCalls?: number },
): Promise<LoadResult> {
  const warmup = options.warmupCalls ?? options.concurrency * 2;
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
  const seconds = (performance.now() - started) / 1000;
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? NaN;
  return { calls: times.length, seconds, perSecond: times.length / seconds, p50Ms: at(0.5), p95Ms: at(0.95) };
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
