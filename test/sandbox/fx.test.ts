import { describe, expect, it } from 'vitest';
import { CURRENCY_CODES, getCurrency } from '../../src/kernel/currencies.js';
import { CORRIDORS } from '../../src/sandbox/rules/corridors.js';
import {
  cachedRate,
  clearRateCache,
  convertMinor,
  divRound,
  type FeeSchedule,
  hasRate,
  invertR,
  maxSendingFor,
  minorRate,
  minSendingFor,
  parseRational,
  platformFeeMinor,
  platformFeeParts,
  RATE_CACHE_TTL_MS,
  rational,
  rationalToNumber,
  receivingForSending,
  sandboxRate,
  sendingBounds,
  SPREAD_BPS,
} from '../../src/sandbox/rules/fx.js';

// The sandbox FX market: exact rationals, conversions across decimals, bounds, the cache.
// Pure units (no store): they run the same on both store projects.

const r = (s: string) => parseRational(s);

/** Independent reference: amount × rate × 10^dTo / 10^dFrom, floored, in BigInt. */
function refFloor(amount: bigint, from: string, to: string, rate: { num: bigint; den: bigint }): bigint {
  const num = amount * rate.num * 10n ** BigInt(getCurrency(to).decimals);
  const den = rate.den * 10n ** BigInt(getCurrency(from).decimals);
  const q = num / den;
  return num % den !== 0n && num < 0n ? q - 1n : q;
}

describe('rationals', () => {
  it('parses decimals and fractions exactly, in lowest terms', () => {
    expect(r('0.92')).toEqual({ num: 23n, den: 25n });
    expect(r('16300')).toEqual({ num: 16300n, den: 1n });
    expect(r('1/65000')).toEqual({ num: 1n, den: 65000n });
    expect(r('3.6725')).toEqual({ num: 1469n, den: 400n });
    expect(rational(6n, -4n)).toEqual({ num: -3n, den: 2n });
    expect(() => r('1e3')).toThrow();
    expect(() => rational(1n, 0n)).toThrow();
  });

  it('rounds divisions in each direction, for both signs', () => {
    expect([divRound(7n, 2n, 'floor'), divRound(7n, 2n, 'ceil'), divRound(7n, 2n, 'half-up')]).toEqual([3n, 4n, 4n]);
    expect([divRound(-7n, 2n, 'floor'), divRound(-7n, 2n, 'ceil'), divRound(-7n, 2n, 'half-up')]).toEqual([-4n, -3n, -4n]);
    expect([divRound(7n, 3n, 'floor'), divRound(7n, 3n, 'ceil'), divRound(7n, 3n, 'half-up')]).toEqual([2n, 3n, 2n]);
    expect([divRound(8n, 3n, 'half-up'), divRound(6n, 3n, 'ceil'), divRound(6n, 3n, 'floor')]).toEqual([3n, 2n, 2n]);
    expect(divRound(7n, -2n, 'floor')).toBe(-4n);
    // Half to even: a tie goes to the even neighbour, anything else to the nearest.
    expect([5n, 15n, 25n, 35n, 26n, 24n].map((n) => divRound(n, 10n, 'half-even'))).toEqual([0n, 2n, 2n, 4n, 3n, 2n]);
    expect([-5n, -15n, -25n, -26n].map((n) => divRound(n, 10n, 'half-even'))).toEqual([-0n, -2n, -2n, -3n]);
  });

  it('shows rationals as display numbers with 12 significant digits', () => {
    expect(rationalToNumber(rational(1n, 3n))).toBe(0.333333333333);
    expect(rationalToNumber(rational(2n, 3n))).toBe(0.666666666667);
    expect(rationalToNumber(rational(14925n, 100n))).toBe(149.25);
    expect(rationalToNumber(rational(10n ** 30n, 7n))).toBe(1.42857142857e29);
    expect(rationalToNumber(rational(1n, 65000n * 25300n))).toBe(6.08087564609e-10);
    expect(rationalToNumber(rational(-1n, 8n))).toBe(-0.125);
    expect(rationalToNumber(rational(0n))).toBe(0);
  });
});

