import type { Kysely, Transaction } from 'kysely';
import { unpackRateDetails } from './rate-details.js';
import { currencyView } from '../../kernel/currencies.js';
import type { DB } from '../../kernel/db/schema.js';
import { notFound } from '../../kernel/errors.js';
import { isIdOf } from '../../kernel/ids.js';
import type { Quote } from './schemas.js';
import { findQuote, type QuoteRow } from './store.js';

// A quote as the API shows it (the EXPIRED view of a PENDING quote past expiresAt), and the
// lookups every flow starts from (docs/quotes.md).

type Db = Kysely<DB> | Transaction<DB>;

// ---- Views ----------------------------------------------------------------------------

/** The API view at `nowMs`: a PENDING quote past its expiry shows EXPIRED. */
export function quoteView(row: QuoteRow, nowMs: number): Quote {
  const status = row.status === 'PENDING' && nowMs > Number(row.expires_at_ms) ? 'EXPIRED' : row.status;
  const v: Quote = {
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
    rateDetails: unpackRateDetails(row.rate_details),
  };
  // While a quote waits for SCA authorization it shows its challenge, and withholds its paymentInstructions.
  if (row.payment_instructions !== null && row.status !== 'PENDING_AUTHORIZATION') v.paymentInstructions = JSON.parse(row.payment_instructions) as Quote['paymentInstructions'];
  if (row.status === 'PENDING_AUTHORIZATION' && row.sca_challenge) v.scaChallenge = JSON.parse(row.sca_challenge) as Quote['scaChallenge'];
  if (row.description !== null) v.description = row.description;
  return v;
}

export async function requireQuote(db: Db, platformId: string, id: string, lock = false): Promise<QuoteRow> {
  const row = isIdOf('Quote', id) ? await findQuote(db, platformId, id, lock) : undefined;
  if (!row) throw notFound('QUOTE_NOT_FOUND', 'Quote', id);
  return row;
}

export async function getQuote(db: Db, platformId: string, id: string, nowMs: number): Promise<Quote> {
  return quoteView(await requireQuote(db, platformId, id), nowMs);
}
