import { unavailable } from './errors';

// Whether a dependency answers, checked at most every few seconds and shared by every request: a service
// does not quote a price while the facilitator that would settle the payment is unreachable, and /health
// names each dependency. The check is cached so a flood of quotes costs the facilitator one call per window.

export type DependencyState = 'ok' | 'unreachable';

export interface Probe {
  /** The dependency's state, checked again when the cached answer is older than its window. */
  state(): Promise<DependencyState>;
  /** Throws 503 payments_unavailable (Retry-After) when the dependency does not answer. */
  ensure(): Promise<void>;
  /** Duration of the last check in milliseconds (undefined before the first), for /health. */
  latencyMs(): number | undefined;
}

export interface ProbeOptions {
  /** How long an answer is trusted: a success 5 s, a failure 2 s (so recovery is seen quickly). */
  okMs?: number;
  failMs?: number;
  /** What the 503 says is unreachable. */
  what: string;
  now?: () => number;
}

/** A cached probe around `check`, which resolves when the dependency answers and throws when not. */
export function probe(check: () => Promise<void>, options: ProbeOptions): Probe {
  const now = options.now ?? Date.now;
  const okMs = options.okMs ?? 5_000;
  const failMs = options.failMs ?? 2_000;
  let current: { state: DependencyState; at: number; latencyMs: number } | undefined;
  let inflight: Promise<DependencyState> | undefined;

  async function refresh(): Promise<DependencyState> {
    let state: DependencyState;
    const started = performance.now();
    try {
      await check();
      state = 'ok';
    } catch {
      state = 'unreachable';
    }
    current = { state, at: now(), latencyMs: Math.round((performance.now() - started) * 10) / 10 };
    return state;
  }

  async function state(): Promise<DependencyState> {
    if (current && now() - current.at < (current.state === 'ok' ? okMs : failMs)) return current.state;
    inflight ??= refresh().finally(() => {
      inflight = undefined;
    });
    return inflight;
  }

  return {
    state,
    latencyMs: () => current?.latencyMs,
    async ensure() {
      if ((await state()) === 'ok') return;
      throw unavailable(
        'payments_unavailable',
        `${options.what} does not answer, so no payment could be settled now; nothing was quoted or charged`,
        Math.ceil(failMs / 1000) + 1,
      );
    },
  };
}

/** The x402 facilitator answers GET /supported (within 3 s). */
export function facilitatorProbe(facilitatorUrl: string): Probe {
  const root = facilitatorUrl.replace(/\/+$/, '');
  return probe(
    async () => {
      const response = await fetch(`${root}/supported`, { signal: AbortSignal.timeout(3_000) });
      await response.body?.cancel();
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
    },
    { what: `the facilitator at ${root}` },
  );
}