describe('sandbox rates', () => {
  it('quotes every currency of the service, crypto included', () => {
    for (const code of CURRENCY_CODES) {
      expect(hasRate(code), code).toBe(true);
      const rate = sandboxRate('USD', code);
      expect(rate.rate, code).toBeGreaterThan(0);
      expect(rate.exact.num > 0n && rate.exact.den > 0n, code).toBe(true);
    }
    expect(sandboxRate('USD', 'BTC').mid).toEqual(rational(1n, 65000n));
    expect(sandboxRate('USD', 'USDC').mid).toEqual(rational(1n));
    expect(sandboxRate('USDT', 'USDC').mid).toEqual(rational(1n));
  });

  it('applies the spread against the customer, none between a currency and itself', () => {
    expect(SPREAD_BPS).toBe(50);
    const eur = sandboxRate('USD', 'EUR');
    expect(eur.spreadBps).toBe(50);
    expect(eur.exact).toEqual(r('0.9154')); // 0.92 × 0.995
    expect(eur.rate).toBe(0.9154);
    const same = sandboxRate('JPY', 'JPY');
    expect(same).toMatchObject({ rate: 1, exact: { num: 1n, den: 1n }, spreadBps: 0 });
  });

  it('crosses through USD exactly', () => {
    // EUR → MXN: 18.5 / 0.92 per EUR, less 50 bps.
    const x = sandboxRate('EUR', 'MXN');
    expect(x.mid).toEqual(rational(1850n * 25n, 100n * 23n));
    expect(x.exact).toEqual(rational(1850n * 25n * 9950n, 100n * 23n * 10000n));
    expect(x.rate).toBeCloseTo(20.0081521739, 9);
    // A round trip loses the spread twice, nothing else.
    const back = sandboxRate('MXN', 'EUR');
    expect(rational(x.exact.num * back.exact.num, x.exact.den * back.exact.den)).toEqual(r('0.990025'));
  });

  it('is deterministic', () => {
    expect(sandboxRate('BRL', 'INR')).toEqual(sandboxRate('BRL', 'INR'));
  });
});

