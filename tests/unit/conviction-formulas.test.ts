import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { analyze, composite, quickComposite, readingOf, usd } from '../../servers/src/services/conviction/domain';
import { simulatedSource } from '../../servers/src/services/conviction/sources';
import {
  depthWithin,
  gini,
  imbalance,
  logReturns,
  midAndSpread,
  pearson,
  priceImpact,
  standardDeviation,
  type BookLevel,
} from '../../servers/src/upstream/measures';
import { MarketModel } from '../../servers/src/upstream/market';

const NOW = Date.parse('2026-11-22T09:00:30.000Z');
const round = (x: number, d = 6) => Math.round(x * 10 ** d) / 10 ** d;

describe('formulas', () => {
  const bids: BookLevel[] = [
    { price: 99.9, quantity: 5 },
    { price: 99.0, quantity: 10 },
    { price: 98.0, quantity: 20 },
    { price: 97.0, quantity: 50 },
  ];
  const asks: BookLevel[] = [
    { price: 100.1, quantity: 4 },
    { price: 101.0, quantity: 8 },
    { price: 102.0, quantity: 15 },
    { price: 103.0, quantity: 40 },
  ];

  it('Gini of bid sizes', () => {
    expect(gini([5, 10, 20, 50])).toBe(0.426471);
    expect(gini([1, 1, 1, 1])).toBe(0);
    expect(gini([0, 0, 0, 1])).toBe(0.75);
    expect(gini([1, 2, 3, 4, 5])).toBe(0.266667);
    expect(gini([10, 5, 3, 1, 1])).toBe(0.44);
  });

  it('the book example: mid 100, spread 20 bps, ±2 % depth 3,449.5 and 2,738.4, imbalance 0.114918', () => {
    const top = midAndSpread(bids, asks)!;
    expect(top.mid).toBeCloseTo(100, 12);
    expect(top.spreadBps).toBeCloseTo(20, 6);
    expect(depthWithin('bid', bids, top.mid)).toBeCloseTo(3449.5, 9);
    expect(depthWithin('ask', asks, top.mid)).toBeCloseTo(2738.4, 9);
    expect(imbalance(3449.5, 2738.4)).toBe(0.114918);
    expect(midAndSpread([], asks)).toBeNull();
  });

  it('Pearson ρ of log returns: 0.933449', () => {
    const a = [100, 102, 101, 105, 107];
    const b = [50, 50.5, 50.2, 51.5, 52.6];
    expect(logReturns(a).map((r) => round(r))).toEqual([0.019803, -0.009852, 0.03884, 0.018868]);
    expect(pearson(logReturns(a), logReturns(b))).toBe(0.933449);
    expect(pearson([1, 2, 3], [2, 2, 2])).toBeNull();
    expect(pearson([1], [2])).toBeNull();
    expect(standardDeviation([1, 3])).toBe(1);
  });

  it('price impact by walking the book', () => {
    // A 1,000 USD buy takes 400.4 at 100.1 (4 units) and 599.6 at 101 (5.936634 units): average 100.637767.
    const buy = priceImpact('buy', asks, 100, 1000);
    expect(buy.averagePrice).toBeCloseTo(1000 / (4 + 599.6 / 101), 9);
    expect(buy.impactPercent).toBe(round(((1000 / (4 + 599.6 / 101) - 100) / 100) * 100, 4));
    expect(buy.filledFraction).toBe(1);
    // A sell larger than the whole bid side fills what is there.
    const bidTotal = bids.reduce((s, l) => s + l.price * l.quantity, 0);
    const sell = priceImpact('sell', bids, 100, bidTotal * 2);
    expect(sell.filledFraction).toBe(0.5);
    expect(sell.averagePrice).toBeCloseTo(bidTotal / 85, 9);
    expect(priceImpact('buy', [], 100, 1000)).toEqual({ averagePrice: null, impactPercent: 0, filledFraction: 0 });
  });

  it('properties: Gini within [0, (n−1)/n], ρ symmetric within [−1, 1], impact growing with the order', () => {
    const positive = fc.array(fc.double({ min: 0.001, max: 1e6, noNaN: true }), { minLength: 1, maxLength: 40 });
    fc.assert(
      fc.property(positive, (xs) => {
        const g = gini(xs);
        expect(g).toBeGreaterThanOrEqual(0);
        expect(g).toBeLessThanOrEqual((xs.length - 1) / xs.length + 1e-6);
      }),
    );
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.double({ min: -1, max: 1, noNaN: true }), fc.double({ min: -1, max: 1, noNaN: true })), {
          minLength: 2,
          maxLength: 40,
        }),
        (pairs) => {
          const a = pairs.map((p) => p[0]);
          const b = pairs.map((p) => p[1]);
          const r = pearson(a, b);
          expect(r).toBe(pearson(b, a));
          if (r !== null) expect(Math.abs(r)).toBeLessThanOrEqual(1);
        },
      ),
    );
    fc.assert(
      fc.property(
        fc.double({ min: 1, max: 5000, noNaN: true }),
        fc.double({ min: 1, max: 5000, noNaN: true }),
        (x, y) => {
          const [small, large] = x < y ? [x, y] : [y, x];
          expect(priceImpact('buy', asks, 100, large).impactPercent).toBeGreaterThanOrEqual(
            priceImpact('buy', asks, 100, small).impactPercent,
          );
        },
      ),
    );
  });

  it('the simulated market is a model, not a constant: the universe reads thin and firm', async () => {
    const source = simulatedSource(undefined, () => NOW);
    const model = new MarketModel();
    const composites: number[] = [];
    for (const asset of model.assets.slice(60, 100)) {
      const token = source.resolve(asset.symbol);
      const a = analyze(token, await source.read(token, { hours: 25, majors: false }));
      composites.push(quickComposite(a.quick));
    }
    expect(composites.some((c) => c < 50)).toBe(true);
    expect(composites.some((c) => c >= 50)).toBe(true);
    expect(new Set(composites).size).toBeGreaterThan(30);
  });

  it('composite, quick composite and reading', () => {
    const scores = { liquidity: 80, bidConcentration: 40, volumeAsymmetry: 90, correlation: 60, firmness: 70 };
    const dims = Object.fromEntries(Object.entries(scores).map(([k, s]) => [k, { score: s }])) as never;
    expect(composite(dims)).toBe(round(0.25 * 80 + 0.2 * 40 + 0.15 * 90 + 0.15 * 60 + 0.25 * 70, 1));
    expect(quickComposite({ liquidity: 80, bidConcentration: 40, volumeAsymmetry: 90, firmness: 70 })).toBe(
      round((0.25 * 80 + 0.2 * 40 + 0.15 * 90 + 0.25 * 70) / 0.85, 1),
    );
    expect(readingOf(50)).toEqual({ reading: 'firm', readingStrength: 'marginal' });
    expect(readingOf(49.9)).toEqual({ reading: 'thin', readingStrength: 'marginal' });
    expect(readingOf(60)).toEqual({ reading: 'firm', readingStrength: 'clear' });
    expect(readingOf(25)).toEqual({ reading: 'thin', readingStrength: 'clear' });
    expect(readingOf(75.1)).toEqual({ reading: 'firm', readingStrength: 'strong' });
    expect(readingOf(10)).toEqual({ reading: 'thin', readingStrength: 'strong' });
    expect(usd(3449.5)).toBe('3449.5');
    expect(usd(0.001)).toBe('0');
    expect(usd(1234567.891)).toBe('1234567.89');
  });
});
