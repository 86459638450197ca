import { type TimeRange, whereTimeRange } from '../../kernel/pagination.js';
import { type Kysely, type Selectable, sql, type Transaction } from 'kysely';
import type { CustomersTable, DB } from '../../kernel/db/schema.js';
import { prepared, preparedByPlatformAndId, preparedInsert } from '../../kernel/db/prepared.js';
import { TableCache } from '../../kernel/db/table-cache.js';

export type CustomerRow = Selectable<CustomersTable>;
type Db = Kysely<DB> | Transaction<DB>;

export async function insertCustomer(db: Db, row: CustomerRow): Promise<void> {
  await insertOne(db, row);
}

// The create path's insert, built and compiled once per shape of row (db/prepared.ts).
const insertOne = preparedInsert('customers');

/** Insert many customers, in statements of at most 200 rows. */
export async function insertCustomers(db: Db, rows: CustomerRow[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 200) await db.insertInto('customers').values(rows.slice(i, i + 200)).execute();
}

/** A customer of the platform (deleted ones too); another platform's id finds nothing. */
export async function findCustomer(db: Db, platformId: string, id: string): Promise<CustomerRow | undefined> {
  return customers.get(db, `${platformId}\u0000${id}`, async () => frozen(await customerById.first(db, { platformId, id })));
}

/**
 * Customers read on every lookup and quote, kept while the customers table does not change
 * (SQLite; db/table-cache.ts). Shared between requests, so frozen.
 */
const customers = new TableCache<string, CustomerRow | undefined>(['customers']);
const frozen = <T extends object>(row: T | undefined): T | undefined => (row ? Object.freeze(row) : row);

const customerById = preparedByPlatformAndId('customers').find;

export async function findCustomerForUpdate(db: Transaction<DB>, platformId: string, id: string, postgres: boolean): Promise<CustomerRow | undefined> {
  let q = db.selectFrom('customers').selectAll().where('platform_id', '=', platformId).where('id', '=', id);
  if (postgres) q = q.forUpdate();
  return q.executeTakeFirst();
}

export async function updateCustomer(db: Db, id: string, patch: Partial<Omit<CustomerRow, 'id' | 'platform_id' | 'created_at'>>): Promise<void> {
  await db.updateTable('customers').set(patch).where('id', '=', id).execute();
}

/**
 * Mark a live customer deleted, conditionally: only the write that flips `is_deleted` from 0
 * counts, so of racing deletes exactly one gets true (the others: already deleted).
 */
export async function markCustomerDeleted(db: Db, platformId: string, id: string, at: string): Promise<boolean> {
  const r = await db
    .updateTable('customers')
    .set({ is_deleted: 1, updated_at: at })
    .where('id', '=', id)
    .where('platform_id', '=', platformId)
    .where('is_deleted', '=', sql.lit(0))
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

export async function activePlatformCustomerIdTaken(db: Db, platformId: string, platformCustomerId: string, exceptId?: string): Promise<boolean> {
  const row = exceptId ? await livePcidExcept.first(db, { platformId, platformCustomerId, exceptId }) : await livePcid.first(db, { platformId, platformCustomerId });
  return row !== undefined;
}

type PcidParams = { platformId: string; platformCustomerId: string };
const livePcidQuery = (db: Kysely<DB>, p: (name: keyof PcidParams) => string) =>
  db
    .selectFrom('customers')
    .select('id')
    .where('platform_id', '=', p('platformId'))
    .where('platform_customer_id', '=', p('platformCustomerId'))
    .where('is_deleted', '=', sql.lit(0));
const livePcid = prepared<PcidParams, { id: string }>((db, p) => livePcidQuery(db, p));
const livePcidExcept = prepared<PcidParams & { exceptId: string }, { id: string }>((db, p) => livePcidQuery(db, p).where('id', '!=', p('exceptId')));

/** The live (not deleted) customer of the platform with this platformCustomerId, if any. */
export async function findLiveCustomerByPlatformCustomerId(db: Db, platformId: string, platformCustomerId: string): Promise<CustomerRow | undefined> {
  return db
    .selectFrom('customers')
    .selectAll()
    .where('platform_id', '=', platformId)
    .where('platform_customer_id', '=', platformCustomerId)
    .where('is_deleted', '=', sql.lit(0))
    .executeTakeFirst();
}

/** Of these platformCustomerIds, the ones a live customer of the platform has (one query). */
export async function takenPlatformCustomerIds(db: Db, platformId: string, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db.selectFrom('customers').select('platform_customer_id').where('platform_id', '=', platformId).where('platform_customer_id', 'in', ids).where('is_deleted', '=', sql.lit(0)).execute();
  return new Set(rows.map((r) => r.platform_customer_id));
}

/** Of these UMA addresses, the ones a customer (of any platform) has (one query). */
export async function takenUmaAddresses(db: Db, addresses: string[]): Promise<Set<string>> {
  if (addresses.length === 0) return new Set();
  const rows = await db.selectFrom('customers').select('uma_address').where('uma_address', 'in', addresses).execute();
  return new Set(rows.map((r) => r.uma_address));
}

export async function umaAddressTaken(db: Db, umaAddress: string, exceptId?: string): Promise<boolean> {
  const row = exceptId ? await umaTakenExcept.first(db, { umaAddress, exceptId }) : await umaTaken.first(db, { umaAddress });
  return row !== undefined;
}

const umaTaken = prepared<{ umaAddress: string }, { id: string }>((db, p) => db.selectFrom('customers').select('id').where('uma_address', '=', p('umaAddress')));
const umaTakenExcept = prepared<{ umaAddress: string; exceptId: string }, { id: string }>((db, p) =>
  db.selectFrom('customers').select('id').where('uma_address', '=', p('umaAddress')).where('id', '!=', p('exceptId')),
);

export async function findCustomerByUmaAddress(db: Db, umaAddress: string): Promise<CustomerRow | undefined> {
  return db.selectFrom('customers').selectAll().where('uma_address', '=', umaAddress).where('is_deleted', '=', sql.lit(0)).executeTakeFirst();
}

export interface CustomerFilter extends TimeRange {
  platformCustomerId?: string | undefined;
  customerType?: string | undefined;
  region?: string | undefined;
  currency?: string | undefined;
  umaAddress?: string | undefined;
  isIncludingDeleted?: boolean | undefined;
}

export function customerQuery(db: Kysely<DB>, platformId: string, f: CustomerFilter) {
  let q = db.selectFrom('customers').where('platform_id', '=', platformId);
  if (!f.isIncludingDeleted) q = q.where('is_deleted', '=', sql.lit(0));
  if (f.platformCustomerId !== undefined) q = q.where('platform_customer_id', '=', f.platformCustomerId);
  if (f.customerType !== undefined) q = q.where('customer_type', '=', f.customerType);
  if (f.region !== undefined) q = q.where('region', '=', f.region);
  // currencies is a JSON array of codes: match the quoted code.
  if (f.currency !== undefined) q = q.where('currencies', 'like', `%"${f.currency.replace(/[^A-Za-z0-9]/g, '')}"%`);
  if (f.umaAddress !== undefined) q = q.where('uma_address', '=', f.umaAddress);
  return whereTimeRange(q, f);
}
