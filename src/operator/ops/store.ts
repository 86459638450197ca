import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import type { DB } from '../../kernel/db/schema.js';

export async function pendingJobCounts(db: Kysely<DB>): Promise<Array<{ kind: string; n: number }>> {
  const rows = await db.selectFrom('jobs').select(['kind', sql<number>`count(*)`.as('n')]).where('status', '=', 'pending').groupBy('kind').execute();
  return rows.map((r) => ({ kind: r.kind, n: Number(r.n) }));
}

export async function deliveryCounts(db: Kysely<DB>): Promise<Array<{ status: string; n: number }>> {
  const rows = await db.selectFrom('webhook_deliveries').select(['status', sql<number>`count(*)`.as('n')]).where('status', 'in', ['PENDING', 'SENDING']).groupBy('status').execute();
  return rows.map((r) => ({ status: r.status, n: Number(r.n) }));
}

export async function appliedMigrations(db: Kysely<DB>): Promise<string[]> {
  const rows = await sql<{ name: string }>`select name from kysely_migration`.execute(db);
  return rows.rows.map((r) => r.name);
}

export async function platformCount(db: Kysely<DB>): Promise<number> {
  const r = await db.selectFrom('platforms').select(sql<number>`count(*)`.as('n')).executeTakeFirst();
  return Number(r?.n ?? 0);
}
