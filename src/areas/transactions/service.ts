import type { Kysely, Transaction } from 'kysely';
import { iso } from '../../kernel/clock.js';
import type { Store } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { apiError, notFound } from '../../kernel/errors.js';
import { emitEvent } from '../../kernel/events.js';
import { isIdOf } from '../../kernel/ids.js';
import type { JobContext, JobQueue } from '../../kernel/jobs.js';
import { currencyAmount } from '../../kernel/money.js';
import { paginate, type Page, timeRangeOf } from '../../kernel/pagination.js';
import { PAYMENT_SETTLE_DELAY_MS, type PaymentOutcome, quotePaymentOutcome } from '../../sandbox/payment-outcomes.js';
import { findCustomer } from '../customers/store.js';
import { accountInfoOf } from '../external-accounts/service.js';
import { findExternalAccount } from '../external-accounts/store.js';
import { emitBalanceUpdates, openHoldingAccounts } from '../internal-accounts/service.js';
import { holdingAccountsOf } from '../internal-accounts/store.js';
import { ensureWorldAccount, InsufficientFundsError, type Posting, postEntry } from '../ledger/service.js';
import type { OutgoingRateDetails } from '../quotes/schemas.js';
import { type QuoteRow, updateQuoteStatus } from '../quotes/store.js';
import type { OutgoingTransaction, TransactionListQuery } from './schemas.js';
import { findTransaction, insertTransaction, transactionQuery, type TransactionRow, updateTransactionStatus } from './store.js';

// Transactions: the OUTGOING payment a quote's execution starts, and its settlement.
//
// Execute (inside the caller's transaction, with the quote):
//   HOLD entry   C.available −total, C.held +(total − platform fee), P.available +platform fee
//   transaction  PROCESSING, event OUTGOING_PAYMENT.PROCESSING, balance events
//   job          SETTLE_JOB, due PAYMENT_SETTLE_DELAY_MS later on the platform clock
// Settle (the job): the sandbox outcome (src/sandbox/payment-outcomes.ts) decides; today
// always SUCCEED:
//   CAPTURE entry C.held −x, W.available +x (related to the hold)
//   transaction  COMPLETED with settledAt, quote COMPLETED, event OUTGOING_PAYMENT.COMPLETED

type Db = Kysely<DB> | Transaction<DB>;

export const SETTLE_JOB = 'outgoing-payment.settle';

export interface PaymentDeps {
  store: Store;
  jobs: JobQueue;
}

// ---- Views ----------------------------------------------------------------------------

