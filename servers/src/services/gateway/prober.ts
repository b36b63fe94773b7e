import type { GatewayServiceHealth, GatewayServiceStatus } from '@agent-economy/contracts';
import type { Logger } from 'pino';
import type { GatewayStore, Probe } from './store';
import type { ConnectedId } from './upstream';
import { tracedFetch } from '../../http/tracing';

// Health monitoring: every connected service's GET /health, once per 30-second slot (one replica claims each
// slot in the database), kept 24 hours. Its clock is injected; tick() probes the current slot (tests call it).

export const PROBE_INTERVAL_SECONDS = 30;
export const WINDOW_SECONDS = 86_400;
/** A probe slower than this leaves the service degraded; one that does not answer in PROBE_TIMEOUT_MS fails. */
const SLOW_MS = 2_000;
const PROBE_TIMEOUT_MS = 5_000;
const AVAILABILITY_TARGET = 99;

export interface ProbedService {
  id: ConnectedId;
  title: string;
  url(): string;
}

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: number[], p: number): number | null {
  if (!sorted.length) return null;
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const round1 = (n: number) => Math.round(n * 10) / 10;
const round2 = (n: number) => Math.round(n * 100) / 100;

/** One service's health over the window, from its probes (oldest first). */
export function summarize(
  service: { id: ConnectedId; title: string; url: string },
  probes: Probe[],
): GatewayServiceHealth {
  const last = probes.at(-1);
  const ok = probes.filter((p) => p.ok);
  const times = ok.map((p) => p.responseMs ?? 0).sort((a, b) => a - b);
  const availability = probes.length ? round2((ok.length / probes.length) * 100) : null;
  let status: GatewayServiceStatus = 'down';
  if (last?.ok)
    status = (last.responseMs ?? 0) > SLOW_MS || (availability ?? 0) < AVAILABILITY_TARGET ? 'degraded' : 'up';
  const lastOk = ok.at(-1);
  const p50 = percentile(times, 50);
  const p95 = percentile(times, 95);
  return {
    id: service.id,
    title: service.title,
    url: service.url,
    status,
    responseTimeMs: {
      last: lastOk ? round1(lastOk.responseMs ?? 0) : null,
      p50: p50 === null ? null : round1(p50),
      p95: p95 === null ? null : round1(p95),
    },
    availabilityPercent: availability,
    checks: probes.length,
    uptimeSeconds: last?.ok ? last.uptimeSeconds : null,
    lastCheckedAt: last ? last.checkedAt.toISOString() : null,
    lastError: probes.filter((p) => !p.ok).at(-1)?.error ?? null,
  };
}

export interface Prober {
  /** Probes every service whose current slot nobody probed yet, then runs `afterTick` (queued work). */
  tick(): Promise<void>;
  /** The probes of tick() alone, for a request that wants fresh health without waiting on queued work. */
  probe(): Promise<void>;
  /** Every service's health over the window ending now. */
  health(): Promise<GatewayServiceHealth[]>;
  /** Probes every PROBE_INTERVAL_SECONDS of wall time (the process's timer; tests call tick()). */
  start(): void;
  stop(): void;
}

export function createProber(options: {
  store: GatewayStore;
  services: readonly ProbedService[];
  now: () => Date;
  logger: Logger;
  afterTick?: () => Promise<void>;
}): Prober {
  const { store, services, now, logger } = options;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;

  async function probe(service: ProbedService, slot: bigint, at: Date): Promise<void> {
    if (!(await store.claimProbe(service.id, slot, at))) return;
    const started = performance.now();
    let result: { ok: boolean; responseMs: number | null; uptimeSeconds: number | null; error: string | null };
    try {
      const response = await tracedFetch(`GET ${service.id} /health`, `${service.url()}/health`, {
        signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
      });
      const elapsed = performance.now() - started;
      const body = (await response.json().catch(() => null)) as {
        uptimeSeconds?: unknown;
        error?: { message?: unknown };
      } | null;
      const uptime =
        typeof body?.uptimeSeconds === 'number' && Number.isFinite(body.uptimeSeconds)
          ? Math.max(0, Math.round(body.uptimeSeconds))
          : null;
      result = response.ok
        ? { ok: true, responseMs: elapsed, uptimeSeconds: uptime, error: null }
        : {
            ok: false,
            responseMs: elapsed,
            uptimeSeconds: null,
            error: `HTTP ${response.status}${typeof body?.error?.message === 'string' ? `: ${body.error.message}` : ''}`,
          };
    } catch (error) {
      result = {
        ok: false,
        responseMs: null,
        uptimeSeconds: null,
        error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      };
    }
    await store.recordProbe(service.id, slot, result);
  }

  async function round(): Promise<void> {
    const at = now();
    const slot = BigInt(Math.floor(at.getTime() / (PROBE_INTERVAL_SECONDS * 1000)));
    await Promise.all(services.map((s) => probe(s, slot, at)));
    await store.pruneProbes(new Date(at.getTime() - WINDOW_SECONDS * 1000));
  }

  async function tick(): Promise<void> {
    await round();
    await options.afterTick?.();
  }

  return {
    tick,
    probe: round,
    async health() {
      const at = now();
      const probes = await store.probes(new Date(at.getTime() - WINDOW_SECONDS * 1000));
      return services.map((s) =>
        summarize(
          { id: s.id, title: s.title, url: s.url() },
          probes.filter((p) => p.service === s.id),
        ),
      );
    },
    start() {
      if (timer) return;
      const run = () => {
        // One tick at a time: a slow round is not stacked under the next.
        running ??= tick()
          .catch((error: unknown) => logger.warn({ err: error }, 'gateway probe round failed'))
          .finally(() => {
            running = undefined;
          });
      };
      // The first round one interval after start: the services of the same process are still starting now (a
      // request to /api/health or /api/ecosystem probes at once anyway).
      timer = setInterval(run, PROBE_INTERVAL_SECONDS * 1000);
      timer.unref();
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  };
}
