import type { Kysely, Selectable, Transaction, Updateable } from 'kysely';
import type { DB, ListTables, QuotesTable } from '../../kernel/db/schema.js';
import { type TimeRange, whereTimeRange } from '../../kernel/pagination.js';
import { prepared, preparedByPlatformAndId, preparedInsert, preparedUpdate } from '../../kernel/db/prepared.js';

export type QuoteRow = Selectable<QuotesTable>;
type Db = Kysely<DB> | Transaction<DB>;

// The payment flows' queries are prepared (kernel/db/prepared.ts): built and compiled once.
const insertRow = preparedInsert('quotes');
const { find: findById, findForUpdate: findByIdForUpdate } = preparedByPlatformAndId('quotes');
const updateWithStatus = preparedUpdate('quotes', ['platform_id', 'id', 'status']);

export async function insertQuote(db: Db, row: QuoteRow): Promise<void> {
  await insertRow(db, row);
}

/** A quote of the platform; with `lock` (PostgreSQL) the row is locked until the transaction ends. */
export async function findQuote(db: Db, platformId: string, id: string, lock = false): Promise<QuoteRow | undefined> {
  return (lock ? findByIdForUpdate : findById).first(db, { platformId, id });
}

export async function findQuoteByTransaction(db: Db, platformId: string, transactionId: string): Promise<QuoteRow | undefined> {
  return db.selectFrom('quotes').selectAll().where('platform_id', '=', platformId).where('transaction_id', '=', transactionId).executeTakeFirst();
}

/** Move a quote from one status to another; false when it was no longer in `from`. */
export async function updateQuoteStatus(db: Db, platformId: string, id: string, from: string, set: Updateable<QuotesTable>): Promise<boolean> {
  return (await updateWithStatus(db, set, [platformId, id, from])) === 1;
}

const moveStatus = prepared<{ platformId: string; id: string; to: string; at: string }>((db, p) =>
  db
    .updateTable('quotes')
    .set({ status: p('to'), updated_at: p('at') })
    .where('platform_id', '=', p('platformId'))
    .where('id', '=', p('id'))
    .where('status', 'in', ['PENDING', 'PROCESSING', 'COMPLETED'])
    .where('status', '!=', p('to')),
);

/** Move a quote that is PENDING, PROCESSING or COMPLETED (and not `to` already) to `to`, in one statement. */
export async function moveQuoteStatus(db: Db, platformId: string, id: string, to: string, at: string): Promise<void> {
  await moveStatus.execute(db, { platformId, id, to, at });
}

/** moveQuoteStatus for many quotes of the platform, in one statement (settlement batches). */
export async function moveQuotesStatus(db: Db, platformId: string, ids: readonly string[], to: string, at: string): Promise<void> {
  if (ids.length === 0) return;
  await db
    .updateTable('quotes')
    .set({ status: to, updated_at: at })
    .where('platform_id', '=', platformId)
    .where('id', 'in', [...ids])
    .where('status', 'in', ['PENDING', 'PROCESSING', 'COMPLETED'])
    .where('status', '!=', to)
    .execute();
}

export interface QuoteFilter extends Pick<TimeRange, 'createdAfter' | 'createdBefore'> {
  status?: string | undefined;
  /** The sending customer; null: the platform's own quotes (no customer). */
  customerId?: string | null | undefined;
  sendingAccountId?: string | undefined;
  receivingAccountId?: string | undefined;
  sendingUmaAddress?: string | undefined;
  receivingUmaAddress?: string | undefined;
}

/**
 * The platform's quotes matching the filter (paginate over it). A PENDING quote past its
 * expiry shows EXPIRED (the view at `nowMs`), so the status filter places it there. The UMA
 * addresses are generated columns (migration 0010, kernel/db/schema.ts QuoteFilterColumns).
 */
export function quoteQuery(db: Kysely<DB>, platformId: string, f: QuoteFilter, nowMs: number) {
  let q = db.withTables<ListTables>().selectFrom('quotes').where('platform_id', '=', platformId);
  if (f.customerId === null) q = q.where('customer_id', 'is', null);
  else if (f.customerId !== undefined) q = q.where('customer_id', '=', f.customerId);
  if (f.sendingAccountId !== undefined) q = q.where('source_account_id', '=', f.sendingAccountId);
  if (f.receivingAccountId !== undefined) q = q.where('destination_account_id', '=', f.receivingAccountId);
  if (f.sendingUmaAddress !== undefined) q = q.where('source_uma_address', '=', f.sendingUmaAddress);
  if (f.receivingUmaAddress !== undefined) q = q.where('destination_uma_address', '=', f.receivingUmaAddress);
  if (f.status === 'EXPIRED') q = q.where('status', '=', 'PENDING').where('expires_at_ms', '<', nowMs);
  else if (f.status === 'PENDING') q = q.where('status', '=', 'PENDING').where('expires_at_ms', '>=', nowMs);
  else if (f.status !== undefined) q = q.where('status', '=', f.status);
  return whereTimeRange(q, f);
}
