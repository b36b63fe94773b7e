import type { PerpVenue } from './assets';

/**
 * One perpetual contract as a source reports it, in plain numbers (the service formats them). Rates are
 * decimal fractions per the venue's own funding interval; USD figures are floats (market data, not money).
 */
export interface PerpQuote {
  exchange: PerpVenue;
  symbol: string;
  asset: string;
  quote: string;
  markPrice: number;
  indexPrice: number | null;
  fundingRate: number;
  fundingIntervalHours: number;
  /** ms since the epoch, or null when the venue funds continuously or does not say. */
  nextFundingTime: number | null;
  openInterestUsd: number;
  volume24hUsd: number;
  /** Open interest 24 hours earlier, where the source knows it. */
  openInterestUsd24hAgo?: number | null;
  priceChange24hPercent?: number | null;
  /** Long/short account ratio, where the venue publishes one. */
  longShortRatio?: number | null;
  /** Past settlements, oldest first: funding per 8 h and open interest (USD), where the source keeps them. */
  history?: { fundingRate8h: number[]; openInterestUsd: number[] } | null;
}

/** What one venue answered. */
export interface VenueRead {
  exchange: PerpVenue;
  status: 'ok' | 'unavailable';
  contracts: PerpQuote[];
}

/** Every venue's contracts at one instant. */
export interface PerpSnapshot {
  asOf: Date;
  venues: VenueRead[];
}
