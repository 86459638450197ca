import { sql } from 'kysely';
import { LATE_MOVE_REFUSED } from '../late-move.js';
import { type AnyDb, storeKind } from './support.js';

// Issue 35, PostgreSQL: a balance row's move sent with the commit (kernel/db/late-move.ts)
// must stop the commit when it moved no row, so the statement that carries it fails with
// this function's error (SQLSTATE P0001 and its message, which effectTransaction recognises),
// and the effect transaction runs again with the move sent at once. Volatile, so the server
// calls it at run time, once the move has run. SQLite needs none (its moves are never late).
export async function up(db: AnyDb): Promise<void> {
  if (storeKind(db) !== 'postgres') return;
  await sql.raw(`create or replace function payments_one_row(n bigint) returns bigint language plpgsql volatile as $fn$
    begin
      if n = 1 then return n; end if;
      raise exception using errcode = 'P0001', message = '${LATE_MOVE_REFUSED}';
    end
  $fn$`).execute(db);
}
