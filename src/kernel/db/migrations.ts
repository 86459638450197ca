import { type Migration, type MigrationProvider, Migrator, sql } from 'kysely';
import type { Store } from './connect.js';
import { MIGRATIONS } from './migrations/index.js';

// One set of migrations for both stores, applied at start: one file per migration in
// migrations/ (NNNN_purpose.ts), listed by migrations/index.ts. A run is one database
// transaction on both stores, under a lock, so two processes starting together apply each
// migration once: on PostgreSQL Kysely's advisory lock; on SQLite the file's write lock,
// which the run's transaction takes (`begin immediate`; the SQLite dialect's adapter runs DDL
// in transactions, `db/group-commit.ts`). A process that waits longer than busy_timeout for
// another's run tries again (below). Applied migrations are recorded and skipped next time.

export { VOLUME_STATUSES_NOT_COUNTED } from './migrations/0009_transaction_volumes.js';
export { RECEIVER_NOT_DESTINATION } from './migrations/0030_receiver_index_partial.js';
export { SENDER_NOT_SOURCE } from './migrations/0036_narrower_indexes.js';
export { LANE_HEAD, LANE_UNCLASSIFIED } from './migrations/0035_delivery_lane_heads.js';

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
  for (let attempt = 1; ; attempt++) {
    const { error, results } = await migrator.migrateToLatest();
    if (!error) return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
    // Before any migration ran (no result yet): the failure came from the migrator's look at the catalogue.
    const beforeAny = !results || results.length === 0;
    if (attempt < SQLITE_BUSY_RETRIES && store.kind === 'sqlite' && isBusy(error)) {
      // Another process's run held the file's write lock past busy_timeout (a long data
      // migration): nothing of this run was written; it starts again and waits once more.
      continue;
    }
    if (attempt < OTHER_SCHEMA_RETRIES && schema && isOtherSchemaGone(error, schema, beforeAny)) {
      // A short, growing pause: the other process's drop is over in moments.
      await new Promise<void>((r) => setTimeout(r, Math.min(200, 10 * attempt) + Math.floor(Math.random() * 20)));
      continue;
    }
    throw error instanceof Error ? error : new Error(String(error));
  }
}

/** How many times a SQLite migration run starts again after waiting busy_timeout (5 s each) for another process's. */
const SQLITE_BUSY_RETRIES = 60;

function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_BUSY_SNAPSHOT';
}

/** How many times a migration run starts again after another schema vanished under it. */
const OTHER_SCHEMA_RETRIES = 50;

/**
 * Before it migrates, Kysely's migrator looks for its tables by introspecting every table of
 * every schema of the database (`has_schema_privilege` and `pg_get_serial_sequence` of each).
 * A schema or table another process drops meanwhile (on a shared database: another
 * service's, or the test suite's concurrent schemas) makes that query fail with "schema …
 * does not exist", "relation … does not exist", "column … of relation … does not exist" (a
 * column dropped by a table rebuild) or a failed catalog lookup, before any migration ran. Such a failure is not about this store: the run starts again. A failure
 * naming this store's own schema is real and stays one.
 */
export function isOtherSchemaGone(error: unknown, schema: string, beforeAny = false): boolean {
  const e = error as { code?: unknown; message?: unknown };
  const code = typeof e?.code === 'string' ? e.code : '';
  const message = typeof e?.message === 'string' ? e.message : '';
  // A column another process dropped meanwhile ("column … of relation … does not exist",
  // 42703: pg_get_serial_sequence of a column the catalogue listed a moment before) names no
  // schema: taken as another's only while no migration has run yet (the introspection).
  if (code === '42703') return beforeAny;
  if (!['3F000', '42P01', 'XX000'].includes(code)) return false;
  if (code === 'XX000' && !/cache lookup failed/i.test(message)) return false;
  return !message.includes(`"${schema}"`) && !message.includes(`"${schema}.`);
}
