import { sql } from 'kysely';
import { type AnyDb, inOneTransaction, storeKind } from './support.js';

// Issue 15: bytes per payment flow. A posting repeated two columns of its entry: the
// platform id (45 characters) and the time. Nothing reads them from the posting (views
// take the entry's, queries reach postings through entries already narrowed to the
// platform): about 70 bytes a posting, four a payment flow. SQLite rebuilds the table in
// place, in one transaction, as 0029 did (nothing references it); PostgreSQL drops them.
export async function up(db: AnyDb): Promise<void> {
  const kind = storeKind(db);
  if (kind !== 'sqlite') {
    await sql`alter table ledger_postings drop column platform_id, drop column created_at`.execute(db);
    return;
  }
  await inOneTransaction(db, async (trx) => {
    await sql`create table ledger_postings_v3 (
      entry_id text not null references ledger_entries (id) on delete cascade,
      line integer not null,
      account_id text not null references ledger_balances (account_id),
      currency text not null,
      bucket text not null,
      amount bigint not null,
      constraint ledger_postings_pk primary key (entry_id, line),
      constraint ledger_postings_bucket check (bucket in ('available', 'pending', 'held')),
      constraint ledger_postings_nonzero check (amount <> 0)
    ) without rowid`.execute(trx);
    await sql`insert into ledger_postings_v3 (entry_id, line, account_id, currency, bucket, amount)
      select entry_id, line, account_id, currency, bucket, amount from ledger_postings`.execute(trx);
    await sql`drop table ledger_postings`.execute(trx);
    await sql`alter table ledger_postings_v3 rename to ledger_postings`.execute(trx);
    await sql`create index ledger_postings_account on ledger_postings (account_id, entry_id)`.execute(trx);
  });
}
