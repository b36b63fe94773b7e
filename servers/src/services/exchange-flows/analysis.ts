import type {
  DataSource,
  ExchangeBreakdown,
  ExchangeFlowBreakdown,
  ExchangeRanking,
  ExchangesRequest,
  FlowAnalysis,
  FlowExchange,
  FlowSignal,
  FlowsRequest,
  BtcPriceSummary,
  SignalRequest,
} from '@agent-economy/contracts';
import { z } from 'zod';
import type { AiTask, Reasoner } from '../../ai';
import { fromScaled, percentOf, round, toScaled } from '../../upstream/decimal';
import { HttpError } from '../../runtime/errors';
import { upstreamUnavailable } from '../../upstream/tracker';
import {
  btcText,
  builtinReasoning,
  combineSignal,
  dailyFlow,
  directionOf,
  netflowZScore,
  periodTotals,
  reserveChange,
  sentimentOf,
  shareOf,
  signalFactors,
  usdText,
  type FlowDay,
  type ScoredFactor,
} from './domain';
import type { FlowRead, FlowSource, VenueSeries } from './sources';

/** Days of history the netflow z-score compares the period with. */
export const HISTORY_DAYS = 90;

const invalid = (field: string, message: string) =>
  new HttpError(400, 'invalid_request', `Invalid request: ${field} ${message}`, { fields: [{ field, message }] });

/**
 * A flows request this source cannot answer: an exchange filter without per-exchange data, or a venue it does not
 * track.
 */
export function checkExchanges(source: FlowSource, exchanges: readonly FlowExchange[] | undefined): void {
  if (!exchanges) return;
  if (source.mode !== 'simulated')
    throw invalid(
      'body.exchanges',
      'cannot be used with live data: no free provider publishes per-exchange flows (leave it out for the all-exchange aggregate)',
    );
  const unknown = exchanges.filter((e) => !e.startsWith('venue-'));
  if (unknown.length)
    throw invalid(
      'body.exchanges',
      `names ${unknown.join(', ')}: simulated data tracks only the simulated venues venue-a … venue-h`,
    );
  if (new Set(exchanges).size !== exchanges.length) throw invalid('body.exchanges', 'lists an exchange twice');
}

/** Per-date sums of the selected venues' days (the aggregate of a filtered request). */
function sumVenues(venues: readonly VenueSeries[]): FlowDay[] {
  return venues[0]!.days.map((first, i) => {
    let inflow = 0n;
    let outflow = 0n;
    let reserve: bigint | null = 0n;
    for (const v of venues) {
      const d = v.days[i]!;
      inflow += d.inflowSats;
      outflow += d.outflowSats;
      reserve = reserve === null || d.reserveSats === null ? null : reserve + d.reserveSats;
    }
    return {
      date: first.date,
      inflowSats: inflow,
      outflowSats: outflow,
      reserveSats: reserve,
      priceUsd: first.priceUsd,
    };
  });
}

const netBtc = (d: FlowDay) => Number(d.inflowSats - d.outflowSats) / 1e8;

/** The period (the last `days` of the read), the days before it (at most 90) and the day just before it. */
function split(series: readonly FlowDay[], days: number) {
  const period = series.slice(-days);
  const history = series.slice(0, Math.max(0, series.length - days)).slice(-HISTORY_DAYS);
  return { period, history, before: history[history.length - 1] };
}

/** Period totals of each venue, largest gross flow first. */
function venueTotals(venues: readonly VenueSeries[], days: number) {
  return venues
    .map((v) => {
      const { period, before } = split(v.days, days);
      let inflow = 0n;
      let outflow = 0n;
      for (const d of period) {
        inflow += d.inflowSats;
        outflow += d.outflowSats;
      }
      return {
        venue: v,
        inflow,
        outflow,
        gross: inflow + outflow,
        reserve: period[period.length - 1]?.reserveSats ?? null,
        change: reserveChange(period, before),
      };
    })
    .sort((a, b) => (b.gross > a.gross ? 1 : b.gross < a.gross ? -1 : a.venue.exchange < b.venue.exchange ? -1 : 1));
}

