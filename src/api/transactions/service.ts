import type { Kysely, Transaction } from 'kysely';
import type { DB } from '../../kernel/db/schema.js';
import { apiError, notFound } from '../../kernel/errors.js';
import { isIdOf } from '../../kernel/ids.js';
import { paginate, type Page, timeRangeOf } from '../../kernel/pagination.js';
import { keptCount } from '../../kernel/db/list-counts.js';
import { cancelPayment, isCancellable, type PaymentDeps } from './payments.js';
import type { AnyTransaction, ListedTransaction, TransactionListQuery } from './schemas.js';
import { findCardTx, platformCardTxQuery, type CardTxRow } from '../cards/store.js';
import { cardTxView } from '../cards/transactions.js';
import { findTransaction, transactionQuery, type TransactionRow, updateTransaction } from './store.js';
import { transactionView } from './views.js';
import { effectTransaction } from '../../kernel/idempotency.js';

// Transactions: reading them, confirming receipt delivery, cancelling an in-flight bank
// transfer. The flows that create and move them are in payments.ts.

type Db = Kysely<DB> | Transaction<DB>;
type Now = { ms: number; at: string };

export { transactionView };

export async function requireTransaction(db: Db, platformId: string, id: string, lock = false): Promise<TransactionRow> {
  const row = isIdOf('Transaction', id) ? await findTransaction(db, platformId, id, lock) : undefined;
  if (!row) throw notFound('TRANSACTION_NOT_FOUND', 'Transaction', id);
  return row;
}

/** GET /transactions/{id}: a payment, or one of the platform's card transactions (type CARD, the view of /cards/{id}/transactions). */
export async function getTransaction(db: Db, platformId: string, id: string, nowMs: number): Promise<ListedTransaction> {
  if (isIdOf('CardTransaction', id)) {
    const row = await findCardTx(db, platformId, id);
    if (!row) throw notFound('TRANSACTION_NOT_FOUND', 'Transaction', id);
    return cardTxView(row);
  }
  return transactionView(await requireTransaction(db, platformId, id), nowMs);
}

/**
 * The platform's transactions, newest first (sortOrder asc: oldest first); every filter given
 * applies (AND). Filters that name nothing match nothing (no 404).
 */
export async function listTransactions(db: Kysely<DB>, platformId: string, q: TransactionListQuery, nowMs: number): Promise<Page<ListedTransaction>> {
  const range = timeRangeOf({ createdAfter: q.createdAfter ?? q.startDate, createdBefore: q.createdBefore ?? q.endDate });
  if (q.type === 'CARD') {
    // The platform's card transactions, with the filters that apply to them (cards/store.ts);
    // totalCount counts the rows of the filter, so it is exact.
    const cards = platformCardTxQuery(db, platformId, {
      customerId: q.customerId,
      platformCustomerId: q.platformCustomerId,
      accountIdentifier: q.accountIdentifier,
      senderAccountIdentifier: q.senderAccountIdentifier,
      receiverAccountIdentifier: q.receiverAccountIdentifier,
      reference: q.reference,
      status: q.status,
      ...range,
    });
    return paginate<CardTxRow, ListedTransaction>(cards, 'id', { limit: q.limit, cursor: q.cursor, order: q.sortOrder }, cardTxView);
  }
  const base = transactionQuery(
    db,
    platformId,
    {
      customerId: q.customerId,
      platformCustomerId: q.platformCustomerId,
      accountIdentifier: q.accountIdentifier,
      senderAccountIdentifier: q.senderAccountIdentifier,
      receiverAccountIdentifier: q.receiverAccountIdentifier,
      reference: q.reference,
      status: q.status,
      type: q.type,
      ...range,
    },
    nowMs,
  );
  // No filter: the platform's kept count of transactions (O(1), exact); a filter counts its rows.
  const unfiltered = [q.customerId, q.platformCustomerId, q.accountIdentifier, q.senderAccountIdentifier, q.receiverAccountIdentifier, q.reference, q.status, q.type, range.createdAfter, range.createdBefore].every((v) => v === undefined);
  const kept = unfiltered ? () => keptCount(db, platformId, { list: 'transactions', scope: 'all' }) : undefined;
  return paginate<TransactionRow, AnyTransaction>(base, 'id', { limit: q.limit, cursor: q.cursor, order: q.sortOrder }, (row) => transactionView(row, nowMs), kept);
}

/** POST /transactions/{id}/confirm: record (or move) when the platform delivered the receipt. */
export async function confirmReceiptDelivery(db: Kysely<DB>, platformId: string, id: string, now: Now, confirmedAt?: string): Promise<AnyTransaction> {
  return effectTransaction(db, async (trx) => {
    const row = await requireTransaction(trx, platformId, id);
    const at = confirmedAt !== undefined ? new Date(confirmedAt).toISOString() : now.at;
    await updateTransaction(trx, platformId, row.id, { receipt_delivery_confirmed_at: at, updated_at: now.at });
    return transactionView({ ...row, receipt_delivery_confirmed_at: at, updated_at: now.at }, now.ms);
  });
}

/** POST /transactions/{id}/cancel: only an in-flight bank transfer; anything else 409 TRANSACTION_NOT_CANCELLABLE. */
export async function cancelTransaction(deps: PaymentDeps, platformId: string, id: string, now: Now): Promise<AnyTransaction> {
  return effectTransaction(deps.store.db, async (trx) => {
    const row = await requireTransaction(trx, platformId, id, deps.store.kind === 'postgres');
    if (!isCancellable(row)) {
      const why =
        row.status === 'COMPLETED' || row.status === 'FAILED' || row.status === 'REFUNDED' || row.status === 'REJECTED'
          ? `it is already ${row.status}`
          : row.payment_rail === null
            ? 'it does not travel on a bank rail'
            : `${row.payment_rail} transfers in status ${row.status} cannot be cancelled`;
      throw apiError(409, 'TRANSACTION_NOT_CANCELLABLE', `Transaction ${row.id} cannot be cancelled: ${why}`, {
        transactionId: row.id,
        status: row.status,
        paymentRail: row.payment_rail,
      });
    }
    return transactionView(await cancelPayment(trx, deps, row, now));
  });
}
