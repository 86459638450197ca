import type { Kysely, Selectable, Transaction } from 'kysely';
import type { DB, FeeConfigsTable, PlatformConfigsTable } from '../../kernel/db/schema.js';

export type ConfigRow = Selectable<PlatformConfigsTable>;
export type FeeRow = Selectable<FeeConfigsTable>;
type Db = Kysely<DB> | Transaction<DB>;

export async function insertConfig(db: Db, row: ConfigRow): Promise<void> {
  await db.insertInto('platform_configs').values(row).execute();
}

export async function findConfig(db: Db, platformId: string): Promise<ConfigRow | undefined> {
  return db.selectFrom('platform_configs').selectAll().where('platform_id', '=', platformId).executeTakeFirst();
}

/** The row, locked until the transaction ends on PostgreSQL (SQLite serialises writers already). */
export async function findConfigForUpdate(db: Transaction<DB>, platformId: string, postgres: boolean): Promise<ConfigRow | undefined> {
  let q = db.selectFrom('platform_configs').selectAll().where('platform_id', '=', platformId);
  if (postgres) q = q.forUpdate();
  return q.executeTakeFirst();
}

export async function updateConfig(db: Db, platformId: string, patch: Partial<Omit<ConfigRow, 'platform_id' | 'id' | 'created_at'>>): Promise<void> {
  await db.updateTable('platform_configs').set(patch).where('platform_id', '=', platformId).execute();
}

export async function activeFees(db: Db, platformId: string): Promise<FeeRow[]> {
  return db
    .selectFrom('fee_configs')
    .selectAll()
    .where('platform_id', '=', platformId)
    .where('active', '=', 1)
    .orderBy('fee_type')
    .orderBy('source_currency')
    .execute();
}

/** Insert or replace the fee config of one (feeType, sourceCurrency) key. */
export async function upsertFee(db: Db, row: FeeRow): Promise<void> {
  await db
    .insertInto('fee_configs')
    .values(row)
    .onConflict((oc) =>
      oc.columns(['platform_id', 'fee_type', 'source_currency']).doUpdateSet({
        variable_fee_bps: row.variable_fee_bps,
        fixed_fee_amount: row.fixed_fee_amount,
        fixed_fee_currency: row.fixed_fee_currency,
        active: row.active,
        updated_at: row.updated_at,
      }),
    )
    .execute();
}
