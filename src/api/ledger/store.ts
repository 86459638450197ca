import { type Kysely, type Selectable, sql, type Transaction } from 'kysely';
import { literalLimit } from '../../kernel/db/limit.js';
import type { DB, LedgerBalancesTable, LedgerEntriesTable, LedgerPostingsTable } from '../../kernel/db/schema.js';
import { prepared, preparedByShape, preparedInsert } from '../../kernel/db/prepared.js';

// The ledger's SQL. Balances change only through ledger/service.ts (postEntry).

export type BalanceRow = Selectable<LedgerBalancesTable>;
export type EntryRow = Selectable<LedgerEntriesTable>;
export type PostingRow = Selectable<LedgerPostingsTable>;
type Db = Kysely<DB> | Transaction<DB>;

/** Open ledger accounts; an account that already exists is left as it is. */
export async function insertBalanceRows(db: Db, rows: BalanceRow[]): Promise<void> {
  if (rows.length === 0) return;
  const q = balanceRowsToInsert(rows.length);
  if (!q) {
    await db
      .insertInto('ledger_balances')
      .values(rows)
      .onConflict((oc) => oc.column('account_id').doNothing())
      .execute();
    return;
  }
  const params: Record<string, unknown> = {};
  rows.forEach((r, i) => {
    for (const c of BALANCE_COLUMNS) params[`r${i}_${c}`] = r[c];
  });
  await q.execute(db, params);
}

const BALANCE_COLUMNS = ['account_id', 'platform_id', 'kind', 'currency', 'allow_negative', 'available', 'pending', 'held', 'version', 'created_at', 'updated_at'] as const satisfies ReadonlyArray<keyof BalanceRow>;

// Opening accounts runs on every payment that touches a counter-account (ensureWorldAccount):
// prepared per number of rows (kernel/db/prepared.ts).
const balanceRowsToInsert = preparedByShape<number, Record<string, unknown>>(
  (n) => String(n),
  (db, p, n) =>
    db
      .insertInto('ledger_balances')
      .values(Array.from({ length: n }, (_, i) => Object.fromEntries(BALANCE_COLUMNS.map((c) => [c, p(`r${i}_${c}`)])) as unknown as BalanceRow))
      .onConflict((oc) => oc.column('account_id').doNothing()),
  8,
);

/**
 * The balance rows of these accounts, in account-id order, locked until the transaction
 * ends on PostgreSQL (a fixed order so two entries never deadlock). SQLite runs one writer
 * at a time: the transaction itself is the lock there. The lock is FOR NO KEY UPDATE, the
 * one the rows' own `update` takes: it keeps other movers out but not the foreign-key
 * checks of postings inserted meanwhile (ledger_postings.account_id references the row and
 * takes FOR KEY SHARE, which FOR UPDATE would make wait for this whole transaction).
 */
export async function lockBalanceRows(trx: Transaction<DB>, platformId: string, accountIds: string[], postgres: boolean): Promise<BalanceRow[]> {
  if (accountIds.length === 0) return [];
  const q = balanceRowsToLock({ n: accountIds.length, postgres });
  if (!q) {
    let b = trx.selectFrom('ledger_balances').selectAll().where('platform_id', '=', platformId).where('account_id', 'in', accountIds).orderBy('account_id');
    if (postgres) b = b.forNoKeyUpdate();
    return b.execute();
  }
  return q.all(trx, { platformId, ...listParams(accountIds) });
}

// The hot queries of postEntry are prepared (kernel/db/prepared.ts): built and compiled once
// (per number of accounts, for the lists).
const listParams = (ids: readonly string[]): Record<string, string> => Object.fromEntries(ids.map((id, i) => [`a${i}`, id]));
const listOf = (n: number, p: (name: string) => unknown) => Array.from({ length: n }, (_, i) => p(`a${i}`) as string);

const balanceRowsToLock = preparedByShape<{ n: number; postgres: boolean }, Record<string, string>, BalanceRow>(
  (s) => `${s.n}|${s.postgres}`,
  (db, p, s) => {
    const q = db.selectFrom('ledger_balances').selectAll().where('platform_id', '=', p('platformId')).where('account_id', 'in', listOf(s.n, p)).orderBy('account_id');
    return s.postgres ? q.forNoKeyUpdate() : q;
  },
);

const balanceRowsOf = preparedByShape<number, Record<string, string>, BalanceRow>(
  (n) => String(n),
  (db, p, n) => db.selectFrom('ledger_balances').selectAll().where('account_id', 'in', listOf(n, p)),
);

