import type { Kysely, Transaction } from 'kysely';
import type { DB } from '../../kernel/db/schema.js';
import { apiError, invalidInput } from '../../kernel/errors.js';
import { corridorOf } from '../../sandbox/rules/corridors.js';
import { convertMinor, type FeeSchedule, hasRate, netExchangeRate, type QuoteAmounts, quoteForReceiving, quoteForSending, rationalToDouble, sandboxRate, sendingBounds } from '../../sandbox/rules/fx.js';
import { pairRate, platformFee } from '../exchange-rates/service.js';
import type { OutgoingRateDetails, PlatformFeeOverride, QuoteRequest } from './schemas.js';

// Pricing: the rate and the platform fee of a quote, the same the receiver lookup and
// GET /exchange-rates show (pairRate / platformFee).

type Db = Kysely<DB> | Transaction<DB>;

/** The only source currency platform fees (configured or overridden) apply to today. */
const FEE_SOURCE_CURRENCY = 'USD';
// ---- Pricing ----------------------------------------------------------------------------

interface Priced {
  totalSending: number;
  totalReceiving: number;
  fees: number;
  exchangeRate: number;
  rateDetails: OutgoingRateDetails;
}

/**
 * The fee that applies: the override when given (USD source only: else 400 INVALID_INPUT, as
 * the hosted docs say of overrides; standing feeConfigs keep their 501), else the platform's
 * configured one.
 */
async function feeFor(db: Db, platformId: string, from: string, to: string, override: PlatformFeeOverride | undefined): Promise<FeeSchedule | null> {
  if (override === undefined) return platformFee(db, platformId, from);
  if (from !== FEE_SOURCE_CURRENCY) {
    throw invalidInput([{ field: 'platformFeeOverride', constraint: { enum: [FEE_SOURCE_CURRENCY] }, message: `applies only to a ${FEE_SOURCE_CURRENCY} sending currency today, not ${from}` }]);
  }
  if (override.platformFixedFee.currency.toUpperCase() !== from) {
    throw invalidInput([{ field: 'platformFeeOverride.platformFixedFee.currency', constraint: { enum: [from] }, message: `must be the source currency ${from}` }]);
  }
  if (from === to) return null;
  return { variableBps: override.platformVariableFeeBps, fixed: override.platformFixedFee.amount };
}

/**
 * Price a quote exactly as the lookup does: the platform's cached pair rate and its platform
 * fee (or the quote's override), both lock sides, within the receiving corridor's bounds.
 */
export async function price(db: Db, platformId: string, nowMs: number, from: string, to: string, body: QuoteRequest): Promise<Priced> {
  const side = body.lockedCurrencySide;
  const amount = body.lockedCurrencyAmount;
  const corridor = corridorOf(to);
  const fee = await feeFor(db, platformId, from, to, body.platformFeeOverride);
  const cached = pairRate(platformId, from, to, nowMs, body.platformFeeOverride !== undefined ? null : fee);
  const rate = cached.rate.exact;
  const f = body.platformFeeOverride !== undefined ? fee : cached.fee;
  let q: QuoteAmounts | null;
  if (side === 'SENDING') {
    q = quoteForSending(amount, from, to, rate, f);
  } else {
    q = quoteForReceiving(amount, from, to, rate, f);
    if (q === null || q.sending > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw apiError(400, 'AMOUNT_OUT_OF_RANGE', `No sending amount in ${from} delivers ${amount} ${to}`, { field: 'lockedCurrencyAmount' });
    }
  }
  const { sending, receiving } = q;
  const min = corridor?.min ?? 1;
  const max = corridor?.max ?? Number.MAX_SAFE_INTEGER;
  const exchangeRate = netExchangeRate(q, from, to);
  if (receiving < BigInt(min) || receiving > BigInt(max) || sending <= 0n || exchangeRate === null) {
    const bounds = sendingBounds(min, max, from, to, rate, f);
    const details: Record<string, unknown> = { field: 'lockedCurrencyAmount', receivingCurrency: to, receivingAmount: Number(receiving), minReceivingAmount: min, maxReceivingAmount: max };
    if (bounds.minSendingAmount !== null) details.minSendingAmount = bounds.minSendingAmount;
    if (bounds.maxSendingAmount !== null) details.maxSendingAmount = bounds.maxSendingAmount;
    throw apiError(400, 'AMOUNT_OUT_OF_RANGE', `The quote would deliver ${receiving} ${to} (smallest unit); the corridor takes ${min} to ${max}`, details);
  }
  if (sending > BigInt(Number.MAX_SAFE_INTEGER)) throw apiError(400, 'AMOUNT_OUT_OF_RANGE', 'The sending amount is larger than an amount can carry', { field: 'lockedCurrencyAmount' });
  const variableRate = f ? f.variableBps / 10_000 : 0;
  return {
    totalSending: Number(sending),
    totalReceiving: Number(receiving),
    fees: Number(q.fees.total),
    exchangeRate: rationalToDouble(exchangeRate),
    rateDetails: {
      counterpartyMultiplier: rationalToDouble(rate),
      counterpartyFixedFee: 0,
      gridApiMultiplier: (10_000 - (f?.variableBps ?? 0)) / 10_000,
      gridApiFixedFee: f?.fixed ?? 0,
      gridApiVariableFeeRate: variableRate,
      gridApiVariableFeeAmount: Number(q.fees.variable),
    },
  };
}

/** An amount of a currency in US cents at the sandbox mid rate (for the ownership threshold). */
export function usdCents(amount: number, currency: string): bigint {
  if (currency === 'USD') return BigInt(amount);
  if (!hasRate(currency)) return 0n;
  return convertMinor(amount, currency, 'USD', sandboxRate(currency, 'USD').mid, 'floor');
}
