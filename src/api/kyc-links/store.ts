import type { Kysely, Selectable, Transaction } from 'kysely';
import type { DB, KycLinksTable } from '../../kernel/db/schema.js';

export type KycLinkRow = Selectable<KycLinksTable>;
type Db = Kysely<DB> | Transaction<DB>;

export async function insertKycLink(db: Db, row: KycLinkRow): Promise<void> {
  await db.insertInto('kyc_links').values(row).execute();
}

/** A link by its token (the token is the credential of the hosted page: no platform filter). */
export async function findKycLink(db: Db, token: string): Promise<KycLinkRow | undefined> {
  return db.selectFrom('kyc_links').selectAll().where('token', '=', token).executeTakeFirst();
}

/** Mark a link used unless it already is; true when this call took it. */
export async function claimKycLink(db: Db, token: string, at: string): Promise<boolean> {
  const r = await db.updateTable('kyc_links').set({ used_at: at }).where('token', '=', token).where('used_at', 'is', null).executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Give a claimed link back (the submission did not complete). */
export async function releaseKycLink(db: Db, token: string, claimedAt: string): Promise<void> {
  await db.updateTable('kyc_links').set({ used_at: null }).where('token', '=', token).where('used_at', '=', claimedAt).execute();
}
