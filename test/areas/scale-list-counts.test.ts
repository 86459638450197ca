import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeApp, STORE, storeSeries, type StoreSeries, type TestApp } from '../helpers.js';
import { fund, newCustomer } from '../money-helpers.js';

// Issue 15: a list's totalCount stays exact without counting the platform's rows. The
// unfiltered customers and transactions lists read counts kept by triggers
// (kernel/db/list-counts.ts); two servers on one database write concurrently, and the counts
// then equal the rows.

interface List {
  data: Array<{ id: string }>;
  totalCount: number;
  hasMore: boolean;
}

describe(`list totalCount after concurrent writes (${STORE})`, () => {
  let series: StoreSeries;
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    series = await storeSeries();
    a = await makeApp({ testStore: await series.open() });
    b = await makeApp({ testStore: await series.open() });
  }, 60_000);
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await series?.drop();
  });

  const list = async (t: TestApp, path: string): Promise<List> => {
    const res = await t.call('GET', path);
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as List;
  };
  const countRows = async (table: 'customers' | 'transactions', live = false): Promise<number> => {
    let q = a.store.db.selectFrom(table).select((eb) => eb.fn.countAll().as('n')).where('platform_id', '=', a.running.bootstrap.platform.id);
    if (live) q = q.where('is_deleted' as never, '=', 0 as never);
    return Number((await q.executeTakeFirstOrThrow()).n);
  };

  it('customers: concurrent creates and deletes on two servers, then totalCount equals the rows (live and including deleted)', async () => {
    const before = await list(a, '/customers');
    expect(before.totalCount).toBe(await countRows('customers', true));
    const created = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: `Count Me ${i}` })),
    );
    for (const r of created) expect(r.statusCode, r.body).toBe(201);
    const ids = created.map((r) => (r.json() as { id: string }).id);
    // Deletes racing each other and the creates' readers: 10 customers, each deleted twice (one answer 200, one 410).
    const deletes = await Promise.all(ids.slice(0, 10).flatMap((id, i) => (i % 3 === 0 ? [a, b] : [i % 2 ? a : b]).map((t) => t.call('DELETE', `/customers/${id}`))));
    expect(deletes).toHaveLength(14);
    expect(deletes.filter((r) => r.statusCode === 200).length, deletes.map((r) => r.body).join("\n")).toBe(10);

    const live = await countRows('customers', true);
    const all = await countRows('customers');
    expect(live).toBe(before.totalCount + 30);
    for (const t of [a, b]) {
      expect((await list(t, '/customers?limit=1')).totalCount).toBe(live);
      expect((await list(t, '/customers?isIncludingDeleted=true&limit=5')).totalCount).toBe(all);
    }
    // A filter still counts its own rows.
    expect((await list(a, `/customers?platformCustomerId=${encodeURIComponent('no-such-id')}`)).totalCount).toBe(0);
  }, 60_000);

  it('transactions: concurrent fundings on two servers, then totalCount equals the rows', async () => {
    const c = await newCustomer(a, ['USD']);
    const account = c.accounts.USD!.id;
    const res = await Promise.all(Array.from({ length: 24 }, (_, i) => (i % 2 ? a : b).call('POST', `/sandbox/internal-accounts/${encodeURIComponent(account)}/fund`, { amount: 100 + i })));
    for (const r of res) expect(r.statusCode, r.body).toBe(200);
    const rows = await countRows('transactions');
    expect(rows).toBeGreaterThanOrEqual(24);
    for (const t of [a, b]) expect((await list(t, '/transactions?limit=1')).totalCount).toBe(rows);
    await fund(b, account, 5);
    expect((await list(a, '/transactions')).totalCount).toBe(rows + 1);
  }, 60_000);

  it('rows written around the services are counted too (the counts are kept by the database)', async () => {
    const platformId = a.running.bootstrap.platform.id;
    const at = new Date(a.clock.nowMs()).toISOString();
    const live = await countRows('customers', true);
    await a.store.db
      .insertInto('customers')
      .values({
        id: 'Customer:01950000-0000-7000-8000-00000000c0c0',
        platform_id: platformId,
        customer_type: 'INDIVIDUAL',
        platform_customer_id: 'around-1',
        uma_address: '$around.1@example.com',
        region: null,
        email: null,
        phone_number: null,
        currencies: '["USD"]',
        status: 'APPROVED',
        fields: '{"fullName":"Around"}',
        end_user_terms_consent: null,
        contact_verification: null,
        is_deleted: 0,
        created_at: at,
        updated_at: at,
      })
      .execute();
    expect((await list(b, '/customers')).totalCount).toBe(live + 1);
    await a.store.db.updateTable('customers').set({ is_deleted: 1 }).where('id', '=', 'Customer:01950000-0000-7000-8000-00000000c0c0').execute();
    expect((await list(b, '/customers')).totalCount).toBe(live);
    await a.store.db.deleteFrom('customers').where('id', '=', 'Customer:01950000-0000-7000-8000-00000000c0c0').execute();
    expect((await list(b, '/customers?isIncludingDeleted=true')).totalCount).toBe(await countRows('customers'));
    // The kept counts are what the answers read: one row per stripe, nothing per customer.
    const stripes = await a.store.db.selectFrom('list_counts').selectAll().where('platform_id', '=', platformId).where('list', '=', 'customers').execute();
    expect(stripes.length).toBeGreaterThan(0);
    expect(stripes.length).toBeLessThanOrEqual(16);
  });
});
