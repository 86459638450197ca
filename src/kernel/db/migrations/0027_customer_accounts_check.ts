import { sql } from 'kysely';
import type { AnyDb } from './support.js';

// Issue 15: start-up looks only at customers nobody has checked for internal accounts
// (rows written before, or around the service), not at every customer: a partial index
// holds just those. Every existing row is checked once, at the next start.
export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('customers').addColumn('accounts_unchecked', 'integer', (c) => c.notNull().defaultTo(1)).execute();
  await sql`create index customers_accounts_unchecked on customers (id) where accounts_unchecked = 1`.execute(db);
}