describe('convertMinor across decimals', () => {
  const usdJpy = sandboxRate('USD', 'JPY').exact; // 149.25
  const usdBtc = sandboxRate('USD', 'BTC').exact; // 0.995 / 65000

  it('USD (2) → JPY (0)', () => {
    expect(minorRate(usdJpy, 'USD', 'JPY')).toEqual(r('1.4925'));
    expect(convertMinor(10_000, 'USD', 'JPY', usdJpy, 'floor')).toBe(14_925n);
    // 12,345 cents → 18,424.9125 yen.
    expect(convertMinor(12_345, 'USD', 'JPY', usdJpy, 'floor')).toBe(18_424n);
    expect(convertMinor(12_345, 'USD', 'JPY', usdJpy, 'ceil')).toBe(18_425n);
    expect(convertMinor(12_345, 'USD', 'JPY', usdJpy, 'half-up')).toBe(18_425n);
    expect(convertMinor(1, 'USD', 'JPY', usdJpy, 'floor')).toBe(1n);
    expect(convertMinor(0, 'USD', 'JPY', usdJpy, 'ceil')).toBe(0n);
  });

  it('JPY (0) → USD (2)', () => {
    const jpyUsd = sandboxRate('JPY', 'USD').exact; // 0.995 / 150
    // 150 yen → 99.5 cents.
    expect(convertMinor(150, 'JPY', 'USD', jpyUsd, 'floor')).toBe(99n);
    expect(convertMinor(150, 'JPY', 'USD', jpyUsd, 'ceil')).toBe(100n);
    expect(convertMinor(150, 'JPY', 'USD', jpyUsd, 'half-up')).toBe(100n);
    expect(convertMinor(1, 'JPY', 'USD', jpyUsd, 'floor')).toBe(0n);
  });

  it('USD (2) → BTC (8) and back', () => {
    // 100 USD → 0.00153076923… BTC = 153,076.923… sats.
    expect(convertMinor(10_000, 'USD', 'BTC', usdBtc, 'floor')).toBe(153_076n);
    expect(convertMinor(10_000, 'USD', 'BTC', usdBtc, 'ceil')).toBe(153_077n);
    expect(convertMinor(10_000, 'USD', 'BTC', usdBtc, 'half-up')).toBe(153_077n);
    const btcUsd = sandboxRate('BTC', 'USD').exact; // 64,675 USD per BTC
    expect(convertMinor(100_000_000, 'BTC', 'USD', btcUsd, 'floor')).toBe(6_467_500n);
    // 1 sat = 0.064675 cents.
    expect(convertMinor(1, 'BTC', 'USD', btcUsd, 'floor')).toBe(0n);
    expect(convertMinor(1, 'BTC', 'USD', btcUsd, 'ceil')).toBe(1n);
  });

  it('USD (2) → USDC (6), ETH (18), SOL (9); VND (0) → BTC (8)', () => {
    expect(convertMinor(100, 'USD', 'USDC', sandboxRate('USD', 'USDC').exact, 'floor')).toBe(995_000n);
    // 1 cent → 0.01 / 2500 × 0.995 ETH = 3.98e-6 ETH, exactly 3,980,000,000,000 wei.
    expect(convertMinor(1, 'USD', 'ETH', sandboxRate('USD', 'ETH').exact, 'floor')).toBe(3_980_000_000_000n);
    expect(convertMinor(16_000, 'USD', 'SOL', sandboxRate('USD', 'SOL').exact, 'floor')).toBe(995_000_000n);
    // 25,300,000 VND = 1,000 USD → 1000/65000 × 0.995 BTC = 1,530,769.23 sats.
    expect(convertMinor(25_300_000, 'VND', 'BTC', sandboxRate('VND', 'BTC').exact, 'floor')).toBe(1_530_769n);
  });

  it('keeps huge amounts exact (beyond 2^53 as BigInt)', () => {
    const max = BigInt(Number.MAX_SAFE_INTEGER);
    expect(convertMinor(Number.MAX_SAFE_INTEGER, 'USD', 'JPY', usdJpy, 'floor')).toBe(refFloor(max, 'USD', 'JPY', usdJpy));
    expect(convertMinor(Number.MAX_SAFE_INTEGER, 'USD', 'JPY', usdJpy, 'floor')).toBe(13_443_244_887_700_929n); // 9,007,199,254,740,991 × 1.4925, floored
    const huge = 10n ** 30n + 7n;
    for (const [from, to] of [['USD', 'BTC'], ['BTC', 'IDR'], ['ETH', 'JPY'], ['VND', 'ETH'], ['KRW', 'USDC']] as const) {
      const rate = sandboxRate(from, to).exact;
      expect(convertMinor(huge, from, to, rate, 'floor'), `${from}→${to}`).toBe(refFloor(huge, from, to, rate));
      const c = convertMinor(huge, from, to, rate, 'ceil');
      const f = convertMinor(huge, from, to, rate, 'floor');
      expect(c - f === 0n || c - f === 1n).toBe(true);
    }
  });

  it('refuses an unsafe number amount (use BigInt)', () => {
    expect(() => convertMinor(2 ** 60, 'USD', 'JPY', usdJpy, 'floor')).toThrow(RangeError);
    expect(() => convertMinor(1.5, 'USD', 'JPY', usdJpy, 'floor')).toThrow(RangeError);
  });
});

