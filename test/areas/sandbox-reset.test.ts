import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_KEY, envelope, makeApp, STORE, type TestApp } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import { balanceOf, fund, newCustomer, otherPlatformAuth, quoteRequest, usdExternal } from '../money-helpers.js';
import { KEPT_ON_RESET, resetTables } from '../../src/sandbox/reset/store.js';

// POST /sandbox/reset (one platform) and the operator's resets, on two platforms.

const ADMIN = { authorization: `Bearer ${ADMIN_KEY}` };

async function countOf(t: TestApp, table: string, platformId: string): Promise<number> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const r = await (t.store.db as any).selectFrom(table).select((eb: any) => eb.fn.countAll().as('n')).where('platform_id', '=', platformId).executeTakeFirst();
  return Number(r.n);
}

/** A platform with a customer, a funded account, an external account and a payment, plus webhook deliveries. */
async function populate(t: TestApp, headers?: Record<string, string>): Promise<{ customerId: string; accountId: string }> {
  const c = await newCustomer(t, ['USD'], { headers });
  const accountId = c.accounts.USD!.id;
  await fund(t, accountId, 50_000, headers);
  const ext = await usdExternal(t, c.id, '123456789', headers);
  const q = await t.call('POST', '/quotes', quoteRequest(accountId, ext, 1_000), headers);
  expect(q.statusCode, q.body).toBe(201);
  return { customerId: c.id, accountId };
}

