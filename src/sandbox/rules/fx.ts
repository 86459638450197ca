import { CURRENCIES, getCurrency } from '../../kernel/currencies.js';

// The deterministic sandbox FX market. Every currency of src/kernel/currencies.ts has a
// fixed mid rate against USD; a cross rate goes through USD; the customer rate is the mid
// rate less a spread (SPREAD_BPS, none between a currency and itself). All arithmetic is
// exact: rates are BigInt rationals and amounts are BigInt minor units, so a conversion
// across different decimals (USD 2 → JPY 0, → BTC 8, → USDC 6, → ETH 18) never goes
// through a float. The `rate` numbers are for display only.
//
// The exchange-rate endpoint, the receiver lookups and the quotes all price with the
// functions below (and through `cachedRate`), so the same amount gets the same answer
// everywhere.

/** An exact positive rational num/den (den > 0). */
export interface Rational {
  num: bigint;
  den: bigint;
}

export type Rounding = 'floor' | 'ceil' | 'half-up' | 'half-even';

/** Spread of the sandbox market against the customer, in basis points of the mid rate. */
export const SPREAD_BPS = 50;

/** How long a platform's cached rate (and the fees cached with it) lives, on the platform's clock. */
export const RATE_CACHE_TTL_MS = 5 * 60_000;

/**
 * Mid rates: units of the currency per 1 USD, as exact decimal text or `a/b`.
 * Plausible October 2025 values; crypto priced in USD (1 BTC = 65,000 USD …).
 */
export const USD_MID_RATES: Readonly<Record<string, string>> = {
  USD: '1',
  EUR: '0.92',
  GBP: '0.79',
  MXN: '18.5',
  BRL: '5.4',
  INR: '84',
  CAD: '1.37',
  DKK: '6.86',
  NGN: '1550',
  HKD: '7.78',
  IDR: '16300',
  MYR: '4.7',
  PHP: '57.5',
  SGD: '1.34',
  THB: '35.5',
  VND: '25300',
  AED: '3.6725',
  KES: '129',
  MWK: '1735',
  RWF: '1420',
  TZS: '2700',
  UGX: '3700',
  XOF: '603',
  XAF: '603',
  ZAR: '18.2',
  ZMW: '26.5',
  BWP: '13.6',
  BDT: '120',
  COP: '4200',
  EGP: '48.5',
  GHS: '15.5',
  GTQ: '7.75',
  HTG: '131',
  JMD: '157',
  PKR: '281',
  CNY: '7.12',
  JPY: '150',
  KRW: '1380',
  CHF: '0.85',
  AUD: '1.52',
  BTC: '1/65000',
  USDC: '1',
  USDT: '1',
  ETH: '1/2500',
  SOL: '1/160',
};

// ---------------------------------------------------------------------------------------
// Rationals

function gcd(a: bigint, b: bigint): bigint {
  let x = a < 0n ? -a : a;
  let y = b < 0n ? -b : b;
  while (y !== 0n) [x, y] = [y, x % y];
  return x;
}

/** num/den in lowest terms with a positive denominator. */
export function rational(num: bigint, den: bigint = 1n): Rational {
  if (den === 0n) throw new RangeError('zero denominator');
  if (den < 0n) [num, den] = [-num, -den];
  const g = gcd(num, den) || 1n;
  return { num: num / g, den: den / g };
}

export function mulR(a: Rational, b: Rational): Rational {
  return rational(a.num * b.num, a.den * b.den);
}

export function divR(a: Rational, b: Rational): Rational {
  if (b.num === 0n) throw new RangeError('division by zero');
  return rational(a.num * b.den, a.den * b.num);
}

export function invertR(a: Rational): Rational {
  return divR(rational(1n), a);
}

