import type { Kysely, Transaction } from 'kysely';
import { iso } from '../../kernel/clock.js';
import { currencyView } from '../../kernel/currencies.js';
import type { DB } from '../../kernel/db/schema.js';
import { apiError, invalidInput, notFound } from '../../kernel/errors.js';
import { isIdOf, newId } from '../../kernel/ids.js';
import { corridorOf, defaultRail, type PaymentRail } from '../../sandbox/corridors.js';
import {
  convertMinor,
  divRound,
  hasRate,
  invertR,
  minSendingFor,
  platformFeeMinor,
  rationalToNumber,
  receivingForSending,
  sandboxRate,
  sendingBounds,
} from '../../sandbox/fx.js';
import { hasEndUserTermsOnFile } from '../customers/service.js';
import { findCustomer } from '../customers/store.js';
import { pairRate, platformFee } from '../exchange-rates/service.js';
import { requireExternalAccount, requiresOwnershipVerification } from '../external-accounts/service.js';
import { requireInternalAccount } from '../internal-accounts/service.js';
import { getLookup } from '../lookups/service.js';
import type { PlatformRow } from '../platforms/store.js';
import { type PaymentDeps, startOutgoingPayment } from '../transactions/service.js';
import type { OutgoingRateDetails, Quote, QuoteRequest } from './schemas.js';
import { findQuote, insertQuote, type QuoteRow, updateQuoteStatus } from './store.js';

// Quotes: a priced offer to move money from an internal account to an external account,
// at the same rate and platform fee the receiver lookup and GET /exchange-rates show
// (pairRate / platformFee), executable until expiresAt (QUOTE_TTL_MS of platform time).
// Executing starts the OUTGOING transaction (transactions/service.ts).

type Db = Kysely<DB> | Transaction<DB>;
type Now = { ms: number; at: string };

/** How long a quote can be executed, on the platform clock. */
export const QUOTE_TTL_MS = 5 * 60_000;

// ---- Views ----------------------------------------------------------------------------

/** The API view at `nowMs`: a PENDING quote past its expiry shows EXPIRED. */
export function quoteView(row: QuoteRow, nowMs: number): Quote {
  const status = row.status === 'PENDING' && nowMs > Number(row.expires_at_ms) ? 'EXPIRED' : row.status;
  return {
    id: row.id,
    status: status as Quote['status'],
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    source: JSON.parse(row.source) as Quote['source'],
    destination: JSON.parse(row.destination) as Quote['destination'],
    sendingCurrency: currencyView(row.sending_currency),
    receivingCurrency: currencyView(row.receiving_currency),
    totalSendingAmount: Number(row.total_sending),
    totalReceivingAmount: Number(row.total_receiving),
    exchangeRate: Number(row.exchange_rate),
    feesIncluded: Number(row.fees),
    platformFeesIncluded: Number(row.platform_fees),
    transactionId: row.transaction_id!,
    rateDetails: JSON.parse(row.rate_details) as OutgoingRateDetails,
  };
}

async function requireQuote(db: Db, platformId: string, id: string, lock = false): Promise<QuoteRow> {
  const row = isIdOf('Quote', id) ? await findQuote(db, platformId, id, lock) : undefined;
  if (!row) throw notFound('QUOTE_NOT_FOUND', 'Quote', id);
  return row;
}

export async function getQuote(db: Db, platformId: string, id: string, nowMs: number): Promise<Quote> {
  return quoteView(await requireQuote(db, platformId, id), nowMs);
}

// ---- Create -----------------------------------------------------------------------------

/**
 * The sending customer may send: not deleted (410 CUSTOMER_DELETED), end-user terms on file
 * on an unregulated platform (403 END_USER_TERMS_NOT_ACCEPTED), APPROVED (403 USER_NOT_READY).
 * Checked at creation and again at execution.
 */
async function requireReadySender(db: Db, platform: PlatformRow, customerId: string): Promise<void> {
  const customer = await findCustomer(db, platform.id, customerId);
  if (!customer) throw notFound('USER_NOT_FOUND', 'Customer', customerId);
  if (customer.is_deleted === 1) throw apiError(410, 'CUSTOMER_DELETED', `Customer ${customer.id} was deleted`, { customerId: customer.id });
  if (platform.regulated !== 1 && !hasEndUserTermsOnFile(customer)) {
    throw apiError(403, 'END_USER_TERMS_NOT_ACCEPTED', `Customer ${customer.id} has not accepted the end-user terms`, { customerId: customer.id });
  }
  if (customer.status !== 'APPROVED') {
    const field = customer.customer_type === 'BUSINESS' ? 'kybStatus' : 'kycStatus';
    throw apiError(403, 'USER_NOT_READY', `Customer ${customer.id} is not approved (${field} ${customer.status})`, { customerId: customer.id, [field]: customer.status });
  }
}

