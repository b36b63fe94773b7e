import { z } from 'zod';
import { named } from './names';

// Money is exact: USD amounts travel as decimal strings, stablecoin amounts as atomic units (bigint).
// The stablecoin has 6 decimals, so 1 USD = 1_000_000 atomic units and 0.000001 USD is the smallest step.
export const STABLECOIN_DECIMALS = 6;
const SCALE = 10n ** BigInt(STABLECOIN_DECIMALS);

export type Rounding = 'exact' | 'down' | 'up' | 'half-up';

const USD_PATTERN = /^(0|[1-9]\d{0,11})(\.\d+)?$/;
const ATOMIC_PATTERN = /^(0|[1-9]\d{0,24})$/;

/** A USD amount on the wire: a non-negative decimal string with at most 6 decimals, e.g. "0.05". */
export const UsdAmount = named(
  'UsdAmount',
  z
    .string()
    .regex(/^(0|[1-9]\d{0,11})(\.\d{1,6})?$/, 'must be a USD decimal string with at most 6 decimals, e.g. "0.05"'),
  { example: '0.05' },
);

/**
 * The most atomic units an amount stored in an int8 column may be: 2^63 - 1 (within the chain's u64). A request field
 * stored that way refines its schema with atMostMaxAtomic, so a larger amount is bad input naming its field, never a
 * database overflow. (AtomicAmount itself is wider: the reputation service keeps amounts beyond 64 bits exact.)
 */
export const MAX_ATOMIC = 9_223_372_036_854_775_807n;
/** Zod runs refinements on values that failed the format too: those are left to the format's message. */
export const atMostMaxAtomic = (pattern: RegExp) => (v: string) => !pattern.test(v) || BigInt(v) <= MAX_ATOMIC;
export const MAX_ATOMIC_MESSAGE = `must be at most ${MAX_ATOMIC} atomic units (2^63 - 1)`;

const POSITIVE_INT8_ATOMIC = /^[1-9]\d{0,18}$/;
/** Atomic units, more than zero and at most MAX_ATOMIC: a request amount stored in an int8 column. */
export const PositiveInt8Atomic = z
  .string()
  .regex(
    POSITIVE_INT8_ATOMIC,
    `must be a positive integer string of atomic units, at most ${MAX_ATOMIC}, e.g. "1000000" (= 1.00 USD)`,
  )
  .refine(atMostMaxAtomic(POSITIVE_INT8_ATOMIC), MAX_ATOMIC_MESSAGE);

/** Atomic stablecoin units on the wire: a non-negative integer string, e.g. "1000000" (= 1.00 USD). */
export const AtomicAmount = named(
  'AtomicAmount',
  z.string().regex(ATOMIC_PATTERN, 'must be an integer string of atomic units, e.g. "1000000"'),
  {
    example: '50000',
  },
);

/** Atomic units, more than zero. Zod runs refinements on values that failed the format too: skip those. */
export const PositiveAtomicAmount = named(
  'PositiveAtomicAmount',
  AtomicAmount.refine((v) => !ATOMIC_PATTERN.test(v) || BigInt(v) > 0n, 'must be more than 0'),
  { example: '50000' },
);

export class MoneyError extends Error {
  override name = 'MoneyError';
}

/** Parses a USD decimal string into atomic units. Extra decimals are refused unless a rounding mode is given. */
export function usdToAtomic(usd: string, rounding: Rounding = 'exact'): bigint {
  const match = USD_PATTERN.exec(usd);
  if (!match) throw new MoneyError(`not a USD amount: ${JSON.stringify(usd)}`);
  const whole = BigInt(match[1]!);
  const digits = (match[2] ?? '.').slice(1);
  const kept = digits.slice(0, STABLECOIN_DECIMALS).padEnd(STABLECOIN_DECIMALS, '0');
  const dropped = digits.slice(STABLECOIN_DECIMALS);
  let atomic = whole * SCALE + BigInt(kept);
  if (/[1-9]/.test(dropped)) {
    if (rounding === 'exact') throw new MoneyError(`${usd} has more than ${STABLECOIN_DECIMALS} decimals`);
    if (rounding === 'up' || (rounding === 'half-up' && dropped[0]! >= '5')) atomic += 1n;
  }
  return atomic;
}

/** Formats atomic units as the shortest exact USD decimal string: 50000n -> "0.05", 1000000n -> "1". */
export function atomicToUsd(atomic: bigint): string {
  if (atomic < 0n) throw new MoneyError('negative amount');
  const whole = atomic / SCALE;
  const fraction = (atomic % SCALE).toString().padStart(STABLECOIN_DECIMALS, '0').replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : `${whole}`;
}

/** Parses an atomic-units string into a bigint. */
export function parseAtomic(text: string): bigint {
  if (!ATOMIC_PATTERN.test(text)) throw new MoneyError(`not an atomic amount: ${JSON.stringify(text)}`);
  return BigInt(text);
}

/** amount * numerator / denominator with an explicit rounding rule ('exact' refuses a remainder). */
export function mulDiv(amount: bigint, numerator: bigint, denominator: bigint, rounding: Rounding): bigint {
  if (denominator <= 0n || numerator < 0n || amount < 0n) throw new MoneyError('mulDiv needs non-negative operands');
  const product = amount * numerator;
  const quotient = product / denominator;
  const remainder = product % denominator;
  if (remainder === 0n) return quotient;
  switch (rounding) {
    case 'exact':
      throw new MoneyError(`${amount} * ${numerator} / ${denominator} is not a whole number of atomic units`);
    case 'down':
      return quotient;
    case 'up':
      return quotient + 1n;
    case 'half-up':
      return remainder * 2n >= denominator ? quotient + 1n : quotient;
  }
}

/** Multiplies atomic units by a decimal factor such as "1.25" (a surge multiplier), rounding as asked. */
export function scaleAtomic(amount: bigint, factor: string, rounding: Rounding): bigint {
  const match = /^(\d+)(?:\.(\d+))?$/.exec(factor);
  if (!match) throw new MoneyError(`not a decimal factor: ${JSON.stringify(factor)}`);
  const decimals = match[2] ?? '';
  return mulDiv(amount, BigInt(match[1]! + decimals), 10n ** BigInt(decimals.length), rounding);
}

/** Orders USD decimal strings by value ("0.05" before "0.4"), for sorting. */
export function compareUsd(a: string, b: string): number {
  const [x, y] = [usdToAtomic(a), usdToAtomic(b)];
  return x < y ? -1 : x > y ? 1 : 0;
}