export interface FlowsServiceOptions {
  source: FlowSource;
  reasoner: Reasoner;
  now: () => number;
}

const ReasoningSchema = z.object({ reasoning: z.string().min(1).max(4000) });

function reasoningTask(input: {
  lookbackDays: number;
  signal: FlowSignal['signal'];
  confidence: number;
  score: number;
  factors: ScoredFactor[];
}): AiTask<typeof input, { reasoning: string }> {
  return {
    name: 'exchange-flow-signal',
    instructions:
      'You read bitcoin exchange flows. Given the lookback, the signal already decided (bullish, bearish or neutral), its ' +
      'confidence and weighted score, and each factor with its value, reading and weight, explain in three to five ' +
      'sentences why the factors lead to this signal. Outflows and falling exchange reserves read as accumulation ' +
      '(bullish); inflows and rising reserves as sell pressure (bearish). Use only the figures given; do not change the ' +
      'signal; make no price prediction. Answer as JSON {"reasoning": string}.',
    input,
    output: ReasoningSchema,
    builtin: (i) => ({ reasoning: builtinReasoning(i) }),
  };
}

/** The service's answers; each reads the source once. */
export function flowsService({ source, reasoner, now }: FlowsServiceOptions) {
  const sourceOf = (read: FlowRead): DataSource => ({
    ...source.tracker.source(read.providers, new Date(read.asOf)),
    ...(read.note ? { note: read.note } : {}),
  });

  return {
    source,

    async summary(): Promise<BtcPriceSummary> {
      const { summary, providers, asOf } = await source.summary(now());
      return { ...summary, source: source.tracker.source(providers, new Date(asOf)) };
    },

    async flows(body: FlowsRequest): Promise<FlowAnalysis> {
      checkExchanges(source, body.exchanges);
      const read = await source.flows(now(), body.days + HISTORY_DAYS);
      const venues =
        read.venues && body.exchanges ? read.venues.filter((v) => body.exchanges!.includes(v.exchange)) : read.venues;
      const series = body.exchanges && venues ? sumVenues(venues) : read.days;
      const { period, history, before } = split(series, body.days);
      const totals = periodTotals(period);
      const direction = directionOf(totals.inflowSats, totals.outflowSats);
      const z = netflowZScore(period.map(netBtc), history.map(netBtc));
      const change = reserveChange(period, before);
      const rows = venues ? venueTotals(venues, body.days) : [];
      const gross = rows.reduce((s, r) => s + r.gross, 0n);
      const breakdown: ExchangeFlowBreakdown[] = rows.map((r) => ({
        exchange: r.venue.exchange,
        inflowBtc: btcText(r.inflow),
        outflowBtc: btcText(r.outflow),
        netflowBtc: btcText(r.inflow - r.outflow),
        shareOfFlowPercent: shareOf(r.gross, gross),
        direction: directionOf(r.inflow, r.outflow),
      }));
      return {
        startDate: period[0]!.date,
        endDate: period[period.length - 1]!.date,
        days: period.map(dailyFlow),
        totals: totals.text,
        direction,
        netflowZScore: z,
        reserveChangeBtc: change ? btcText(change.sats) : null,
        reserveChangePercent: change ? change.percent : null,
        sentiment: sentimentOf(direction, z),
        breakdown,
        source: sourceOf(read),
      };
    },

    async exchanges(body: ExchangesRequest): Promise<ExchangeBreakdown> {
      const read = await source.flows(now(), body.days + 1, { market: true });
      const { period } = split(read.days, body.days);
      const price = read.priceUsd ?? period[period.length - 1]!.priceUsd;
      const rows = venueTotals(read.venues ?? [], body.days);
      const volumes = rows.map((r) => toScaled(r.venue.volume24hUsd) ?? 0n);
      const totalVolume = volumes.reduce((s, v) => s + v, 0n);
      const ranked = rows.map((r, i) => {
        const row: Omit<ExchangeRanking, 'rank'> = {
          exchange: r.venue.exchange,
          name: r.venue.name,
          volume24hUsd: r.venue.volume24hUsd,
          volumeSharePercent: percentOf(volumes[i]!, totalVolume),
          reserveBtc: btcText(r.reserve ?? 0n),
          reserveUsd: usdText(r.reserve ?? 0n, price),
          reserveChangePercent: r.change ? r.change.percent : null,
          inflowBtc: btcText(r.inflow),
          outflowBtc: btcText(r.outflow),
          netflowBtc: btcText(r.inflow - r.outflow),
          direction: directionOf(r.inflow, r.outflow),
        };
        // The ranking key, exact: USD volume scaled by 10^18, reserve or netflow in satoshis.
        const key =
          body.sortBy === 'volume' ? volumes[i]! : body.sortBy === 'reserve' ? (r.reserve ?? 0n) : r.inflow - r.outflow;
        return { row, key };
      });
      const exchanges = ranked
        .sort((a, b) => (b.key > a.key ? 1 : b.key < a.key ? -1 : a.row.exchange < b.row.exchange ? -1 : 1))
        .map(({ row }, i) => ({ rank: i + 1, ...row }));
      // Without per-exchange data the totals are the provider's all-exchange reserve and all-market BTC volume.
      const lastReserve = [...period].reverse().find((d) => d.reserveSats !== null)?.reserveSats ?? null;
      // A reserve is not made up: without one from the provider the answer cannot be given (and is not charged).
      if (!read.venues && lastReserve === null)
        throw upstreamUnavailable(read.providers[0]!, new Error('it sent no exchange reserve (SplyExNtv)'));
      const totalReserve = read.venues ? rows.reduce((s, r) => s + (r.reserve ?? 0n), 0n) : lastReserve!;
      return {
        startDate: period[0]!.date,
        endDate: period[period.length - 1]!.date,
        exchanges,
        totalReserveBtc: btcText(totalReserve),
        totalVolume24hUsd: read.venues ? fromScaled(totalVolume) : (read.volume24hUsd ?? '0'),
        source: sourceOf(read),
      };
    },

    async signal(body: SignalRequest): Promise<FlowSignal> {
      const read = await source.flows(now(), body.lookbackDays + HISTORY_DAYS);
      const { period, history, before } = split(read.days, body.lookbackDays);
      const totals = periodTotals(period);
      const gross = totals.inflowSats + totals.outflowSats;
      const net = totals.inflowSats - totals.outflowSats;
      const rows = read.venues ? venueTotals(read.venues, body.lookbackDays) : null;
      const venueGross = rows?.reduce((s, r) => s + r.gross, 0n) ?? 0n;
      const first = Number(period[0]!.priceUsd);
      const last = Number(period[period.length - 1]!.priceUsd);
      const factors = signalFactors({
        netflowPercent: gross > 0n ? Number((net * 100_000_000n) / gross) / 1_000_000 : 0,
        netflowZScore: netflowZScore(period.map(netBtc), history.map(netBtc)),
        reserveChangePercent: reserveChange(period, before)?.percent ?? null,
        priceChangePercent: first > 0 ? round(((last - first) / first) * 100, 6) : 0,
        topVenueSharePercent: rows && rows.length ? shareOf(rows[0]!.gross, venueGross) : null,
      });
      const { signal, confidence, score } = combineSignal(factors);
      const { output, generator } = await reasoner.run(
        reasoningTask({ lookbackDays: body.lookbackDays, signal, confidence, score, factors }),
      );
      return {
        signal,
        confidence,
        reasoning: output.reasoning,
        factors: factors.map(({ name, value, reading, weight }) => ({ name, value, reading, weight })),
        lookbackDays: body.lookbackDays,
        generatedAt: new Date(now()).toISOString(),
        generator,
        source: sourceOf(read),
      };
    },
  };
}

export type FlowsService = ReturnType<typeof flowsService>;
