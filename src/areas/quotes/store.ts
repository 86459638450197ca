import type { Kysely, Selectable, Transaction, Updateable } from 'kysely';
import type { DB, QuotesTable } from '../../kernel/db/schema.js';
import { preparedByPlatformAndId, preparedInsert, preparedUpdate } from '../../kernel/db/prepared.js';

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