const updateBalance = prepared<{ available: number; pending: number; held: number; updated_at: string; accountId: string; version: number }>((db, p) =>
  db
    .updateTable('ledger_balances')
    .set({ available: p('available'), pending: p('pending'), held: p('held'), updated_at: p('updated_at'), version: sql<number>`version + 1` })
    .where('account_id', '=', p('accountId'))
    .where('version', '=', p('version')),
);

/** The largest balance a bucket may reach (Number.MAX_SAFE_INTEGER): the same bound as postEntry's check. */
const SAFE = Number.MAX_SAFE_INTEGER;
type MoveParams = { platformId: string; accountId: string; currency: string; available: number; pending: number; held: number; at: string };
const moveBalance = prepared<MoveParams, Pick<BalanceRow, 'available' | 'pending' | 'held'>>((db, p) => moveBalanceQuery(db, p));

/**
 * The statement of moveBalanceRow with its values, for a move sent with the commit
 * (PostgreSQL, kernel/db/late-move.ts): its text is the prepared one's, so it is the same
 * for every move and prepared once per connection.
 */
export function moveBalanceStatement(db: Db, platformId: string, accountId: string, currency: string, delta: { available: number; pending: number; held: number }, at: string): { sql: string; parameters: readonly unknown[] } {
  const values: MoveParams = { platformId, accountId, currency, ...delta, at };
  const compiled = moveBalanceQuery(db as Kysely<DB>, (name) => values[name]).compile();
  return { sql: compiled.sql, parameters: compiled.parameters };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function moveBalanceQuery(db: Kysely<DB>, p: (name: keyof MoveParams) => any) {
  const delta = (name: 'available' | 'pending' | 'held') => sql<number>`cast(${p(name)} as bigint)`;
  const after = (name: 'available' | 'pending' | 'held') => sql<number>`${sql.ref(name)} + ${delta(name)}`;
  // Refused (no row) when a bucket it lowers would go below zero on an account that may not,
  // or any bucket would leave the safe integer range: postEntry's checks, in the statement.
  const allowed = (name: 'available' | 'pending' | 'held') => sql<boolean>`(${after(name)} >= 0 or ${delta(name)} >= 0)`;
  const safe = (name: 'available' | 'pending' | 'held') => sql<boolean>`${after(name)} between ${-SAFE} and ${SAFE}`;
  return db
    .updateTable('ledger_balances')
    .set({ available: after('available'), pending: after('pending'), held: after('held'), updated_at: p('at'), version: sql<number>`version + 1` })
    .where('platform_id', '=', p('platformId'))
    .where('account_id', '=', p('accountId'))
    .where('currency', '=', p('currency'))
    .where(sql<boolean>`(allow_negative = 1 or (${allowed('available')} and ${allowed('pending')} and ${allowed('held')}))`)
    .where(sql<boolean>`${safe('available')} and ${safe('pending')} and ${safe('held')}`)
    .returning(['available', 'pending', 'held']);
}

/**
 * Move one balance row of the platform by `delta` in one statement: its new values, or
 * undefined when it was not moved (no such row of the platform in that currency, or a check
 * of postEntry refuses it). The row is locked from here to the commit, and nothing is written
 * when it is refused.
 */
export async function moveBalanceRow(
  trx: Transaction<DB>,
  platformId: string,
  accountId: string,
  currency: string,
  delta: { available: number; pending: number; held: number },
  at: string,
): Promise<{ available: number; pending: number; held: number } | undefined> {
  const row = await moveBalance.first(trx, { platformId, accountId, currency, ...delta, at });
  return row && { available: Number(row.available), pending: Number(row.pending), held: Number(row.held) };
}

const insertEntryRow = preparedInsert('ledger_entries');
const insertPostingRows = preparedInsert('ledger_postings');
const entryByIdempotencyKey = prepared<{ platformId: string; key: string }, EntryRow>((db, p) =>
  db.selectFrom('ledger_entries').selectAll().where('platform_id', '=', p('platformId')).where('idempotency_key', '=', p('key')),
);

/** Write a balance row's new values; false when its version moved (the lock makes that impossible). */
export async function updateBalanceRow(
  trx: Transaction<DB>,
  accountId: string,
  expectedVersion: number,
  values: { available: number; pending: number; held: number; updated_at: string },
): Promise<boolean> {
  const r = await updateBalance.execute(trx, { ...values, accountId, version: expectedVersion });
  return Number(r.numAffectedRows ?? 0) === 1;
}

export async function insertEntry(trx: Transaction<DB>, row: EntryRow): Promise<void> {
  await insertEntryRow(trx, row);
}

export async function insertPostings(trx: Transaction<DB>, rows: PostingRow[]): Promise<void> {
  if (rows.length === 0) return;
  await insertPostingRows(trx, rows);
}

export async function findEntryByIdempotencyKey(db: Db, platformId: string, key: string): Promise<EntryRow | undefined> {
  return entryByIdempotencyKey.first(db, { platformId, key });
}

export async function findEntry(db: Db, platformId: string, id: string): Promise<EntryRow | undefined> {
  return db.selectFrom('ledger_entries').selectAll().where('platform_id', '=', platformId).where('id', '=', id).executeTakeFirst();
}

export async function postingsOfEntry(db: Db, entryId: string): Promise<PostingRow[]> {
  return db.selectFrom('ledger_postings').selectAll().where('entry_id', '=', entryId).orderBy('line').execute();
}

/** Balance rows of these accounts (no lock). */
export async function selectBalanceRows(db: Db, accountIds: string[]): Promise<BalanceRow[]> {
  if (accountIds.length === 0) return [];
  const q = balanceRowsOf(accountIds.length);
  if (!q) return db.selectFrom('ledger_balances').selectAll().where('account_id', 'in', accountIds).execute();
  return q.all(db, listParams(accountIds));
}

/** Sum of the postings per (account, bucket): what the balance rows must equal. */
export async function postingTotals(db: Db, accountIds: string[]): Promise<Array<{ account_id: string; bucket: string; total: number }>> {
  if (accountIds.length === 0) return [];
  const rows = await db
    .selectFrom('ledger_postings')
    .select(['account_id', 'bucket', sql<number | string>`sum(amount)`.as('total')])
    .where('account_id', 'in', accountIds)
    .groupBy(['account_id', 'bucket'])
    .execute();
  return rows.map((r) => ({ account_id: r.account_id, bucket: r.bucket, total: Number(r.total) }));
}

/** Entries touching an account, newest first (statements, tests). */
export async function entriesOfAccount(db: Db, platformId: string, accountId: string, limit = 100): Promise<EntryRow[]> {
  return db
    .selectFrom('ledger_entries')
    .selectAll()
    .where('platform_id', '=', platformId)
    .where('id', 'in', (sub) => sub.selectFrom('ledger_postings').select('entry_id').where('account_id', '=', accountId))
    .orderBy('id', 'desc')
    .limit(literalLimit(limit))
    .execute();
}

/** Entries posted together (postEntries): one statement for their rows. */
export async function insertEntries(trx: Transaction<DB>, rows: EntryRow[]): Promise<void> {
  if (rows.length === 0) return;
  await insertEntryRow(trx, rows);
}

/** Entries of the platform with any of these idempotency keys (postEntries: none is expected). */
export async function entriesWithIdempotencyKeys(db: Db, platformId: string, keys: string[]): Promise<EntryRow[]> {
  if (keys.length === 0) return [];
  return db.selectFrom('ledger_entries').selectAll().where('platform_id', '=', platformId).where('idempotency_key', 'in', keys).execute();
}

/**
 * New values of many balance rows in one statement (postEntries: each account's changes of
 * all the entries, summed): `version` rises by the number of entries that moved the row.
 * Answers the number of rows written.
 */
export async function updateBalanceRows(
  trx: Transaction<DB>,
  rows: Array<{ accountId: string; available: number; pending: number; held: number; entries: number }>,
  at: string,
): Promise<number> {
  if (rows.length === 0) return 0;
  const caseOf = (pick: (r: (typeof rows)[number]) => number, type: 'bigint' | 'integer') =>
    sql`case account_id ${sql.join(rows.map((r) => sql`when ${r.accountId} then cast(${pick(r)} as ${sql.raw(type)})`), sql` `)} end`;
  const r = await sql`update ledger_balances set available = ${caseOf((r) => r.available, 'bigint')}, pending = ${caseOf((r) => r.pending, 'bigint')}, held = ${caseOf((r) => r.held, 'bigint')}, version = version + ${caseOf((r) => r.entries, 'integer')}, updated_at = ${at} where account_id in (${sql.join(rows.map((r) => r.accountId))})`.execute(trx);
  return Number(r.numAffectedRows ?? 0);
}
