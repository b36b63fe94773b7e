import { facilitator, type DiscoverySettlement } from '@agent-economy/contracts';
import { createServiceClient } from '@agent-economy/sdk';
import type { Logger } from 'pino';

// The console's copy of the facilitator's settlement feed (GET /discovery/settlements): followed with its cursor,
// kept as the most recent settlements (for the live list) and as per-minute totals by seller and by route (for the
// charts), so memory stays bounded however long the economy runs.

const PAGE = 500;
const RECENT = 200;
const MINUTE = 60_000;
/** Per-minute totals are kept this long: the longest chart window. */
const KEEP_MS = 24 * 60 * MINUTE;

/** A settlement as the console shows it: the feed's fields, with the seller and route named. */
export interface ConsoleSettlement extends DiscoverySettlement {
  /** The deployment's service id paid, or null for a seller outside the deployment. */
  seller: string | null;
  /** The paid route's path (or the settlement kind when the feed has no resource: charges, sessions). */
  route: string;
}

interface Totals {
  calls: number;
  /** Atomic units: money is counted as bigint and sent as a decimal string. */
  volume: bigint;
}

type Group = 'seller' | 'route';

export interface SeriesWindow {
  /** Bucket width in minutes. */
  bucketMinutes: number;
  buckets: number;
}

export const WINDOWS: Record<string, SeriesWindow> = {
  '1h': { bucketMinutes: 1, buckets: 60 },
  '24h': { bucketMinutes: 60, buckets: 24 },
};

export interface Series {
  group: Group;
  window: string;
  bucketMinutes: number;
  /** ISO start of each bucket, oldest first. */
  starts: string[];
  /** One line per key (seller id or route), the busiest first: calls and atomic volume per bucket. */
  lines: { key: string; calls: number[]; volume: string[]; totalCalls: number; totalVolume: string }[];
}

export interface SettlementFeedOptions {
  facilitatorUrl: string;
  /** Service id by wallet address, to name sellers. */
  sellers: ReadonlyMap<string, string>;
  /** Service id by origin (http://host:port), to name routes. */
  origins: ReadonlyMap<string, string>;
  logger: Logger;
  pollMs?: number;
  now?: () => number;
}

