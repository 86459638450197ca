import type { Insertable, Kysely, Selectable, Transaction, Updateable } from 'kysely';
import type { DB } from '../../kernel/db/schema.js';
import { prepared } from '../../kernel/db/prepared.js';
import type { DelegatedKeysTable, EmbeddedWalletsTable, WalletCredentialsTable, WalletRequestsTable, WalletSessionsTable } from '../../kernel/db/wallet-tables.js';

type Db = Kysely<DB> | Transaction<DB>;
export type WalletRow = Selectable<EmbeddedWalletsTable>;
export type CredentialRow = Selectable<WalletCredentialsTable>;
export type SessionRow = Selectable<WalletSessionsTable>;
export type RequestRow = Selectable<WalletRequestsTable>;
export type DelegatedKeyRow = Selectable<DelegatedKeysTable>;

// ---- Wallets ----------------------------------------------------------------------------------

export async function insertWallet(db: Db, row: Insertable<EmbeddedWalletsTable>): Promise<void> {
  await db.insertInto('embedded_wallets').values(row).execute();
}

// Every payment from an internal account asks whether it is an embedded wallet: prepared (kernel/db/prepared.ts).
const walletOf = prepared<{ platformId: string; accountId: string }, WalletRow>((db, p) =>
  db.selectFrom('embedded_wallets').selectAll().where('platform_id', '=', p('platformId')).where('account_id', '=', p('accountId')),
);

export async function findWallet(db: Db, platformId: string, accountId: string): Promise<WalletRow | undefined> {
  return walletOf.first(db, { platformId, accountId });
}

/** The customer's embedded-wallet internal accounts (one, normally). */
export async function walletAccountsOf(db: Db, platformId: string, customerId: string) {
  return db.selectFrom('internal_accounts').selectAll().where('platform_id', '=', platformId).where('customer_id', '=', customerId).where('type', '=', 'EMBEDDED_WALLET').execute();
}

export async function setPrivacy(db: Db, platformId: string, accountId: string, enabled: boolean, at: string): Promise<void> {
  await db.updateTable('internal_accounts').set({ private_enabled: enabled ? 1 : 0, updated_at: at }).where('platform_id', '=', platformId).where('id', '=', accountId).execute();
}

// ---- Credentials ------------------------------------------------------------------------------

export async function insertCredential(db: Db, row: Insertable<WalletCredentialsTable>): Promise<void> {
  await db.insertInto('wallet_credentials').values(row).execute();
}

export async function findCredential(db: Db, platformId: string, id: string): Promise<CredentialRow | undefined> {
  return db.selectFrom('wallet_credentials').selectAll().where('platform_id', '=', platformId).where('id', '=', id).where('status', '=', 'ACTIVE').executeTakeFirst();
}

export async function activeCredentials(db: Db, platformId: string, accountId: string): Promise<CredentialRow[]> {
  return db.selectFrom('wallet_credentials').selectAll().where('platform_id', '=', platformId).where('account_id', '=', accountId).where('status', '=', 'ACTIVE').orderBy('id').execute();
}

export async function updateCredential(db: Db, platformId: string, id: string, patch: Updateable<WalletCredentialsTable>): Promise<void> {
  await db.updateTable('wallet_credentials').set(patch).where('platform_id', '=', platformId).where('id', '=', id).execute();
}

// ---- Sessions ---------------------------------------------------------------------------------

export async function insertSession(db: Db, row: Insertable<WalletSessionsTable>): Promise<void> {
  await db.insertInto('wallet_sessions').values(row).execute();
}

/** A session that is ACTIVE and not expired at nowMs. */
export async function findActiveSession(db: Db, platformId: string, id: string, nowMs: number): Promise<SessionRow | undefined> {
  return db
    .selectFrom('wallet_sessions')
    .selectAll()
    .where('platform_id', '=', platformId)
    .where('id', '=', id)
    .where('status', '=', 'ACTIVE')
    .where('expires_at_ms', '>', nowMs)
    .executeTakeFirst();
}

export async function activeSessions(db: Db, platformId: string, accountId: string, nowMs: number): Promise<SessionRow[]> {
  return db
    .selectFrom('wallet_sessions')
    .selectAll()
    .where('platform_id', '=', platformId)
    .where('account_id', '=', accountId)
    .where('status', '=', 'ACTIVE')
    .where('expires_at_ms', '>', nowMs)
    .orderBy('id')
    .execute();
}

