import { sql } from 'kysely';
import type { AnyDb } from './support.js';

// Issue 15: fewer index bytes per payment. Two list-filter indexes of 0010 hold only the
// rows whose filtered value is set (most payments have no reconciliation reference and no
// UMA destination): their only queries compare the column with `=` (transactions/store.ts
// `reference`, quotes/store.ts `receivingUmaAddress`), which implies IS NOT NULL, so both
// planners still use them (with bound parameters, and in PostgreSQL's generic plans).
// ledger_entries_reference (0003) goes: no query reads entries by reference_id; a
// platform's reset deletes its entries with a scan, as it already does its postings.
export async function up(db: AnyDb): Promise<void> {
  await sql`drop index transactions_reference`.execute(db);
  await sql`create index transactions_reference on transactions (platform_id, reconciliation_reference, id) where reconciliation_reference is not null`.execute(db);
  await sql`drop index quotes_destination_uma`.execute(db);
  await sql`create index quotes_destination_uma on quotes (platform_id, destination_uma_address, id) where destination_uma_address is not null`.execute(db);
  await sql`drop index ledger_entries_reference`.execute(db);
}
