import type { Kysely, Transaction } from 'kysely';
import { iso } from '../../kernel/clock.js';
import { currencyView } from '../../kernel/currencies.js';
import type { DB } from '../../kernel/db/schema.js';
import { TableCache } from '../../kernel/db/table-cache.js';
import { apiError, FieldErrors } from '../../kernel/errors.js';
import { CORRIDORS, corridorOf, defaultRail, type PaymentRail } from '../../sandbox/rules/corridors.js';
import { type CachedRate, cachedRate, type FeeSchedule, invertR, netExchangeRate, quoteForSending, rationalToDouble, sendingBounds } from '../../sandbox/rules/fx.js';
import { FEE_SOURCE_CURRENCIES, findActiveFee } from '../config/service.js';
import { findConfig } from '../config/store.js';
import type { PlatformRow } from '../../operator/platforms/store.js';
import type { ExchangeRate, ExchangeRateQuery } from './schemas.js';

// Pricing shared by GET /exchange-rates, the receiver lookups and (next) the quotes: the
// sandbox market rate of a pair through the platform's 5-minute cache, with the platform's
// CROSS_CURRENCY_TRANSACTION fee (USD sources only today) cached alongside.

type Db = Kysely<DB> | Transaction<DB>;

export const PLATFORM_FEE_TYPE = 'CROSS_CURRENCY_TRANSACTION';

/** The platform's active cross-currency fee for a source currency, or null (none configured, or not a fee currency). */
export async function platformFee(db: Db, platformId: string, sourceCurrency: string): Promise<FeeSchedule | null> {
  if (!FEE_SOURCE_CURRENCIES.includes(sourceCurrency)) return null;
  // Read on every lookup and quote: kept while fee_configs does not change (SQLite; see TableCache).
  return fees.get(db, `${platformId}\u0000${sourceCurrency}`, async () => {
    const f = await findActiveFee(db, platformId, PLATFORM_FEE_TYPE, sourceCurrency);
    if (!f || f.fixedFee.currency !== sourceCurrency) return null;
    return Object.freeze({ variableBps: f.variableFeeBps, fixed: f.fixedFee.amount });
  });
}

const fees = new TableCache<string, FeeSchedule | null>(['fee_configs']);

/**
 * The platform's rate for a pair at `nowMs` (its clock), with the fee that applies to it:
 * `sourceFee` (from platformFee) for a cross-currency pair, none between a currency and itself.
 */
export function pairRate(platformId: string, from: string, to: string, nowMs: number, sourceFee: FeeSchedule | null): CachedRate {
  return cachedRate(platformId, from, to, nowMs, from === to ? null : sourceFee);
}

/** Sending units per receiving unit (major units) at the rate less the variable fee: 1 / (rate × (1 − v)). */
function grossInverse(cached: CachedRate): { num: bigint; den: bigint } {
  const keep = BigInt(10_000 - (cached.fee?.variableBps ?? 0));
  const inv = invertR(cached.rate.exact);
  return keep > 0n ? { num: inv.num * 10_000n, den: inv.den * keep } : inv;
}

/** The platform's configured currencies (config supportedCurrencies), in their order. */
async function platformCurrencies(db: Db, platformId: string): Promise<string[]> {
  const row = await findConfig(db, platformId);
  if (!row) return ['USD'];
  const list = JSON.parse(row.supported_currencies) as Array<{ currencyCode: string }>;
  return [...new Set(list.map((c) => c.currencyCode))];
}

/** Receiving corridors the endpoint can show: those with a payment rail (fiat). */
const RAIL_CORRIDORS = CORRIDORS.filter((c) => defaultRail(c) !== undefined);

export async function listExchangeRates(db: Db, platform: PlatformRow, nowMs: number, q: ExchangeRateQuery): Promise<{ data: ExchangeRate[] }> {
  const sendingAmount = q.sendingAmount ?? 10_000;
  const explicit = q.destinationCurrency !== undefined;
  const requested = [...new Set(q.destinationCurrency ?? [])];

  // A known currency the sandbox cannot pay out in over a rail: one 400 naming all of them.
  const errors = new FieldErrors();
  const available = RAIL_CORRIDORS.map((c) => c.currency);
  (q.destinationCurrency ?? []).forEach((code, i) => {
    if (!available.includes(code)) {
      errors.add(`destinationCurrency.${i}`, `${code} has no receiving corridor with a payment rail in the sandbox`, { enum: available });
    }
  });
  if (!errors.empty) {
    throw apiError(400, 'INVALID_CURRENCY', errors.list.length === 1 ? errors.list[0]!.message : `${errors.list.length} destination currencies are not available`, {
      errors: errors.list,
    });
  }

  const sources = q.sourceCurrency !== undefined ? [q.sourceCurrency] : await platformCurrencies(db, platform.id);
  const destinations = explicit ? requested : available;
  const data: ExchangeRate[] = [];
  const tooLarge: string[] = [];
  for (const from of sources) {
    const fee = await platformFee(db, platform.id, from);
    for (const to of destinations) {
      if (from === to && !explicit) continue;
      const corridor = corridorOf(to)!;
      const cached = pairRate(platform.id, from, to, nowMs, fee);
      const bounds = sendingBounds(corridor.min, corridor.max, from, to, cached.rate.exact, cached.fee);
      // Required fields: a corridor whose sending bounds cannot be stated is left out.
      if (bounds.minSendingAmount === null || bounds.maxSendingAmount === null) continue;
      // The quote arithmetic of a quote locked on this sending amount (sandbox/rules/fx.ts).
      const q = quoteForSending(sendingAmount, from, to, cached.rate.exact, cached.fee);
      const receiving = q.receiving;
      if (receiving > BigInt(Number.MAX_SAFE_INTEGER)) {
        tooLarge.push(to);
        continue;
      }
      data.push({
        sourceCurrency: currencyView(from),
        sendingAmount,
        minSendingAmount: bounds.minSendingAmount,
        maxSendingAmount: bounds.maxSendingAmount,
        destinationCurrency: currencyView(to),
        destinationPaymentRail: defaultRail(corridor) as PaymentRail,
        receivingAmount: Number(receiving),
        // As on the quote: net of fees, from the rounded amounts; the rate's own inverse, net of
        // the variable fee, when this amount delivers nothing.
        exchangeRate: rationalToDouble(netExchangeRate(q, from, to) ?? grossInverse(cached)),
        fees: { fixed: cached.fee?.fixed ?? 0, total: Number(q.fees.total) },
        updatedAt: iso(cached.updatedAtMs),
      });
    }
  }
  if (tooLarge.length > 0) {
    throw apiError(400, 'AMOUNT_OUT_OF_RANGE', `sendingAmount ${sendingAmount} converts to more than an amount can carry for ${[...new Set(tooLarge)].join(', ')}`, {
      field: 'sendingAmount',
      destinationCurrencies: [...new Set(tooLarge)],
    });
  }
  return { data };
}
