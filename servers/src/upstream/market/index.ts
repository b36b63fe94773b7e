// Market data shared by the data services: the seeded market model (embedded) and the venues' public APIs (live).
export { PERP_EXCHANGES, buildUniverse, DEFAULT_ASSET_COUNT, type AssetProfile, type PerpExchange } from './assets';
export { MarketModel, BASELINE_FUNDING_8H, HISTORY_POINTS, type MarketModelOptions } from './model';
export { embeddedPerpSource, livePerpSource, sharedMarketModel, MARKET_MODEL_PROVIDER, type LivePerpOptions, type PerpSource } from './source';
export type { PerpQuote, PerpSnapshot, VenueRead } from './types';
export { DEFAULT_VENUE_URLS, VENUE_ADAPTERS, baseAsset } from './venues';