/** Parse exact decimal text ("0.92", "16300") or a fraction ("1/65000"). */
export function parseRational(text: string): Rational {
  const slash = text.indexOf('/');
  if (slash >= 0) return divR(parseRational(text.slice(0, slash)), parseRational(text.slice(slash + 1)));
  const m = /^(\d+)(?:\.(\d+))?$/.exec(text.trim());
  if (!m) throw new Error(`not a decimal: ${text}`);
  const frac = m[2] ?? '';
  return rational(BigInt(m[1]! + frac), 10n ** BigInt(frac.length));
}

/** Integer division with an explicit rounding (den > 0 after normalisation). */
export function divRound(num: bigint, den: bigint, rounding: Rounding): bigint {
  if (den === 0n) throw new RangeError('division by zero');
  if (den < 0n) [num, den] = [-num, -den];
  let q = num / den; // truncates toward zero
  const r = num % den;
  if (r === 0n) return q;
  if (rounding === 'floor') {
    if (num < 0n) q -= 1n;
  } else if (rounding === 'ceil') {
    if (num > 0n) q += 1n;
  } else {
    // Half-up rounds a tie away from zero; half-even to the even neighbour.
    const twice = (r < 0n ? -r : r) * 2n;
    const away = twice > den || (twice === den && (rounding === 'half-up' || q % 2n !== 0n));
    if (away) q += num < 0n ? -1n : 1n;
  }
  return q;
}

/**
 * A rational as a display number with `significant` digits (never used for amounts); 17
 * keeps the nearest double, what a client recomputing the rational gets.
 */
export function rationalToNumber(r: Rational, significant = 12): number {
  if (r.num === 0n) return 0;
  const neg = r.num < 0n;
  const n = neg ? -r.num : r.num;
  // Scale so the integer quotient carries at least 17 digits, then let the parser round.
  const digits = (x: bigint) => x.toString().length;
  const k = Math.max(0, 17 - (digits(n) - digits(r.den)) + 1);
  const q = (n * 10n ** BigInt(k)) / r.den;
  const value = Number(Number.parseFloat(`${q}e-${k}`).toPrecision(significant));
  return neg ? -value : value;
}

// ---------------------------------------------------------------------------------------
// Rates

const MID: ReadonlyMap<string, Rational> = new Map(Object.entries(USD_MID_RATES).map(([c, t]) => [c, parseRational(t)]));

for (const code of CURRENCIES.keys()) {
  if (!MID.has(code)) throw new Error(`sandbox FX: no USD mid rate for ${code}`);
}

/** True when the sandbox market quotes the currency. */
export function hasRate(code: string): boolean {
  return MID.has(code);
}

export interface SandboxRate {
  from: string;
  to: string;
  /** Display: units of `to` per unit of `from` (major units), spread applied. */
  rate: number;
  /** Exact customer rate: units of `to` per unit of `from` (major units), spread applied. */
  exact: Rational;
  /** Exact mid rate, before the spread. */
  mid: Rational;
  /** Spread applied, in basis points (0 between a currency and itself). */
  spreadBps: number;
}

function midOf(code: string): Rational {
  const r = MID.get(code);
  if (!r) throw new Error(`sandbox FX: unknown currency ${code}`);
  return r;
}

/** Units of `to` per unit of `from` at the sandbox market, spread applied. */
export function sandboxRate(from: string, to: string): SandboxRate {
  const mid = from === to ? rational(1n) : divR(midOf(to), midOf(from));
  const spreadBps = from === to ? 0 : SPREAD_BPS;
  const exact = mulR(mid, rational(BigInt(10_000 - spreadBps), 10_000n));
  return { from, to, rate: rationalToNumber(exact), exact, mid, spreadBps };
}

/** The rate in minor units: smallest units of `to` per smallest unit of `from`. */
export function minorRate(rate: Rational, from: string, to: string): Rational {
  const df = BigInt(getCurrency(from).decimals);
  const dt = BigInt(getCurrency(to).decimals);
  return rational(rate.num * 10n ** dt, rate.den * 10n ** df);
}

