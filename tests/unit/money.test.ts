import { describe, expect, it } from 'vitest';
import {
  AtomicAmount,
  MAX_ATOMIC,
  MAX_ATOMIC_MESSAGE,
  atMostMaxAtomic,
  MoneyError,
  STABLECOIN_DECIMALS,
  UsdAmount,
  atomicToUsd,
  mulDiv,
  parseAtomic,
  scaleAtomic,
  usdToAtomic,
  type Rounding,
} from '@agent-economy/contracts';

const ROUNDINGS: Rounding[] = ['exact', 'down', 'up', 'half-up'];

/** A deterministic pseudo-random sequence (LCG), so the round trips cover many values reproducibly. */
function* lcg(seed: bigint, count: number, modulus: bigint): Generator<bigint> {
  let x = seed;
  for (let i = 0; i < count; i++) {
    x = (x * 6364136223846793005n + 1442695040888963407n) % 2n ** 64n;
    yield x % modulus;
  }
}

describe('usdToAtomic', () => {
  it('uses 6 decimals', () => {
    expect(STABLECOIN_DECIMALS).toBe(6);
  });

  it('converts exact amounts', () => {
    const cases: [string, bigint][] = [
      ['0', 0n],
      ['0.0', 0n],
      ['0.000000', 0n],
      ['0.000001', 1n],
      ['0.00001', 10n],
      ['0.05', 50_000n],
      ['0.5', 500_000n],
      ['1', 1_000_000n],
      ['1.5', 1_500_000n],
      ['1.234567', 1_234_567n],
      ['10', 10_000_000n],
      ['12.345678', 12_345_678n],
      ['100.000001', 100_000_001n],
      ['999999999999', 999_999_999_999_000_000n],
      ['999999999999.999999', 999_999_999_999_999_999n],
    ];
    for (const [usd, atomic] of cases) {
      for (const rounding of ROUNDINGS) expect(usdToAtomic(usd, rounding), `${usd} ${rounding}`).toBe(atomic);
      expect(usdToAtomic(usd)).toBe(atomic);
    }
  });

  it('accepts extra decimals that are zeros without rounding', () => {
    expect(usdToAtomic('0.1000000')).toBe(100_000n);
    expect(usdToAtomic('1.0000000000')).toBe(1_000_000n);
    expect(usdToAtomic('0.0000010', 'up')).toBe(1n);
  });

  it('refuses more than 6 significant decimals by default and in exact mode', () => {
    for (const usd of ['0.0000005', '0.0000001', '1.9999995', '12.3456789', '0.00000000001', '999999999999.9999999']) {
      expect(() => usdToAtomic(usd)).toThrow(MoneyError);
      expect(() => usdToAtomic(usd, 'exact')).toThrow(MoneyError);
      expect(() => usdToAtomic(usd)).toThrow(/more than 6 decimals/);
    }
  });

  it('rounds half a micro-dollar with each mode', () => {
    expect(usdToAtomic('0.0000005', 'down')).toBe(0n);
    expect(usdToAtomic('0.0000005', 'up')).toBe(1n);
    expect(usdToAtomic('0.0000005', 'half-up')).toBe(1n);
    expect(usdToAtomic('0.00000050', 'half-up')).toBe(1n);
    expect(usdToAtomic('0.00000049999', 'half-up')).toBe(0n);
    expect(usdToAtomic('0.00000049999', 'up')).toBe(1n);
    expect(usdToAtomic('0.00000049999', 'down')).toBe(0n);
    expect(usdToAtomic('0.0000004', 'half-up')).toBe(0n);
    expect(usdToAtomic('0.0000001', 'up')).toBe(1n);
    expect(usdToAtomic('0.0000009', 'down')).toBe(0n);
    expect(usdToAtomic('0.00000000001', 'up')).toBe(1n);
    expect(usdToAtomic('0.00000000001', 'half-up')).toBe(0n);
  });

  it('carries a rounding up into the whole part', () => {
    expect(usdToAtomic('1.9999995', 'down')).toBe(1_999_999n);
    expect(usdToAtomic('1.9999995', 'up')).toBe(2_000_000n);
    expect(usdToAtomic('1.9999995', 'half-up')).toBe(2_000_000n);
    expect(usdToAtomic('1.9999994', 'half-up')).toBe(1_999_999n);
    expect(usdToAtomic('999999999999.9999995', 'half-up')).toBe(1_000_000_000_000_000_000n);
    expect(usdToAtomic('999999999999.9999999', 'down')).toBe(999_999_999_999_999_999n);
  });

  it('rounds 12.3456789 and its neighbours', () => {
    expect(usdToAtomic('12.3456789', 'half-up')).toBe(12_345_679n);
    expect(usdToAtomic('12.3456789', 'down')).toBe(12_345_678n);
    expect(usdToAtomic('12.3456789', 'up')).toBe(12_345_679n);
    expect(usdToAtomic('12.3456784', 'half-up')).toBe(12_345_678n);
    expect(usdToAtomic('12.3456785', 'half-up')).toBe(12_345_679n);
    expect(usdToAtomic('12.34567810', 'up')).toBe(12_345_679n);
  });

  it('rejects malformed strings with MoneyError in every mode', () => {
    const malformed = [
      '',
      '01',
      '00',
      '00.5',
      '.5',
      '1.',
      '-1',
      '-0',
      '+1',
      '1e3',
      '1E3',
      ' 1',
      '1 ',
      '1,5',
      '1.2.3',
      '0x10',
      'NaN',
      'Infinity',
      'abc',
      '1_000',
      '１',
      '1000000000000',
      '1000000000000.5',
    ];
    for (const usd of malformed) {
      for (const rounding of ROUNDINGS) {
        expect(() => usdToAtomic(usd, rounding), `${JSON.stringify(usd)} ${rounding}`).toThrow(MoneyError);
      }
      expect(() => usdToAtomic(usd)).toThrow(`not a USD amount: ${JSON.stringify(usd)}`);
    }
  });

  it('throws a MoneyError that is an Error with its own name', () => {
    const error = (() => {
      try {
        usdToAtomic('-1');
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(MoneyError);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).name).toBe('MoneyError');
  });
});

describe('atomicToUsd', () => {
  it('formats the shortest exact decimal', () => {
    const cases: [bigint, string][] = [
      [0n, '0'],
      [1n, '0.000001'],
      [10n, '0.00001'],
      [50_000n, '0.05'],
      [100_000n, '0.1'],
      [500_000n, '0.5'],
      [1_000_000n, '1'],
      [1_000_001n, '1.000001'],
      [1_500_000n, '1.5'],
      [1_234_567n, '1.234567'],
      [10_000_000n, '10'],
      [999_999_999_999_999_999n, '999999999999.999999'],
      [10n ** 30n, '1000000000000000000000000'],
    ];
    for (const [atomic, usd] of cases) expect(atomicToUsd(atomic), String(atomic)).toBe(usd);
  });

  it('throws MoneyError for a negative amount', () => {
    expect(() => atomicToUsd(-1n)).toThrow(MoneyError);
    expect(() => atomicToUsd(-1_000_000n)).toThrow('negative amount');
  });
});

describe('round trips', () => {
  it('atomic -> USD -> atomic is the identity for many values', () => {
    const values = [
      0n,
      1n,
      9n,
      10n,
      99n,
      100n,
      999_999n,
      1_000_000n,
      1_000_001n,
      999_999_999_999_999_999n,
      ...Array.from({ length: 18 }, (_, i) => 10n ** BigInt(i)),
      ...Array.from({ length: 19 }, (_, i) => 10n ** BigInt(i) - 1n),
      ...lcg(42n, 500, 10n ** 18n),
      ...lcg(7n, 200, 10_000_000n),
    ];
    for (const atomic of values) {
      const usd = atomicToUsd(atomic);
      expect(UsdAmount.safeParse(usd).success, usd).toBe(true);
      for (const rounding of ROUNDINGS) expect(usdToAtomic(usd, rounding)).toBe(atomic);
      expect(parseAtomic(atomic.toString())).toBe(atomic);
    }
  });

  it('the USD parser covers amounts below 10^12 USD; atomicToUsd formats larger ones it will not read back', () => {
    expect(atomicToUsd(10n ** 18n)).toBe('1000000000000');
    expect(() => usdToAtomic(atomicToUsd(10n ** 18n))).toThrow(MoneyError);
  });

  it('canonical USD -> atomic -> USD is the identity', () => {
    const canonical = [
      '0',
      '0.000001',
      '0.05',
      '0.1',
      '0.5',
      '1',
      '1.5',
      '2.25',
      '12.345678',
      '100',
      '100.000001',
      '999999999999.999999',
    ];
    for (const usd of canonical) expect(atomicToUsd(usdToAtomic(usd))).toBe(usd);
  });

  it('a non-canonical USD string comes back in its shortest form', () => {
    expect(atomicToUsd(usdToAtomic('0.050000'))).toBe('0.05');
    expect(atomicToUsd(usdToAtomic('1.0'))).toBe('1');
    expect(atomicToUsd(usdToAtomic('0.0000005', 'half-up'))).toBe('0.000001');
  });
});

describe('parseAtomic', () => {
  it('parses non-negative integer strings', () => {
    expect(parseAtomic('0')).toBe(0n);
    expect(parseAtomic('1')).toBe(1n);
    expect(parseAtomic('50000')).toBe(50_000n);
    expect(parseAtomic('1000000')).toBe(1_000_000n);
    expect(parseAtomic('9'.repeat(25))).toBe(10n ** 25n - 1n);
    expect(parseAtomic('1' + '0'.repeat(24))).toBe(10n ** 24n);
  });

  it('rejects anything else with MoneyError', () => {
    for (const text of [
      '',
      '01',
      '00',
      '-1',
      '+1',
      '1.0',
      '1.',
      '.1',
      '1e3',
      ' 1',
      '1 ',
      '0x10',
      'abc',
      '1_000',
      '1' + '0'.repeat(25),
    ]) {
      expect(() => parseAtomic(text), JSON.stringify(text)).toThrow(MoneyError);
      expect(() => parseAtomic(text)).toThrow(`not an atomic amount: ${JSON.stringify(text)}`);
    }
  });
});

describe('mulDiv', () => {
  it('returns the exact quotient when there is no remainder, whatever the rounding', () => {
    for (const rounding of ROUNDINGS) {
      expect(mulDiv(12n, 5n, 4n, rounding)).toBe(15n);
      expect(mulDiv(0n, 7n, 3n, rounding)).toBe(0n);
      expect(mulDiv(7n, 0n, 3n, rounding)).toBe(0n);
      expect(mulDiv(1_000_000n, 1n, 1n, rounding)).toBe(1_000_000n);
    }
  });

  it('rounds a remainder below one half', () => {
    // 10 / 3 = 3.333...
    expect(mulDiv(10n, 1n, 3n, 'down')).toBe(3n);
    expect(mulDiv(10n, 1n, 3n, 'up')).toBe(4n);
    expect(mulDiv(10n, 1n, 3n, 'half-up')).toBe(3n);
    // 9 / 4 = 2.25
    expect(mulDiv(9n, 1n, 4n, 'half-up')).toBe(2n);
    expect(mulDiv(9n, 1n, 4n, 'up')).toBe(3n);
  });

  it('rounds a remainder above one half', () => {
    // 20 / 3 = 6.666...
    expect(mulDiv(20n, 1n, 3n, 'down')).toBe(6n);
    expect(mulDiv(20n, 1n, 3n, 'up')).toBe(7n);
    expect(mulDiv(20n, 1n, 3n, 'half-up')).toBe(7n);
    // 11 / 4 = 2.75
    expect(mulDiv(11n, 1n, 4n, 'half-up')).toBe(3n);
  });

  it('rounds exactly one half up in half-up mode', () => {
    // 10 / 4 = 2.5, 5 * 3 / 2 = 7.5, 1 / 2 = 0.5
    expect(mulDiv(10n, 1n, 4n, 'half-up')).toBe(3n);
    expect(mulDiv(10n, 1n, 4n, 'down')).toBe(2n);
    expect(mulDiv(5n, 3n, 2n, 'half-up')).toBe(8n);
    expect(mulDiv(1n, 1n, 2n, 'half-up')).toBe(1n);
    expect(mulDiv(1n, 1n, 2n, 'down')).toBe(0n);
    // an odd denominator never has an exact half: 4 / 9 = 0.444, 5 / 9 = 0.555
    expect(mulDiv(4n, 1n, 9n, 'half-up')).toBe(0n);
    expect(mulDiv(5n, 1n, 9n, 'half-up')).toBe(1n);
  });

  it('refuses a remainder in exact mode', () => {
    expect(() => mulDiv(10n, 1n, 3n, 'exact')).toThrow(MoneyError);
    expect(() => mulDiv(10n, 1n, 3n, 'exact')).toThrow('10 * 1 / 3 is not a whole number of atomic units');
    expect(() => mulDiv(1n, 1n, 2n, 'exact')).toThrow(MoneyError);
  });

  it('stays exact for values far beyond Number precision', () => {
    const big = 123_456_789_012_345_678_901_234_567_891n; // big * 3 leaves a remainder of 3 modulo 7
    expect((big * 3n) % 7n).toBe(3n);
    expect(mulDiv(big, 3n, 7n, 'down')).toBe((big * 3n) / 7n);
    expect(mulDiv(big, 3n, 7n, 'up')).toBe((big * 3n) / 7n + 1n);
    expect(mulDiv(10n ** 30n + 1n, 10n ** 30n, 10n ** 30n, 'exact')).toBe(10n ** 30n + 1n);
  });

  it('refuses negative operands and a denominator that is not positive', () => {
    for (const rounding of ROUNDINGS) {
      expect(() => mulDiv(1n, 1n, 0n, rounding)).toThrow(MoneyError);
      expect(() => mulDiv(1n, 1n, -1n, rounding)).toThrow(MoneyError);
      expect(() => mulDiv(-1n, 1n, 1n, rounding)).toThrow(MoneyError);
      expect(() => mulDiv(1n, -1n, 1n, rounding)).toThrow(MoneyError);
    }
  });
});

describe('scaleAtomic', () => {
  it('applies surge factors exactly', () => {
    for (const rounding of ROUNDINGS) {
      expect(scaleAtomic(50_000n, '0.5', rounding)).toBe(25_000n);
      expect(scaleAtomic(50_000n, '1.25', rounding)).toBe(62_500n);
      expect(scaleAtomic(50_000n, '5', rounding)).toBe(250_000n);
      expect(scaleAtomic(50_000n, '1', rounding)).toBe(50_000n);
      expect(scaleAtomic(50_000n, '1.0', rounding)).toBe(50_000n);
      expect(scaleAtomic(50_000n, '0', rounding)).toBe(0n);
      expect(scaleAtomic(0n, '1.25', rounding)).toBe(0n);
      expect(scaleAtomic(1_000_000n, '0.000001', rounding)).toBe(1n);
    }
  });

  it('rounds a fractional result as asked', () => {
    // 1 * 0.5 = 0.5
    expect(scaleAtomic(1n, '0.5', 'down')).toBe(0n);
    expect(scaleAtomic(1n, '0.5', 'up')).toBe(1n);
    expect(scaleAtomic(1n, '0.5', 'half-up')).toBe(1n);
    expect(() => scaleAtomic(1n, '0.5', 'exact')).toThrow(MoneyError);
    // 3 * 1.25 = 3.75
    expect(scaleAtomic(3n, '1.25', 'down')).toBe(3n);
    expect(scaleAtomic(3n, '1.25', 'up')).toBe(4n);
    expect(scaleAtomic(3n, '1.25', 'half-up')).toBe(4n);
    expect(() => scaleAtomic(3n, '1.25', 'exact')).toThrow(MoneyError);
    // 2 * 1.25 = 2.5, 1 * 1.25 = 1.25
    expect(scaleAtomic(2n, '1.25', 'half-up')).toBe(3n);
    expect(scaleAtomic(2n, '1.25', 'down')).toBe(2n);
    expect(scaleAtomic(1n, '1.25', 'half-up')).toBe(1n);
    expect(scaleAtomic(1n, '1.25', 'up')).toBe(2n);
    // 33333 * 1.5 = 49999.5
    expect(scaleAtomic(33_333n, '1.5', 'half-up')).toBe(50_000n);
    expect(scaleAtomic(33_333n, '1.5', 'down')).toBe(49_999n);
    // 7 * 5 is whole
    expect(scaleAtomic(7n, '5', 'exact')).toBe(35n);
  });

  it('rejects a malformed factor with MoneyError', () => {
    for (const factor of ['', '-1', '-0.5', '1.', '.5', '1e2', ' 1', '1 ', 'abc', '1,5', '1.2.3', '+1']) {
      expect(() => scaleAtomic(100n, factor, 'down'), JSON.stringify(factor)).toThrow(MoneyError);
      expect(() => scaleAtomic(100n, factor, 'down')).toThrow(`not a decimal factor: ${JSON.stringify(factor)}`);
    }
  });

  it('refuses a negative amount', () => {
    expect(() => scaleAtomic(-1n, '1.25', 'down')).toThrow(MoneyError);
  });
});

describe('zod schemas', () => {
  it('UsdAmount accepts decimal strings with at most 6 decimals', () => {
    for (const usd of [
      '0',
      '0.0',
      '0.05',
      '0.000001',
      '1',
      '1.5',
      '12.345678',
      '999999999999',
      '999999999999.999999',
    ]) {
      expect(UsdAmount.safeParse(usd).success, usd).toBe(true);
      expect(UsdAmount.parse(usd)).toBe(usd);
    }
  });

  it('UsdAmount rejects everything else', () => {
    for (const usd of [
      '',
      '01',
      '.5',
      '1.',
      '-1',
      '1e3',
      ' 1',
      '1 ',
      '0.0000001',
      '0.0000005',
      '12.3456789',
      '1000000000000',
      '1,5',
      'abc',
    ]) {
      const result = UsdAmount.safeParse(usd);
      expect(result.success, JSON.stringify(usd)).toBe(false);
      if (!result.success)
        expect(result.error.issues[0]!.message).toBe(
          'must be a USD decimal string with at most 6 decimals, e.g. "0.05"',
        );
    }
    for (const value of [5, 0.05, 5n, null, undefined, {}]) expect(UsdAmount.safeParse(value).success).toBe(false);
  });

  it('UsdAmount and usdToAtomic agree on every string the schema accepts', () => {
    for (const usd of ['0', '0.05', '0.000001', '999999999999.999999']) expect(() => usdToAtomic(usd)).not.toThrow();
  });

  it('AtomicAmount accepts non-negative integer strings of up to 25 digits', () => {
    for (const atomic of ['0', '1', '50000', '1000000', '9'.repeat(25)]) {
      expect(AtomicAmount.safeParse(atomic).success, atomic).toBe(true);
      expect(parseAtomic(AtomicAmount.parse(atomic))).toBe(BigInt(atomic));
    }
  });

  it('atMostMaxAtomic: what an int8 column holds, up to 2^63 - 1, and leaves malformed strings to the pattern', () => {
    const pattern = /^(0|[1-9]\d{0,24})$/;
    const fits = atMostMaxAtomic(pattern);
    for (const atomic of ['0', '9223372036854775807', '-1', 'abc']) expect(fits(atomic), atomic).toBe(true);
    for (const atomic of ['9223372036854775808', '18446744073709551615', '9'.repeat(25)])
      expect(fits(atomic), atomic).toBe(false);
    expect(MAX_ATOMIC_MESSAGE).toBe(`must be at most ${MAX_ATOMIC} atomic units (2^63 - 1)`);
  });

  it('AtomicAmount rejects everything else', () => {
    for (const atomic of ['', '01', '-1', '1.0', '1e3', ' 1', '0.5', 'abc', '1' + '0'.repeat(25)]) {
      const result = AtomicAmount.safeParse(atomic);
      expect(result.success, JSON.stringify(atomic)).toBe(false);
      if (!result.success)
        expect(result.error.issues[0]!.message).toBe('must be an integer string of atomic units, e.g. "1000000"');
    }
    for (const value of [1_000_000, 1n, null, undefined]) expect(AtomicAmount.safeParse(value).success).toBe(false);
  });
});
