import { type Kysely, type Selectable, sql } from 'kysely';
import type { DB, PlatformsTable } from '../../kernel/db/schema.js';

export type PlatformRow = Selectable<PlatformsTable>;

export async function insertPlatform(db: Kysely<DB>, row: PlatformRow): Promise<void> {
  await db.insertInto('platforms').values(row).execute();
}

export async function findPlatform(db: Kysely<DB>, id: string): Promise<PlatformRow | undefined> {
  return db.selectFrom('platforms').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function findDefaultPlatform(db: Kysely<DB>): Promise<PlatformRow | undefined> {
  return db.selectFrom('platforms').selectAll().where('is_default', '=', sql.lit(1)).executeTakeFirst();
}

export async function listPlatforms(db: Kysely<DB>): Promise<PlatformRow[]> {
  return db.selectFrom('platforms').selectAll().orderBy('id', 'asc').execute();
}

export async function updatePlatform(
  db: Kysely<DB>,
  id: string,
  patch: Partial<Pick<PlatformRow, 'name' | 'options' | 'clock_offset_ms' | 'updated_at'>>,
): Promise<void> {
  await db.updateTable('platforms').set(patch).where('id', '=', id).execute();
}