/**
 * Convert an amount in minor units of `from` to minor units of `to` at `rate` (major units
 * of `to` per major unit of `from`), rounding once at the end.
 */
export function convertMinor(amountMinor: bigint | number, from: string, to: string, rate: Rational, rounding: Rounding): bigint {
  const a = toBig(amountMinor);
  const m = minorRate(rate, from, to);
  return divRound(a * m.num, m.den, rounding);
}

function toBig(amount: bigint | number): bigint {
  if (typeof amount === 'bigint') return amount;
  if (!Number.isSafeInteger(amount)) throw new RangeError(`amount ${amount} is not a safe integer of minor units`);
  return BigInt(amount);
}

// ---------------------------------------------------------------------------------------
// Quote arithmetic (the real service's formulas; docs/sandbox.md, "Quote pricing"). Platform
// fees (CROSS_CURRENCY_TRANSACTION) are charged in the sending currency and taken out of the
// sending amount before conversion. Every place that prices (quotes, the transactions they
// make, GET /exchange-rates, the lookups' sending bounds) goes through these functions.

/** A platform fee in the sending currency's smallest unit. */
export interface FeeSchedule {
  variableBps: number;
  fixed: number;
}

/** The two parts of a platform fee, in the sending currency's smallest unit. */
export interface FeeParts {
  fixed: bigint;
  variable: bigint;
  total: bigint;
}

/**
 * The parts of the platform fee on a sending amount s, the real service's formula: the fixed
 * fee is taken first and the variable rate v = bps / 10,000 applies to what remains, each
 * part rounded on its own, half to even, in minor units:
 * `fee = fixed + round_half_even((s − fixed) × v)`; the variable part is 0 when the fixed fee
 * is the whole amount or more. None without a schedule.
 */
export function platformFeeParts(sendingMinor: bigint | number, fee: FeeSchedule | null | undefined): FeeParts {
  if (!fee) return { fixed: 0n, variable: 0n, total: 0n };
  const s = toBig(sendingMinor);
  const fixed = BigInt(fee.fixed);
  const base = s > fixed ? s - fixed : 0n;
  const variable = divRound(base * BigInt(fee.variableBps), 10_000n, 'half-even');
  return { fixed, variable, total: fixed + variable };
}

/**
 * The platform fee on a sending amount: fixed + variable, the variable part on the amount
 * net of the fixed fee (platformFeeParts). None between a currency and itself (the fee type
 * is cross-currency: callers pass no schedule) or without a schedule.
 */
export function platformFeeMinor(sendingMinor: bigint | number, fee: FeeSchedule | null | undefined): bigint {
  return platformFeeParts(sendingMinor, fee).total;
}

/** A quote's amounts in minor units: what is sent, what arrives, and the platform fee within the sending amount. */
export interface QuoteAmounts {
  sending: bigint;
  receiving: bigint;
  fees: FeeParts;
}

/**
 * The receiving amount of a locked sending amount s, the real service's formula, with fx the
 * customer rate in minor units (minorRate) and v = bps / 10,000:
 * `receiving = round_half_even((s − fixed) × (1 − v) × fx)`, exactly (one rounding, at the
 * end); 0 when the fixed fee is the whole amount or more.
 */
function receivingOf(s: bigint, m: Rational, fee: FeeSchedule | null | undefined): bigint {
  const fixed = BigInt(fee?.fixed ?? 0);
  const keep = BigInt(10_000 - (fee?.variableBps ?? 0));
  const base = s > fixed ? s - fixed : 0n;
  return divRound(base * keep * m.num, 10_000n * m.den, 'half-even');
}

/** The quote of a locked sending amount: its receiving amount (receivingOf) and its fee (platformFeeParts). */
export function quoteForSending(sendingMinor: bigint | number, from: string, to: string, rate: Rational, fee?: FeeSchedule | null): QuoteAmounts {
  const s = toBig(sendingMinor);
  return { sending: s, receiving: receivingOf(s, minorRate(rate, from, to), fee), fees: platformFeeParts(s, fee) };
}