describe('platform fees and receiving amounts', () => {
  const fee: FeeSchedule = { variableBps: 100, fixed: 30 };

  it('charges fixed + variable (half to even) on the amount net of the fixed fee, nothing without a schedule', () => {
    expect(platformFeeMinor(10_000, fee)).toBe(130n); // 30 + 1 % of 9,970 = 99.7 → 100
    expect(platformFeeMinor(180, fee)).toBe(32n); // 30 + 1 % of 150 = 1.5 → 2
    expect(platformFeeMinor(179, fee)).toBe(31n); // 30 + 1 % of 149 = 1.49 → 1
    expect(platformFeeMinor(150, fee)).toBe(31n); // on the gross amount it would be 30 + 1.5 → 32
    expect(platformFeeMinor(10_000, null)).toBe(0n);
    // Ties: 0.5 % of 100 = 0.5 → 0, of 300 = 1.5 → 2, of 500 = 2.5 → 2 (half up would give 1, 2, 3).
    expect([100, 300, 500].map((a) => platformFeeParts(a, { variableBps: 50, fixed: 0 }).variable)).toEqual([0n, 2n, 2n]);
  });

  it('applies the variable rate after the fixed fee (hosted docs, "Assessing fees")', () => {
    // The docs' worked example: $10.00, 30 bps + $0.50 → (1000 − 50) × 0.003 = 2.85 → 3, + 50.
    expect(platformFeeParts(1_000, { variableBps: 30, fixed: 50 })).toEqual({ fixed: 50n, variable: 3n, total: 53n });
    // $1,000.00 with 100 bps + $50.00: (100,000 − 5,000) × 0.01 = 950 (the gross amount would give 1,000).
    expect(platformFeeParts(100_000, { variableBps: 100, fixed: 5_000 })).toEqual({ fixed: 5_000n, variable: 950n, total: 5_950n });
    expect(platformFeeMinor(100_000, { variableBps: 100, fixed: 5_000 })).toBe(5_950n);
    // A fixed fee of the whole amount or more leaves no base for the variable part.
    expect(platformFeeParts(40, { variableBps: 100, fixed: 50 })).toEqual({ fixed: 50n, variable: 0n, total: 50n });
    expect(platformFeeParts(50, { variableBps: 100, fixed: 50 })).toEqual({ fixed: 50n, variable: 0n, total: 50n });
    expect(platformFeeParts(5_000, null)).toEqual({ fixed: 0n, variable: 0n, total: 0n });
  });

  it('delivers round_half_even((s − fixed) × (1 − v) × fx): the fixed fee off, the variable rate unrounded', () => {
    const eur = sandboxRate('USD', 'EUR').exact;
    // (10,000 − 30) × 0.99 × 0.9154 = 9035.17262 → 9035 (the rounded fee would leave 9870 × 0.9154 = 9034.998).
    expect(receivingForSending(10_000, 'USD', 'EUR', eur, fee)).toEqual({ fees: 130n, net: 9_870n, receiving: 9_035n });
    expect(receivingForSending(10_000, 'USD', 'EUR', eur)).toEqual({ fees: 0n, net: 10_000n, receiving: 9_154n });
    expect(receivingForSending(20, 'USD', 'EUR', eur, fee)).toEqual({ fees: 30n, net: 0n, receiving: 0n });
  });
});

