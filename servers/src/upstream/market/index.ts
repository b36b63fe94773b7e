// Market data shared by the data services: the seeded market model (simulated) and the venues' public APIs (live).
export {
  ALL_VENUES,
  PERP_EXCHANGES,
  SIMULATED_VENUES,
  buildUniverse,
  simulatedVenueOf,
  DEFAULT_ASSET_COUNT,
  type AssetProfile,
  type PerpExchange,
  type PerpVenue,
  type SimulatedVenue,
} from './assets';
export { MarketModel, BASELINE_FUNDING_8H, HISTORY_POINTS, type MarketModelOptions } from './model';
export {
  embeddedPerpSource,
  livePerpSource,
  sharedMarketModel,
  simulatedQuote,
  MARKET_MODEL_PROVIDER,
  type LivePerpOptions,
  type PerpSource,
} from './source';
export type { PerpQuote, PerpSnapshot, VenueRead } from './types';
export { DEFAULT_VENUE_URLS, VENUE_ADAPTERS, baseAsset } from './venues';