/**
 * The quote of a locked receiving amount r, the real service's formula:
 * `sending = round_half_even(r / (fx × (1 − v)) + fixed)` (fixed is whole, so it is added
 * after rounding), and the fee on that sending amount (platformFeeParts). The receiving amount
 * stays r. Null when no sending amount can deliver (a variable fee of 100 %).
 */
export function quoteForReceiving(receivingMinor: bigint | number, from: string, to: string, rate: Rational, fee?: FeeSchedule | null): QuoteAmounts | null {
  const r = toBig(receivingMinor);
  const m = minorRate(rate, from, to);
  const keep = BigInt(10_000 - (fee?.variableBps ?? 0));
  if (keep <= 0n) return null;
  const s = divRound(r * 10_000n * m.den, m.num * keep, 'half-even') + BigInt(fee?.fixed ?? 0);
  return { sending: s, receiving: r, fees: platformFeeParts(s, fee) };
}

/**
 * A quote's exchange rate as the reference defines it, "sending currency units per receiving
 * currency unit", in major units and net of fees, from the quote's own rounded amounts:
 * `((sending − fees) / 10^sendingDecimals) / (receiving / 10^receivingDecimals)`, exact.
 * Null when nothing arrives or nothing is left after fees (no such quote exists).
 */
export function netExchangeRate(q: QuoteAmounts, from: string, to: string): Rational | null {
  const net = q.sending - q.fees.total;
  if (q.receiving <= 0n || net <= 0n) return null;
  const df = BigInt(getCurrency(from).decimals);
  const dt = BigInt(getCurrency(to).decimals);
  return rational(net * 10n ** dt, q.receiving * 10n ** df);
}

/** A rational as the nearest double (full precision: what a client recomputing it gets). */
export function rationalToDouble(r: Rational): number {
  return rationalToNumber(r, 17);
}

/** What a sending amount delivers (quoteForSending): its fee, what is left after it, the receiving amount. */
export function receivingForSending(
  sendingMinor: bigint | number,
  from: string,
  to: string,
  rate: Rational,
  fee?: FeeSchedule | null,
): { fees: bigint; net: bigint; receiving: bigint } {
  const q = quoteForSending(sendingMinor, from, to, rate, fee);
  const net = q.sending > q.fees.total ? q.sending - q.fees.total : 0n;
  return { fees: q.fees.total, net, receiving: q.receiving };
}

/** Upper limit of the searches below: past it a bound is "unresolvable". */
const SEARCH_LIMIT = 1n << 96n;

/** Smallest s ≥ 0 with pred(s) true, for a monotone pred; null past SEARCH_LIMIT. */
function smallestSatisfying(pred: (s: bigint) => boolean): bigint | null {
  if (pred(0n)) return 0n;
  let hi = 1n;
  while (!pred(hi)) {
    if (hi > SEARCH_LIMIT) return null;
    hi *= 2n;
  }
  let lo = hi / 2n; // pred(lo) false (lo = 0 was checked)
  while (hi - lo > 1n) {
    const mid = (lo + hi) / 2n;
    if (pred(mid)) hi = mid;
    else lo = mid;
  }
  return hi;
}

/**
 * The smallest sending amount (minor units of `from`) whose quote (quoteForSending) delivers
 * at least `minReceiving` (minor units of `to`). The receiving amount never decreases as the
 * sending amount grows (one half-even rounding of a non-decreasing exact value), so the search
 * bisects on it. Null when no amount can (a fee of 100 %).
 */
export function minSendingFor(minReceiving: bigint | number, from: string, to: string, rate: Rational, fee?: FeeSchedule | null): bigint | null {
  const target = toBig(minReceiving);
  const m = minorRate(rate, from, to);
  return smallestSatisfying((s) => receivingOf(s, m, fee) >= target);
}

