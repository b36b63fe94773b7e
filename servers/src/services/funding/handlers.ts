import { funding, type FundingScanRequest } from '@agent-economy/contracts';
import type { Reasoner } from '../../ai';
import type { RouterImplementation } from '../../runtime/app';
import { HttpError, notFound } from '../../runtime/errors';
import type { PerpSnapshot, PerpSource } from '../../upstream/market';
import {
  aggregateAsset,
  assetView,
  candidateFacts,
  commentaryTask,
  contractRows,
  decodeCursor,
  encodeCursor,
  longShortByAsset,
  overview,
  rankCandidates,
  select,
  sortRows,
  SQUEEZE_THRESHOLDS,
  venuesScanned,
  type ScanFilters,
} from './domain';

export interface FundingDeps {
  source: PerpSource;
  reasoner: Reasoner;
  now: () => number;
}

export const scanFilters = (body: FundingScanRequest): ScanFilters => ({
  ...(body.exchanges ? { exchanges: body.exchanges } : {}),
  ...(body.assets ? { assets: body.assets } : {}),
  minOpenInterestUsd: body.minOpenInterestUsd,
  sortBy: body.sortBy,
});

/** The rows of one asset on the selected venues that answered; 404 asset_not_found when none lists it. */
export function assetRows(snapshot: PerpSnapshot, symbol: string, exchanges?: readonly string[]) {
  const rows = select(snapshot, { assets: [symbol], ...(exchanges ? { exchanges: exchanges as never } : {}) });
  if (rows.length === 0) {
    throw notFound(
      'asset_not_found',
      `No ${exchanges ? 'selected ' : ''}exchange lists a perpetual contract on ${symbol}`,
      { symbol },
    );
  }
  return rows;
}

// Handlers only translate between the contract and the domain.
export function fundingHandlers({ source, reasoner, now }: FundingDeps): RouterImplementation<typeof funding.router> {
  const sourceOf = (snapshot: PerpSnapshot) => source.tracker.source(source.providersOf(snapshot), snapshot.asOf);

  return {
    scan: async ({ body }) => {
      const filters = scanFilters(body);
      const page = body.cursor ? decodeCursor(body.cursor, filters, now()) : { offset: 0, at: undefined };
      const snapshot = await source.snapshot(page.at === undefined ? {} : { at: page.at });
      const selected = select(snapshot, filters);
      const rows = sortRows(contractRows(selected, longShortByAsset(snapshot)), body.sortBy);
      const end = page.offset + body.limit;
      return {
        status: 200,
        body: {
          items: rows.slice(page.offset, end),
          nextCursor: end < rows.length ? encodeCursor(end, snapshot.asOf.getTime(), filters) : null,
          total: rows.length,
          exchangesScanned: venuesScanned(snapshot, body.exchanges),
          source: sourceOf(snapshot),
        },
      };
    },

    squeeze: async ({ body }) => {
      const snapshot = await source.snapshot();
      const { candidates, assetsScanned } = rankCandidates(snapshot, body);
      const facts = candidates.map(candidateFacts);
      const { output, generator } = await reasoner.run(commentaryTask({ assetsScanned, candidates: facts }));
      const byAsset = new Map(output.commentary.map((c) => [c.asset.toUpperCase(), c.commentary]));
      if (facts.some((f) => !byAsset.has(f.asset))) {
        throw new HttpError(
          502,
          'llm_invalid_output',
          'The language model did not comment on every candidate',
          undefined,
          { 'retry-after': '10' },
        );
      }
      return {
        status: 200,
        body: {
          candidates: facts.map((f, i) => ({ rank: candidates[i]!.rank, ...f, commentary: byAsset.get(f.asset)! })),
          thresholds: { ...SQUEEZE_THRESHOLDS },
          assetsScanned,
          summary: output.summary,
          generator,
          source: sourceOf(snapshot),
        },
      };
    },

    asset: async ({ params, body }) => {
      const snapshot = await source.snapshot();
      const rows = assetRows(snapshot, params.symbol, body.exchanges);
      const longShort = longShortByAsset(snapshot).get(params.symbol) ?? null;
      return {
        status: 200,
        body: { ...assetView(aggregateAsset(params.symbol, rows, longShort)), source: sourceOf(snapshot) },
      };
    },

    overview: async () => {
      const snapshot = await source.snapshot();
      return { status: 200, body: { ...overview(snapshot), source: sourceOf(snapshot) } };
    },
  };
}
