import type { Kysely, Selectable, Transaction } from 'kysely';
import type { BeneficialOwnersTable, DB } from '../../kernel/db/schema.js';

export type OwnerRow = Selectable<BeneficialOwnersTable>;
type Db = Kysely<DB> | Transaction<DB>;

export async function ownerRowsOfCustomer(db: Db, platformId: string, customerId: string): Promise<OwnerRow[]> {
  return db
    .selectFrom('beneficial_owners')
    .selectAll()
    .where('platform_id', '=', platformId)
    .where('customer_id', '=', customerId)
    .orderBy('id', 'asc')
    .execute();
}

export async function insertOwner(db: Db, row: OwnerRow): Promise<void> {
  await db.insertInto('beneficial_owners').values(row).execute();
}

/** An owner of the platform; another platform's id finds nothing. */
export async function findOwner(db: Db, platformId: string, id: string): Promise<OwnerRow | undefined> {
  return db.selectFrom('beneficial_owners').selectAll().where('platform_id', '=', platformId).where('id', '=', id).executeTakeFirst();
}

export async function updateOwner(db: Db, id: string, patch: Partial<Pick<OwnerRow, 'roles' | 'ownership_percentage' | 'personal_info' | 'identifier_sealed' | 'kyc_status' | 'updated_at'>>): Promise<void> {
  await db.updateTable('beneficial_owners').set(patch).where('id', '=', id).execute();
}

export function ownerQuery(db: Kysely<DB>, platformId: string, f: { customerId?: string | undefined }) {
  let q = db.selectFrom('beneficial_owners').where('platform_id', '=', platformId);
  if (f.customerId !== undefined) q = q.where('customer_id', '=', f.customerId);
  return q;
}

/** How many owners have an identifier sealed with a data key other than those of `keyIds` (kernel/sealed.ts's format). */
export async function ownersSealedWithOtherKeys(db: Kysely<DB>, keyIds: readonly string[]): Promise<number> {
  let q = db
    .selectFrom('beneficial_owners')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('identifier_sealed', 'is not', null);
  for (const keyId of keyIds) q = q.where('identifier_sealed', 'not like', `v1.${keyId}.%`);
  const row = await q.executeTakeFirst();
  return Number(row?.n ?? 0);
}
