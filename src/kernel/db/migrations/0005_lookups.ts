import { sql } from 'kysely';
import { type AnyDb, storeKind } from './support.js';

export async function up(db: AnyDb): Promise<void> {
  // Receiver lookups (UMA address or external account): what was answered, for the quote
  // that names the lookupId.
  await db.schema
    .createTable('lookups')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull().references('platforms.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('target', 'text', (c) => c.notNull())
    .addColumn('customer_id', 'text', (c) => c.notNull())
    .addColumn('sending_currency', 'text', (c) => c.notNull())
    .addColumn('quoted', 'text', (c) => c.notNull())
    .addColumn('required_payer_data_fields', 'text')
    .addColumn('receiver', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addCheckConstraint('lookups_kind', sql`kind in ('UMA', 'EXTERNAL_ACCOUNT')`)
    .execute();
  await db.schema.createIndex('lookups_platform').on('lookups').columns(['platform_id', 'id']).execute();
}
