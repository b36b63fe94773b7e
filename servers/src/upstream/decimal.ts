// Exact decimal arithmetic for market figures (USD prices can be 1e-9, supplies 1e18 base units): values travel as
// decimal strings and are summed and multiplied as integers scaled by 10^18, never through a float into a string.

const SCALE = 18;
const ONE = 10n ** BigInt(SCALE);

/** A non-negative decimal (string or number) as an integer scaled by 10^18; null for anything else. */
export function toScaled(value: string | number | null | undefined): bigint | null {
  if (value === null || value === undefined) return null;
  let text =
    typeof value === 'number' ? (Number.isFinite(value) && value >= 0 ? value.toFixed(SCALE) : '') : value.trim();
  if (/e/i.test(text)) text = Number(text).toFixed(SCALE);
  const match = /^(\d+)(?:\.(\d*))?$/.exec(text);
  if (!match) return null;
  const fraction = (match[2] ?? '').slice(0, SCALE).padEnd(SCALE, '0');
  return BigInt(match[1]!) * ONE + BigInt(fraction || '0');
}

/** A scaled integer back to a decimal string, trailing zeros trimmed ("12.5", "0.000000001", "0"). */
export function fromScaled(value: bigint): string {
  const whole = value / ONE;
  const fraction = (value % ONE).toString().padStart(SCALE, '0').replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : whole.toString();
}

export const sumDecimals = (values: readonly (string | null)[]): string =>
  fromScaled(values.reduce((sum, v) => sum + (toScaled(v) ?? 0n), 0n));
export const multiplyDecimals = (a: string, b: string): string =>
  fromScaled(((toScaled(a) ?? 0n) * (toScaled(b) ?? 0n)) / ONE);

/** Base units as whole tokens: 1234500 with 6 decimals is "1.2345". */
export function uiAmount(amount: bigint, decimals: number): string {
  const unit = 10n ** BigInt(decimals);
  const fraction = (amount % unit).toString().padStart(decimals, '0').replace(/0+$/, '');
  return fraction ? `${amount / unit}.${fraction}` : (amount / unit).toString();
}

/** amount / total as a percent, rounded to 6 decimals (a display figure, computed from exact integers). */
export function percentOf(amount: bigint, total: bigint): number {
  if (total <= 0n) return 0;
  return Number((amount * 100_000_000n) / total) / 1_000_000;
}

/** A display figure rounded to `digits` decimals. */
export const round = (x: number, digits = 6) => Math.round(x * 10 ** digits) / 10 ** digits;