describe('sending bounds', () => {
  const usdJpy = sandboxRate('USD', 'JPY').exact;

  it('USD → JPY: min is the smallest amount whose quote delivers min, max the largest that delivers at most max', () => {
    // 150 yen / 1.4925 yen per cent = 100.50 cents → 101.
    expect(minSendingFor(150, 'USD', 'JPY', usdJpy)).toBe(101n);
    expect(convertMinor(101, 'USD', 'JPY', usdJpy, 'floor')).toBe(150n);
    expect(convertMinor(100, 'USD', 'JPY', usdJpy, 'floor')).toBe(149n);
    // 15,000,000 yen / 1.4925 = 10,050,251.26 cents → 10,050,251.
    expect(maxSendingFor(15_000_000, 'USD', 'JPY', usdJpy)).toBe(10_050_251n);
    expect(convertMinor(10_050_251, 'USD', 'JPY', usdJpy, 'ceil')).toBeLessThanOrEqual(15_000_000n);
    expect(convertMinor(10_050_252, 'USD', 'JPY', usdJpy, 'floor')).toBeGreaterThan(15_000_000n);
  });

  it('exact multiples need no rounding', () => {
    // 1.4925 yen per cent: 400 cents deliver exactly 597 yen.
    expect(minSendingFor(597, 'USD', 'JPY', usdJpy)).toBe(400n);
    expect(maxSendingFor(597, 'USD', 'JPY', usdJpy)).toBe(400n);
    expect(minSendingFor(0, 'USD', 'JPY', usdJpy)).toBe(0n);
  });

  it('USD → BTC and BTC → USD (8 decimals)', () => {
    const usdBtc = sandboxRate('USD', 'BTC').exact;
    // 1,000 sats × 65000 / 0.995 / 10^8 USD = 0.6532… USD → 66 cents.
    expect(minSendingFor(1_000, 'USD', 'BTC', usdBtc)).toBe(66n);
    expect(convertMinor(66, 'USD', 'BTC', usdBtc, 'floor')).toBeGreaterThanOrEqual(1_000n);
    expect(convertMinor(65, 'USD', 'BTC', usdBtc, 'floor')).toBeLessThan(1_000n);
    // 2 BTC = 130,000 / 0.995 USD = 130,653.27 USD → 13,065,326 cents.
    expect(maxSendingFor(200_000_000, 'USD', 'BTC', usdBtc)).toBe(13_065_326n);
    const btcUsd = sandboxRate('BTC', 'USD').exact;
    // 100 cents at 0.064675 cents per sat, rounded half to even: 99.5 cents round to 100, so 1,538.47 sats → 1,539.
    expect(minSendingFor(100, 'BTC', 'USD', btcUsd)).toBe(1_539n);
    expect(receivingForSending(1_539, 'BTC', 'USD', btcUsd).receiving).toBe(100n);
    expect(receivingForSending(1_538, 'BTC', 'USD', btcUsd).receiving).toBe(99n);
  });

  it('includes the platform fee: min covers it, max leaves room for it', () => {
    const eur = sandboxRate('USD', 'EUR').exact;
    const fee: FeeSchedule = { variableBps: 100, fixed: 50 };
    const min = minSendingFor(100, 'USD', 'EUR', eur, fee)!;
    expect(min).toBe(160n); // (160 − 50) × 0.99 × 0.9154 = 99.69 → 100; (159 − 50) × 0.99 × 0.9154 = 98.78 → 99
    expect(receivingForSending(min, 'USD', 'EUR', eur, fee).receiving).toBeGreaterThanOrEqual(100n);
    expect(receivingForSending(min - 1n, 'USD', 'EUR', eur, fee).receiving).toBeLessThan(100n);
    const max = maxSendingFor(10_000_000, 'USD', 'EUR', eur, fee)!;
    expect(receivingForSending(max, 'USD', 'EUR', eur, fee).receiving).toBeLessThanOrEqual(10_000_000n);
    expect(receivingForSending(max + 1n, 'USD', 'EUR', eur, fee).receiving).toBeGreaterThan(10_000_000n);
    expect(max).toBeGreaterThan(maxSendingFor(10_000_000, 'USD', 'EUR', eur)!);
  });

  it('holds for every corridor from several sources, with and without a fee (exhaustive check of the edges)', () => {
    const fees: Array<FeeSchedule | null> = [null, { variableBps: 75, fixed: 25 }, { variableBps: 0, fixed: 1 }, { variableBps: 999, fixed: 0 }];
    for (const from of ['USD', 'EUR', 'JPY', 'BTC', 'USDC', 'VND', 'KRW']) {
      for (const c of CORRIDORS) {
        const rate = sandboxRate(from, c.currency).exact;
        for (const fee of fees) {
          const f = from === c.currency ? null : fee;
          const lo = minSendingFor(c.min, from, c.currency, rate, f)!;
          const hi = maxSendingFor(c.max, from, c.currency, rate, f)!;
          const tag = `${from}→${c.currency} ${JSON.stringify(f)}`;
          expect(receivingForSending(lo, from, c.currency, rate, f).receiving, tag).toBeGreaterThanOrEqual(BigInt(c.min));
          if (lo > 0n) expect(receivingForSending(lo - 1n, from, c.currency, rate, f).receiving, tag).toBeLessThan(BigInt(c.min));
          expect(receivingForSending(hi, from, c.currency, rate, f).receiving, tag).toBeLessThanOrEqual(BigInt(c.max));
          expect(receivingForSending(hi + 1n, from, c.currency, rate, f).receiving, tag).toBeGreaterThan(BigInt(c.max));
          expect(lo <= hi, tag).toBe(true);
        }
      }
    }
  });

  it('is unresolvable when no amount reaches the minimum (a 100 % fee)', () => {
    const eur = sandboxRate('USD', 'EUR').exact;
    expect(minSendingFor(100, 'USD', 'EUR', eur, { variableBps: 10_000, fixed: 0 })).toBeNull();
    expect(sendingBounds(100, 1_000, 'USD', 'EUR', eur, { variableBps: 10_000, fixed: 0 })).toEqual({ minSendingAmount: null, maxSendingAmount: null });
  });

  it('gives JSON-safe numbers: max clamped to 2^53 − 1, min omitted beyond it', () => {
    // ETH has 18 decimals: ₹8,000,000 is about 30 ETH = 3e19 wei.
    const ethInr = sandboxRate('ETH', 'INR').exact;
    const b = sendingBounds(10_000, 800_000_000, 'ETH', 'INR', ethInr);
    expect(b.maxSendingAmount).toBe(Number.MAX_SAFE_INTEGER);
    expect(b.minSendingAmount).toBe(Number(minSendingFor(10_000, 'ETH', 'INR', ethInr)));
    expect(Number.isSafeInteger(b.minSendingAmount)).toBe(true);
    const tooMuch = sendingBounds(10n ** 30n, 10n ** 31n, 'ETH', 'INR', ethInr);
    expect(tooMuch).toEqual({ minSendingAmount: null, maxSendingAmount: null });
    const usd = sendingBounds(10_000, 800_000_000, 'USD', 'INR', sandboxRate('USD', 'INR').exact);
    // ₹100 / 83.58 = 1.1964 USD → 120 cents; ₹8,000,000 / 83.58 = 95,716.68 USD → 9,571,667 cents.
    expect(usd).toEqual({ minSendingAmount: 120, maxSendingAmount: 9_571_667 });
  });

  it('inverse of the display rate is the reciprocal of the exact rate', () => {
    const x = sandboxRate('USD', 'INR');
    expect(rationalToNumber(invertR(x.exact))).toBeCloseTo(1 / 83.58, 12);
  });
});

