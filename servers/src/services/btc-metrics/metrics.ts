import {
  BTC_CACHE_TTL_SECONDS,
  type BtcCacheInfo,
  type BtcCycleInterpretation,
  type BtcDailyMetrics,
  type BtcDateRange,
  type DataSource,
} from '@agent-economy/contracts';
import { z } from 'zod';
import type { AiTask, Reasoner } from '../../ai';
import { notFound } from '../../runtime/errors';
import { addDays, cyclePhase, cycleSummary, dailyMetrics, dayOf, signalsOf } from './domain';
import type { MetricsSource, SeriesRead } from './sources';

/** A cached answer and when it was read from upstream. */
interface Entry<T> {
  value: T;
  cachedAt: number;
  expiresAt: number;
}

/**
 * The in-memory result cache (spec: 1 hour). Keys are the request (a date, a range, latest); concurrent misses
 * on one key share one upstream read; failures and incomplete answers are not kept.
 */
export class ResultCache {
  private readonly entries = new Map<string, Entry<unknown>>();
  private readonly pending = new Map<
    string,
    Promise<Entry<unknown> | { value: unknown; uncached: true; at: number }>
  >();

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number,
    private readonly maxEntries = 1000,
  ) {}

  async get<T>(
    key: string,
    load: () => Promise<{ value: T; keep: boolean }>,
  ): Promise<{ value: T; cache: BtcCacheInfo }> {
    const now = this.now();
    const kept = this.entries.get(key);
    if (kept && kept.expiresAt > now) return { value: kept.value as T, cache: this.info(kept, true) };
    let flight = this.pending.get(key);
    if (!flight) {
      flight = (async () => {
        const at = this.now();
        const { value, keep } = await load();
        if (!keep) return { value, uncached: true as const, at };
        const entry = { value, cachedAt: at, expiresAt: at + this.ttlMs };
        this.store(key, entry);
        return entry;
      })().finally(() => this.pending.delete(key));
      this.pending.set(key, flight);
    }
    const result = await flight;
    if ('uncached' in result)
      return {
        value: result.value as T,
        cache: this.info({ cachedAt: result.at, expiresAt: result.at + this.ttlMs }, false),
      };
    return { value: result.value as T, cache: this.info(result, false) };
  }

  private store(key: string, entry: Entry<unknown>) {
    const now = this.now();
    for (const [k, e] of this.entries) if (e.expiresAt <= now) this.entries.delete(k);
    // Oldest first out when full (a Map iterates in insertion order).
    while (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, entry);
  }

  private info(entry: { cachedAt: number; expiresAt: number }, hit: boolean): BtcCacheInfo {
    return {
      hit,
      cachedAt: new Date(entry.cachedAt).toISOString(),
      expiresAt: new Date(entry.expiresAt).toISOString(),
    };
  }
}

/** The days of an answer and where they came from. */
export interface Answer {
  days: BtcDailyMetrics[];
  source: DataSource;
}

export interface LatestAnswer extends Answer {
  interpretation: BtcCycleInterpretation;
}

const SummarySchema = z.object({ summary: z.string().min(1).max(2000) });

/** The written reading of the latest day: the built-in template, or an LLM given the same signals. */
function interpretationTask(
  day: BtcDailyMetrics,
): AiTask<{ date: string; phase: string; signals: ReturnType<typeof signalsOf> }, { summary: string }> {
  const signals = signalsOf(day);
  const phase = cyclePhase(day);
  return {
    name: 'btc-cycle-summary',
    instructions:
      'You read bitcoin on-chain valuation metrics. Given the date, the market cycle phase and each metric with its zone ' +
      'on the standard bands, write two or three sentences on where the market stands in its cycle. Use only the figures ' +
      'given; make no price prediction. Answer as JSON {"summary": string}.',
    input: { date: day.date, phase, signals },
    output: SummarySchema,
    builtin: (input) => ({ summary: cycleSummary(input.date, phase, input.signals) }),
  };
}

export interface MetricsServiceOptions {
  source: MetricsSource;
  reasoner: Reasoner;
  /** The clock of the cache and of `asOf` (tests move it). */
  now?: () => number;
}

