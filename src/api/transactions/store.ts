import { type Kysely, type SelectQueryBuilder, type Selectable, sql, type Transaction, type Updateable } from 'kysely';
import type { DB, ListTables, TransactionsTable } from '../../kernel/db/schema.js';
import { RECEIVER_NOT_DESTINATION, SENDER_NOT_SOURCE } from '../../kernel/db/migrations.js';
import { type TimeRange, whereTimeRange } from '../../kernel/pagination.js';
import { preparedByPlatformAndId, preparedInsert, preparedUpdate } from '../../kernel/db/prepared.js';

export type TransactionRow = Selectable<TransactionsTable>;
type Db = Kysely<DB> | Transaction<DB>;

// The payment flows' queries are prepared (kernel/db/prepared.ts): built and compiled once.
const insertRow = preparedInsert('transactions');
const { find: findById, findForUpdate: findByIdForUpdate } = preparedByPlatformAndId('transactions');
const updateWithStatus = preparedUpdate('transactions', ['platform_id', 'id', 'status']);
const updateById = preparedUpdate('transactions', ['platform_id', 'id']);
const updateWhole = preparedUpdate('transactions', ['platform_id', 'id'], ['platform_id', 'id']);

export async function insertTransaction(db: Db, row: TransactionRow): Promise<void> {
  await insertRow(db, row);
}

export async function findTransaction(db: Db, platformId: string, id: string, lock = false): Promise<TransactionRow | undefined> {
  return (lock ? findByIdForUpdate : findById).first(db, { platformId, id });
}

/** Transactions of the platform by id, in id order (settlement batches); with `lock` (PostgreSQL) locked until the transaction ends. */
export async function findTransactions(db: Db, platformId: string, ids: readonly string[], lock = false): Promise<TransactionRow[]> {
  if (ids.length === 0) return [];
  const q = db.selectFrom('transactions').selectAll().where('platform_id', '=', platformId).where('id', 'in', [...ids]).orderBy('id');
  return lock ? q.forUpdate().execute() : q.execute();
}

/** The same change of many transactions of the platform, in one statement (settlement batches: the caller holds the rows). */
export async function updateTransactions(db: Db, platformId: string, ids: readonly string[], set: Updateable<TransactionsTable>): Promise<void> {
  if (ids.length === 0) return;
  await db.updateTable('transactions').set(set).where('platform_id', '=', platformId).where('id', 'in', [...ids]).execute();
}

/** Move a transaction from one status to another; false when it was no longer in `from`. */
export async function updateTransactionStatus(db: Db, platformId: string, id: string, from: string, set: Updateable<TransactionsTable>): Promise<boolean> {
  return (await updateWithStatus(db, set, [platformId, id, from])) === 1;
}

/** Write a transaction's whole row back, every column but its key (no status guard: the caller holds the row). */
export async function writeTransactionRow(db: Db, row: TransactionRow): Promise<void> {
  await updateWhole(db, row, [row.platform_id, row.id]);
}

/** Change a transaction's fields (no status guard: the caller holds the row). */
export async function updateTransaction(db: Db, platformId: string, id: string, set: Updateable<TransactionsTable>): Promise<void> {
  await updateById(db, set, [platformId, id]);
}

export interface TransactionFilter extends TimeRange {
  customerId?: string | undefined;
  platformCustomerId?: string | undefined;
  /** Sender or receiver (either side). */
  accountIdentifier?: string | undefined;
  senderAccountIdentifier?: string | undefined;
  receiverAccountIdentifier?: string | undefined;
  reference?: string | undefined;
  status?: string | undefined;
  type?: string | undefined;
}

type IdentifierColumn = 'sender_identifier' | 'source_account_id' | 'receiver_identifier' | 'destination_account_id';
const SENDER: IdentifierColumn[] = ['sender_identifier', 'source_account_id'];
const RECEIVER: IdentifierColumn[] = ['receiver_identifier', 'destination_account_id'];

/**
 * The ids of the platform's transactions whose `columns` hold `value`: one indexed search per
 * column, united. (Written as an OR, SQLite without statistics scans all the platform's
 * transactions instead of searching each index.)
 */
function matching(db: Kysely<DB>, platformId: string, value: string, columns: IdentifierColumn[]) {
  const one = (c: IdentifierColumn) => {
    const q = db.withTables<ListTables>().selectFrom('transactions').select('id').where('platform_id', '=', platformId).where(c, '=', value);
    // The receiver index holds only receivers that are not the destination account (migration
    // 0030): those that are, the destination's own search finds (RECEIVER lists both).
    if (c === 'receiver_identifier') return q.where(sql.raw<boolean>(RECEIVER_NOT_DESTINATION));
    // Likewise the sender index holds only senders that are not the source account (0036);
    // a sender that is, the source account's index finds; a row found there is the value's
    // only when its sender is that account too, so that search checks the sender as well.
    if (c === 'sender_identifier') return q.where(sql.raw<boolean>(SENDER_NOT_SOURCE));
    if (c === 'source_account_id') return q.where('sender_identifier', '=', value);
    return q;
  };
  let u = one(columns[0]!);
  for (const c of columns.slice(1)) u = u.union(one(c));
  return u;
}

