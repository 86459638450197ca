import type { Kysely, Selectable, Transaction } from 'kysely';
import type { DB } from '../../kernel/db/schema.js';

// The SCA area's tables (migration 0023_sca). Their types live here, beside their queries,
// and are added to the handle with `withTables`.

export interface ScaFactorsTable {
  id: string;
  platform_id: string;
  customer_id: string;
  /** TOTP | PASSKEY (SMS_OTP needs no row). */
  factor: string;
  /** PENDING (enrollment started) | ACTIVE. */
  status: string;
  credential_id: string | null;
  name: string | null;
  /** SHA-256 (hex) of a TOTP enrollment's secret. */
  secret_hash: string | null;
  /** A PENDING enrollment's deadline. */
  expires_at_ms: number | null;
  created_at: string;
  confirmed_at: string | null;
}

export interface ScaSecurityTable {
  customer_id: string;
  platform_id: string;
  failed_attempts: number;
  locked_until_ms: number | null;
  suspended: number;
  updated_at: string;
}

export interface ScaSecurityEventsTable {
  id: string;
  platform_id: string;
  customer_id: string;
  event_type: string;
  failed_attempts: number;
  locked_until: string | null;
  suspended: number;
  created_at: string;
}

export interface ScaSessionsTable {
  id: string;
  platform_id: string;
  customer_id: string;
  factor: string;
  end_user_ip: string;
  revoked: number;
  expires_at_ms: number;
  expires_at: string;
  created_at: string;
}

export interface ScaChallengesTable {
  id: string;
  platform_id: string;
  customer_id: string;
  /** LOGIN | QUOTE | TRUST | UNTRUST. */
  kind: string;
  /** The quote or external account; NULL for a login. */
  subject_id: string | null;
  factor: string;
  /** JSON array of factors. */
  available_factors: string;
  purpose: string | null;
  /** JSON array: the purposes of the steps still to come after this one. */
  next_purposes: string;
  /** PENDING | SATISFIED | EXPIRED | CANCELLED. */
  status: string;
  sends: number;
  expires_at_ms: number;
  expires_at: string;
  created_at: string;
}

export interface ScaResetsTable {
  id: string;
  platform_id: string;
  customer_id: string;
  factor: string;
  completed_at: string | null;
  created_at_ms: number;
  expires_at_ms: number;
  expires_at: string;
}

export interface ScaTrustedTable {
  external_account_id: string;
  platform_id: string;
  customer_id: string;
  trusted_at: string;
}

export type ScaTables = {
  sca_factors: ScaFactorsTable;
  sca_security: ScaSecurityTable;
  sca_security_events: ScaSecurityEventsTable;
  sca_sessions: ScaSessionsTable;
  sca_challenges: ScaChallengesTable;
  sca_resets: ScaResetsTable;
  sca_trusted_beneficiaries: ScaTrustedTable;
};

export type FactorRow = Selectable<ScaFactorsTable>;
export type SecurityRow = Selectable<ScaSecurityTable>;
export type ChallengeRow = Selectable<ScaChallengesTable>;
export type ResetRow = Selectable<ScaResetsTable>;

type Db = Kysely<DB> | Transaction<DB>;
const s = (db: Db) => db.withTables<ScaTables>();

// ---- Factors ----------------------------------------------------------------------------

export async function listFactors(db: Db, platformId: string, customerId: string): Promise<FactorRow[]> {
  return s(db).selectFrom('sca_factors').selectAll().where('platform_id', '=', platformId).where('customer_id', '=', customerId).orderBy('id').execute();
}

export async function insertFactor(db: Db, row: FactorRow): Promise<void> {
  await s(db).insertInto('sca_factors').values(row).execute();
}

export async function updateFactor(db: Db, id: string, set: Partial<FactorRow>): Promise<void> {
  await s(db).updateTable('sca_factors').set(set).where('id', '=', id).execute();
}

export async function deleteFactors(db: Db, platformId: string, customerId: string, factor: string, status?: string): Promise<number> {
  let q = s(db).deleteFrom('sca_factors').where('platform_id', '=', platformId).where('customer_id', '=', customerId).where('factor', '=', factor);
  if (status !== undefined) q = q.where('status', '=', status);
  const r = await q.executeTakeFirst();
  return Number(r.numDeletedRows);
}

export async function deleteFactor(db: Db, id: string): Promise<void> {
  await s(db).deleteFrom('sca_factors').where('id', '=', id).execute();
}

// ---- Login security ---------------------------------------------------------------------

export async function findSecurity(db: Db, platformId: string, customerId: string): Promise<SecurityRow | undefined> {
  return s(db).selectFrom('sca_security').selectAll().where('platform_id', '=', platformId).where('customer_id', '=', customerId).executeTakeFirst();
}

export async function saveSecurity(db: Db, row: SecurityRow): Promise<void> {
  const { customer_id, ...rest } = row;
  await s(db)
    .insertInto('sca_security')
    .values(row)
    .onConflict((oc) => oc.column('customer_id').doUpdateSet(rest))
    .execute();
  void customer_id;
}

