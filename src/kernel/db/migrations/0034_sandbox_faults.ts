import { sql } from 'kysely';
import { CHANGE_TRIGGER } from '../pg-change-watch.js';
import { type AnyDb, storeKind } from './support.js';

// Faults on demand (issue 36, src/sandbox/faults): a platform's rules that make chosen
// operations fail, and its webhook deliveries misbehave. In the store, so every process of a
// shared PostgreSQL server applies the same rules and consumes the same counts; each process
// keeps a per-platform view of them in memory (a TableCache), so on PostgreSQL the table
// notifies its changes like the other cached tables (migration 0031's trigger function).
export async function up(db: AnyDb): Promise<void> {
  const bigint = 'bigint' as const;
  await db.schema
    .createTable('sandbox_faults')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull())
    /** operationId, `METHOD /path-template`, or `*`; null for the webhook kinds. */
    .addColumn('operation', 'text')
    .addColumn('kind', 'text', (c) => c.notNull())
    /** The count asked for, and what is left of it (decremented atomically); null for a duration rule. */
    .addColumn('count', bigint)
    .addColumn('remaining', bigint)
    /** A duration rule: the share of matching calls faulted, in millionths, until expires_ms (real time). */
    .addColumn('fraction_ppm', bigint)
    .addColumn('duration_seconds', bigint)
    .addColumn('expires_ms', bigint)
    /** Matching calls seen by a duration rule (the n-th is faulted when floor(n·f) > floor((n−1)·f)). */
    .addColumn('seen', bigint, (c) => c.notNull().defaultTo(0))
    .addColumn('delay_ms', bigint)
    .addColumn('retry_after_seconds', bigint)
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('sandbox_faults_platform').on('sandbox_faults').columns(['platform_id', 'id']).execute();
  if (storeKind(db) === 'postgres') {
    await sql.raw(`create trigger ${CHANGE_TRIGGER} after insert or update or delete or truncate on sandbox_faults for each statement execute function ${CHANGE_TRIGGER}()`).execute(db);
  }
}
