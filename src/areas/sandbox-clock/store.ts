import { type Kysely, sql } from 'kysely';
import type { DB } from '../../kernel/db/schema.js';

/** Move a platform's sandbox clock forward (one statement: concurrent advances add up). */
export async function addClockOffset(db: Kysely<DB>, platformId: string, ms: number): Promise<void> {
  await db
    .updateTable('platforms')
    .set({ clock_offset_ms: sql<number>`clock_offset_ms + ${ms}` })
    .where('id', '=', platformId)
    .execute();
}

export async function clockOffset(db: Kysely<DB>, platformId: string): Promise<number> {
  const row = await db.selectFrom('platforms').select('clock_offset_ms').where('id', '=', platformId).executeTakeFirstOrThrow();
  return Number(row.clock_offset_ms);
}
