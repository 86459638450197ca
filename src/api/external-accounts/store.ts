import { type Kysely, type Selectable, sql, type Transaction } from 'kysely';
import type { DB, ExternalAccountsTable } from '../../kernel/db/schema.js';
import { prepared } from '../../kernel/db/prepared.js';
import { TableCache } from '../../kernel/db/table-cache.js';

// SQL of external accounts. Every query filters on platform_id; deleted accounts are
// never found (a deleted account answers 404 like an unknown one).

export type ExternalAccountRow = Selectable<ExternalAccountsTable>;
type Db = Kysely<DB> | Transaction<DB>;

/** Whose accounts: a customer's (customer_id set) or the platform's own (customer_id NULL); 'any' for both. */
export type AccountOwner = 'customer' | 'platform' | 'any';

export async function insertExternalAccount(db: Db, row: ExternalAccountRow): Promise<void> {
  await db.insertInto('external_accounts').values(row).execute();
}

/** A live external account of the platform, of the given owner kind ('any' by default). */
export async function findExternalAccount(db: Db, platformId: string, id: string, owner: AccountOwner = 'any'): Promise<ExternalAccountRow | undefined> {
  return accounts.get(db, `${owner}\u0000${platformId}\u0000${id}`, async () => {
    const row = await accountById[owner].first(db, { platformId, id });
    return row ? Object.freeze(row) : row;
  });
}

/**
 * Accounts read on every lookup and quote, kept while the external_accounts table does not
 * change (SQLite; db/table-cache.ts). Shared between requests, so frozen.
 */
const accounts = new TableCache<string, ExternalAccountRow | undefined>(['external_accounts']);

// Read on every lookup and quote: built and compiled once (kernel/db/prepared.ts).
const accountBy = (owner: AccountOwner) =>
  prepared<{ platformId: string; id: string }, ExternalAccountRow>((db, p) => {
    let q = db.selectFrom('external_accounts').selectAll().where('platform_id', '=', p('platformId')).where('id', '=', p('id')).where('is_deleted', '=', sql.lit(0));
    if (owner === 'customer') q = q.where('customer_id', 'is not', null);
    if (owner === 'platform') q = q.where('customer_id', 'is', null);
    return q;
  });
const accountById: Record<AccountOwner, ReturnType<typeof accountBy>> = { any: accountBy('any'), customer: accountBy('customer'), platform: accountBy('platform') };

/** An account's `account_info` by id, deleted or not (a payment to it settles even after it was deleted). */
export async function findAccountInfoEvenDeleted(db: Db, id: string): Promise<{ account_info: string } | undefined> {
  return accountInfoById.first(db, { id });
}

/** findAccountInfoEvenDeleted for many accounts, in one statement: by id (absent when unknown). */
export async function findAccountInfosEvenDeleted(db: Db, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db.selectFrom('external_accounts').select(['id', 'account_info']).where('id', 'in', [...new Set(ids)]).execute();
  return new Map(rows.map((r) => [r.id, r.account_info]));
}

const accountInfoById = prepared<{ id: string }, { account_info: string }>((db, p) => db.selectFrom('external_accounts').select('account_info').where('id', '=', p('id')));

/** The account holding a liveness challenge token (any platform: the token is the credential). */
export async function findExternalAccountByChallengeToken(db: Db, token: string): Promise<ExternalAccountRow | undefined> {
  return db.selectFrom('external_accounts').selectAll().where('challenge_token', '=', token).where('is_deleted', '=', sql.lit(0)).executeTakeFirst();
}

export async function identifierKeyTaken(db: Db, platformId: string, identifierKey: string): Promise<boolean> {
  const row = await db
    .selectFrom('external_accounts')
    .select('id')
    .where('platform_id', '=', platformId)
    .where('identifier_key', '=', identifierKey)
    .where('is_deleted', '=', sql.lit(0))
    .executeTakeFirst();
  return row !== undefined;
}

export type ExternalAccountPatch = Partial<Omit<ExternalAccountRow, 'id' | 'platform_id' | 'customer_id' | 'created_at'>>;

export async function updateExternalAccount(db: Db, platformId: string, id: string, patch: ExternalAccountPatch): Promise<void> {
  await db.updateTable('external_accounts').set(patch).where('platform_id', '=', platformId).where('id', '=', id).execute();
}

/**
 * Compare-and-set: apply `patch` only while the account still has `status` and the
 * outstanding challenge `nonce` (so a challenge completes once). True when it applied.
 */
export async function updateExternalAccountIfChallenge(
  db: Db,
  platformId: string,
  id: string,
  expected: { status: string; nonce: string },
  patch: ExternalAccountPatch,
): Promise<boolean> {
  const res = await db
    .updateTable('external_accounts')
    .set(patch)
    .where('platform_id', '=', platformId)
    .where('id', '=', id)
    .where('is_deleted', '=', sql.lit(0))
    .where('status', '=', expected.status)
    .where('challenge_nonce', '=', expected.nonce)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Clear the default-UMA-deposit flag of a customer's other accounts. */
export async function clearDefaultUmaDeposit(db: Db, platformId: string, customerId: string, exceptId: string): Promise<void> {
  await db
    .updateTable('external_accounts')
    .set({ default_uma_deposit_account: 0 })
    .where('platform_id', '=', platformId)
    .where('customer_id', '=', customerId)
    .where('id', '!=', exceptId)
    .where('default_uma_deposit_account', '=', 1)
    .execute();
}

/**
 * The customer's live default UMA deposit account (at most one per customer: migration
 * 0016's partial unique index), when it is in `currency`.
 */
export async function findDefaultUmaDepositAccount(db: Db, platformId: string, customerId: string, currency: string): Promise<ExternalAccountRow | undefined> {
  return db
    .selectFrom('external_accounts')
    .selectAll()
    .where('platform_id', '=', platformId)
    .where('customer_id', '=', customerId)
    .where('default_uma_deposit_account', '=', 1)
    .where('is_deleted', '=', sql.lit(0))
    .where('currency', '=', currency)
    .executeTakeFirst();
}

/** Soft delete; true when a live account was deleted. */
export async function softDeleteExternalAccount(db: Db, platformId: string, id: string, owner: AccountOwner, at: string): Promise<boolean> {
  let q = db
    .updateTable('external_accounts')
    .set({ is_deleted: 1, default_uma_deposit_account: 0, challenge_token: null, updated_at: at })
    .where('platform_id', '=', platformId)
    .where('id', '=', id)
    .where('is_deleted', '=', sql.lit(0));
  if (owner === 'customer') q = q.where('customer_id', 'is not', null);
  if (owner === 'platform') q = q.where('customer_id', 'is', null);
  const res = await q.executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

export interface ExternalAccountFilter {
  owner: Exclude<AccountOwner, 'any'>;
  customerId?: string | undefined;
  currency?: string | undefined;
}

/** The live accounts matching a filter, as a base query for pagination (no select). */
export function externalAccountQuery(db: Kysely<DB>, platformId: string, f: ExternalAccountFilter) {
  let q = db.selectFrom('external_accounts').where('platform_id', '=', platformId).where('is_deleted', '=', sql.lit(0));
  q = f.owner === 'customer' ? q.where('customer_id', 'is not', null) : q.where('customer_id', 'is', null);
  if (f.customerId !== undefined) q = q.where('customer_id', '=', f.customerId);
  if (f.currency !== undefined) q = q.where('currency', '=', f.currency);
  return q;
}
