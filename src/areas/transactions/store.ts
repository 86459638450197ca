import type { Kysely, Selectable, Transaction, Updateable } from 'kysely';
import type { DB, TransactionsTable } from '../../kernel/db/schema.js';
import { type TimeRange, whereTimeRange } from '../../kernel/pagination.js';

export type TransactionRow = Selectable<TransactionsTable>;
type Db = Kysely<DB> | Transaction<DB>;

export async function insertTransaction(db: Db, row: TransactionRow): Promise<void> {
  await db.insertInto('transactions').values(row).execute();
}

export async function findTransaction(db: Db, platformId: string, id: string, lock = false): Promise<TransactionRow | undefined> {
  let q = db.selectFrom('transactions').selectAll().where('platform_id', '=', platformId).where('id', '=', id);
  if (lock) q = q.forUpdate();
  return q.executeTakeFirst();
}

/** Move a transaction from one status to another; false when it was no longer in `from`. */
export async function updateTransactionStatus(db: Db, platformId: string, id: string, from: string, set: Updateable<TransactionsTable>): Promise<boolean> {
  const r = await db.updateTable('transactions').set(set).where('platform_id', '=', platformId).where('id', '=', id).where('status', '=', from).executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Change a transaction's fields (no status guard: the caller holds the row). */
export async function updateTransaction(db: Db, platformId: string, id: string, set: Updateable<TransactionsTable>): Promise<void> {
  await db.updateTable('transactions').set(set).where('platform_id', '=', platformId).where('id', '=', id).execute();
}

export interface TransactionFilter extends TimeRange {
  customerId?: string | undefined;
  platformCustomerId?: string | undefined;
  status?: string | undefined;
  type?: string | undefined;
}

/** The platform's transactions matching the filter (paginate over it). */
export function transactionQuery(db: Kysely<DB>, platformId: string, f: TransactionFilter) {
  let q = db.selectFrom('transactions').where('platform_id', '=', platformId);
  if (f.customerId !== undefined) q = q.where('customer_id', '=', f.customerId);
  if (f.platformCustomerId !== undefined) q = q.where('platform_customer_id', '=', f.platformCustomerId);
  if (f.status !== undefined) q = q.where('status', '=', f.status);
  if (f.type !== undefined) q = q.where('type', '=', f.type);
  return whereTimeRange(q, f);
}
