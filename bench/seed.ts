// `npm run bench -- --seed N` (bench/README.md): fills a platform of the bench's database with
// N customers and N transactions directly in SQL, outside the API, before the measured
// start, so start-up and the lists are measured on a database of that size.
//
// The rows are made by the database itself in one statement per table inside one
// transaction (`insert … select` from a recursive CTE on SQLite, from generate_series on
// PostgreSQL): no row crosses from JavaScript, so a million of each take seconds, not
// minutes. The store is opened through the project's own code (kernel/db/connect.ts) and
// migrated (kernel/db/migrations.ts; a no-op on the bench's database, which the first start
// migrated), so the columns are the ones the server reads.
//
// What a seeded row is (valid for the app: every NOT NULL column set, every JSON column
// parseable, the shapes the views and the response schemas expect):
// - customers: INDIVIDUAL, APPROVED, currencies ["USD"], fields {"fullName":"Seed Customer <i>"},
//   platformCustomerId `seed_<i>`, a unique UMA address on the platform's UMA domain, no
//   end-user terms on file (so the platform, unregulated, owes them no internal accounts:
//   the start-up backfill opens none, as for any such customer), not deleted.
// - transactions: one per seeded customer, OUTGOING / DEBIT / COMPLETED, USD 10.00 to 99.99
//   from an account to an account on ACH, settled when created, flow TRANSFER_OUT, no quote.
//   Their accounts are ids of no row (the seeded customers hold none): the lists, GET
//   /transactions/{id} and the filters on them do not read accounts.
// - ids are UUID v7 (`Customer:…`, `Transaction:…`) whose time is the row's created_at, so
//   the id order is the creation order, as for rows the service writes. Row i (0 = oldest)
//   is created at `end - (N-1-i) × step`: spread over the 30 days before the UTC day the
//   seed runs (step ≥ 1 ms), all before any fixture the bench creates afterwards, and none
//   on the current UTC day (the daily-volume limit reads today's volume only).
//
// Kept counts: the list counts (migration 0020_list_counts) and, for the OUTGOING
// transactions, the daily volumes (0009 on SQLite, 0020_pg_daily_volumes on PostgreSQL) are
// kept by triggers. On SQLite the triggers stay on (a row's trigger costs about a
// microsecond): the counts are exact by construction. On PostgreSQL those triggers are
// deferred to the commit, and 300,000 of them took about 290 s there (100,000 rows of each
// table), so inside the seed's transaction they are disabled (ALTER TABLE … DISABLE TRIGGER,
// by name: any other trigger still fires), and the platform's list_counts and
// transaction_volumes rows are recomputed from its rows, as the migrations that created
// them initialise them, before the triggers are enabled again and the transaction commits.
// Either way the seed checks the kept counts against count(*) after its commit
// (`countsExact`). PostgreSQL then gets ANALYZE of the two tables, as autovacuum would
// give them soon after a bulk load (without statistics its planner may scan a million rows
// for a page of 20); the service never runs ANALYZE on SQLite, so a seeded SQLite file has
// no statistics, as one grown through the API.

import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import { type RawBuilder, sql, type Transaction } from 'kysely';
import { openStore, parseDatabaseUrl, type Store } from '../src/kernel/db/connect.js';
import type { DB } from '../src/kernel/db/schema.js';
import { migrate, VOLUME_STATUSES_NOT_COUNTED } from '../src/kernel/db/migrations.js';

export interface SeedResult {
  platformId: string;
  /** Rows inserted. */
  customers: number;
  transactions: number;
  /** Wall time of the whole seed (open, insert, commit, checks), and of each table's insert. */
  seedMs: number;
  customersMs: number;
  transactionsMs: number;
  /** PostgreSQL: recomputing the platform's kept counts and daily volumes (their triggers are off during the seed); 0 on SQLite. */
  recountMs: number;
  /** The platform's rows after the seed: count(*) and the kept count (list_counts) of each list. */
  counts: {
    customers: { rows: number; kept: number; liveRows: number; keptLive: number };
    transactions: { rows: number; kept: number };
  };
  /** Days of the platform's daily volumes (transaction_volumes) that differ from the sum of its counted transactions. */
  volumeMismatches: number;
  /** Every kept count equals its count(*), and every daily volume its sum. */
  countsExact: boolean;
  /** Size of the database after the seed (SQLite: the file and its WAL; PostgreSQL: the database, or the schema's relations). */
  databaseBytes: number | null;
}

