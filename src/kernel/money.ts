import { currencyView, getCurrency } from './currencies.js';

// Money is an integer number of the currency's smallest unit. Never a float.

export function assertMinorUnits(amount: number): void {
  if (!Number.isSafeInteger(amount)) throw new RangeError(`amount ${amount} is not a safe integer of minor units`);
}

/** `{amount, currency}` as the API shows it (CurrencyAmount). */
export function currencyAmount(amount: number, code: string) {
  assertMinorUnits(amount);
  return { amount, currency: currencyView(code) };
}

/** Human text for logs and pages: 12345 USD -> "123.45 USD". */
export function formatMinor(amount: number, code: string): string {
  assertMinorUnits(amount);
  const d = getCurrency(code).decimals;
  const neg = amount < 0;
  const s = String(Math.abs(amount)).padStart(d + 1, '0');
  const whole = d === 0 ? s : s.slice(0, -d);
  const frac = d === 0 ? '' : `.${s.slice(-d)}`;
  return `${neg ? '-' : ''}${whole}${frac} ${code}`;
}

/**
 * Multiply an integer amount by a rational (basis points, rates) and round to an integer.
 * Done in BigInt so large amounts never lose precision.
 */
export function mulDiv(amount: number, num: bigint, den: bigint, rounding: 'floor' | 'ceil' | 'half-up' = 'half-up'): number {
  assertMinorUnits(amount);
  const a = BigInt(amount) * num;
  let q = a / den;
  const r = a % den;
  if (r !== 0n) {
    const positive = (a < 0n) === (den < 0n);
    if (rounding === 'ceil' && positive) q += 1n;
    else if (rounding === 'floor' && !positive) q -= 1n;
    else if (rounding === 'half-up') {
      const twice = (r < 0n ? -r : r) * 2n;
      const d = den < 0n ? -den : den;
      if (twice >= d) q += positive ? 1n : -1n;
    }
  }
  const out = Number(q);
  assertMinorUnits(out);
  return out;
}

/** Basis points of an amount (1 bps = 0.01 %), rounded half up. */
export function bps(amount: number, basisPoints: number, rounding: 'floor' | 'ceil' | 'half-up' = 'half-up'): number {
  return mulDiv(amount, BigInt(basisPoints), 10_000n, rounding);
}
