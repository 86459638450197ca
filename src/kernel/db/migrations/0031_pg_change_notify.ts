import { sql } from 'kysely';
import { CHANGE_CHANNEL, CHANGE_NOTIFIED_TABLES_0031 as CHANGE_NOTIFIED_TABLES, CHANGE_TRIGGER } from '../pg-change-watch.js';
import { type AnyDb, storeKind } from './support.js';

// Issue 15: row caches across requests on PostgreSQL (kernel/db/pg-change-watch.ts). Each
// cached table tells every listening server process, at commit, that it changed. A
// statement trigger, so a statement notifies once whatever its number of rows, and
// PostgreSQL folds the same notification of one transaction into one. SQLite needs none
// (its watch reads the file's data_version).
export async function up(db: AnyDb): Promise<void> {
  const kind = storeKind(db);
  if (kind !== 'postgres') return;
  await sql.raw(`create or replace function ${CHANGE_TRIGGER}() returns trigger language plpgsql as $fn$
    begin
      perform pg_notify('${CHANGE_CHANNEL}', tg_table_schema || '.' || tg_table_name);
      return null;
    end
  $fn$`).execute(db);
  for (const table of CHANGE_NOTIFIED_TABLES) {
    await sql.raw(`create trigger ${CHANGE_TRIGGER} after insert or update or delete or truncate on ${table} for each statement execute function ${CHANGE_TRIGGER}()`).execute(db);
  }
}
