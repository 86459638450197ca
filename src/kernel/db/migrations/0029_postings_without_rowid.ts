import { sql } from 'kysely';
import { type AnyDb, inOneTransaction, storeKind } from './support.js';

// Issue 15: bytes per payment flow. On SQLite, ledger_postings becomes a WITHOUT ROWID
// table keyed by its primary key (entry_id, line): the rows live in that key's b-tree, so
// the separate index SQLite kept for the key (about 56 bytes a posting, four postings a
// payment flow) is gone. Same columns, constraints and secondary index; nothing references
// the table, so it is rebuilt under its name in one transaction (the run's; a crash leaves the old
// table or the new one, never neither). PostgreSQL tables have no rowid: nothing to do.
export async function up(db: AnyDb): Promise<void> {
  const kind = storeKind(db);
  if (kind !== 'sqlite') return;
  await inOneTransaction(db, async (trx) => {
    await sql`create table ledger_postings_v2 (
      entry_id text not null references ledger_entries (id) on delete cascade,
      line integer not null,
      platform_id text not null,
      account_id text not null references ledger_balances (account_id),
      currency text not null,
      bucket text not null,
      amount bigint not null,
      created_at text not null,
      constraint ledger_postings_pk primary key (entry_id, line),
      constraint ledger_postings_bucket check (bucket in ('available', 'pending', 'held')),
      constraint ledger_postings_nonzero check (amount <> 0)
    ) without rowid`.execute(trx);
    await sql`insert into ledger_postings_v2 (entry_id, line, platform_id, account_id, currency, bucket, amount, created_at)
      select entry_id, line, platform_id, account_id, currency, bucket, amount, created_at from ledger_postings`.execute(trx);
    await sql`drop table ledger_postings`.execute(trx);
    await sql`alter table ledger_postings_v2 rename to ledger_postings`.execute(trx);
    await sql`create index ledger_postings_account on ledger_postings (account_id, entry_id)`.execute(trx);
  });
}
