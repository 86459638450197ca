import { sql } from 'kysely';
import type { AnyDb } from './support.js';

/**
 * The condition of the partial index transactions_receiver (migration 0030): a query that
 * searches it must repeat it word for word (transactions/store.ts).
 */
export const RECEIVER_NOT_DESTINATION = `receiver_identifier <> coalesce(destination_account_id, '')`;

// Issue 15: bytes per payment flow. transactions_receiver (0010) indexed every row's
// receiver identifier, which for a payment to an account is its destination account, also
// indexed by transactions_destination_account. The receiver filter searches both and
// unites them (transactions/store.ts `matching`), so the receiver index needs only the
// rows whose receiver is not the destination account: a UMA address, or a destination
// without an account. The query repeats the index's condition word for word, which both
// planners (PostgreSQL's generic plans included) match to the partial index.
export async function up(db: AnyDb): Promise<void> {
  await sql`drop index transactions_receiver`.execute(db);
  await sql.raw(`create index transactions_receiver on transactions (platform_id, receiver_identifier, id) where ${RECEIVER_NOT_DESTINATION}`).execute(db);
}
