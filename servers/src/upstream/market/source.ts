import { UpstreamTracker, upstreamUnavailable } from '../tracker';
import { PERP_EXCHANGES, SIMULATED_VENUES, simulatedVenueOf, type PerpExchange, type PerpVenue } from './assets';
import { MarketModel } from './model';
import type { PerpQuote, PerpSnapshot, VenueRead } from './types';
import { DEFAULT_VENUE_URLS, VENUE_ADAPTERS } from './venues';

/**
 * Where the perpetual-contract data of a deployment comes from: the seeded market model, or the venues' public APIs.
 */
export interface PerpSource {
  readonly mode: 'simulated' | 'live';
  readonly tracker: UpstreamTracker;
  /** The venue ids this source answers with: real exchanges when live, neutral simulated venues otherwise. */
  readonly venues: readonly PerpVenue[];
  /** The providers a response built from `snapshot` names in its `source`. */
  providersOf(snapshot: PerpSnapshot): string[];
  /**
   * Every venue's contracts now (or, embedded only, at `at`: a page cursor pins its instant so pages agree).
   * A venue that fails is marked unavailable; when every venue fails, 502 upstream_unavailable.
   */
  snapshot(options?: { at?: number }): Promise<PerpSnapshot>;
}

export const MARKET_MODEL_PROVIDER = 'market-model';

const models = new Map<string, MarketModel>();

/** One market model per seed in a process: services reading the same seed share its caches. */
export function sharedMarketModel(seed = 'agent-economy'): MarketModel {
  let model = models.get(seed);
  if (!model) {
    model = new MarketModel({ seed });
    models.set(seed, model);
  }
  return model;
}

/**
 * Keeps one contract per (venue, asset): the one with the most open interest (e.g. Deribit's inverse BTC perpetual).
 */
function onePerAsset(rows: PerpQuote[]): PerpQuote[] {
  const best = new Map<string, PerpQuote>();
  for (const r of rows) {
    const key = `${r.exchange}:${r.asset}`;
    const seen = best.get(key);
    if (!seen || r.openInterestUsd > seen.openInterestUsd) best.set(key, r);
  }
  return [...best.values()];
}

function byVenue(
  rows: PerpQuote[],
  venues: readonly PerpVenue[],
  failed: ReadonlySet<PerpVenue> = new Set(),
): VenueRead[] {
  const groups = new Map<PerpVenue, PerpQuote[]>(venues.map((e) => [e, []]));
  for (const r of rows) groups.get(r.exchange)!.push(r);
  return venues.map((exchange) => ({
    exchange,
    status: failed.has(exchange) ? 'unavailable' : 'ok',
    contracts: groups.get(exchange)!,
  }));
}

/**
 * A model contract as the simulated market answers it: on its neutral venue, under a neutral instrument name, so no
 * answer looks like an observation of a real exchange.
 */
export function simulatedQuote(row: PerpQuote): PerpQuote {
  return { ...row, exchange: simulatedVenueOf(row.exchange as PerpExchange), symbol: `${row.asset}-${row.quote}-PERP` };
}

/**
 * The embedded source: the market model evaluated at the current minute (so every replica answers the same within
 * a minute), with 30 days of settlement history for z-scores. Cached per minute: a scan costs one evaluation.
 */
export function embeddedPerpSource(model: MarketModel = sharedMarketModel(), now: () => number = Date.now): PerpSource {
  const tracker = new UpstreamTracker('simulated', [MARKET_MODEL_PROVIDER]);
  let cached: PerpSnapshot | undefined;
  return {
    mode: 'simulated',
    tracker,
    venues: SIMULATED_VENUES,
    providersOf: () => [MARKET_MODEL_PROVIDER],
    async snapshot(options = {}) {
      const at = Math.floor((options.at ?? now()) / 60_000) * 60_000;
      if (cached?.asOf.getTime() === at) return cached;
      const rows = await tracker.call(MARKET_MODEL_PROVIDER, async () =>
        model.perpetuals(at, { history: true }).map(simulatedQuote),
      );
      const snapshot: PerpSnapshot = { asOf: new Date(at), venues: byVenue(rows, SIMULATED_VENUES) };
      cached = snapshot;
      return snapshot;
    },
  };
}

export interface LivePerpOptions {
  /** Base URLs by venue, where they differ from the public defaults (tests point them at replay servers). */
  baseUrls?: Partial<Record<PerpExchange, string>>;
  /** Venues to read (default all nine). */
  exchanges?: readonly PerpExchange[];
  timeoutMs?: number;
  /** How long one read of every venue is reused, ms (default 15 s): keeps within the venues' rate limits. */
  cacheMs?: number;
  binanceOpenInterestSymbols?: number;
}

/** The live source: every venue's public endpoints, read in parallel, each through the tracker (health, 502). */
export function livePerpSource(options: LivePerpOptions = {}): PerpSource {
  const exchanges = options.exchanges ?? PERP_EXCHANGES;
  const tracker = new UpstreamTracker('live', exchanges);
  const cacheMs = options.cacheMs ?? 15_000;
  let cached: { at: number; snapshot: PerpSnapshot } | undefined;
  let pending: Promise<PerpSnapshot> | undefined;

  const read = async (): Promise<PerpSnapshot> => {
    const asOf = new Date();
    const failed = new Set<PerpVenue>(PERP_EXCHANGES.filter((e) => !exchanges.includes(e)));
    const errors: unknown[] = [];
    const results = await Promise.all(
      exchanges.map((exchange) =>
        tracker
          .call(exchange, () =>
            VENUE_ADAPTERS[exchange]({
              baseUrl: (options.baseUrls?.[exchange] ?? DEFAULT_VENUE_URLS[exchange]).replace(/\/+$/, ''),
              timeoutMs: options.timeoutMs ?? 10_000,
              binanceOpenInterestSymbols: options.binanceOpenInterestSymbols ?? 50,
              now: () => asOf.getTime(),
            }),
          )
          .catch((error: unknown) => {
            failed.add(exchange);
            errors.push(error);
            return [] as PerpQuote[];
          }),
      ),
    );
    if (exchanges.every((e) => failed.has(e))) throw upstreamUnavailable(exchanges.join(', '), 'every exchange failed');
    return { asOf, venues: byVenue(onePerAsset(results.flat()), PERP_EXCHANGES, failed) };
  };

  return {
    mode: 'live',
    tracker,
    venues: PERP_EXCHANGES,
    providersOf: (snapshot) =>
      snapshot.venues
        .filter((v) => v.status === 'ok' && (exchanges as readonly PerpVenue[]).includes(v.exchange))
        .map((v) => v.exchange),
    async snapshot() {
      if (cached && Date.now() - cached.at < cacheMs) return cached.snapshot;
      pending ??= read().finally(() => (pending = undefined));
      const snapshot = await pending;
      cached = { at: Date.now(), snapshot };
      return snapshot;
    },
  };
}
