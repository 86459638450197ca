import { type Kysely, type Selectable, sql, type Transaction } from 'kysely';
import type { DB, InternalAccountsTable } from '../../kernel/db/schema.js';
import { preparedByPlatformAndId } from '../../kernel/db/prepared.js';
import { TableCache } from '../../kernel/db/table-cache.js';

export type InternalAccountRow = Selectable<InternalAccountsTable>;
type Db = Kysely<DB> | Transaction<DB>;

export const HOLDING_TYPES = ['INTERNAL_FIAT', 'INTERNAL_CRYPTO'] as const;

/**
 * Insert accounts; one that the unique (owner, currency) index already holds is skipped.
 * Returns the rows actually inserted (a concurrent opener may have won some).
 */
export async function insertAccounts(db: Db, rows: InternalAccountRow[]): Promise<Array<{ id: string; currency: string }>> {
  if (rows.length === 0) return [];
  return db
    .insertInto('internal_accounts')
    .values(rows)
    .onConflict((oc) => oc.doNothing())
    .returning(['id', 'currency'])
    .execute();
}

/** The holding accounts of a customer, or of the platform itself (customerId null). */
export async function holdingAccountsOf(db: Db, platformId: string, customerId: string | null): Promise<InternalAccountRow[]> {
  let q = db.selectFrom('internal_accounts').selectAll().where('platform_id', '=', platformId).where('type', 'in', [...HOLDING_TYPES]);
  q = customerId === null ? q.where('customer_id', 'is', null) : q.where('customer_id', '=', customerId);
  return q.orderBy('id').execute();
}

export async function findAccount(db: Db, platformId: string, id: string): Promise<InternalAccountRow | undefined> {
  return accounts.get(db as Kysely<DB>, `${platformId}\u0000${id}`, async () => frozen(await accountById.first(db, { platformId, id })));
}

/**
 * Accounts read by every payment (its source, then its balance event) and settlement, kept
 * while the internal_accounts table does not change (SQLite: across requests; PostgreSQL:
 * within one transaction; db/table-cache.ts). Shared, so frozen.
 */
const accounts = new TableCache<string, InternalAccountRow | undefined>(['internal_accounts']);
const frozen = <T extends object>(row: T | undefined): T | undefined => (row ? Object.freeze(row) : row);

/** Read on every quote and ledger entry: built and compiled once (kernel/db/prepared.ts). */
const accountById = preparedByPlatformAndId('internal_accounts').find;

export async function findAccountByFundingReference(db: Db, reference: string): Promise<InternalAccountRow | undefined> {
  return db.selectFrom('internal_accounts').selectAll().where('funding_reference', '=', reference).executeTakeFirst();
}

export interface AccountFilter {
  customerId?: string | undefined;
  currency?: string | undefined;
  type?: string | undefined;
}

/** Customers' accounts of a platform (paginate over it). */
export function customerAccountQuery(db: Kysely<DB>, platformId: string, f: AccountFilter) {
  let q = db.selectFrom('internal_accounts').where('platform_id', '=', platformId).where('customer_id', 'is not', null);
  if (f.customerId !== undefined) q = q.where('customer_id', '=', f.customerId);
  if (f.currency !== undefined) q = q.where('currency', '=', f.currency);
  if (f.type !== undefined) q = q.where('type', '=', f.type);
  return q;
}

/** The platform's own accounts, oldest first (the order of its supported currencies). */
export async function platformAccounts(db: Db, platformId: string, f: Omit<AccountFilter, 'customerId'>): Promise<InternalAccountRow[]> {
  let q = db.selectFrom('internal_accounts').selectAll().where('platform_id', '=', platformId).where('customer_id', 'is', null);
  if (f.currency !== undefined) q = q.where('currency', '=', f.currency);
  if (f.type !== undefined) q = q.where('type', '=', f.type);
  return q.orderBy('id', 'asc').execute();
}

/**
 * Owners that have no holding account at all: platforms and customers that predate the
 * accounts (migration 0003). One query; empty in the steady state. Only customers not yet
 * checked are read (`accounts_unchecked`, a partial index of just those: issue 15, start-up
 * no longer reads every customer), and each `not exists` is one probe of a unique index that
 * starts with the columns it names (`internal_accounts_customer_currency`: platform_id,
 * customer_id, …).
 */
export async function ownersWithoutAccounts(db: Db): Promise<Array<{ platform_id: string; customer_id: string | null }>> {
  const rows = await sql.raw<{ platform_id: string; customer_id: string | null }>(OWNERS_WITHOUT_ACCOUNTS_SQL).execute(db);
  return rows.rows;
}

/**
 * Every customer unchecked before `ownersWithoutAccounts` read them is checked now: those that
 * needed accounts got them, the others get them when they may (end-user terms on file).
 */
export async function markAccountsChecked(db: Db): Promise<void> {
  await db.updateTable('customers').set({ accounts_unchecked: 0 }).where('accounts_unchecked', '=', sql.lit(1)).execute();
}

/** The query of ownersWithoutAccounts (exported so a test can check its plan). */
export const OWNERS_WITHOUT_ACCOUNTS_SQL = `
    select p.id as platform_id, null as customer_id from platforms p
      where not exists (select 1 from internal_accounts a where a.platform_id = p.id and a.customer_id is null)
    union all
    select c.platform_id as platform_id, c.id as customer_id from customers c
      where c.accounts_unchecked = 1 and c.is_deleted = 0 and not exists (select 1 from internal_accounts a where a.platform_id = c.platform_id and a.customer_id = c.id)
        and (c.end_user_terms_consent is not null or exists (select 1 from platforms rp where rp.id = c.platform_id and rp.regulated = 1))`;
