import type { Kysely, Selectable, Transaction } from 'kysely';
import type { DB, LookupsTable } from '../../kernel/db/schema.js';

// The lookups table (migration 0005_lookups).

export type { LookupsTable };
export type LookupRow = Selectable<LookupsTable>;
type Db = Kysely<DB> | Transaction<DB>;

export async function insertLookup(db: Db, row: LookupRow): Promise<void> {
  await db.insertInto('lookups').values(row).execute();
}

/** A lookup of the platform; another platform's id finds nothing. */
export async function findLookup(db: Db, platformId: string, id: string): Promise<LookupRow | undefined> {
  return db.selectFrom('lookups').selectAll().where('platform_id', '=', platformId).where('id', '=', id).executeTakeFirst();
}