/** Milliseconds spread over: the 30 days before the seed's UTC day. */
const SPAN_MS = 30 * 86_400_000;

/** The SQL that makes row i's UUID v7 (its time `ms`), per store. `salt`: 6 hex digits of this seed. */
function uuidSql(kind: Store['kind'], ms: string, i: string, salt: string): string {
  if (kind === 'sqlite') {
    const h = `printf('%012x', ${ms})`;
    return `substr(${h}, 1, 8) || '-' || substr(${h}, 9, 4) || '-7' || printf('%03x', ${i} & 4095) || '-' || printf('%x', 8 + ((${i} >> 12) & 3)) || printf('%03x', (${i} >> 14) & 4095) || '-${salt}' || printf('%06x', ${i} & 16777215)`;
  }
  const h = `lpad(to_hex(${ms}), 12, '0')`;
  return `substr(${h}, 1, 8) || '-' || substr(${h}, 9, 4) || '-7' || lpad(to_hex(${i} & 4095), 3, '0') || '-' || to_hex(8 + ((${i} >> 12) & 3)) || lpad(to_hex((${i} >> 14) & 4095), 3, '0') || '-${salt}' || lpad(to_hex(${i} & 16777215), 6, '0')`;
}

/** ISO 8601 UTC with milliseconds (as Date#toISOString) of epoch milliseconds `ms`, per store. */
function isoSql(kind: Store['kind'], ms: string): string {
  return kind === 'sqlite'
    ? `strftime('%Y-%m-%dT%H:%M:%fZ', ${ms} / 1000.0, 'unixepoch')`
    : `to_char(to_timestamp(${ms} / 1000.0) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}

/**
 * `insert … select` of n rows: `cols` are SQL expressions over `i` (0 = oldest row), `ms`
 * (its creation time, epoch ms), `id` (its UUID) and `cid` (the UUID of seeded customer i).
 */
function insertSql(kind: Store['kind'], table: string, cols: Record<string, string>, n: number, endMs: number, stepMs: number, salts: { own: string; customer: string }): string {
  const rows =
    kind === 'sqlite'
      ? `with recursive s(i) as (select 0 union all select i + 1 from s where i + 1 < ${n}),
           r as (select i, ${endMs} - (${n - 1} - i) * ${stepMs} as ms from s)`
      : `with r as (select i::bigint as i, (${endMs}::bigint - (${n - 1} - i) * ${stepMs}::bigint) as ms from generate_series(0, ${n - 1}) as g(i))`;
  const inner = `select i, ms, ${uuidSql(kind, 'ms', 'i', salts.own)} as id, ${uuidSql(kind, 'ms', 'i', salts.customer)} as cid from r`;
  const names = Object.keys(cols);
  return `${kind === 'sqlite' ? rows : ''} insert into ${table} (${names.join(', ')})
    ${kind === 'sqlite' ? '' : rows} select ${names.map((c) => cols[c]).join(', ')} from (${inner}) x`;
}

const q = (s: string) => `'${s.replace(/'/g, "''")}'`;

/**
 * Seed `count` customers and `count` transactions (one per customer) for `platformId` in the
 * database of `databaseUrl` (the server must not be running on it: one big write). Returns
 * the times, the counts after it and the database's size.
 */