describe(`sandbox reset (${STORE})`, () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await makeApp();
  });
  afterEach(async () => t.close());

  it('finds the platform-scoped tables at run time, children first, and keeps tokens and configuration', async () => {
    const tables = (await resetTables(t.store)).map((x) => x.name);
    for (const name of ['customers', 'internal_accounts', 'ledger_entries', 'ledger_postings', 'ledger_balances', 'external_accounts', 'quotes', 'transactions', 'webhook_deliveries', 'webhook_attempts', 'events', 'jobs', 'idempotency_keys', 'documents', 'document_chunks']) {
      expect(tables, name).toContain(name);
    }
    for (const kept of KEPT_ON_RESET) expect(tables).not.toContain(kept);
    // A table is deleted before every table it references.
    expect(tables.indexOf('ledger_postings')).toBeLessThan(tables.indexOf('ledger_entries'));
    expect(tables.indexOf('ledger_postings')).toBeLessThan(tables.indexOf('ledger_balances'));
    expect(tables.indexOf('webhook_attempts')).toBeLessThan(tables.indexOf('webhook_deliveries'));
    expect(tables.indexOf('verifications')).toBeLessThan(tables.indexOf('customers'));
    // The kept counts are left to their triggers (the deletes bring them to zero).
    expect(tables).not.toContain('list_counts');
    // Children whose reference the schema does not declare (reset/store.ts CHILDREN_WITHOUT_KEYS), before their parent.
    expect(tables.indexOf('bulk_import_rows')).toBeGreaterThanOrEqual(0);
    expect(tables.indexOf('bulk_import_errors')).toBeLessThan(tables.indexOf('bulk_imports'));
    // The snapshots outlive a reset (sandbox/snapshots).
    expect(tables).not.toContain('sandbox_snapshots');
  });

  it('covers a table added later without edits (any table with platform_id, and its children)', async () => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const db = t.store.db as any;
    await db.schema.createTable('later_things').addColumn('id', 'text', (c: any) => c.primaryKey()).addColumn('platform_id', 'text', (c: any) => c.notNull()).execute();
    await db.schema.createTable('later_parts').addColumn('id', 'text', (c: any) => c.primaryKey()).addColumn('thing_id', 'text', (c: any) => c.notNull().references('later_things.id')).execute();
    const mine = t.running.bootstrap.platform.id;
    const other = await otherPlatformAuth(t);
    const otherId = (await t.call('GET', '/config', undefined, other)).json().platformId ?? 'other';
    await db.insertInto('later_things').values([{ id: 'a', platform_id: mine }, { id: 'b', platform_id: otherId }]).execute();
    await db.insertInto('later_parts').values([{ id: 'pa', thing_id: 'a' }, { id: 'pb', thing_id: 'b' }]).execute();
    const res = await t.call('POST', '/sandbox/reset');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().deleted).toMatchObject({ later_things: 1, later_parts: 1 });
    expect((await db.selectFrom('later_things').select('id').execute()).map((r: { id: string }) => r.id)).toEqual(['b']);
    expect((await db.selectFrom('later_parts').select('id').execute()).map((r: { id: string }) => r.id)).toEqual(['pb']);
  });

  it('empties one platform, keeps its tokens, configuration and clock, and touches nothing of another platform', async () => {
    const other = await otherPlatformAuth(t);
    const mine = await populate(t);
    const theirs = await populate(t, other);
    await t.call('PATCH', '/config', { umaDomain: 'reset.example.com' });
    await t.call('POST', '/sandbox/clock/advance', { seconds: 600 });
    const clockBefore = (await t.call('GET', '/sandbox/clock')).json();
    const platformId = t.running.bootstrap.platform.id;
    const platformAccountsBefore = (await t.call('GET', '/platform/internal-accounts')).json().data.length;
    expect(platformAccountsBefore).toBeGreaterThan(0);

    const res = await t.call('POST', '/sandbox/reset');
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.platformIds).toEqual([platformId]);
    expect(body.deleted.customers).toBe(1);
    expect(body.deleted.quotes).toBe(1);
    expect(body.resetAt).toBe(clockBefore.now);

    // Its data is gone, and the lists' kept counts say so (totalCount 0, not negative).
    expect((await t.call('GET', '/customers')).json()).toMatchObject({ data: [], totalCount: 0 });
    expect((await t.call('GET', '/transactions')).json()).toMatchObject({ data: [], totalCount: 0 });
    envelope(await t.call('GET', `/customers/${encodeURIComponent(mine.customerId)}`), 404, 'USER_NOT_FOUND');
    expect((await t.call('GET', '/customers/internal-accounts')).json().data).toEqual([]);
    expect((await t.call('GET', '/transactions')).json().data).toEqual([]);
    for (const table of ['customers', 'quotes', 'transactions', 'ledger_entries', 'webhook_deliveries', 'events', 'idempotency_keys', 'external_accounts']) {
      expect(await countOf(t, table, platformId), table).toBe(0);
    }
    // Kept: the token (this very call authenticates), the configuration, the clock; its own accounts reopened empty.
    expect((await t.call('GET', '/config')).json().umaDomain).toBe('reset.example.com');
    expect((await t.call('GET', '/sandbox/clock')).json().offsetSeconds).toBe(clockBefore.offsetSeconds);
    const platformAccounts = (await t.call('GET', '/platform/internal-accounts')).json().data as Array<{ balance: { amount: number } }>;
    expect(platformAccounts.length).toBe(platformAccountsBefore);
    expect(platformAccounts.every((a) => a.balance.amount === 0)).toBe(true);
    // The platform works as new: a customer again.
    const again = await newCustomer(t, ['USD']);
    await fund(t, again.accounts.USD!.id, 100);
    expect((await balanceOf(t, again.accounts.USD!.id)).available).toBe(100);
    expect((await t.call('GET', '/customers')).json().totalCount).toBe(1);

    // The other platform is untouched.
    expect((await t.call('GET', '/customers', undefined, other)).json().data.map((c: { id: string }) => c.id)).toEqual([theirs.customerId]);
    expect((await balanceOf(t, theirs.accountId, other)).available).toBe(50_000);
    await assertLedgerInvariants(t.store);
  });

  it('needs MANAGE', async () => {
    const tok = await t.call('POST', '/tokens', { name: 'viewer', permissions: ['VIEW'] });
    expect(tok.statusCode, tok.body).toBe(201);
    const { clientId, clientSecret } = tok.json();
    envelope(await t.call('POST', '/sandbox/reset', undefined, { authorization: `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}` }), 403, 'FORBIDDEN');
    envelope(await t.call('POST', '/sandbox/reset', undefined, { authorization: '' }), 401, 'UNAUTHORIZED');
  });

  it('operator: resets one platform by id (404 for an unknown one) or every platform', async () => {
    const other = await otherPlatformAuth(t);
    await populate(t);
    const theirs = await populate(t, other);
    const platforms = (await t.call('GET', '/admin/platforms', undefined, ADMIN)).json().data as Array<{ id: string }>;
    const otherId = platforms.find((p) => p.id !== t.running.bootstrap.platform.id)!.id;

    envelope(await t.call('POST', '/admin/platforms/Platform:nope/reset', undefined, ADMIN), 404, 'REFERENCE_NOT_FOUND');
    envelope(await t.call('POST', '/admin/sandbox/reset', undefined, { authorization: 'Bearer wrong' }), 401, 'UNAUTHORIZED');

    const one = await t.call('POST', `/admin/platforms/${encodeURIComponent(otherId)}/reset`, undefined, ADMIN);
    expect(one.statusCode, one.body).toBe(200);
    expect(one.json().platformIds).toEqual([otherId]);
    expect((await t.call('GET', '/customers', undefined, other)).json().data).toEqual([]);
    envelope(await t.call('GET', `/customers/${encodeURIComponent(theirs.customerId)}`, undefined, other), 404);
    expect((await t.call('GET', '/customers')).json().data.length).toBe(1);

    await populate(t, other);
    const all = await t.call('POST', '/admin/sandbox/reset', undefined, ADMIN);
    expect(all.statusCode, all.body).toBe(200);
    expect([...all.json().platformIds].sort()).toEqual(platforms.map((p) => p.id).sort());
    expect((await t.call('GET', '/customers')).json().data).toEqual([]);
    expect((await t.call('GET', '/customers', undefined, other)).json().data).toEqual([]);
    // Both platforms' tokens still work, and their own accounts exist again.
    expect((await t.call('GET', '/platform/internal-accounts', undefined, other)).json().data.length).toBeGreaterThan(0);
    await assertLedgerInvariants(t.store);
  });
});