export async function revokeSessions(db: Db, platformId: string, where: { id?: string; credentialId?: string }, at: string): Promise<void> {
  let q = db.updateTable('wallet_sessions').set({ status: 'REVOKED', updated_at: at }).where('platform_id', '=', platformId).where('status', '=', 'ACTIVE');
  if (where.id !== undefined) q = q.where('id', '=', where.id);
  if (where.credentialId !== undefined) q = q.where('credential_id', '=', where.credentialId);
  await q.execute();
}

// ---- Pending signed requests ------------------------------------------------------------------

export async function insertRequest(db: Db, row: Insertable<WalletRequestsTable>): Promise<void> {
  await db.insertInto('wallet_requests').values(row).execute();
}

export async function findRequest(db: Db, platformId: string, id: string): Promise<RequestRow | undefined> {
  return db.selectFrom('wallet_requests').selectAll().where('platform_id', '=', platformId).where('id', '=', id).executeTakeFirst();
}

export async function pendingRequestFor(db: Db, platformId: string, targetId: string, kind: string, nowMs: number): Promise<RequestRow | undefined> {
  return db
    .selectFrom('wallet_requests')
    .selectAll()
    .where('platform_id', '=', platformId)
    .where('target_id', '=', targetId)
    .where('kind', '=', kind)
    .where('status', '=', 'PENDING')
    .where('expires_at_ms', '>', nowMs)
    .executeTakeFirst();
}

/** Consume a pending request once: false when another retry used it first. */
export async function useRequest(db: Db, platformId: string, id: string): Promise<boolean> {
  const r = await db.updateTable('wallet_requests').set({ status: 'USED' }).where('platform_id', '=', platformId).where('id', '=', id).where('status', '=', 'PENDING').executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

// ---- Delegated keys ---------------------------------------------------------------------------

export async function insertDelegatedKey(db: Db, row: Insertable<DelegatedKeysTable>): Promise<void> {
  await db.insertInto('delegated_keys').values(row).execute();
}

export async function findDelegatedKey(db: Db, platformId: string, id: string): Promise<DelegatedKeyRow | undefined> {
  return db.selectFrom('delegated_keys').selectAll().where('platform_id', '=', platformId).where('id', '=', id).executeTakeFirst();
}

export async function listDelegatedKeys(db: Db, platformId: string, f: { accountId?: string | undefined; fundingSourceId?: string | undefined }): Promise<DelegatedKeyRow[]> {
  let q = db.selectFrom('delegated_keys').selectAll().where('platform_id', '=', platformId);
  if (f.accountId !== undefined) q = q.where('account_id', '=', f.accountId);
  if (f.fundingSourceId !== undefined) q = q.where('funding_source_id', '=', f.fundingSourceId);
  return q.orderBy('id').execute();
}

export async function activeDelegatedKeyFor(db: Db, platformId: string, fundingSourceId: string): Promise<DelegatedKeyRow | undefined> {
  return db
    .selectFrom('delegated_keys')
    .selectAll()
    .where('platform_id', '=', platformId)
    .where('funding_source_id', '=', fundingSourceId)
    .where('status', '=', 'ACTIVE')
    .executeTakeFirst();
}

export async function setDelegatedKeyStatus(db: Db, platformId: string, id: string, from: string, to: string, at: string): Promise<boolean> {
  const r = await db.updateTable('delegated_keys').set({ status: to, updated_at: at }).where('platform_id', '=', platformId).where('id', '=', id).where('status', '=', from).executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

// ---- Settings ---------------------------------------------------------------------------------

export async function findAllowedOrigins(db: Db, platformId: string): Promise<string[] | undefined> {
  const row = await db.selectFrom('wallet_settings').select('allowed_origins').where('platform_id', '=', platformId).executeTakeFirst();
  return row ? (JSON.parse(row.allowed_origins) as string[]) : undefined;
}

export async function saveAllowedOrigins(db: Db, platformId: string, origins: string[], at: string): Promise<void> {
  await db
    .insertInto('wallet_settings')
    .values({ platform_id: platformId, allowed_origins: JSON.stringify(origins), updated_at: at })
    .onConflict((oc) => oc.column('platform_id').doUpdateSet({ allowed_origins: JSON.stringify(origins), updated_at: at }))
    .execute();
}
