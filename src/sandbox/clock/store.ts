import type { Kysely } from 'kysely';
import type { DB } from '../../kernel/db/schema.js';

export async function clockOffset(db: Kysely<DB>, platformId: string): Promise<number> {
  const row = await db.selectFrom('platforms').select('clock_offset_ms').where('id', '=', platformId).executeTakeFirstOrThrow();
  return Number(row.clock_offset_ms);
}

/** Move a platform's sandbox clock forward to `offsetMs` (never back). */
export async function raiseClockOffset(db: Kysely<DB>, platformId: string, offsetMs: number): Promise<void> {
  await db.updateTable('platforms').set({ clock_offset_ms: offsetMs }).where('id', '=', platformId).where('clock_offset_ms', '<', offsetMs).execute();
}
