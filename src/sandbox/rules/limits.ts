import { findCurrency } from '../../kernel/currencies.js';
import { convertMinor, hasRate, sandboxRate } from './fx.js';

// The sandbox's default transaction limits (src/api/limits/service.ts applies them).
//
// Both limits are measured in the SENDING currency's smallest unit (the quote's
// totalSendingAmount, fees included) and apply per trade corridor: sendingCurrency →
// receivingCurrency, or a withdrawal when both are the same currency. Every corridor out of
// a currency starts with that currency's row below; each corridor is counted on its own
// (USD→EUR and USD→MXN each have their own day's volume).
//
// A currency without a row gets the USD-equivalent fallback converted at the sandbox mid
// rate (src/sandbox/rules/fx.ts), rounded down. A platform's overrides (PATCH /admin/platforms/{id}
// `limits`) take precedence over all of this.

export type LimitKind = 'transactionSize' | 'dailyVolume';

export interface CurrencyLimits {
  /** Single-transaction maximum, smallest unit of the sending currency. */
  transactionSize: number;
  /** Daily volume of one corridor (platform clock, UTC day), smallest unit of the sending currency. */
  dailyVolume: number;
}

/**
 * Per sending currency: about US$100,000 a transaction and ten times that a day, in round
 * local amounts. The single-transaction maximum equals the receiving maximum of the
 * currency's own corridor (src/sandbox/rules/corridors.ts), so by default a withdrawal the sandbox
 * can price is never refused by it, while a cross-currency quote can be (10,000,001 US cents
 * to EUR is within the EUR corridor but above the USD maximum).
 */
export const DEFAULT_LIMITS: Readonly<Record<string, CurrencyLimits>> = {
  USD: { transactionSize: 10_000_000, dailyVolume: 100_000_000 }, // $100,000 / $1,000,000
  EUR: { transactionSize: 10_000_000, dailyVolume: 100_000_000 }, // €100,000 / €1,000,000
  GBP: { transactionSize: 8_000_000, dailyVolume: 80_000_000 }, // £80,000 / £800,000
  MXN: { transactionSize: 200_000_000, dailyVolume: 2_000_000_000 }, // MX$2,000,000 / MX$20,000,000
  BRL: { transactionSize: 50_000_000, dailyVolume: 500_000_000 }, // R$500,000 / R$5,000,000
  INR: { transactionSize: 800_000_000, dailyVolume: 8_000_000_000 }, // ₹8,000,000 / ₹80,000,000
  USDC: { transactionSize: 100_000_000_000, dailyVolume: 1_000_000_000_000 }, // 100,000 / 1,000,000 USDC
  USDT: { transactionSize: 100_000_000_000, dailyVolume: 1_000_000_000_000 }, // 100,000 / 1,000,000 USDT
  BTC: { transactionSize: 200_000_000, dailyVolume: 2_000_000_000 }, // 2 BTC / 20 BTC
};

/** For a sending currency without a row: US cents, converted at the sandbox mid rate. */
export const DEFAULT_LIMITS_USD_CENTS: Readonly<CurrencyLimits> = { transactionSize: 10_000_000, dailyVolume: 100_000_000 };

/**
 * An amount of US cents in the smallest unit of `currency` at the sandbox mid rate, rounded
 * down (exact BigInt arithmetic). Null when the sandbox has no rate for the currency.
 */
export function usdCentsIn(usdCents: bigint, currency: string): bigint | null {
  if (currency === 'USD') return usdCents;
  if (!findCurrency(currency) || !hasRate(currency)) return null;
  return convertMinor(usdCents, 'USD', currency, sandboxRate('USD', currency).mid, 'floor');
}

/** The sandbox default of a limit for a sending currency, in its smallest unit (null: no limit can be derived). */
export function sandboxDefaultLimit(kind: LimitKind, sendingCurrency: string): bigint | null {
  const row = DEFAULT_LIMITS[sendingCurrency];
  if (row) return BigInt(row[kind]);
  return usdCentsIn(BigInt(DEFAULT_LIMITS_USD_CENTS[kind]), sendingCurrency);
}
