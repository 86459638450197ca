import type { AnyDb } from './support.js';

export async function up(db: AnyDb): Promise<void> {
  // A beneficial owner's full identification number, sealed (kernel/sealed.ts); rows
  // from before keep only the last 4 in personal_info.
  await db.schema.alterTable('beneficial_owners').addColumn('identifier_sealed', 'text').execute();
  // The data key when PAYMENTS_DATA_KEY is not set: one row, written at the first start.
  await db.schema
    .createTable('data_keys')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('data_key', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
}
