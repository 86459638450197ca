import { type AnyDb, storeKind } from './support.js';

// Issue 36: sandbox snapshots (src/sandbox/snapshots). One row per saved state: a platform's
// (platform_id = its id) or the whole store's (platform_id = '*', the operator's), under a
// name unique per owner. `data` is the rows, table by table, as gzip-compressed JSON;
// `tables` the row count per table (JSON), for the lists without opening `data`.
export async function up(db: AnyDb): Promise<void> {
  const kind = storeKind(db);
  await db.schema
    .createTable('sandbox_snapshots')
    .addColumn('platform_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('sandbox_now_ms', 'bigint', (c) => c.notNull())
    .addColumn('tables', 'text', (c) => c.notNull())
    .addColumn('row_count', 'bigint', (c) => c.notNull())
    .addColumn('size_bytes', 'bigint', (c) => c.notNull())
    .addColumn('data', kind === 'postgres' ? 'bytea' : 'blob', (c) => c.notNull())
    .addPrimaryKeyConstraint('sandbox_snapshots_pk', ['platform_id', 'name'])
    .execute();
}
