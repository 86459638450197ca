import { type Migration, type MigrationProvider, Migrator, sql } from 'kysely';
import type { Store } from './connect.js';
import { MIGRATIONS } from './migrations/index.js';

// One set of migrations for both stores, applied at start: one file per migration in
// migrations/ (NNNN_purpose.ts), listed by migrations/index.ts. Kysely's migrator takes a
// lock (an advisory lock on PostgreSQL) so two processes starting together apply each
// migration once; applied migrations are recorded and skipped next time.

export { VOLUME_STATUSES_NOT_COUNTED } from './migrations/0009_transaction_volumes.js';
export { RECEIVER_NOT_DESTINATION } from './migrations/0030_receiver_index_partial.js';

/** Every migration by its name, the name `kysely_migration` records. */
export function migrations(): Readonly<Record<string, Migration>> {
  return MIGRATIONS;
}

export async function migrate(store: Store): Promise<string[]> {
  const provider: MigrationProvider = { getMigrations: async () => ({ ...MIGRATIONS }) };
  // On PostgreSQL, name the schema of Kysely's own tables: unqualified, the migrator takes
  // a kysely_migration table in any other schema of the database for its own.
  const schema =
    store.kind === 'postgres' ? (await sql<{ s: string }>`select current_schema() as s`.execute(store.db)).rows[0]?.s : undefined;
  // Unordered: areas land in parallel, so a later landing may bring a migration that sorts
  // before one a kept database already applied; it runs then instead of refusing to start.
  const migrator = new Migrator({
    db: store.db,
    provider,
    allowUnorderedMigrations: true,
    ...(schema ? { migrationTableSchema: schema } : {}),
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