/** The rails an external account of this kind can be paid on, default first. */
function railsFor(currency: string, accountType: string): PaymentRail[] {
  const corridor = corridorOf(currency);
  if (!corridor) return [];
  const routes = corridor.routes.filter((r) => r.accountType === accountType);
  const rails = (routes.length > 0 ? routes : corridor.routes).flatMap((r) => r.rails);
  const first = defaultRail(corridor);
  return [...new Set([...(first && rails.includes(first) ? [first] : []), ...rails])];
}

interface Priced {
  totalSending: number;
  totalReceiving: number;
  fees: number;
  exchangeRate: number;
  rateDetails: OutgoingRateDetails;
}

/** Price a quote exactly as the lookup does: the platform's cached pair rate and its platform fee. */
async function price(db: Db, platformId: string, nowMs: number, from: string, to: string, side: 'SENDING' | 'RECEIVING', amount: number): Promise<Priced> {
  const corridor = corridorOf(to)!;
  const fee = await platformFee(db, platformId, from);
  const cached = pairRate(platformId, from, to, nowMs, fee);
  const rate = cached.rate.exact;
  const f = cached.fee;
  let sending: bigint;
  let receiving: bigint;
  if (side === 'SENDING') {
    sending = BigInt(amount);
    receiving = receivingForSending(sending, from, to, rate, f).receiving;
  } else {
    receiving = BigInt(amount);
    const s = minSendingFor(receiving, from, to, rate, f);
    if (s === null || s > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw apiError(400, 'AMOUNT_OUT_OF_RANGE', `No sending amount in ${from} delivers ${amount} ${to}`, { field: 'lockedCurrencyAmount' });
    }
    sending = s;
  }
  if (receiving < BigInt(corridor.min) || receiving > BigInt(corridor.max) || sending <= 0n) {
    const bounds = sendingBounds(corridor.min, corridor.max, from, to, rate, f);
    const details: Record<string, unknown> = {
      field: 'lockedCurrencyAmount',
      receivingCurrency: to,
      receivingAmount: Number(receiving),
      minReceivingAmount: corridor.min,
      maxReceivingAmount: corridor.max,
    };
    if (bounds.minSendingAmount !== null) details.minSendingAmount = bounds.minSendingAmount;
    if (bounds.maxSendingAmount !== null) details.maxSendingAmount = bounds.maxSendingAmount;
    throw apiError(400, 'AMOUNT_OUT_OF_RANGE', `The quote would deliver ${receiving} ${to} (smallest unit); the corridor takes ${corridor.min} to ${corridor.max}`, details);
  }
  if (sending > BigInt(Number.MAX_SAFE_INTEGER)) throw apiError(400, 'AMOUNT_OUT_OF_RANGE', 'The sending amount is larger than an amount can carry', { field: 'lockedCurrencyAmount' });
  const fees = platformFeeMinor(sending, f);
  const variable = f ? divRound(sending * BigInt(f.variableBps), 10_000n, 'half-up') : 0n;
  const variableRate = f ? f.variableBps / 10_000 : 0;
  return {
    totalSending: Number(sending),
    totalReceiving: Number(receiving),
    fees: Number(fees),
    exchangeRate: rationalToNumber(invertR(rate)),
    rateDetails: {
      counterpartyMultiplier: rationalToNumber(rate),
      counterpartyFixedFee: 0,
      gridApiMultiplier: 1 - variableRate,
      gridApiFixedFee: f?.fixed ?? 0,
      gridApiVariableFeeRate: variableRate,
      gridApiVariableFeeAmount: Number(variable),
    },
  };
}

/** An amount of a currency in US cents at the sandbox mid rate (for the ownership threshold). */
function usdCents(amount: number, currency: string): bigint {
  if (currency === 'USD') return BigInt(amount);
  if (!hasRate(currency)) return 0n;
  return convertMinor(amount, currency, 'USD', sandboxRate(currency, 'USD').mid, 'floor');
}

/**
 * POST /quotes: check the source (an internal account of the platform) and its customer
 * (end-user terms on an unregulated platform, APPROVED), the destination (an external
 * account) and its rail, price it, check the corridor bounds and the ownership threshold,
 * store it; with immediatelyExecute, execute it in the same transaction.
 */