export function settlementFeed(options: SettlementFeedOptions) {
  const client = createServiceClient(facilitator, options.facilitatorUrl.replace(/\/+$/, ''), {
    payments: false,
    maxRetries: 0,
    timeoutMs: 10_000,
  });
  const now = options.now ?? Date.now;
  const recent: ConsoleSettlement[] = [];
  const minutes = new Map<number, { seller: Map<string, Totals>; route: Map<string, Totals> }>();
  const allTime = { calls: 0, volume: 0n };
  const listeners = new Set<(s: ConsoleSettlement) => void>();
  let cursor: string | undefined;
  let lastError: string | null = null;
  let polling: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  const name = (s: DiscoverySettlement): ConsoleSettlement => {
    let route: string = s.kind;
    let service: string | undefined;
    if (s.resource) {
      try {
        const url = new URL(s.resource);
        service = options.origins.get(url.origin);
        route = `${service ?? url.host}${url.pathname}`;
      } catch {
        route = s.resource;
      }
    }
    return { ...s, seller: options.sellers.get(s.payTo) ?? null, route };
  };

  const add = (bucket: Map<string, Totals>, key: string, amount: bigint) => {
    const totals = bucket.get(key) ?? { calls: 0, volume: 0n };
    totals.calls += 1;
    totals.volume += amount;
    bucket.set(key, totals);
  };

  function record(settlement: ConsoleSettlement) {
    const amount = BigInt(settlement.amount);
    allTime.calls += 1;
    allTime.volume += amount;
    const at = Date.parse(settlement.settledAt);
    const minute = Math.floor(at / MINUTE) * MINUTE;
    if (minute >= now() - KEEP_MS) {
      const bucket = minutes.get(minute) ?? { seller: new Map(), route: new Map() };
      add(bucket.seller, settlement.seller ?? settlement.payTo, amount);
      add(bucket.route, settlement.route, amount);
      minutes.set(minute, bucket);
    }
    recent.push(settlement);
    if (recent.length > RECENT) recent.splice(0, recent.length - RECENT);
    for (const listener of listeners) listener(settlement);
  }

  async function poll(): Promise<void> {
    for (;;) {
      const page = await client.settlements({ query: { ...(cursor ? { after: cursor } : {}), limit: PAGE } });
      for (const s of page.settlements) record(name(s));
      if (page.nextCursor) cursor = page.nextCursor;
      if (page.settlements.length < PAGE) break;
    }
    const horizon = now() - KEEP_MS;
    for (const minute of minutes.keys()) if (minute < horizon) minutes.delete(minute);
  }

  /**
   * Reads what is new; concurrent callers share one read. A facilitator that does not answer is reported, not thrown.
   */
  function refresh(): Promise<void> {
    polling ??= poll()
      .then(() => {
        lastError = null;
      })
      .catch((error: unknown) => {
        if (lastError === null) options.logger.warn({ err: error }, 'console: the settlement feed does not answer');
        lastError = (error as Error).message || 'the facilitator does not answer';
      })
      .finally(() => {
        polling = undefined;
      });
    return polling;
  }

  const loop = async () => {
    await refresh();
    if (!stopped) timer = setTimeout(loop, options.pollMs ?? 1000);
  };

  return {
    start(): void {
      void loop();
    },
    refresh,
    stop(): void {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
    /** Called with each new settlement, in feed order; returns the unsubscribe. */
    subscribe(listener: (s: ConsoleSettlement) => void): () => void {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    recent(limit = 50): ConsoleSettlement[] {
      return recent.slice(-limit).reverse();
    },
    status() {
      return { calls: allTime.calls, volume: allTime.volume.toString(), cursor: cursor ?? null, error: lastError };
    },
    series(group: Group, window: string, maxLines = 6): Series {
      const shape = WINDOWS[window] ?? WINDOWS['1h']!;
      const width = shape.bucketMinutes * MINUTE;
      const end = Math.floor(now() / width) * width + width;
      const start = end - shape.buckets * width;
      const perKey = new Map<string, { calls: number[]; volume: bigint[]; totalCalls: number; totalVolume: bigint }>();
      for (const [minute, bucket] of minutes) {
        if (minute < start || minute >= end) continue;
        const index = Math.floor((minute - start) / width);
        for (const [key, totals] of bucket[group]) {
          const line = perKey.get(key) ?? {
            calls: Array(shape.buckets).fill(0),
            volume: Array(shape.buckets).fill(0n),
            totalCalls: 0,
            totalVolume: 0n,
          };
          line.calls[index]! += totals.calls;
          line.volume[index]! += totals.volume;
          line.totalCalls += totals.calls;
          line.totalVolume += totals.volume;
          perKey.set(key, line);
        }
      }
      // The busiest keys by volume (then calls) get their own line; the rest are summed as "other".
      const ranked = [...perKey.entries()].sort(([ka, a], [kb, b]) =>
        b.totalVolume > a.totalVolume
          ? 1
          : b.totalVolume < a.totalVolume
            ? -1
            : b.totalCalls - a.totalCalls || ka.localeCompare(kb),
      );
      const shown = ranked.slice(0, maxLines);
      const rest = ranked.slice(maxLines);
      if (rest.length > 0) {
        const other = {
          calls: Array(shape.buckets).fill(0) as number[],
          volume: Array(shape.buckets).fill(0n) as bigint[],
          totalCalls: 0,
          totalVolume: 0n,
        };
        for (const [, line] of rest) {
          line.calls.forEach((c, i) => (other.calls[i]! += c));
          line.volume.forEach((v, i) => (other.volume[i]! += v));
          other.totalCalls += line.totalCalls;
          other.totalVolume += line.totalVolume;
        }
        shown.push([`${rest.length} other`, other]);
      }
      return {
        group,
        window: WINDOWS[window] ? window : '1h',
        bucketMinutes: shape.bucketMinutes,
        starts: Array.from({ length: shape.buckets }, (_, i) => new Date(start + i * width).toISOString()),
        lines: shown.map(([key, line]) => ({
          key,
          calls: line.calls,
          volume: line.volume.map(String),
          totalCalls: line.totalCalls,
          totalVolume: line.totalVolume.toString(),
        })),
      };
    },
  };
}

export type SettlementFeed = ReturnType<typeof settlementFeed>;