/**
 * The ids of the transactions of one customer (the customerId / platformCustomerId filters):
 * those made on its behalf (`column` = `value`), and those the platform made on its own
 * behalf (customer_id = the platform id, as the reference shows them) that pay one of the
 * customer's accounts — a reward from the platform's account to the customer's wallet is
 * listed under the customer too (hosted docs: rewards sandbox testing, listing
 * transactions). Each part is an indexed search, united.
 */
function forCustomer(
  db: Kysely<DB>,
  platformId: string,
  column: 'customer_id' | 'platform_customer_id',
  value: string,
  whichCustomers: (q: SelectQueryBuilder<DB, 'customers', object>) => SelectQueryBuilder<DB, 'customers', object>,
) {
  const customers = whichCustomers(db.selectFrom('customers').where('platform_id', '=', platformId)).select('id');
  const accounts = db
    .selectFrom('external_accounts')
    .select('id')
    .where('platform_id', '=', platformId)
    .where('customer_id', 'in', customers)
    .union(db.selectFrom('internal_accounts').select('id').where('platform_id', '=', platformId).where('customer_id', 'in', customers));
  const own = db.withTables<ListTables>().selectFrom('transactions').select('id').where('platform_id', '=', platformId).where(column, '=', value);
  const paidByPlatform = db
    .withTables<ListTables>()
    .selectFrom('transactions')
    .select('id')
    .where('platform_id', '=', platformId)
    .where('customer_id', '=', platformId)
    .where('destination_account_id', 'in', accounts);
  return own.union(paidByPlatform);
}

/**
 * The platform's transactions matching the filter (paginate over it). `nowMs` places the
 * status filter where the API view does: a quote's PENDING transaction never started whose
 * quote has expired shows (and so filters as) EXPIRED.
 *
 * The identifiers are the generated columns of migration 0010 (kernel/db/schema.ts
 * TransactionFilterColumns). A receiver is also the internal account the money lands in
 * (destination_account_id): an incoming UMA payment shows the customer's UMA address as its
 * destination but credits an internal account.
 */
export function transactionQuery(db: Kysely<DB>, platformId: string, f: TransactionFilter, nowMs: number) {
  let q = db.withTables<ListTables>().selectFrom('transactions').where('platform_id', '=', platformId);
  if (f.customerId !== undefined) {
    const customerId = f.customerId;
    q = customerId.startsWith('Customer:')
      ? q.where('id', 'in', forCustomer(db, platformId, 'customer_id', customerId, (c) => c.where('id', '=', customerId)))
      : q.where('customer_id', '=', customerId);
  }
  if (f.platformCustomerId !== undefined) {
    const ref = f.platformCustomerId;
    q = q.where('id', 'in', forCustomer(db, platformId, 'platform_customer_id', ref, (c) => c.where('platform_customer_id', '=', ref)));
  }
  if (f.senderAccountIdentifier !== undefined) q = q.where('id', 'in', matching(db, platformId, f.senderAccountIdentifier, SENDER));
  if (f.receiverAccountIdentifier !== undefined) q = q.where('id', 'in', matching(db, platformId, f.receiverAccountIdentifier, RECEIVER));
  if (f.accountIdentifier !== undefined) q = q.where('id', 'in', matching(db, platformId, f.accountIdentifier, [...SENDER, ...RECEIVER]));
  if (f.reference !== undefined) q = q.where('reconciliation_reference', '=', f.reference);
  if (f.status === 'EXPIRED') {
    // Two indexed searches united, as `matching` does (an OR would scan on SQLite).
    const byStatus = (status: string) => db.selectFrom('transactions').select('id').where('platform_id', '=', platformId).where('status', '=', status);
    q = q.where('id', 'in', byStatus('EXPIRED').union(byStatus('PENDING').where('outcome', 'is', null).where('expires_at_ms', '<', nowMs)));
  } else if (f.status === 'PENDING') {
    q = q.where('status', '=', 'PENDING').where((eb) => eb.or([eb('outcome', 'is not', null), eb('expires_at_ms', 'is', null), eb('expires_at_ms', '>=', nowMs)]));
  } else if (f.status !== undefined) {
    q = q.where('status', '=', f.status);
  }
  if (f.type !== undefined) q = q.where('type', '=', f.type);
  return whereTimeRange(q, f);
}
