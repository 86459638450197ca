import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, makeApp, STORE, storeSeries, type StoreSeries, type TestApp } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import { balanceOf, fund, newCustomer, quoteRequest, usdExternal } from '../money-helpers.js';

// Issue 15: the daily-volume limit stays exact when payments race, on two servers sharing one
// database, without locking the platform while a payment runs (PostgreSQL: a check deferred
// to commit on the corridor's day counter; SQLite: one writer at a time).

const ADMIN = { authorization: `Bearer ${ADMIN_KEY}` };

describe(`daily volume under a parallel race (${STORE})`, () => {
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

  it('of 24 racing payments of 10,000 under a 100,000 limit exactly 10 move money; the rest answer 429 and move nothing', async () => {
    const platformId = a.running.bootstrap.platform.id;
    const c = await newCustomer(a, ['USD']);
    const usd = c.accounts.USD!.id;
    const dest = await usdExternal(a, c.id);
    await fund(a, usd, 1_000_000);
    const res = await a.call('PATCH', `/admin/platforms/${platformId}`, { limits: { dailyVolume: { withdrawals: { USD: 100_000 } } } }, ADMIN);
    expect(res.statusCode, res.body).toBe(200);
    // Each server reads the platform (its limits) afresh.
    const before = await balanceOf(a, usd);

    const answers = await Promise.all(
      Array.from({ length: 24 }, (_, i) => (i % 2 ? a : b).call('POST', '/quotes', quoteRequest(usd, dest, 10_000, { immediatelyExecute: true }))),
    );
    const ok = answers.filter((r) => r.statusCode === 201);
    const refused = answers.filter((r) => r.statusCode === 429);
    expect(answers.filter((r) => r.statusCode !== 201 && r.statusCode !== 429).map((r) => r.body)).toEqual([]);
    expect(ok).toHaveLength(10);
    expect(refused).toHaveLength(14);
    for (const r of refused) {
      const e = r.json() as { code: string; details: Record<string, unknown> };
      expect(e.code).toBe('DAILY_VOLUME_LIMIT_EXCEEDED');
      expect(e.details).toMatchObject({ corridor: 'USD:USD', limit: 100_000, requestedAmount: 10_000, limitSource: 'PLATFORM_WITHDRAWAL' });
      expect(Number(e.details.usedToday) + 10_000).toBeGreaterThan(100_000);
    }
    // Exactly the limit left the account (held for the payouts), and the day's volume says so.
    const after = await balanceOf(a, usd);
    expect(before.available - after.available).toBe(100_000);
    const outgoing = await a.store.db
      .selectFrom('transactions')
      .select((eb) => eb.fn.sum<number>('sent_amount').as('sum'))
      .where('platform_id', '=', platformId)
      .where('type', '=', 'OUTGOING')
      .where('status', 'not in', ['PENDING', 'FAILED', 'REFUNDED', 'REJECTED', 'EXPIRED'])
      .executeTakeFirstOrThrow();
    expect(Number(outgoing.sum)).toBe(100_000);
    const kept = await a.store.db.selectFrom('transaction_volumes').select('total').where('platform_id', '=', platformId).where('sent_currency', '=', 'USD').where('received_currency', '=', 'USD').execute();
    expect(kept.map((r) => Number(r.total))).toEqual([100_000]);
    // One more, on either server: refused by the first check.
    const more = await b.call('POST', '/quotes', quoteRequest(usd, dest, 100, { immediatelyExecute: true }));
    expect(more.statusCode, more.body).toBe(429);
    expect((more.json() as { details: { usedToday: number; remaining: number } }).details).toMatchObject({ usedToday: 100_000, remaining: 0 });
    await assertLedgerInvariants(a.store);
  }, 120_000);

  it.runIf(STORE === 'postgres')('never updates the platform row to take a lock (payments of a platform do not queue on it)', async () => {
    const platformId = a.running.bootstrap.platform.id;
    const c = await newCustomer(a, ['USD']);
    await fund(a, c.accounts.USD!.id, 50_000);
    const dest = await usdExternal(a, c.id);
    const row = await a.store.db.selectFrom('platforms').select('updated_at').where('id', '=', platformId).executeTakeFirstOrThrow();
    const xmin = async () => (await a.store.db.selectFrom('platforms').select((eb) => eb.ref('xmin' as never).as('x')).where('id', '=', platformId).executeTakeFirstOrThrow()) as { x: unknown };
    const before = await xmin();
    const r = await a.call('POST', '/quotes', quoteRequest(c.accounts.USD!.id, dest, 100, { immediatelyExecute: true }));
    expect([201, 429]).toContain(r.statusCode);
    // xmin changes with every write of the row, even a no-op update.
    expect(await xmin()).toEqual(before);
    expect((await a.store.db.selectFrom('platforms').select('updated_at').where('id', '=', platformId).executeTakeFirstOrThrow()).updated_at).toBe(row.updated_at);
  });
});
