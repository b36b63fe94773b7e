/**
 * Reads shared for a moment: a preflight and the handler after it (or the parts of one answer) ask for the same
 * upstream value within a second, and the second asker gets the first one's promise instead of reading again. A
 * failed read is forgotten at once, so the next asker tries again.
 */
export function sharedReads(options: { ttlMs?: number; max?: number } = {}) {
  const ttlMs = options.ttlMs ?? 1_000;
  const max = options.max ?? 500;
  const recent = new Map<string, { at: number; value: Promise<unknown> }>();
  return function once<T>(key: string, read: () => Promise<T>): Promise<T> {
    const now = Date.now();
    const hit = recent.get(key);
    if (hit && now - hit.at < ttlMs) return hit.value as Promise<T>;
    const value = read();
    value.catch(() => recent.delete(key));
    recent.set(key, { at: now, value });
    if (recent.size > max) recent.delete(recent.keys().next().value!);
    return value;
  };
}