export async function createQuote(deps: PaymentDeps, platform: PlatformRow, now: Now, body: QuoteRequest): Promise<Quote> {
  return deps.store.db.transaction().execute(async (trx) => {
    const platformId = platform.id;
    const source = await requireInternalAccount(trx, platformId, body.source.accountId);
    const dest = await requireExternalAccount(trx, platformId, body.destination.accountId);

    if (body.source.customerId !== undefined && body.source.customerId !== (source.customer_id ?? undefined)) {
      throw invalidInput([{ field: 'source.customerId', message: `is not the owner of ${source.id}` }]);
    }
    if (source.customer_id !== null) await requireReadySender(trx, platform, source.customer_id);

    const from = source.currency;
    const to = dest.currency;
    if (!hasRate(from) || !hasRate(to) || !corridorOf(to)) {
      throw apiError(400, 'INVALID_CURRENCY', `The sandbox cannot send ${from} to a ${to} account`, { sendingCurrency: from, receivingCurrency: to });
    }

    if (body.lookupId !== undefined) {
      const lookup = await getLookup(trx, platformId, body.lookupId);
      const problems: string[] = [];
      if (lookup.kind !== 'EXTERNAL_ACCOUNT' || lookup.target !== dest.id) problems.push(`is a lookup of another receiver than ${dest.id}`);
      if (source.customer_id !== null && lookup.customerId !== source.customer_id) problems.push(`was made for another sender than ${source.customer_id}`);
      if (lookup.sendingCurrency !== from) problems.push(`was priced from ${lookup.sendingCurrency}, not ${from}`);
      if (problems.length > 0) throw invalidInput(problems.map((message) => ({ field: 'lookupId', message })));
    }

    const accountType = (JSON.parse(dest.account_info) as { accountType: string }).accountType;
    const rails = railsFor(to, accountType);
    const requested = body.destination.paymentRail;
    if (requested !== undefined && !rails.includes(requested)) {
      throw invalidInput([{ field: 'destination.paymentRail', constraint: { enum: rails }, message: `is not a rail of ${dest.id}: ${rails.join(', ') || 'none'}` }]);
    }
    const rail = requested ?? rails[0] ?? null;

    const priced = await price(trx, platformId, now.ms, from, to, body.lockedCurrencySide, body.lockedCurrencyAmount);
    if (requiresOwnershipVerification(dest, usdCents(priced.totalSending, from))) {
      throw apiError(400, 'EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED', `The ownership of ${dest.id} must be verified before sending this amount to it`, {
        accountId: dest.id,
        status: dest.status,
      });
    }

    const expiresMs = now.ms + QUOTE_TTL_MS;
    const sourceView: Record<string, unknown> = { sourceType: 'ACCOUNT', accountId: source.id };
    if (source.customer_id !== null) sourceView.customerId = source.customer_id;
    const destView: Record<string, unknown> = { destinationType: 'ACCOUNT', accountId: dest.id };
    if (rail !== null) destView.paymentRail = rail;
    const row: QuoteRow = {
      id: newId('Quote'),
      platform_id: platformId,
      customer_id: source.customer_id,
      source_account_id: source.id,
      source: JSON.stringify(sourceView),
      destination_account_id: dest.id,
      destination: JSON.stringify(destView),
      lookup_id: body.lookupId ?? null,
      sending_currency: from,
      receiving_currency: to,
      locked_side: body.lockedCurrencySide,
      locked_amount: body.lockedCurrencyAmount,
      total_sending: priced.totalSending,
      total_receiving: priced.totalReceiving,
      fees: priced.fees,
      platform_fees: priced.fees,
      exchange_rate: String(priced.exchangeRate),
      rate_details: JSON.stringify(priced.rateDetails),
      payment_rail: rail,
      description: body.description ?? null,
      remittance_information: body.remittanceInformation ?? null,
      purpose_of_payment: body.purposeOfPayment ?? null,
      status: 'PENDING',
      transaction_id: newId('Transaction'),
      expires_at_ms: expiresMs,
      expires_at: iso(expiresMs),
      created_at: now.at,
      updated_at: now.at,
    };
    await insertQuote(trx, row);
    if (body.immediatelyExecute === true) return executeRow(trx, deps, platform, row, now);
    return quoteView(row, now.ms);
  });
}

// ---- Execute ----------------------------------------------------------------------------

async function executeRow(trx: Transaction<DB>, deps: PaymentDeps, platform: PlatformRow, row: QuoteRow, now: Now): Promise<Quote> {
  if (row.status !== 'PENDING') {
    throw apiError(409, 'INVALID_STATE_TRANSITION', `Quote ${row.id} was already executed (status ${row.status})`, {
      quoteId: row.id,
      status: row.status,
      transactionId: row.transaction_id,
    });
  }
  if (now.ms > Number(row.expires_at_ms)) {
    throw apiError(400, 'QUOTE_REQUEST_FAILED', `Quote ${row.id} expired at ${row.expires_at}; request a new quote`, {
      reason: 'QUOTE_EXPIRED',
      quoteId: row.id,
      expiresAt: row.expires_at,
    });
  }
  if (row.customer_id !== null) await requireReadySender(trx, platform, row.customer_id);
  await startOutgoingPayment(trx, deps, row, now);
  if (!(await updateQuoteStatus(trx, row.platform_id, row.id, 'PENDING', { status: 'PROCESSING', updated_at: now.at }))) {
    throw apiError(409, 'INVALID_STATE_TRANSITION', `Quote ${row.id} was executed concurrently`, { quoteId: row.id });
  }
  return quoteView({ ...row, status: 'PROCESSING', updated_at: now.at }, now.ms);
}

/** POST /quotes/{quoteId}/execute: lock the quote, then execute it (see executeRow). */
export async function executeQuote(deps: PaymentDeps, platform: PlatformRow, now: Now, quoteId: string): Promise<Quote> {
  return deps.store.db.transaction().execute(async (trx) => {
    const row = await requireQuote(trx, platform.id, quoteId, deps.store.kind === 'postgres');
    return executeRow(trx, deps, platform, row, now);
  });
}
