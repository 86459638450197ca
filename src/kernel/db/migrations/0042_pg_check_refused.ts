import { sql } from 'kysely';
import { type AnyDb, storeKind } from './support.js';

// Issue 35, PostgreSQL: a check an effect transaction's first run writes with its next
// statement instead of making it at once (limits/store.ts: the daily volume) fails that
// statement with this function's error when it does not pass; the transaction then runs
// again with the check made at once, which answers as it always did (db/late-move.ts).
// Volatile, so the server calls it only when the check's `case` reaches it. SQLite needs
// none (its checks are made at once).
export async function up(db: AnyDb): Promise<void> {
  if (storeKind(db) !== 'postgres') return;
  await sql.raw(`create or replace function payments_check_refused(what text) returns text language plpgsql volatile as $fn$
    begin
      raise exception using errcode = 'P0001', message = 'payments: ' || what || ' check refused; run again with it made at once';
    end
  $fn$`).execute(db);
}