export async function seedDatabase(databaseUrl: string, platformId: string, count: number, now = Date.now()): Promise<SeedResult> {
  if (!Number.isInteger(count) || count < 1) throw new Error(`seed: count must be a positive integer, got ${count}`);
  const t0 = performance.now();
  const store = await openStore(parseDatabaseUrl(databaseUrl), { poolSize: 1 });
  try {
    await migrate(store);
    const kind = store.kind;
    const db = store.db;
    const config = await db.selectFrom('platform_configs').select('uma_domain').where('platform_id', '=', platformId).executeTakeFirst();
    if (!config) throw new Error(`seed: no platform ${platformId} (with its configuration) in the database`);
    // Spread over the 30 days before today's UTC day, one millisecond apart at least.
    const endMs = Math.floor(now / 86_400_000) * 86_400_000 - 1_000;
    const stepMs = Math.max(1, Math.floor(SPAN_MS / count));
    const salts = { customer: randomBytes(3).toString('hex'), transaction: randomBytes(3).toString('hex') };
    const iText = kind === 'sqlite' ? `printf('%07d', i)` : `lpad(i::text, 7, '0')`;
    const at = isoSql(kind, 'ms');
    const pid = q(platformId);
    const customersSql = insertSql(
      kind,
      'customers',
      {
        id: `'Customer:' || id`,
        platform_id: pid,
        customer_type: `'INDIVIDUAL'`,
        platform_customer_id: `'seed_' || ${iText}`,
        uma_address: `'$seed.c' || ${iText} || '.${salts.customer}@' || ${q(config.uma_domain)}`,
        region: 'null',
        email: 'null',
        phone_number: 'null',
        currencies: `'["USD"]'`,
        status: `'APPROVED'`,
        fields: `'{"fullName":"Seed Customer ' || ${iText} || '"}'`,
        end_user_terms_consent: 'null',
        contact_verification: 'null',
        is_deleted: '0',
        // As the service writes a customer: its accounts were seen to when it was created.
        accounts_unchecked: '0',
        created_at: at,
        updated_at: at,
      },
      count,
      endMs,
      stepMs,
      { own: salts.customer, customer: salts.customer },
    );
    const amount = `(1000 + (i * 7919) % 9000)`;
    const transactionsSql = insertSql(
      kind,
      'transactions',
      {
        id: `'Transaction:' || id`,
        platform_id: pid,
        customer_id: `'Customer:' || cid`,
        platform_customer_id: `'seed_' || ${iText}`,
        type: `'OUTGOING'`,
        direction: `'DEBIT'`,
        status: `'COMPLETED'`,
        quote_id: 'null',
        source: `'{"sourceType":"ACCOUNT","accountId":"InternalAccount:' || cid || '","currency":"USD"}'`,
        source_account_id: `'InternalAccount:' || cid`,
        destination: `'{"destinationType":"ACCOUNT","accountId":"ExternalAccount:' || cid || '","currency":"USD"}'`,
        destination_account_id: `'ExternalAccount:' || cid`,
        sent_amount: amount,
        sent_currency: `'USD'`,
        received_amount: amount,
        received_currency: `'USD'`,
        fees: '0',
        platform_fees: '0',
        payment_rail: `'ACH'`,
        settled_at: at,
        created_at: at,
        updated_at: at,
        reconciliation: `'{"reference":"SEED-' || ${iText} || '"}'`,
        flow: `'TRANSFER_OUT'`,
      },
      count,
      endMs,
      stepMs,
      { own: salts.transaction, customer: salts.customer },
    );

    let customersMs = 0;
    let transactionsMs = 0;
    if (kind === 'sqlite') {
      // A larger page cache for the big insert (this connection only), then one transaction.
      await sql.raw('pragma cache_size = -262144').execute(db);
    }
    let recountMs = 0;
    await db.transaction().execute(async (trx) => {
      if (kind === 'postgres') for (const [table, trigger] of PG_KEEPING_TRIGGERS) await sql.raw(`alter table ${table} disable trigger ${trigger}`).execute(trx);
      const c0 = performance.now();
      await sql.raw(customersSql).execute(trx);
      customersMs = performance.now() - c0;
      const t1 = performance.now();
      await sql.raw(transactionsSql).execute(trx);
      transactionsMs = performance.now() - t1;
      if (kind === 'postgres') {
        const r0 = performance.now();
        await recount(trx, platformId);
        for (const [table, trigger] of PG_KEEPING_TRIGGERS) await sql.raw(`alter table ${table} enable trigger ${trigger}`).execute(trx);
        recountMs = performance.now() - r0;
      }
    });
    if (kind === 'sqlite') await sql.raw('pragma wal_checkpoint(truncate)').execute(db);
    else await sql.raw('analyze customers, transactions, list_counts, transaction_volumes').execute(db);
    const counts = await countsOf(store, platformId);
    const volumeMismatches = await volumeMismatchesOf(store, platformId);
    const countsExact =
      counts.customers.rows === counts.customers.kept && counts.customers.liveRows === counts.customers.keptLive && counts.transactions.rows === counts.transactions.kept && volumeMismatches === 0;
    const databaseBytes = await sizeOf(store);
    return {
      platformId,
      customers: count,
      transactions: count,
      seedMs: Math.round(performance.now() - t0),
      customersMs: Math.round(customersMs),
      transactionsMs: Math.round(transactionsMs),
      recountMs: Math.round(recountMs),
      counts,
      volumeMismatches,
      countsExact,
      databaseBytes,
    };
  } finally {
    await store.close();
  }
}

