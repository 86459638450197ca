import type { Kysely, Selectable, Transaction } from 'kysely';
import type { DB, VerificationsTable } from '../../kernel/db/schema.js';

export type VerificationRow = Selectable<VerificationsTable>;
type Db = Kysely<DB> | Transaction<DB>;

export async function insertVerification(db: Db, row: VerificationRow): Promise<void> {
  await db.insertInto('verifications').values(row).execute();
}

/** A verification of the platform; another platform's id finds nothing. */
export async function findVerification(db: Db, platformId: string, id: string): Promise<VerificationRow | undefined> {
  return db.selectFrom('verifications').selectAll().where('platform_id', '=', platformId).where('id', '=', id).executeTakeFirst();
}

/** The customer's verification record (there is at most one). */
export async function findVerificationOfCustomer(db: Db, platformId: string, customerId: string): Promise<VerificationRow | undefined> {
  return db
    .selectFrom('verifications')
    .selectAll()
    .where('platform_id', '=', platformId)
    .where('customer_id', '=', customerId)
    .orderBy('id', 'asc')
    .executeTakeFirst();
}

export async function updateVerification(db: Db, id: string, patch: Pick<VerificationRow, 'verification_status' | 'errors' | 'updated_at'>): Promise<void> {
  await db.updateTable('verifications').set(patch).where('id', '=', id).execute();
}

export function verificationQuery(db: Kysely<DB>, platformId: string, f: { customerId?: string | undefined; verificationStatus?: string | undefined }) {
  let q = db.selectFrom('verifications').where('platform_id', '=', platformId);
  if (f.customerId !== undefined) q = q.where('customer_id', '=', f.customerId);
  if (f.verificationStatus !== undefined) q = q.where('verification_status', '=', f.verificationStatus);
  return q;
}