export function transactionView(row: TransactionRow): OutgoingTransaction {
  const v: OutgoingTransaction = {
    id: row.id,
    status: row.status as OutgoingTransaction['status'],
    type: 'OUTGOING',
    direction: row.direction as OutgoingTransaction['direction'],
    source: JSON.parse(row.source) as OutgoingTransaction['source'],
    destination: JSON.parse(row.destination) as OutgoingTransaction['destination'],
    customerId: row.customer_id,
    platformCustomerId: row.platform_customer_id,
    sentAmount: currencyAmount(Number(row.sent_amount), row.sent_currency),
    fees: Number(row.fees),
    platformFees: Number(row.platform_fees),
    paymentRail: (row.payment_rail ?? null) as OutgoingTransaction['paymentRail'],
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
  if (row.received_amount !== null && row.received_currency !== null) v.receivedAmount = currencyAmount(Number(row.received_amount), row.received_currency);
  if (row.exchange_rate !== null) v.exchangeRate = Number(row.exchange_rate);
  if (row.rate_details !== null) v.rateDetails = JSON.parse(row.rate_details) as OutgoingRateDetails;
  if (row.quote_id !== null) v.quoteId = row.quote_id;
  if (row.description !== null) v.description = row.description;
  if (row.failure_reason !== null) v.failureReason = row.failure_reason;
  if (row.settled_at !== null) v.settledAt = row.settled_at;
  return v;
}

export async function getTransaction(db: Db, platformId: string, id: string): Promise<OutgoingTransaction> {
  const row = isIdOf('Transaction', id) ? await findTransaction(db, platformId, id) : undefined;
  if (!row) throw notFound('TRANSACTION_NOT_FOUND', 'Transaction', id);
  return transactionView(row);
}

/** The platform's transactions, newest first; filters that name nothing match nothing (no 404). */
export async function listTransactions(db: Kysely<DB>, platformId: string, q: TransactionListQuery): Promise<Page<OutgoingTransaction>> {
  const range = timeRangeOf({ createdAfter: q.createdAfter ?? q.startDate, createdBefore: q.createdBefore ?? q.endDate });
  const base = transactionQuery(db, platformId, { customerId: q.customerId, platformCustomerId: q.platformCustomerId, status: q.status, type: q.type, ...range });
  return paginate<TransactionRow, OutgoingTransaction>(base, 'id', { limit: q.limit, cursor: q.cursor }, transactionView);
}

// ---- The outgoing payment ---------------------------------------------------------------

/** The platform's holding account in a currency (opened when missing), which receives platform fees. */
async function platformFeeAccount(trx: Transaction<DB>, platformId: string, currency: string, at: string): Promise<string> {
  await openHoldingAccounts(trx, platformId, null, [currency], at);
  const row = (await holdingAccountsOf(trx, platformId, null)).find((a) => a.currency === currency);
  if (!row) throw new Error(`platform ${platformId} has no ${currency} account`);
  return row.id;
}

/**
 * Start the OUTGOING transaction of a quote being executed, in the caller's transaction:
 * hold the money, write the transaction (PROCESSING) and its events, schedule its
 * settlement. Not enough available balance: 400 INVALID_AMOUNT (details.reason
 * INSUFFICIENT_BALANCE) and nothing is written.
 */
export async function startOutgoingPayment(trx: Transaction<DB>, deps: PaymentDeps, quote: QuoteRow, now: { ms: number; at: string }): Promise<TransactionRow> {
  const platformId = quote.platform_id;
  const txId = quote.transaction_id!;
  const currency = quote.sending_currency;
  const total = Number(quote.total_sending);
  const platformFees = Number(quote.platform_fees);

  let customerId = platformId;
  let platformCustomerId = platformId;
  if (quote.customer_id !== null) {
    const customer = await findCustomer(trx, platformId, quote.customer_id);
    customerId = quote.customer_id;
    platformCustomerId = customer?.platform_customer_id ?? quote.customer_id;
  }

  const postings: Posting[] = [
    { accountId: quote.source_account_id, currency, amount: -total },
    { accountId: quote.source_account_id, currency, amount: total - platformFees, bucket: 'held' },
  ];
  const touched = [quote.source_account_id];
  if (platformFees > 0) {
    const feeAccount = await platformFeeAccount(trx, platformId, currency, now.at);
    postings.push({ accountId: feeAccount, currency, amount: platformFees });
    touched.push(feeAccount);
  }
  let holdId: string;
  try {
    const entry = await postEntry(trx, deps.store, { platformId, kind: 'HOLD', at: now.at, referenceId: txId, postings, idempotencyKey: `hold:${quote.id}`, memo: `quote ${quote.id}` });
    holdId = entry.id;
  } catch (err) {
    if (err instanceof InsufficientFundsError) {
      throw apiError(400, 'INVALID_AMOUNT', `The source account has ${err.balance} ${err.currency} available; the quote needs ${total}`, {
        reason: 'INSUFFICIENT_BALANCE',
        accountId: quote.source_account_id,
        currency: err.currency,
        available: err.balance,
        required: total,
        shortfall: err.shortfall,
      });
    }
    throw err;
  }

  const source = JSON.parse(quote.source) as { accountId: string };
  const destination = JSON.parse(quote.destination) as { accountId: string };
  const row: TransactionRow = {
    id: txId,
    platform_id: platformId,
    customer_id: customerId,
    platform_customer_id: platformCustomerId,
    type: 'OUTGOING',
    direction: 'DEBIT',
    status: 'PROCESSING',
    quote_id: quote.id,
    source: JSON.stringify({ sourceType: 'ACCOUNT', accountId: source.accountId, currency }),
    source_account_id: quote.source_account_id,
    destination: JSON.stringify({ destinationType: 'ACCOUNT', accountId: destination.accountId, currency: quote.receiving_currency }),
    destination_account_id: quote.destination_account_id,
    sent_amount: total,
    sent_currency: currency,
    received_amount: Number(quote.total_receiving),
    received_currency: quote.receiving_currency,
    fees: Number(quote.fees),
    platform_fees: platformFees,
    exchange_rate: quote.exchange_rate,
    rate_details: quote.rate_details,
    payment_rail: quote.payment_rail,
    description: quote.description,
    hold_entry_id: holdId,
    failure_reason: null,
    settled_at: null,
    created_at: now.at,
    updated_at: now.at,
  };
  await insertTransaction(trx, row);
  await emitEvent(trx, platformId, now.at, { type: 'OUTGOING_PAYMENT.PROCESSING', resourceId: row.id, data: transactionView(row) });
  await emitBalanceUpdates(trx, platformId, touched, now.at);
  await deps.jobs.schedule(trx, { platformId, kind: SETTLE_JOB, payload: { transactionId: row.id }, runAtMs: now.ms + PAYMENT_SETTLE_DELAY_MS, at: now.at });
  return row;
}

/** The settlement job: apply the sandbox outcome to a PROCESSING transaction (anything else: nothing to do). */
export async function settleOutgoingPayment(store: Store, ctx: JobContext): Promise<void> {
  const { trx, job } = ctx;
  const platformId = job.platformId;
  const { transactionId } = job.payload as { transactionId: string };
  if (platformId === null) return;
  const tx = await findTransaction(trx, platformId, transactionId, store.kind === 'postgres');
  if (!tx || tx.status !== 'PROCESSING') return;
  const at = iso(ctx.nowMs);
  const dest = tx.destination_account_id ? await findExternalAccount(trx, platformId, tx.destination_account_id) : undefined;
  const outcome: PaymentOutcome = quotePaymentOutcome(dest ? accountInfoOf(dest) : { accountType: 'UNKNOWN' });
  switch (outcome) {
    case 'SUCCEED': {
      const held = Number(tx.sent_amount) - Number(tx.platform_fees);
      const world = await ensureWorldAccount(trx, platformId, tx.sent_currency, at);
      await postEntry(trx, store, {
        platformId,
        kind: 'CAPTURE',
        at,
        referenceId: tx.id,
        relatedEntryId: tx.hold_entry_id ?? undefined,
        idempotencyKey: `capture:${tx.id}`,
        postings: [
          { accountId: tx.source_account_id!, currency: tx.sent_currency, amount: -held, bucket: 'held' },
          { accountId: world, currency: tx.sent_currency, amount: held },
        ],
      });
      await updateTransactionStatus(trx, platformId, tx.id, 'PROCESSING', { status: 'COMPLETED', settled_at: at, updated_at: at });
      if (tx.quote_id) await updateQuoteStatus(trx, platformId, tx.quote_id, 'PROCESSING', { status: 'COMPLETED', updated_at: at });
      const done = (await findTransaction(trx, platformId, tx.id))!;
      await emitEvent(trx, platformId, at, { type: 'OUTGOING_PAYMENT.COMPLETED', resourceId: tx.id, data: transactionView(done) });
      await emitBalanceUpdates(trx, platformId, [tx.source_account_id!], at);
      return;
    }
  }
}

const registered = new WeakSet<JobQueue>();

/** Register the payment jobs on the app's queue (buildApp calls this; a second app on the same queue reuses them). */
export function registerPaymentJobs(jobs: JobQueue, store: Store): void {
  if (registered.has(jobs)) return;
  registered.add(jobs);
  jobs.register(SETTLE_JOB, (ctx) => settleOutgoingPayment(store, ctx));
}
