import { type Compilable, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quoteQuery } from '../../src/api/quotes/store.js';
import { transactionQuery } from '../../src/api/transactions/store.js';
import { NARROWED } from '../../src/kernel/db/migrations/0036_narrower_indexes.js';
import { makeApp, STORE, type TestApp } from '../helpers.js';
import { fund, newCustomer, otherPlatformAuth, quoteRequest, usdExternal } from '../money-helpers.js';

// Migration 0036 (issue 35, bytes per payment flow): the list-filter indexes on id columns
// no longer start with the platform id. The lists keep their answers and their tenancy (another
// platform's id finds nothing), and both planners still search the narrowed index, never scan.
// The sender filter unites the partial transactions_sender with transactions_source_account.

describe(`list-filter indexes on ids without the platform prefix (${STORE})`, () => {
  let t: TestApp;
  let other: Record<string, string>;
  let c: { id: string; usd: string; ext: string };
  let platformId: string;
  let quoteId: string;
  let txId: string;

  beforeAll(async () => {
    t = await makeApp({ worker: false });
    const customer = await newCustomer(t, ['USD']);
    c = { id: customer.id, usd: customer.accounts.USD!.id, ext: await usdExternal(t, customer.id, '000000456') };
    await fund(t, c.usd, 1_000_000);
    const r = await t.call('POST', '/quotes', quoteRequest(c.usd, c.ext, 1_000, { immediatelyExecute: true }));
    expect(r.statusCode, r.body).toBe(201);
    ({ id: quoteId, transactionId: txId } = r.json() as { id: string; transactionId: string });
    platformId = (await t.store.db.selectFrom('customers').select('platform_id').where('id', '=', c.id).executeTakeFirstOrThrow()).platform_id;
    other = await otherPlatformAuth(t);
  });
  afterAll(async () => t?.close());

  const ids = async (path: string, headers?: Record<string, string>): Promise<string[]> => {
    const res = await t.call('GET', path, undefined, headers);
    expect(res.statusCode, res.body).toBe(200);
    const page = res.json() as { data: Array<{ id: string }>; totalCount: number };
    expect(page.totalCount).toBe(page.data.length);
    return page.data.map((x) => x.id);
  };

  it('an entry’s idempotency key is unique on its own, and its look-up answers only the platform’s entry', async () => {
    const hold = await t.store.db.selectFrom('ledger_entries').select(['id', 'platform_id']).where('idempotency_key', '=', `hold:${txId}`).execute();
    expect(hold).toHaveLength(1);
    expect(hold[0]!.platform_id).toBe(platformId);
    const again = sql`insert into ledger_entries (id, platform_id, kind, idempotency_key, created_at) values (${'LedgerEntry:dup'}, ${platformId}, ${'HOLD'}, ${`hold:${txId}`}, ${'2026-01-01T00:00:00.000Z'})`;
    await expect(again.execute(t.store.db)).rejects.toThrow(/unique|duplicate/i);
  });

  it('a quote’s transaction has no index of its own: its id is the quote’s transactionId, unique as the primary key', async () => {
    const names =
      STORE === 'sqlite'
        ? (await sql<{ name: string }>`select name from sqlite_master where type = 'index' and tbl_name = 'transactions'`.execute(t.store.db)).rows.map((r) => r.name)
        : (await sql<{ name: string }>`select indexname as name from pg_indexes where schemaname = current_schema() and tablename = 'transactions'`.execute(t.store.db)).rows.map((r) => r.name);
    expect(names).not.toContain('transactions_quote');
    const tx = await t.call('GET', `/transactions/${encodeURIComponent(txId)}`);
    expect((tx.json() as { quoteId: string }).quoteId).toBe(quoteId);
    const again = await t.call('POST', `/quotes/${encodeURIComponent(quoteId)}/execute`);
    expect(again.statusCode, again.body).toBeGreaterThanOrEqual(400);
    const rows = await t.store.db.selectFrom('transactions').select('id').where('quote_id', '=', quoteId).execute();
    expect(rows.map((r) => r.id)).toEqual([txId]);
  });

  it('the five indexes start with their id column', async () => {
    for (const [name, , columns] of NARROWED) {
      const first = columns.split(',')[0]!.trim();
      const def =
        STORE === 'sqlite'
          ? (await sql<{ name: string }>`select name from pragma_index_info(${name}) order by seqno`.execute(t.store.db)).rows.map((r) => r.name).join(', ')
          : (await sql<{ indexdef: string }>`select indexdef from pg_indexes where schemaname = current_schema() and indexname = ${name}`.execute(t.store.db)).rows[0]!.indexdef;
      expect(def, name).toContain(first);
      expect(def, name).not.toContain('platform_id');
    }
  });

  it('the filters find the platform’s rows and another platform’s filter finds none', async () => {
    const e = encodeURIComponent;
    expect(await ids(`/transactions?customerId=${e(c.id)}`)).toContain(txId); // with the funding of its account
    expect(await ids(`/transactions?receiverAccountIdentifier=${e(c.ext)}`)).toEqual([txId]);
    expect(await ids(`/transactions?senderAccountIdentifier=${e(c.usd)}`)).toEqual([txId]);
    expect(await ids(`/quotes?customerId=${e(c.id)}`)).toEqual([quoteId]);
    expect(await ids(`/quotes?sendingAccountId=${e(c.usd)}`)).toEqual([quoteId]);
    expect(await ids(`/quotes?receivingAccountId=${e(c.ext)}`)).toEqual([quoteId]);
    expect(await ids(`/quotes?customerId=${e(platformId)}`)).toEqual([]);
    for (const path of [
      `/transactions?customerId=${e(c.id)}`,
      `/transactions?receiverAccountIdentifier=${e(c.ext)}`,
      `/transactions?accountIdentifier=${e(c.ext)}`,
      `/transactions?senderAccountIdentifier=${e(c.usd)}`,
      `/quotes?customerId=${e(c.id)}`,
      `/quotes?sendingAccountId=${e(c.usd)}`,
      `/quotes?receivingAccountId=${e(c.ext)}`,
    ]) {
      expect(await ids(path, other), path).toEqual([]);
    }
  });

  it('both planners search the narrowed indexes (and the platform’s own quotes their partial index), no scan', async () => {
    const plan = async (q: Compilable): Promise<string> => {
      const compiled = q.compile();
      const explain = STORE === 'sqlite' ? 'explain query plan ' : 'explain ';
      return t.store.db.transaction().execute(async (trx) => {
        if (STORE === 'postgres') await sql`set local enable_seqscan = off`.execute(trx); // a table this small would be scanned anyway
        const rows = (await trx.executeQuery<Record<string, string>>({ ...compiled, sql: explain + compiled.sql, query: compiled.query })).rows;
        return rows.map((r) => Object.values(r).join(' ')).join('\n');
      });
    };
    const now = Date.now();
    const page = <Q extends { selectAll: () => { orderBy: (c: 'id', o: 'desc') => { limit: (n: number) => Compilable } } }>(q: Q) => q.selectAll().orderBy('id', 'desc').limit(21);
    const cases: Array<[Compilable, string]> = [
      [page(transactionQuery(t.store.db, platformId, { customerId: 'Other:1' }, now)), 'transactions_customer'],
      [page(transactionQuery(t.store.db, platformId, { customerId: c.id }, now)), 'transactions_customer'],
      [page(transactionQuery(t.store.db, platformId, { receiverAccountIdentifier: c.ext }, now)), 'transactions_destination_account'],
      [page(transactionQuery(t.store.db, platformId, { senderAccountIdentifier: c.usd }, now)), 'transactions_source_account'],
      [page(transactionQuery(t.store.db, platformId, { senderAccountIdentifier: '$sender@sandbox.uma.money' }, now)), 'transactions_sender'],
      [page(quoteQuery(t.store.db, platformId, { customerId: c.id }, now)), 'quotes_customer'],
      [page(quoteQuery(t.store.db, platformId, { customerId: null }, now)), 'quotes_platform_own'],
      [page(quoteQuery(t.store.db, platformId, { sendingAccountId: c.usd }, now)), 'quotes_source_account'],
      [page(quoteQuery(t.store.db, platformId, { receivingAccountId: c.ext }, now)), 'quotes_destination_account'],
      [t.store.db.selectFrom('ledger_entries').selectAll().where('platform_id', '=', platformId).where('idempotency_key', '=', `hold:${txId}`), 'ledger_entries_idempotency'],
      [t.store.db.selectFrom('ledger_entries').selectAll().where('platform_id', '=', platformId).where('idempotency_key', 'in', [`hold:${txId}`, `capture:${txId}`]), 'ledger_entries_idempotency'],
    ];
    for (const [q, index] of cases) {
      const p = await plan(q);
      expect(p, index).toContain(index);
      expect(p, index).not.toMatch(/SCAN (transactions|quotes|ledger_entries)\b(?! USING)|Seq Scan/);
    }
  });
});
