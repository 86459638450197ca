import type { Kysely, Selectable, Transaction, Updateable } from 'kysely';
import type { DB, TransactionsTable } from '../../kernel/db/schema.js';
import { type TimeRange, whereTimeRange } from '../../kernel/pagination.js';
import { preparedByPlatformAndId, preparedInsert, preparedUpdate } from '../../kernel/db/prepared.js';

export type TransactionRow = Selectable<TransactionsTable>;
type Db = Kysely<DB> | Transaction<DB>;

// The payment flows' queries are prepared (kernel/db/prepared.ts): built and compiled once.
const insertRow = preparedInsert('transactions');
const { find: findById, findForUpdate: findByIdForUpdate } = preparedByPlatformAndId('transactions');
const updateWithStatus = preparedUpdate('transactions', ['platform_id', 'id', 'status']);
const updateById = preparedUpdate('transactions', ['platform_id', 'id']);

export async function insertTransaction(db: Db, row: TransactionRow): Promise<void> {
  await insertRow(db, row);
}

export async function findTransaction(db: Db, platformId: string, id: string, lock = false): Promise<TransactionRow | undefined> {
  return (lock ? findByIdForUpdate : findById).first(db, { platformId, id });
}

/** Move a transaction from one status to another; false when it was no longer in `from`. */
export async function updateTransactionStatus(db: Db, platformId: string, id: string, from: string, set: Updateable<TransactionsTable>): Promise<boolean> {
  return (await updateWithStatus(db, set, [platformId, id, from])) === 1;
}

/** Change a transaction's fields (no status guard: the caller holds the row). */
export async function updateTransaction(db: Db, platformId: string, id: string, set: Updateable<TransactionsTable>): Promise<void> {
  await updateById(db, set, [platformId, id]);
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
