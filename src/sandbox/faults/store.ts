import type { Generated, Kysely, Selectable } from 'kysely';
import type { DB } from '../../kernel/db/schema.js';

// The faults' SQL (migration 0034_sandbox_faults). A count is consumed by one atomic update
// (`remaining > 0`), so two processes never both take the last one.

/** A fault rule (migration 0034). Times `*_ms` are real time (epoch ms), not the sandbox clock. */
export interface SandboxFaultsTable {
  id: string;
  platform_id: string;
  operation: string | null;
  kind: string;
  count: number | null;
  remaining: number | null;
  fraction_ppm: number | null;
  duration_seconds: number | null;
  expires_ms: number | null;
  seen: Generated<number>;
  delay_ms: number | null;
  retry_after_seconds: number | null;
  created_at: string;
}

declare module '../../kernel/db/schema.js' {
  interface DB {
    sandbox_faults: SandboxFaultsTable;
  }
}

export type FaultRow = Selectable<SandboxFaultsTable>;
export type NewFaultRow = Omit<FaultRow, 'seen'>;

export async function insertFault(db: Kysely<DB>, row: NewFaultRow): Promise<void> {
  await db.insertInto('sandbox_faults').values(row).execute();
}

/** The platform's rules still active at real time `nowMs`, oldest first. */
export async function activeFaults(db: Kysely<DB>, platformId: string, nowMs: number): Promise<FaultRow[]> {
  const rows = await db
    .selectFrom('sandbox_faults')
    .selectAll()
    .where('platform_id', '=', platformId)
    .where((eb) => eb.or([eb('remaining', '>', 0), eb('expires_ms', '>', nowMs)]))
    .orderBy('id')
    .execute();
  return rows.map(numeric);
}

/** Take one of a count rule's remaining calls: what is left after it, or undefined when none was left. */
export async function consumeCount(db: Kysely<DB>, id: string): Promise<number | undefined> {
  const row = await db
    .updateTable('sandbox_faults')
    .set((eb) => ({ remaining: eb('remaining', '-', 1) }))
    .where('id', '=', id)
    .where('remaining', '>', 0)
    .returning('remaining')
    .executeTakeFirst();
  return row ? Number(row.remaining) : undefined;
}

/** Count one more matching call of a duration rule still running at `nowMs`: its number n, or undefined when it ran out. */
export async function countSeen(db: Kysely<DB>, id: string, nowMs: number): Promise<number | undefined> {
  const row = await db
    .updateTable('sandbox_faults')
    .set((eb) => ({ seen: eb('seen', '+', 1) }))
    .where('id', '=', id)
    .where('expires_ms', '>', nowMs)
    .returning('seen')
    .executeTakeFirst();
  return row ? Number(row.seen) : undefined;
}

export async function deleteFault(db: Kysely<DB>, platformId: string, id: string): Promise<boolean> {
  const r = await db.deleteFrom('sandbox_faults').where('platform_id', '=', platformId).where('id', '=', id).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

export async function deleteFaults(db: Kysely<DB>, platformId: string): Promise<number> {
  const r = await db.deleteFrom('sandbox_faults').where('platform_id', '=', platformId).executeTakeFirst();
  return Number(r.numDeletedRows);
}

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

function numeric(r: FaultRow): FaultRow {
  return {
    ...r,
    count: num(r.count),
    remaining: num(r.remaining),
    fraction_ppm: num(r.fraction_ppm),
    duration_seconds: num(r.duration_seconds),
    expires_ms: num(r.expires_ms),
    seen: Number(r.seen),
    delay_ms: num(r.delay_ms),
    retry_after_seconds: num(r.retry_after_seconds),
  };
}