/** PostgreSQL: the triggers that keep list_counts and transaction_volumes (migrations 0020_list_counts, 0020_pg_daily_volumes), off during the seed. */
const PG_KEEPING_TRIGGERS = [
  ['customers', 'list_counts_customers'],
  ['transactions', 'list_counts_transactions'],
  ['transactions', 'transaction_volumes_keep'],
] as const;

/**
 * PostgreSQL, inside the seed's transaction: the platform's kept list counts and daily
 * volumes recomputed from its rows, as migrations 0020_list_counts and 0020_pg_daily_volumes
 * initialise them (one stripe per count; the triggers add to any stripe later).
 */
async function recount(db: Transaction<DB>, platformId: string): Promise<void> {
  await sql`delete from list_counts where platform_id = ${platformId} and list in ('customers', 'transactions')`.execute(db);
  await sql`insert into list_counts (platform_id, list, scope, stripe, n) select ${platformId}, 'customers', 'all', 0, count(*) from customers where platform_id = ${platformId}`.execute(db);
  await sql`insert into list_counts (platform_id, list, scope, stripe, n) select ${platformId}, 'customers', 'live', 0, count(*) from customers where platform_id = ${platformId} and is_deleted = 0`.execute(db);
  await sql`insert into list_counts (platform_id, list, scope, stripe, n) select ${platformId}, 'transactions', 'all', 0, count(*) from transactions where platform_id = ${platformId}`.execute(db);
  await sql`delete from transaction_volumes where platform_id = ${platformId}`.execute(db);
  const notCounted = sql.join(VOLUME_STATUSES_NOT_COUNTED.map((x) => sql.lit(x)));
  await sql`insert into transaction_volumes (platform_id, sent_currency, received_currency, day, total)
    select platform_id, sent_currency, received_currency, substr(created_at, 1, 10), sum(sent_amount) from transactions
    where platform_id = ${platformId} and type = 'OUTGOING' and received_currency is not null and status not in (${notCounted})
    group by platform_id, sent_currency, received_currency, substr(created_at, 1, 10)`.execute(db);
}

