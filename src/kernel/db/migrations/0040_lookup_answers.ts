import type { AnyDb } from './support.js';

// Issue 35: a receiver lookup recorded one row per lookup (insert and commit on every GET:
// about a third of its CPU). What a quote reads back from a lookup is its answer, and
// identical lookups answer the same: one row per distinct answer (kept by the process that
// wrote it and reused by its identical lookups while it is still there), and the lookup id
// itself carries the rest, the lookup's time and the answer's key (src/api/lookups/ids.ts).
// The lookups table stays for the ids minted before (read as before).
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('lookup_answers')
    // 10 hex digits (40 bits), the end of the lookup ids that use this answer.
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull().references('platforms.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('target', 'text', (c) => c.notNull())
    .addColumn('customer_id', 'text', (c) => c.notNull())
    .addColumn('sending_currency', 'text', (c) => c.notNull())
    .addColumn('quoted', 'text', (c) => c.notNull())
    .addColumn('required_payer_data_fields', 'text')
    .addColumn('receiver', 'text')
    // When the answer was first stored (a lookup's own time is in its id).
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  // A platform's deletion and a sandbox reset find its answers by platform.
  await db.schema.createIndex('lookup_answers_platform').on('lookup_answers').columns(['platform_id']).execute();
}
