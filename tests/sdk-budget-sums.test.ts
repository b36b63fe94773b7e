import { describe, expect, it } from 'vitest';
import { DAY_MS, HOUR_MS, SettledSpends, used, type Cap, type Spend } from '../sdk/src/payments/budgets';
import { mulberry32 } from '../servers/src/upstream/market/random';

// The spend log sums settled spends per cap without reading every receipt (SettledSpends): each check must give
// exactly what the plain sum over every receipt gives, whatever the order receipts arrive in and however the clock
// moves. A seeded generator, so a failure names a case that can be run again.

const SERVICES = ['education', 'gas', 'intel'];
const ORIGINS = ['http://127.0.0.1:4001', 'http://127.0.0.1:4002', undefined];
const CAPS: Cap[] = [
  { limit: 'total', amount: 0n },
  { limit: 'hourly', amount: 0n, windowMs: HOUR_MS },
  { limit: 'daily', amount: 0n, windowMs: DAY_MS },
  { limit: 'perService', amount: 0n, each: 'service' },
  { limit: 'perService', amount: 0n, service: 'gas' },
  { limit: 'perOrigin', amount: 0n, each: 'origin' },
  { limit: 'hourly', amount: 0n, windowMs: HOUR_MS, origin: 'http://127.0.0.1:4001' },
  { limit: 'daily', amount: 0n, windowMs: DAY_MS, each: 'service' },
  { limit: 'hourly', amount: 0n, windowMs: HOUR_MS, service: 'intel', origin: 'http://127.0.0.1:4002' },
];

describe('budget sums without reading every receipt', () => {
  for (const seed of [1, 2, 3]) {
    it(`equal the plain sum over every receipt (seed ${seed})`, () => {
      const next = mulberry32(seed);
      const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]!;
      const sums = new SettledSpends(CAPS.flatMap((cap) => (cap.windowMs ? [cap.windowMs] : [])));
      const all: Spend[] = [];
      let now = Date.UTC(2026, 10, 27);
      let checks = 0;
      for (let step = 0; step < 3_000; step++) {
        // Mostly forward by up to 3 minutes, sometimes a jump past a window, sometimes the clock set back.
        const move = next();
        now +=
          move < 0.02 ? 25 * HOUR_MS : move < 0.05 ? -Math.floor(next() * 2 * HOUR_MS) : Math.floor(next() * 180_000);
        // Receipts mostly at `now`, some recorded late (loaded from a store, another clock) or ahead.
        const skew = next();
        const at = skew < 0.9 ? now : skew < 0.97 ? now - Math.floor(next() * 30 * HOUR_MS) : now + 60_000;
        const spend = {
          service: pick(SERVICES),
          origin: pick(ORIGINS),
          amount: BigInt(1 + Math.floor(next() * 90_000)),
          at,
        };
        sums.add(spend);
        all.push(spend);
        const service = pick(SERVICES);
        const origin = pick(ORIGINS);
        for (const cap of CAPS) {
          expect(
            sums.used(cap, service, origin, now),
            `step ${step}, cap ${JSON.stringify(cap, (_, v) => (typeof v === 'bigint' ? String(v) : v))}`,
          ).toBe(used(cap, service, origin, all, now));
          checks++;
        }
      }
      expect(checks).toBe(3_000 * CAPS.length);
    });
  }

  it('lets go of receipts older than the longest window, and still counts the day exactly', () => {
    const sums = new SettledSpends([HOUR_MS, DAY_MS]);
    const all: Spend[] = [];
    const daily: Cap = { limit: 'daily', amount: 0n, windowMs: DAY_MS };
    const total: Cap = { limit: 'total', amount: 0n };
    const start = Date.UTC(2026, 10, 1);
    // Ten days of a receipt a minute: 14,400 receipts, 1,440 in any day.
    for (let minute = 0; minute < 14_400; minute++) {
      const spend = { service: 'education', origin: undefined, amount: 50_000n, at: start + minute * 60_000 };
      sums.add(spend);
      all.push(spend);
      const now = spend.at;
      // Against the plain sum every 7 minutes (a sum over every receipt each minute would be most of this test's time).
      if (minute % 7 === 0)
        expect(sums.used(daily, 'education', undefined, now)).toBe(used(daily, 'education', undefined, all, now));
    }
    expect(sums.used(daily, 'education', undefined, start + 14_399 * 60_000)).toBe(1_440n * 50_000n);
    expect(sums.used(total, 'education', undefined, start + 14_399 * 60_000)).toBe(14_400n * 50_000n);
    // What is kept: the last two days (a clock set back by up to a day still counts them) and a batch, not ten days.
    expect(sums.kept).toBeLessThanOrEqual(2 * 1_440 + 257);
  });
});