/** One more failed attempt, atomically (concurrent failures each count): the row after it. */
export async function incrementFailures(db: Db, platformId: string, customerId: string, at: string): Promise<SecurityRow> {
  await s(db)
    .insertInto('sca_security')
    .values({ customer_id: customerId, platform_id: platformId, failed_attempts: 0, locked_until_ms: null, suspended: 0, updated_at: at })
    .onConflict((oc) => oc.column('customer_id').doNothing())
    .execute();
  return s(db)
    .updateTable('sca_security')
    .set((eb) => ({ failed_attempts: eb('failed_attempts', '+', 1), updated_at: at }))
    .where('customer_id', '=', customerId)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function insertSecurityEvent(db: Db, row: Selectable<ScaSecurityEventsTable>): Promise<void> {
  await s(db).insertInto('sca_security_events').values(row).execute();
}

// ---- Sessions ---------------------------------------------------------------------------

export async function insertSession(db: Db, row: Selectable<ScaSessionsTable>): Promise<void> {
  await s(db).insertInto('sca_sessions').values(row).execute();
}

/** The latest-ending live session of a customer at `nowMs`, if any. */
export async function activeSession(db: Db, platformId: string, customerId: string, nowMs: number): Promise<Selectable<ScaSessionsTable> | undefined> {
  return s(db)
    .selectFrom('sca_sessions')
    .selectAll()
    .where('platform_id', '=', platformId)
    .where('customer_id', '=', customerId)
    .where('revoked', '=', 0)
    .where('expires_at_ms', '>', nowMs)
    .orderBy('expires_at_ms', 'desc')
    .executeTakeFirst();
}

export async function revokeSessions(db: Db, platformId: string, customerId: string): Promise<void> {
  await s(db).updateTable('sca_sessions').set({ revoked: 1 }).where('platform_id', '=', platformId).where('customer_id', '=', customerId).execute();
}

// ---- Challenges -------------------------------------------------------------------------

export async function insertChallenge(db: Db, row: ChallengeRow): Promise<void> {
  await s(db).insertInto('sca_challenges').values(row).execute();
}

export async function findChallenge(db: Db, platformId: string, id: string): Promise<ChallengeRow | undefined> {
  return s(db).selectFrom('sca_challenges').selectAll().where('platform_id', '=', platformId).where('id', '=', id).executeTakeFirst();
}

/** The pending challenge of a subject (quote, external account) or, with subject null, a customer's pending login. */
export async function pendingChallenge(db: Db, platformId: string, kinds: string[], by: { subjectId: string } | { customerId: string }): Promise<ChallengeRow | undefined> {
  let q = s(db).selectFrom('sca_challenges').selectAll().where('platform_id', '=', platformId).where('kind', 'in', kinds).where('status', '=', 'PENDING');
  q = 'subjectId' in by ? q.where('subject_id', '=', by.subjectId) : q.where('customer_id', '=', by.customerId);
  return q.orderBy('id', 'desc').executeTakeFirst();
}

/** Move a challenge on from PENDING; false when it was no longer pending. */
export async function settleChallenge(db: Db, id: string, status: 'SATISFIED' | 'EXPIRED' | 'CANCELLED'): Promise<boolean> {
  const r = await s(db).updateTable('sca_challenges').set({ status }).where('id', '=', id).where('status', '=', 'PENDING').executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export async function cancelPendingChallenges(db: Db, platformId: string, kinds: string[], by: { subjectId: string } | { customerId: string }): Promise<void> {
  let q = s(db).updateTable('sca_challenges').set({ status: 'CANCELLED' }).where('platform_id', '=', platformId).where('kind', 'in', kinds).where('status', '=', 'PENDING');
  q = 'subjectId' in by ? q.where('subject_id', '=', by.subjectId) : q.where('customer_id', '=', by.customerId);
  await q.execute();
}

export async function countSend(db: Db, id: string): Promise<void> {
  await s(db)
    .updateTable('sca_challenges')
    .set((eb) => ({ sends: eb('sends', '+', 1) }))
    .where('id', '=', id)
    .execute();
}

// ---- Resets -----------------------------------------------------------------------------

export async function insertReset(db: Db, row: ResetRow): Promise<void> {
  await s(db).insertInto('sca_resets').values(row).execute();
}

export async function findReset(db: Db, platformId: string, customerId: string, id: string): Promise<ResetRow | undefined> {
  return s(db).selectFrom('sca_resets').selectAll().where('platform_id', '=', platformId).where('customer_id', '=', customerId).where('id', '=', id).executeTakeFirst();
}

/** Start times (ms) of a customer's resets since `sinceMs`, oldest first. */
export async function resetsSince(db: Db, platformId: string, customerId: string, sinceMs: number): Promise<number[]> {
  const rows = await s(db)
    .selectFrom('sca_resets')
    .select('created_at_ms')
    .where('platform_id', '=', platformId)
    .where('customer_id', '=', customerId)
    .where('created_at_ms', '>', sinceMs)
    .orderBy('created_at_ms')
    .execute();
  return rows.map((r) => Number(r.created_at_ms));
}

export async function completeReset(db: Db, id: string, at: string): Promise<boolean> {
  const r = await s(db).updateTable('sca_resets').set({ completed_at: at }).where('id', '=', id).where('completed_at', 'is', null).executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

// ---- Trusted beneficiaries --------------------------------------------------------------

export async function isTrusted(db: Db, platformId: string, externalAccountId: string): Promise<boolean> {
  const row = await s(db)
    .selectFrom('sca_trusted_beneficiaries')
    .select('external_account_id')
    .where('platform_id', '=', platformId)
    .where('external_account_id', '=', externalAccountId)
    .executeTakeFirst();
  return row !== undefined;
}

export async function trust(db: Db, platformId: string, customerId: string, externalAccountId: string, at: string): Promise<void> {
  if (await isTrusted(db, platformId, externalAccountId)) return;
  await s(db).insertInto('sca_trusted_beneficiaries').values({ external_account_id: externalAccountId, platform_id: platformId, customer_id: customerId, trusted_at: at }).execute();
}

export async function untrust(db: Db, platformId: string, externalAccountId: string): Promise<void> {
  await s(db).deleteFrom('sca_trusted_beneficiaries').where('platform_id', '=', platformId).where('external_account_id', '=', externalAccountId).execute();
}