/** The largest sending amount whose quote (quoteForSending) delivers at most `maxReceiving`. */
export function maxSendingFor(maxReceiving: bigint | number, from: string, to: string, rate: Rational, fee?: FeeSchedule | null): bigint | null {
  const target = toBig(maxReceiving);
  const m = minorRate(rate, from, to);
  const firstOver = smallestSatisfying((s) => receivingOf(s, m, fee) > target);
  return firstOver === null ? null : firstOver - 1n;
}

/**
 * Sending-side bounds for receiving bounds [min, max], in the sending currency's smallest
 * unit, as JSON-safe integers. `min` is null when it cannot be resolved (no amount reaches
 * it, or it is beyond what a JSON integer carries); `max` is clamped to
 * Number.MAX_SAFE_INTEGER, the largest amount the API can carry at all.
 */
export function sendingBounds(
  min: bigint | number,
  max: bigint | number,
  from: string,
  to: string,
  rate: Rational,
  fee?: FeeSchedule | null,
): { minSendingAmount: number | null; maxSendingAmount: number | null } {
  const lo = minSendingFor(min, from, to, rate, fee);
  const hi = maxSendingFor(max, from, to, rate, fee);
  const safe = BigInt(Number.MAX_SAFE_INTEGER);
  const minSendingAmount = lo === null || lo > safe ? null : Number(lo);
  const maxSendingAmount = hi === null || minSendingAmount === null ? null : Number(hi > safe ? safe : hi);
  if (minSendingAmount !== null && maxSendingAmount !== null && maxSendingAmount < minSendingAmount) {
    return { minSendingAmount: null, maxSendingAmount: null };
  }
  return { minSendingAmount, maxSendingAmount };
}

// ---------------------------------------------------------------------------------------
// The per-platform rate cache

export interface CachedRate {
  rate: SandboxRate;
  /** The platform fee cached with the rate (null: none applies). */
  fee: FeeSchedule | null;
  /** When the entry was (re)computed, on the platform's clock. */
  updatedAtMs: number;
}

const MAX_CACHE_ENTRIES = 50_000;
const cache = new Map<string, CachedRate>();

function sameFee(a: FeeSchedule | null, b: FeeSchedule | null): boolean {
  return a === b || (a !== null && b !== null && a.variableBps === b.variableBps && a.fixed === b.fixed);
}

/**
 * A platform's rate for a pair, cached about 5 minutes of the platform's clock together with
 * the platform fee that applies to it. The entry is refreshed (new `updatedAtMs`) when it is
 * older than RATE_CACHE_TTL_MS, when the platform's clock is before it (never in practice),
 * or when the platform's fee differs from the cached one, so a fee change shows at once.
 * Rates are deterministic, so a refresh changes only `updatedAtMs` and the fee.
 */
export function cachedRate(platformId: string, from: string, to: string, nowMs: number, fee: FeeSchedule | null): CachedRate {
  const key = `${platformId}\u0000${from}\u0000${to}`;
  const hit = cache.get(key);
  if (hit && nowMs >= hit.updatedAtMs && nowMs - hit.updatedAtMs < RATE_CACHE_TTL_MS && sameFee(hit.fee, fee)) return hit;
  if (cache.size >= MAX_CACHE_ENTRIES) {
    for (const [k, v] of cache) if (nowMs - v.updatedAtMs >= RATE_CACHE_TTL_MS || nowMs < v.updatedAtMs) cache.delete(k);
    if (cache.size >= MAX_CACHE_ENTRIES) cache.clear();
  }
  const entry: CachedRate = { rate: sandboxRate(from, to), fee: fee ? { ...fee } : null, updatedAtMs: nowMs };
  cache.set(key, entry);
  return entry;
}

/** Forget a platform's cached rates (tests; not needed by the service). */
export function clearRateCache(platformId?: string): void {
  if (platformId === undefined) return cache.clear();
  for (const k of cache.keys()) if (k.startsWith(`${platformId}\u0000`)) cache.delete(k);
}
