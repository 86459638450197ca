import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { migrate } from '../../src/kernel/db/migrations.js';
import { makeApp, STORE, type TestApp } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import { settledPayments } from '../money-helpers.js';

// Migration 0029 (issue 15: bytes per payment flow): on SQLite, ledger_postings is a WITHOUT
// ROWID table keyed by (entry_id, line), so SQLite keeps no second index for that key. The
// migration rebuilds a store's existing table in place: same rows, constraints and index.

const MIGRATION = '0029_postings_without_rowid';
/** Migration 0032 rebuilds the table again without the entry's columns (test/kernel/postings-slim.test.ts). */
const SLIM = '0032_postings_without_entry_columns';

describe.skipIf(STORE !== 'sqlite')('ledger_postings without rowid (SQLite)', () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await makeApp({ worker: false });
  });
  afterEach(async () => {
    await t.close();
  });

  const tableSql = async () => (await sql<{ sql: string }>`select sql from sqlite_master where type = 'table' and name = 'ledger_postings'`.execute(t.store.db)).rows[0]!.sql;
  // The b-trees the schema keeps for the table besides its own (a WITHOUT ROWID table's key is the table).
  const indexes = async () => (await sql<{ name: string }>`select name from sqlite_master where type = 'index' and tbl_name = 'ledger_postings' order by name`.execute(t.store.db)).rows.map((r) => r.name);
  const postings = async () => (await sql<Record<string, unknown>>`select * from ledger_postings order by entry_id, line`.execute(t.store.db)).rows;

  it('a new store has it: the key is the table, one secondary index', async () => {
    expect(await tableSql()).toMatch(/without rowid\s*$/i);
    // The primary key's own index is the table itself; no sqlite_autoindex_* is kept beside it.
    expect(await indexes()).toEqual(['ledger_postings_account']);
  });

  it('rebuilds a table written before it: the same rows, constraints and index; payments go on', async () => {
    await settledPayments(t, 3);
    const before = await postings();
    expect(before.length).toBeGreaterThanOrEqual(3 * 4);

    // The table as migration 0003 made it (a rowid table with its key's index), and 0029 not run.
    await sql`create table ledger_postings_old (
        entry_id text not null references ledger_entries (id) on delete cascade, line integer not null, platform_id text not null,
        account_id text not null references ledger_balances (account_id), currency text not null, bucket text not null, amount bigint not null,
        created_at text not null, constraint ledger_postings_pk primary key (entry_id, line),
        constraint ledger_postings_bucket check (bucket in ('available', 'pending', 'held')), constraint ledger_postings_nonzero check (amount <> 0))`.execute(t.store.db);
    // (It also had the entry's platform id and time, which migration 0032 dropped: taken back from the entries.)
    await sql`insert into ledger_postings_old select p.entry_id, p.line, e.platform_id, p.account_id, p.currency, p.bucket, p.amount, e.created_at
      from ledger_postings p join ledger_entries e on e.id = p.entry_id`.execute(t.store.db);
    await sql`drop table ledger_postings`.execute(t.store.db);
    await sql`alter table ledger_postings_old rename to ledger_postings`.execute(t.store.db);
    await sql`create index ledger_postings_account on ledger_postings (account_id, entry_id)`.execute(t.store.db);
    await sql`delete from kysely_migration where name in (${MIGRATION}, ${SLIM})`.execute(t.store.db);
    expect(await tableSql()).not.toMatch(/without rowid/i);
    expect(await indexes()).toContain('sqlite_autoindex_ledger_postings_1');

    expect(await migrate(t.store)).toEqual([MIGRATION, SLIM]);
    expect(await tableSql()).toMatch(/without rowid\s*$/i);
    expect(await indexes()).toEqual(['ledger_postings_account']);
    expect(await postings()).toEqual(before);
    await assertLedgerInvariants(t.store);

    // The constraints came along: the key, the bucket and the non-zero checks, the foreign keys.
    const row = before[0]!;
    await expect(sql`insert into ledger_postings select * from ledger_postings where entry_id = ${row.entry_id} and line = ${row.line}`.execute(t.store.db)).rejects.toThrow(/UNIQUE|PRIMARY/i);
    await expect(sql`insert into ledger_postings (entry_id, line, account_id, currency, bucket, amount) values (${row.entry_id}, 99, ${row.account_id}, 'USD', 'other', 1)`.execute(t.store.db)).rejects.toThrow(/CHECK/i);
    await expect(sql`insert into ledger_postings (entry_id, line, account_id, currency, bucket, amount) values (${row.entry_id}, 99, ${row.account_id}, 'USD', 'held', 0)`.execute(t.store.db)).rejects.toThrow(/CHECK/i);
    await expect(sql`insert into ledger_postings (entry_id, line, account_id, currency, bucket, amount) values ('LedgerEntry:none', 0, ${row.account_id}, 'USD', 'held', 1)`.execute(t.store.db)).rejects.toThrow(/FOREIGN KEY/i);

    // More payments on the rebuilt table, then the ledger still balances.
    await settledPayments(t, 2);
    expect((await postings()).length).toBe(before.length + 2 * 4 + 2);
    await assertLedgerInvariants(t.store);
  });
});
