import { type Kysely, PostgresAdapter, SqliteAdapter } from 'kysely';
import type { StoreKind } from '../connect.js';

/** Both stores run every migration of a run in one transaction (the migrator's): a migration that needs one takes it. */
export { inOneTransaction } from '../in-one-transaction.js';

// What the migration files share. A migration file is what Kysely's FileMigrationProvider
// loads: a module named `NNNN_purpose.ts` exporting `up(db)`. Kysely hands `up` only the
// database (or the migration's transaction), so a migration that differs between the
// stores asks the handle which one it is.

export type AnyDb = Kysely<any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Which store a Kysely handle (the store's own or one of its transactions) talks to. */
export function storeKind(db: AnyDb): StoreKind {
  const adapter = db.getExecutor().adapter;
  if (adapter instanceof PostgresAdapter) return 'postgres';
  if (adapter instanceof SqliteAdapter) return 'sqlite';
  throw new Error(`migrations: unknown database adapter ${adapter.constructor.name}`);
}
