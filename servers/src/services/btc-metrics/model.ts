import { mulberry32 } from '../../upstream/market/random';
import { addDays, daysBetween, ratioOf, type MarketDay, type SpentDay } from './domain';

/**
 * The embedded market model: a seeded, deterministic daily BTC series for offline use and tests. It is a model,
 * never live data (responses say `source.mode: 'simulated'`), pinned to the four Coin Metrics reference rows of
 * research/domain.md §1.4, where its price, market cap and realized cap equal the published values:
 *
 * - price: between two anchors, a log-price Brownian bridge (daily σ 3.5 %, seeded) that starts and ends on them;
 * - supply: the anchors' supply (MC / price), issued evenly between them;
 * - realized cap: moved every day by the identity ΔRC = new coins × price + realized profit − realized loss.
 *   Spent coins (1.2–1.8 % of supply a day) carry a cost basis of 0.6 × the 30-day price EMA + 0.4 × the
 *   realized price; a factor growing evenly (in log) over each segment bends the realized cap onto the next
 *   anchor, and the day's realized profit or loss is what the identity then leaves;
 * - SOPR/aSOPR: from those spent outputs: Σ value at spend / Σ value at creation. Besides them, 0.4–1.2 % of
 *   supply a day lives under 1 hour (created half an hour before it is spent, on the day's price path): SOPR
 *   counts it, aSOPR leaves it out.
 */

export const EMBEDDED_PROVIDER = 'btc-market-model';
export const MODEL_SEED = 0x2015_0415;

interface Anchor {
  date: string;
  priceUsd: number;
  marketCapUsd: number;
  realizedCapUsd: number;
}

/** research/domain.md §1.4: Coin Metrics `csv/btc.csv` (PriceUSD, CapMrktCurUSD, CapRealUSD). */
export const ANCHORS: readonly Anchor[] = [
  { date: '2015-04-15', priceUsd: 223.31, marketCapUsd: 3_139_171_565, realizedCapUsd: 4_134_472_766 },
  { date: '2017-12-17', priceUsd: 19_250.47, marketCapUsd: 322_411_617_616, realizedCapUsd: 75_827_043_368 },
  { date: '2018-01-18', priceUsd: 11_246.04, marketCapUsd: 189_059_547_788, realizedCapUsd: 90_306_893_903 },
  { date: '2020-03-29', priceUsd: 5_904.86, marketCapUsd: 108_023_566_971, realizedCapUsd: 101_441_674_689 },
];

/** Standard normal numbers by Box–Muller. */
function normals(uniform: () => number): () => number {
  return () => {
    const u = 1 - uniform();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * uniform());
  };
}

export interface ModelSeries {
  market: MarketDay[];
  spent: Map<string, SpentDay>;
}

const DAILY_VOLATILITY = 0.035;
const EMA_DAYS = 30;

/** Builds the series (deterministic for a seed). */
export function buildModel(seed = MODEL_SEED): ModelSeries {
  const uniform = mulberry32(seed);
  const normal = normals(uniform);
  const market: MarketDay[] = [];
  const spent = new Map<string, SpentDay>();
  const first = ANCHORS[0]!;
  market.push({
    date: first.date,
    priceUsd: first.priceUsd,
    supplyBtc: first.marketCapUsd / first.priceUsd,
    marketCapUsd: first.marketCapUsd,
    realizedCapUsd: first.realizedCapUsd,
  });
  let ema = first.priceUsd;

  for (let s = 1; s < ANCHORS.length; s++) {
    const from = ANCHORS[s - 1]!;
    const to = ANCHORS[s]!;
    const n = daysBetween(from.date, to.date);
    // Price: a random walk in log space, bent into a bridge that ends on the anchor.
    const walk = [0];
    for (let k = 1; k <= n; k++) walk.push(walk[k - 1]! + DAILY_VOLATILITY * normal());
    const logFrom = Math.log(from.priceUsd);
    const logTo = Math.log(to.priceUsd);
    const prices = walk.map((w, k) =>
      k === 0
        ? from.priceUsd
        : k === n
          ? to.priceUsd
          : Math.exp(logFrom + ((logTo - logFrom) * k) / n + w - (k / n) * walk[n]!),
    );
    const supplyFrom = from.marketCapUsd / from.priceUsd;
    const supplyTo = to.marketCapUsd / to.priceUsd;
    const issued = (supplyTo - supplyFrom) / n;

    // First pass: realized cap from the model's realized profit and loss, before the correction.
    const days: {
      price: number;
      supply: number;
      volume: number;
      basis: number;
      shortSpent: number;
      shortCreated: number;
      rawRc: number;
    }[] = [];
    let rc = from.realizedCapUsd;
    for (let k = 1; k <= n; k++) {
      const price = prices[k]!;
      const supply = k === n ? supplyTo : supplyFrom + issued * k;
      const realizedPrice = rc / (supply - issued);
      const basis = 0.6 * ema + 0.4 * realizedPrice;
      const volume = supply * (0.012 + 0.006 * uniform());
      const shortVolume = supply * (0.004 + 0.008 * uniform());
      // Created half an hour before being spent: 1/48 of the day's log return earlier.
      const shortSpent = shortVolume * price;
      const shortCreated = shortSpent / Math.exp(Math.log(price / prices[k - 1]!) / 48);
      rc += issued * price + volume * (price - basis) + (shortSpent - shortCreated);
      days.push({ price, supply, volume, basis, shortSpent, shortCreated, rawRc: rc });
      ema += (2 / (EMA_DAYS + 1)) * (price - ema);
    }
    // Second pass: bend the realized cap onto the anchor by a factor growing evenly (in log) over the segment; the
    // day's realized profit or loss is then what the identity leaves: ΔRC − new coins × price − short-lived P/L.
    const bend = Math.log(to.realizedCapUsd / rc) / n;
    let previousRc = from.realizedCapUsd;
    days.forEach((d, i) => {
      const k = i + 1;
      const date = addDays(from.date, k);
      const realizedCapUsd = k === n ? to.realizedCapUsd : d.rawRc * Math.exp(bend * k);
      const marketCapUsd = k === n ? to.marketCapUsd : d.price * d.supply;
      const netRealized = realizedCapUsd - previousRc - issued * d.price - (d.shortSpent - d.shortCreated);
      previousRc = realizedCapUsd;
      // Long-lived outputs: spent at today's price; their creation value is what the realized P/L leaves. When
      // the profit is large against the volume, more coins moved (at least 4/3 of it in value).
      const volume = Math.max(d.volume, netRealized / (0.75 * d.price));
      const longSpent = volume * d.price;
      const longCreated = longSpent - netRealized;
      market.push({ date, priceUsd: d.price, supplyBtc: d.supply, marketCapUsd, realizedCapUsd });
      spent.set(date, {
        sopr: ratioOf(longSpent + d.shortSpent, longCreated + d.shortCreated),
        asopr: ratioOf(longSpent, longCreated),
      });
    });
  }
  return { market, spent };
}

let built: ModelSeries | undefined;
/** The model with the service's seed, built once (it is deterministic). */
export function embeddedModel(): ModelSeries {
  built ??= buildModel();
  return built;
}
