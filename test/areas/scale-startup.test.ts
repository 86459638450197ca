import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { OWNERS_WITHOUT_ACCOUNTS_SQL } from '../../src/api/internal-accounts/store.js';
import type { Store } from '../../src/kernel/db/connect.js';
import { makeApp, STORE, storeSeries, type StoreSeries, type TestApp } from '../helpers.js';
import { TERMS } from '../money-helpers.js';

// Issue 15: start-up does the work it needs, not work per customer already there. Counted in
// SQL statements (not seconds): a start on a store of many customers runs as many statements
// as a start on a store of few, and each customer that does need accounts costs a bounded few.

let seq = 0;
async function seedCustomers(store: Store, platformId: string, n: number, withTerms = false): Promise<string[]> {
  const at = new Date().toISOString();
  const ids: string[] = [];
  for (let done = 0; done < n; done += 500) {
    const rows = Array.from({ length: Math.min(500, n - done) }, () => {
      seq += 1;
      const id = `Customer:01950000-0000-7000-8000-${seq.toString(16).padStart(12, '0')}`;
      ids.push(id);
      return {
        id,
        platform_id: platformId,
        customer_type: 'INDIVIDUAL',
        platform_customer_id: `seed-${seq}`,
        uma_address: `$seed.${seq}@example.com`,
        region: null,
        email: null,
        phone_number: null,
        currencies: JSON.stringify(['USD']),
        status: 'APPROVED',
        fields: JSON.stringify({ fullName: `Seeded ${seq}` }),
        end_user_terms_consent: withTerms ? JSON.stringify(TERMS) : null,
        contact_verification: null,
        is_deleted: 0,
        created_at: at,
        updated_at: at,
      };
    });
    await store.db.insertInto('customers').values(rows).execute();
  }
  return ids;
}

describe(`start-up on a store of many customers (${STORE})`, () => {
  let series: StoreSeries | undefined;
  const open: TestApp[] = [];
  afterEach(async () => {
    for (const a of open.splice(0)) await a.close();
    await series?.drop();
  });

  /** Start an app on the series' data; the statements its start ran. */
  async function start(): Promise<{ app: TestApp; statements: number }> {
    const ts = await series!.open();
    const before = ts.store.statements();
    const app = await makeApp({ testStore: ts });
    open.push(app);
    return { app, statements: ts.store.statements() - before };
  }

  async function stop(app: TestApp): Promise<void> {
    open.splice(open.indexOf(app), 1);
    await app.close();
  }

  it('runs as many statements with 4,000 customers as with 100, and a bounded few per customer that needs accounts', async () => {
    series = await storeSeries();
    const first = await start();
    const platformId = first.app.running.bootstrap.platform.id;
    await seedCustomers(first.app.store, platformId, 100);
    await stop(first.app);

    const few = await start();
    await seedCustomers(few.app.store, platformId, 3_900);
    expect(Number((await few.app.store.db.selectFrom('customers').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n)).toBe(4_000);
    await stop(few.app);

    const many = await start();
    expect(many.statements).toBe(few.statements);
    // Customers that need accounts (written around the services, with the end-user terms):
    // start-up opens theirs, at a bounded cost each, the same per customer.
    await seedCustomers(many.app.store, platformId, 2, true);
    await stop(many.app);
    const two = await start();
    await seedCustomers(two.app.store, platformId, 4, true);
    await stop(two.app);
    const four = await start();
    const perCustomer = (four.statements - two.statements) / 2;
    expect(two.statements - many.statements).toBe(2 * perCustomer);
    expect(perCustomer).toBeGreaterThan(0);
    expect(perCustomer).toBeLessThanOrEqual(20);
    // And they got their accounts.
    const withAccounts = await four.app.store.db.selectFrom('internal_accounts').select('customer_id').distinct().where('customer_id', 'is not', null).execute();
    expect(withAccounts).toHaveLength(6);
    // Every customer is checked now; customers the service creates are checked when created.
    const unchecked = await four.app.store.db.selectFrom('customers').select('id').where('accounts_unchecked', '=', 1).execute();
    expect(unchecked).toEqual([]);
    const created = await four.app.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Created Later' });
    expect(created.statusCode).toBe(201);
    expect((await four.app.store.db.selectFrom('customers').select('accounts_unchecked').where('id', '=', created.json().id).executeTakeFirstOrThrow()).accounts_unchecked).toBe(0);
    // The next start finds nothing to do again.
    await stop(four.app);
    const again = await start();
    expect(again.statements).toBe(few.statements);
  }, 120_000);

  it.runIf(STORE === 'sqlite')('looks each customer up in an index of the accounts, never by scanning them (no quadratic start)', async () => {
    series = await storeSeries();
    const { app } = await start();
    const plan = await sql.raw<{ detail: string }>(`explain query plan ${OWNERS_WITHOUT_ACCOUNTS_SQL}`).execute(app.store.db);
    const details = plan.rows.map((r) => r.detail);
    // The accounts (a) are only ever searched with an index; only the owners themselves are scanned.
    expect(details.filter((d) => /\bSCAN a\b/.test(d))).toEqual([]);
    expect(details.filter((d) => /SEARCH a USING (COVERING )?INDEX/.test(d)).length).toBe(2);
    // And the customers read are only the unchecked ones, from their partial index: not every customer.
    const customerReads = details.filter((d) => /^(SCAN|SEARCH) c\b/.test(d));
    expect(customerReads).toEqual(['SCAN c USING INDEX customers_accounts_unchecked']);
  });
});
