import type { DataSource, UpstreamStatus } from '@agent-economy/contracts';
import { HttpError } from '../runtime/errors';

/** A provider failed; handlers let it propagate so the caller gets 502 upstream_unavailable and is not charged. */
export function upstreamUnavailable(provider: string, cause: unknown, retryAfterSeconds = 5): HttpError {
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new HttpError(
    502,
    'upstream_unavailable',
    `The upstream provider ${provider} did not answer: ${reason}`,
    { provider },
    {
      'retry-after': String(retryAfterSeconds),
    },
  );
}

/**
 * The upstream providers of one data service: every read goes through `call`, which records the outcome for
 * the health route and turns a provider's failure into 502 upstream_unavailable. Errors a handler raises on
 * purpose (an HttpError, e.g. 404 for an unknown account) pass through and count as the provider answering.
 */
export class UpstreamTracker {
  private readonly statuses = new Map<string, UpstreamStatus>();
  /** Duration of the last call to each provider, for the health route's latencyMs. */
  private readonly latencies = new Map<string, number>();

  constructor(
    readonly mode: DataSource['mode'],
    providers: readonly string[],
  ) {
    for (const name of providers) this.statuses.set(name, { name, status: 'unknown', lastSuccessAt: null });
  }

  async call<T>(provider: string, read: () => Promise<T>): Promise<T> {
    const status = this.statuses.get(provider) ?? { name: provider, status: 'unknown' as const, lastSuccessAt: null };
    this.statuses.set(provider, status);
    const started = performance.now();
    try {
      const value = await read();
      status.status = 'ok';
      status.lastSuccessAt = new Date().toISOString();
      return value;
    } catch (error) {
      if (error instanceof HttpError) {
        status.status = 'ok';
        status.lastSuccessAt = new Date().toISOString();
        throw error;
      }
      status.status = 'failing';
      throw upstreamUnavailable(provider, error);
    } finally {
      this.latencies.set(provider, Math.round((performance.now() - started) * 10) / 10);
    }
  }

  /** The `source` of a response built from these providers' data, read now. */
  source(providers: readonly string[], asOf: Date = new Date()): DataSource {
    return { mode: this.mode, providers: [...providers], asOf: asOf.toISOString() };
  }

  /**
   * Each provider's last outcome and the duration of its last call, for the runtime's health route (runtime/health.ts).
   */
  providers(): (UpstreamStatus & { latencyMs: number | null })[] {
    return [...this.statuses.values()].map((s) => ({ ...s, latencyMs: this.latencies.get(s.name) ?? null }));
  }
}