/** A platform's rows (count(*)) and kept counts (list_counts) of its customers and transactions lists. */
async function countsOf(store: Store, platformId: string): Promise<SeedResult['counts']> {
  const n = async (query: RawBuilder<{ n: number | string | null }>) => Number((await query.execute(store.db)).rows[0]?.n ?? 0);
  const kept = (list: string, scope: string) => n(sql`select sum(n) as n from list_counts where platform_id = ${platformId} and list = ${list} and scope = ${scope}`);
  return {
    customers: {
      rows: await n(sql`select count(*) as n from customers where platform_id = ${platformId}`),
      kept: await kept('customers', 'all'),
      liveRows: await n(sql`select count(*) as n from customers where platform_id = ${platformId} and is_deleted = 0`),
      keptLive: await kept('customers', 'live'),
    },
    transactions: {
      rows: await n(sql`select count(*) as n from transactions where platform_id = ${platformId}`),
      kept: await kept('transactions', 'all'),
    },
  };
}

async function volumeMismatchesOf(store: Store, platformId: string): Promise<number> {
  const notCounted = sql.join(VOLUME_STATUSES_NOT_COUNTED.map((x) => sql.lit(x)));
  const r = await sql<{ n: number | string }>`select count(*) as n from (
      select sent_currency, received_currency, substr(created_at, 1, 10) as day, sum(sent_amount) as total from transactions
      where platform_id = ${platformId} and type = 'OUTGOING' and received_currency is not null and status not in (${notCounted})
      group by sent_currency, received_currency, substr(created_at, 1, 10)) t
    full join (select * from transaction_volumes where platform_id = ${platformId} and total <> 0) v
      on v.sent_currency = t.sent_currency and v.received_currency = t.received_currency and v.day = t.day
    where t.total is null or v.total is null or t.total <> v.total`.execute(store.db);
  return Number(r.rows[0]?.n ?? 0);
}

async function sizeOf(store: Store): Promise<number | null> {
  if (store.kind === 'sqlite') {
    if (!store.file) return null;
    const size = (f: string) => {
      try {
        return statSync(f).size;
      } catch {
        return 0;
      }
    };
    return size(store.file) + size(`${store.file}-wal`);
  }
  // The bench's own database, or (without CREATEDB) its schema in a shared database.
  const r = await sql<{ db: string; schema: string; rel: string | null }>`select pg_database_size(current_database())::text as db, current_schema() as schema,
      (select sum(pg_total_relation_size(c.oid))::text from pg_class c join pg_namespace ns on ns.oid = c.relnamespace where ns.nspname = current_schema() and c.relkind in ('r', 'm')) as rel`.execute(store.db);
  const row = r.rows[0];
  if (!row) return null;
  return Number(row.schema === 'public' ? row.db : (row.rel ?? row.db));
}

/**
 * The id at `fraction` of a platform's list from its newest row (customers: the live ones),
 * for a cursor that far into the list; undefined when the list has no rows.
 */
export async function idDeepIn(databaseUrl: string, table: 'customers' | 'transactions', platformId: string, fraction = 0.9): Promise<string | undefined> {
  const store = await openStore(parseDatabaseUrl(databaseUrl), { poolSize: 1 });
  try {
    const live = table === 'customers' ? sql` and is_deleted = 0` : sql``;
    const total = Number((await sql<{ n: number | string }>`select count(*) as n from ${sql.table(table)} where platform_id = ${platformId}${live}`.execute(store.db)).rows[0]?.n ?? 0);
    if (total === 0) return undefined;
    // Newest first, as the list: skip `fraction` of the rows (but leave a full page after the cursor when there is one).
    const skip = Math.max(0, Math.min(Math.floor(total * fraction), total - 21));
    const row = (await sql<{ id: string }>`select id from ${sql.table(table)} where platform_id = ${platformId}${live} order by id desc limit 1 offset ${skip}`.execute(store.db)).rows[0];
    return row?.id;
  } finally {
    await store.close();
  }
}

/** A platform's rows and kept counts of its customers and transactions lists (for the bench's check after its fixtures). */
export async function countsIn(databaseUrl: string, platformId: string): Promise<SeedResult['counts']> {
  const store = await openStore(parseDatabaseUrl(databaseUrl), { poolSize: 1 });
  try {
    return await countsOf(store, platformId);
  } finally {
    await store.close();
  }
}
