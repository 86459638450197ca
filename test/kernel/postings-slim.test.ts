import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { migrate } from '../../src/kernel/db/migrations.js';
import { makeApp, STORE, type TestApp } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import { settledPayments } from '../money-helpers.js';

// Migration 0032 (issue 15: bytes per payment flow): a posting no longer repeats its entry's
// platform id and time. A store written before it loses the two columns (SQLite rebuilds the
// table in place, PostgreSQL drops them) and keeps every posting; the ledger's reads take
// both from the entry.

const MIGRATION = '0032_postings_without_entry_columns';
const COLUMNS = ['account_id', 'amount', 'bucket', 'currency', 'entry_id', 'line'];

describe('ledger postings without their entry\u2019s columns', () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await makeApp({ worker: false });
  });
  afterEach(async () => {
    await t.close();
  });

  const columns = async (): Promise<string[]> => {
    const rows =
      STORE === 'sqlite'
        ? (await sql<{ name: string }>`select name from pragma_table_info('ledger_postings')`.execute(t.store.db)).rows
        : (await sql<{ name: string }>`select column_name as name from information_schema.columns where table_schema = current_schema() and table_name = 'ledger_postings'`.execute(t.store.db)).rows;
    return rows.map((r) => r.name).sort();
  };
  const postings = async () =>
    (await sql<Record<string, unknown>>`select entry_id, line, account_id, currency, bucket, amount from ledger_postings order by entry_id, line`.execute(t.store.db)).rows;

  it('a new store has only the posting\u2019s own columns', async () => {
    expect(await columns()).toEqual(COLUMNS);
  });

  it('drops them from a store written before, keeping every posting; payments and the ledger reads go on', async () => {
    await settledPayments(t, 2);
    const before = await postings();
    expect(before.length).toBeGreaterThanOrEqual(2 * 4);

    // The columns as they were, filled as the service filled them: the entry's platform and time.
    await sql`alter table ledger_postings add column platform_id text`.execute(t.store.db);
    await sql`alter table ledger_postings add column created_at text`.execute(t.store.db);
    await sql`update ledger_postings set platform_id = (select e.platform_id from ledger_entries e where e.id = ledger_postings.entry_id),
      created_at = (select e.created_at from ledger_entries e where e.id = ledger_postings.entry_id)`.execute(t.store.db);
    await sql`delete from kysely_migration where name = ${MIGRATION}`.execute(t.store.db);
    expect(await columns()).toEqual([...COLUMNS, 'created_at', 'platform_id'].sort());

    expect(await migrate(t.store)).toEqual([MIGRATION]);
    expect(await columns()).toEqual(COLUMNS);
    expect(await postings()).toEqual(before);
    await assertLedgerInvariants(t.store);

    // More payments, and an account's entries read back with their times.
    const { accountId } = await settledPayments(t, 2);
    expect((await postings()).length).toBe(before.length + 2 * 4 + 2);
    await assertLedgerInvariants(t.store);
    const page = await t.call('GET', `/sandbox/internal-accounts/${accountId}/ledger-entries`);
    expect(page.statusCode, page.body).toBe(200);
    const entries = (page.json() as { data: Array<{ createdAt: string }> }).data;
    expect(entries.length).toBeGreaterThanOrEqual(3);
    for (const e of entries) expect(Number.isNaN(Date.parse(e.createdAt))).toBe(false);
  });
});