/** The service's reads: each through the 1-hour cache, each failing with 404 for a day outside the data. */
export function metricsService({ source, reasoner, now = Date.now }: MetricsServiceOptions) {
  const cache = new ResultCache(BTC_CACHE_TTL_SECONDS * 1000, now);

  const read = async (end: string | null, spent: { from: string | null } | null) => {
    const read: SeriesRead = await source.read(end, spent);
    return {
      days: dailyMetrics(read.market, read.spent),
      read,
      source: source.tracker.source(read.providers, new Date(now())),
    };
  };
  /** 404 naming the data's first and latest day (read in full when the request's read ended before the data began). */
  const outside = async (days: readonly BtcDailyMetrics[], asked: string) => {
    const all = days.length > 0 ? days : (await read(null, null)).days;
    const earliest = all[0]?.date ?? null;
    const latest = all[all.length - 1]?.date ?? null;
    return notFound(
      'metrics_not_available',
      earliest
        ? `No metrics for ${asked}: the data runs from ${earliest} to ${latest}`
        : `No metrics for ${asked}: the source has no data`,
      {
        earliest,
        latest,
      },
    );
  };

  const latestDay = () =>
    cache.get<Answer>('latest', async () => {
      // SOPR of the last two weeks is enough to cover the latest day.
      const { days, read: r, source: s } = await read(null, { from: addDays(dayOf(new Date(now())), -14) });
      const day = days[days.length - 1];
      if (!day) throw await outside(days, 'the latest day');
      return { value: { days: [day], source: s }, keep: r.complete };
    });

  return {
    source,
    forDate: (date: string) =>
      cache.get<Answer>(`date:${date}`, async () => {
        const { days, read: r, source: s } = await read(date, { from: date });
        const day = days.find((d) => d.date === date);
        if (!day) throw await outside(days, date);
        return { value: { days: [day], source: s }, keep: r.complete };
      }),

    forRange: (startDate: string, endDate: string) =>
      cache.get<Answer>(`range:${startDate}:${endDate}`, async () => {
        const { days, read: r, source: s } = await read(endDate, { from: startDate });
        const inRange = days.filter((d) => d.date >= startDate && d.date <= endDate);
        if (inRange.length === 0) throw await outside(days, `${startDate} to ${endDate}`);
        return { value: { days: inRange, source: s }, keep: r.complete };
      }),

    /** The latest day (what /api/metrics answers for `{}`). */
    latestDay: () => latestDay(),

    /** The latest day with its cycle interpretation; the written summary is kept as long as the day is. */
    latest: async () => {
      const { value, cache: info } = await latestDay();
      const day = value.days[0]!;
      const interpretation = await cache.get<BtcCycleInterpretation>(
        `interpretation:${day.date}:${info.cachedAt}`,
        async () => {
          const { output, generator } = await reasoner.run(interpretationTask(day));
          return {
            value: { phase: cyclePhase(day), signals: signalsOf(day), summary: output.summary, generator },
            keep: true,
          };
        },
      );
      return { value: { ...value, interpretation: interpretation.value } as LatestAnswer, cache: info };
    },

    /** The dates each metric has data for (the first deployment's info). */
    coverage: () =>
      cache.get<BtcDateRange[]>('coverage', async () => {
        const { days, read: r } = await read(null, { from: null });
        const span = (metric: BtcDateRange['metric'], has: (d: BtcDailyMetrics) => boolean): BtcDateRange[] => {
          const withData = days.filter(has);
          return withData.length === 0
            ? []
            : [{ metric, from: withData[0]!.date, to: withData[withData.length - 1]!.date }];
        };
        const all = () => true;
        const value = [
          ...span('priceUsd', all),
          ...span('mvrv', all),
          ...span('mvrvZScore', all),
          ...span('sopr', (d) => d.sopr !== null),
          ...span('asopr', (d) => d.asopr !== null),
          ...span('nupl', all),
        ];
        return { value, keep: r.complete };
      }),
  };
}

export type MetricsService = ReturnType<typeof metricsService>;
