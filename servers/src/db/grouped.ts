// One home for group commit, used by the facilitator's settlement records and the paywall's voucher updates.

/**
 * Group commit: calls made in the same turn of the event loop, or while a batch is in flight, go together in the
 * next batch, so concurrent callers (settlements, vouchers) share one query where each made its own. The turn matters
 * on PGlite: its queries run synchronously in WebAssembly, so a batch is never seen in flight there. A batch that
 * fails is run again one call at a time, so each call gets its own answer, as it would alone.
 */
export function grouped<I, O>(run: (items: I[]) => Promise<O[]>, max = 100): (item: I) => Promise<O> {
  let queue: { item: I; resolve: (value: O) => void; reject: (error: unknown) => void }[] = [];
  let running = false;
  let scheduled = false;
  const next = (): void => {
    if (running || scheduled || !queue.length) return;
    scheduled = true;
    setImmediate(flush);
  };
  const flush = (): void => {
    scheduled = false;
    if (running || !queue.length) return;
    const batch = queue.slice(0, max);
    queue = queue.slice(max);
    running = true;
    const alone = (b: (typeof batch)[number]) =>
      run([b.item]).then(
        ([value]) => b.resolve(value!),
        (error: unknown) => b.reject(error),
      );
    run(batch.map((b) => b.item))
      .then(
        (values) => batch.forEach((b, i) => b.resolve(values[i]!)),
        (error: unknown) =>
          batch.length === 1 ? batch[0]!.reject(error) : Promise.all(batch.map((b) => alone(b))).then(() => undefined),
      )
      .finally(() => {
        running = false;
        next();
      });
  };
  return (item) =>
    new Promise<O>((resolve, reject) => {
      queue.push({ item, resolve, reject });
      next();
    });
}
