import type { Kysely, Selectable, Transaction } from 'kysely';
import type { DB, LookupsTable } from '../../kernel/db/schema.js';
import { groupedInsert } from '../../kernel/db/grouped-insert.js';

// The lookups table (migration 0005_lookups).

export type { LookupsTable };
export type LookupRow = Selectable<LookupsTable>;
type Db = Kysely<DB> | Transaction<DB>;

/**
 * Record a lookup. Outside a transaction on SQLite the lookups of one event-loop turn are
 * committed together (kernel/db/grouped-insert.ts); it resolves once the row is committed.
 */
export async function insertLookup(db: Db, row: LookupRow): Promise<void> {
  await insert(db, row);
}

const insert = groupedInsert('lookups');

/** A lookup of the platform; another platform's id finds nothing. */
export async function findLookup(db: Db, platformId: string, id: string): Promise<LookupRow | undefined> {
  return db.selectFrom('lookups').selectAll().where('platform_id', '=', platformId).where('id', '=', id).executeTakeFirst();
}
