import { type AnyDb, storeKind } from './support.js';

// Issue 15: an event's payload packed in one binary column (kernel/event-bodies.ts).
// Older rows keep their JSON in `payload` and a NULL `body`; both are read.
export async function up(db: AnyDb): Promise<void> {
  const kind = storeKind(db);
  await db.schema.alterTable('events').addColumn('body', kind === 'postgres' ? 'bytea' : 'blob').execute();
}
