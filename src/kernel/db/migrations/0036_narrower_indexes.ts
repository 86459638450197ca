import { sql } from 'kysely';
import type { AnyDb } from './support.js';

/**
 * The condition of the partial index transactions_sender (migration 0036): a query that
 * searches it must repeat it word for word (transactions/store.ts).
 */
export const SENDER_NOT_SOURCE = `sender_identifier <> coalesce(source_account_id, '')`;

/**
 * Issue 35: bytes per payment flow. The list-filter indexes on a column that holds an id
 * (a customer's, an account's: `<Type>:<uuid v7>`, unique across platforms) no longer start
 * with the 45-character platform id: `(customer_id, id)` finds one customer's rows as
 * exactly as `(platform_id, customer_id, id)` did, and every query still names the platform
 * (tenancy), which the planner checks on the rows it finds. A customer's id may also be a
 * platform's own id (transactions of the platform on its own behalf: customer_id = the
 * platform id), which is unique too. Each of the five is about 46 bytes narrower per row.
 * Both planners were checked to pick them (EXPLAIN QUERY PLAN / EXPLAIN of every list filter:
 * test/kernel/narrower-indexes.test.ts). Indexes on values that are not ids (UMA addresses,
 * the platform's customer ids, references, statuses) keep the platform first.
 *
 * The quotes of the platform itself (customer_id null; `customerId=<platform id>` lists them)
 * were found through quotes_customer's (platform_id, null) prefix: they get their own partial
 * index, which holds no row of a customer's quote.
 *
 * ledger_entries_idempotency was unique on (platform_id, idempotency_key); every key the
 * service writes names the resource it moves money for (`hold:<Transaction id>`,
 * `capture:…`, `funding:…`, `<kind>:<CardTransaction id>:<n>`), an id unique across
 * platforms, so the key alone is unique and the platform prefix only made each entry 46 bytes
 * longer. Unique on the key alone is the stronger constraint (two entries of one platform
 * with one key still collide), and the look-ups (`platform_id = ? and idempotency_key = ?`,
 * `… in (…)`) search it by the key and check the platform on the row they find.
 *
 * transactions_sender held every row's sender identifier after the platform id; for a
 * payment from an account that is its source account. It now holds only the senders that
 * are not the source account (a UMA address, an account identifier), and the source account
 * has its own index without the platform prefix, transactions_source_account
 * `(source_account_id, id)`: the sender filter searches both and unites them
 * (transactions/store.ts `matching`), as the receiver filter does with 0030's partial index
 * and the destination account's.
 *
 * transactions_quote (unique quote_id) is dropped: no query reads transactions by quote, and
 * the one transaction a quote may have is already unique by its primary key. The only
 * transactions with a quote_id are a quote's (quotes/execute.ts `paymentOf`), whose id is
 * the quote's own `transaction_id`, fixed when the quote is created: a second transaction
 * of one quote would be a second row with that id. Two concurrent executions are told
 * apart before that, by the quote's guarded move out of PENDING (409 for the second).
 */
export const NARROWED: ReadonlyArray<readonly [name: string, table: string, columns: string]> = [
  ['transactions_customer', 'transactions', 'customer_id, id'],
  ['transactions_destination_account', 'transactions', 'destination_account_id, id'],
  ['quotes_customer', 'quotes', 'customer_id, id'],
  ['quotes_source_account', 'quotes', 'source_account_id, id'],
  ['quotes_destination_account', 'quotes', 'destination_account_id, id'],
];

export async function up(db: AnyDb): Promise<void> {
  for (const [name, table, columns] of NARROWED) {
    await sql.raw(`drop index ${name}`).execute(db);
    await sql.raw(`create index ${name} on ${table} (${columns})`).execute(db);
  }
  await sql`drop index ledger_entries_idempotency`.execute(db);
  await sql`create unique index ledger_entries_idempotency on ledger_entries (idempotency_key) where idempotency_key is not null`.execute(db);
  await sql`drop index transactions_sender`.execute(db);
  await sql.raw(`create index transactions_sender on transactions (platform_id, sender_identifier, id) where ${SENDER_NOT_SOURCE}`).execute(db);
  await sql`create index transactions_source_account on transactions (source_account_id, id)`.execute(db);
  await sql`drop index transactions_quote`.execute(db);
  await sql`create index quotes_platform_own on quotes (platform_id, id) where customer_id is null`.execute(db);
}