describe('rate cache', () => {
  const T0 = Date.UTC(2025, 9, 13, 12, 0, 0);

  it('keeps an entry for 5 minutes of the platform clock, then refreshes it', () => {
    clearRateCache();
    const a = cachedRate('P1', 'USD', 'EUR', T0, null);
    expect(a.updatedAtMs).toBe(T0);
    expect(cachedRate('P1', 'USD', 'EUR', T0 + RATE_CACHE_TTL_MS - 1, null)).toBe(a);
    const b = cachedRate('P1', 'USD', 'EUR', T0 + RATE_CACHE_TTL_MS, null);
    expect(b).not.toBe(a);
    expect(b.updatedAtMs).toBe(T0 + RATE_CACHE_TTL_MS);
    expect(b.rate).toEqual(a.rate);
  });

  it('is per platform and per pair', () => {
    clearRateCache();
    const a = cachedRate('P1', 'USD', 'EUR', T0, null);
    expect(cachedRate('P2', 'USD', 'EUR', T0 + 1000, null).updatedAtMs).toBe(T0 + 1000);
    expect(cachedRate('P1', 'EUR', 'USD', T0 + 2000, null).updatedAtMs).toBe(T0 + 2000);
    expect(cachedRate('P1', 'USD', 'EUR', T0 + 3000, null)).toBe(a);
  });

  it('caches the fee with the rate and refreshes when the fee changes', () => {
    clearRateCache();
    const fee = { variableBps: 10, fixed: 5 };
    const a = cachedRate('P1', 'USD', 'MXN', T0, fee);
    expect(a.fee).toEqual(fee);
    expect(cachedRate('P1', 'USD', 'MXN', T0 + 1000, { ...fee })).toBe(a);
    const b = cachedRate('P1', 'USD', 'MXN', T0 + 2000, { variableBps: 20, fixed: 5 });
    expect(b.updatedAtMs).toBe(T0 + 2000);
    expect(b.fee).toEqual({ variableBps: 20, fixed: 5 });
    expect(cachedRate('P1', 'USD', 'MXN', T0 + 3000, null).fee).toBeNull();
  });

  it('refreshes when the platform clock is before the entry', () => {
    clearRateCache();
    cachedRate('P1', 'USD', 'EUR', T0, null);
    expect(cachedRate('P1', 'USD', 'EUR', T0 - 1, null).updatedAtMs).toBe(T0 - 1);
  });
});
