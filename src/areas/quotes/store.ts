import type { Kysely, Selectable, Transaction, Updateable } from 'kysely';
import type { DB, QuotesTable } from '../../kernel/db/schema.js';

export type QuoteRow = Selectable<QuotesTable>;
type Db = Kysely<DB> | Transaction<DB>;

export async function insertQuote(db: Db, row: QuoteRow): Promise<void> {
  await db.insertInto('quotes').values(row).execute();
}

/** A quote of the platform; with `lock` (PostgreSQL) the row is locked until the transaction ends. */
export async function findQuote(db: Db, platformId: string, id: string, lock = false): Promise<QuoteRow | undefined> {
  let q = db.selectFrom('quotes').selectAll().where('platform_id', '=', platformId).where('id', '=', id);
  if (lock) q = q.forUpdate();
  return q.executeTakeFirst();
}

export async function findQuoteByTransaction(db: Db, platformId: string, transactionId: string): Promise<QuoteRow | undefined> {
  return db.selectFrom('quotes').selectAll().where('platform_id', '=', platformId).where('transaction_id', '=', transactionId).executeTakeFirst();
}

/** Move a quote from one status to another; false when it was no longer in `from`. */
export async function updateQuoteStatus(db: Db, platformId: string, id: string, from: string, set: Updateable<QuotesTable>): Promise<boolean> {
  const r = await db.updateTable('quotes').set(set).where('platform_id', '=', platformId).where('id', '=', id).where('status', '=', from).executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}
