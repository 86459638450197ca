import type { Kysely, Transaction } from 'kysely';
import type { DB } from '../../kernel/db/schema.js';

// The invitations table (migration 0025_invitations), typed beside its only user.

export interface InvitationsTable {
  /** The code: the invitation's id, shared by link. */
  code: string;
  /** The inviter's platform. */
  platform_id: string;
  inviter_customer_id: string;
  inviter_uma: string;
  invitee_uma: string | null;
  /** The platform that claimed it (the inviter's or another). */
  claimed_by_platform_id: string | null;
  first_name: string | null;
  amount_to_send: number | null;
  currency: string | null;
  /** PENDING | CLAIMED | EXPIRED | CANCELLED (PENDING past expires_at_ms reads EXPIRED). */
  status: string;
  url: string;
  expires_at: string | null;
  expires_at_ms: number | null;
  created_at: string;
  updated_at: string;
  claimed_at: string | null;
  cancelled_at: string | null;
}

export type InvitationTables = { invitations: InvitationsTable };
type Db = Kysely<DB> | Transaction<DB>;
const t = (db: Db) => db.withTables<InvitationTables>();

export async function insertInvitation(db: Db, row: InvitationsTable): Promise<void> {
  await t(db).insertInto('invitations').values(row).execute();
}

export async function findInvitation(db: Db, code: string): Promise<InvitationsTable | undefined> {
  return t(db).selectFrom('invitations').selectAll().where('code', '=', code).executeTakeFirst();
}

/** Move a PENDING invitation on; false when it was not PENDING any more (a concurrent claim or cancel won). */
export async function updatePending(db: Db, code: string, patch: Partial<InvitationsTable>): Promise<boolean> {
  const r = await t(db).updateTable('invitations').set(patch).where('code', '=', code).where('status', '=', 'PENDING').executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}
