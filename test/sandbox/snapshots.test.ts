import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_KEY, basic, envelope, makeApp, STORE, type TestApp } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import { balanceOf, fund, newCustomer, otherPlatformAuth, quoteRequest, usdExternal } from '../money-helpers.js';
import { platformTables, REBUILT_BY_TRIGGERS, selectRows } from '../../src/sandbox/reset/store.js';
import { NOT_IN_PLATFORM_SNAPSHOT } from '../../src/sandbox/snapshots/service.js';

// Sandbox snapshots (issue 36, docs/sandbox/snapshots.md): a platform saved under a name and
// put back exactly, through HTTP; a suite of tests each starting from one snapshot; the
// operator's whole-store snapshot; the error paths.

const ADMIN = { authorization: `Bearer ${ADMIN_KEY}` };

interface Page {
  data: Array<{ id: string }>;
  totalCount: number;
}

/** Every row of the platform's snapshot tables, sorted, as the store holds them (the exact-state check). */
async function platformDump(t: TestApp, platformId: string): Promise<Record<string, unknown[][]>> {
  const out: Record<string, unknown[][]> = {};
  for (const table of await platformTables(t.store, NOT_IN_PLATFORM_SNAPSHOT)) {
    if (REBUILT_BY_TRIGGERS.has(table.name)) continue;
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const rows = await selectRows(t.store.db as any, table, platformId);
    out[table.name] = rows.map((r) => r.map((v) => (v instanceof Uint8Array ? Buffer.from(v).toString('hex') : v))).sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
  }
  return out;
}

/** The observable state of the default platform, through HTTP. */
async function observed(t: TestApp, accountId: string, txId: string): Promise<Record<string, unknown>> {
  const customers = (await t.call('GET', '/customers?limit=100')).json() as Page;
  const config = (await t.call('GET', '/config')).json() as Record<string, unknown>;
  const tx = (await t.call('GET', `/transactions/${encodeURIComponent(txId)}`)).json() as { status: string };
  return {
    customers: customers.data.map((c) => c.id).sort(),
    totalCount: customers.totalCount,
    balance: await balanceOf(t, accountId),
    config: { ...config, updatedAt: undefined },
    settings: (await t.call('GET', '/sandbox/settings')).json(),
    clock: (await t.call('GET', '/sandbox/clock')).json(),
    txStatus: tx.status,
  };
}

async function deliveriesOf(t: TestApp, type: string, resourceId: string): Promise<number> {
  const page = (await t.call('GET', '/sandbox/webhook-deliveries?limit=100')).json() as { data: Array<{ type: string; resourceId: string }> };
  return page.data.filter((d) => d.type === type && d.resourceId === resourceId).length;
}

describe(`sandbox snapshots (${STORE})`, { timeout: 120_000 }, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeApp();
  });
  afterAll(async () => t?.close());

  it('restore puts the platform back exactly: customers, balances, configuration, settings, clock and the pending job, which then settles once; another platform is untouched', async () => {
    const platformId = t.running.bootstrap.platform.id;
    const other = await otherPlatformAuth(t);
    const theirs = await newCustomer(t, ['USD'], { headers: other });
    await fund(t, theirs.accounts.USD!.id, 7_000, other);

    // The state saved: customers, a funded account, a pending payment (its settlement job), a webhook endpoint and a fee.
    const payer = await newCustomer(t, ['USD']);
    await newCustomer(t, ['USD']);
    const usd = payer.accounts.USD!.id;
    await fund(t, usd, 50_000);
    const ext = await usdExternal(t, payer.id);
    expect((await t.call('PATCH', '/config', { webhookEndpoint: 'https://93.184.216.34/payments', feeConfigs: [{ feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'USD', variableFeeBps: 30, fixedFee: { amount: 100, currency: 'USD' } }] })).statusCode).toBe(200);
    const q = await t.call('POST', '/quotes', quoteRequest(usd, ext, 1_000, { immediatelyExecute: true }));
    expect(q.statusCode, q.body).toBe(201);
    const txId = (q.json() as { transactionId: string }).transactionId;
    const jobsBefore = await t.store.db.selectFrom('jobs').select(['kind', 'run_at_ms']).where('platform_id', '=', platformId).execute();
    expect(jobsBefore.length).toBeGreaterThan(0);

    const saved = await t.call('POST', '/sandbox/snapshots', { name: 'seeded' });
    expect(saved.statusCode, saved.body).toBe(201);
    const snap = saved.json() as { name: string; rows: number; tables: Record<string, number>; sandboxTime: string; sizeBytes: number };
    expect(snap).toMatchObject({ name: 'seeded', tables: { customers: 2, platform_configs: 1, jobs: jobsBefore.length } });
    expect(snap.rows).toBeGreaterThan(10);
    expect(snap.tables).not.toHaveProperty('api_tokens');
    expect(snap.tables).not.toHaveProperty('list_counts');
    const before = await observed(t, usd, txId);
    expect(before.txStatus).toBe('PROCESSING');
    const dumpBefore = await platformDump(t, platformId);
    const theirsBefore = { customers: (await t.call('GET', '/customers', undefined, other)).json().totalCount, balance: await balanceOf(t, theirs.accounts.USD!.id, other) };

    // What happens without a restore: the payment settles at the next hour.
    await t.call('POST', '/sandbox/clock/advance', { seconds: 3_600 });
    const settled = await observed(t, usd, txId);
    expect(settled.txStatus).toBe('COMPLETED');
    expect(await deliveriesOf(t, 'OUTGOING_PAYMENT.COMPLETED', txId)).toBe(1);

    // Change everything else too.
    await newCustomer(t, ['USD']);
    await t.call('DELETE', `/customers/${encodeURIComponent(payer.id)}`);
    await fund(t, usd, 5);
    expect((await t.call('PATCH', '/config', { webhookEndpoint: 'https://93.184.216.35/x', feeConfigs: [] })).statusCode).toBe(200);
    expect((await t.call('PATCH', '/sandbox/settings', { skipVerificationPaperwork: true })).statusCode).toBe(200);
    expect(await observed(t, usd, txId)).not.toEqual(before);

    const statementsBefore = t.store.statements();
    const res = await t.call('POST', '/sandbox/snapshots/seeded/restore');
    expect(res.statusCode, res.body).toBe(200);
    const statements = t.store.statements() - statementsBefore;
    const restored = res.json() as { rows: number; deleted: number; durationMs: number; sandboxTime: string };
    expect(restored.rows).toBe(snap.rows);
    expect(restored.sandboxTime).toBe(snap.sandboxTime);
    console.log(`[snapshots ${STORE}] restore of a small platform (${snap.rows} rows, ${snap.sizeBytes} bytes compressed): ${restored.durationMs} ms on the server, ${statements} statements with the request's own`);

    // Back exactly: through HTTP, and row by row in the store.
    expect(await observed(t, usd, txId)).toEqual(before);
    expect(await platformDump(t, platformId)).toEqual(dumpBefore);
    expect(await t.store.db.selectFrom('jobs').select(['kind', 'run_at_ms']).where('platform_id', '=', platformId).execute()).toEqual(jobsBefore);
    // The platform's other platform saw nothing.
    expect({ customers: (await t.call('GET', '/customers', undefined, other)).json().totalCount, balance: await balanceOf(t, theirs.accounts.USD!.id, other) }).toEqual(theirsBefore);

    // The pending job runs again as it would have: the same hour settles it, once.
    await t.call('POST', '/sandbox/clock/advance', { seconds: 3_600 });
    expect(await observed(t, usd, txId)).toEqual(settled);
    expect(await deliveriesOf(t, 'OUTGOING_PAYMENT.COMPLETED', txId)).toBe(1);
    await assertLedgerInvariants(t.store);
  });

  it('lists, reads and deletes snapshots; a name is unique per platform (409, or ?replace=true); another platform sees none of them', async () => {
    const other = await otherPlatformAuth(t);
    expect((await t.call('POST', '/sandbox/snapshots', { name: 'listed-1' })).statusCode).toBe(201);
    const dup = envelope(await t.call('POST', '/sandbox/snapshots', { name: 'listed-1' }), 409, 'CONFLICT');
    expect(dup.message).toMatch(/replace=true/);
    await newCustomer(t, ['USD']);
    const replaced = await t.call('POST', '/sandbox/snapshots?replace=true', { name: 'listed-1' });
    expect(replaced.statusCode, replaced.body).toBe(201);
    // The same name on another platform is another snapshot.
    expect((await t.call('POST', '/sandbox/snapshots', { name: 'listed-1' }, other)).statusCode).toBe(201);

    const list = (await t.call('GET', '/sandbox/snapshots')).json() as { data: Array<{ name: string; createdAt: string; sandboxTime: string; rows: number; sizeBytes: number }> };
    const names = list.data.map((s) => s.name);
    expect(names).toContain('listed-1');
    expect(names).toEqual([...names].sort());
    const one = list.data.find((s) => s.name === 'listed-1')!;
    expect(one.sizeBytes).toBeGreaterThan(0);
    expect((await t.call('GET', '/sandbox/snapshots/listed-1')).json()).toEqual(one);
    expect(((await t.call('GET', '/sandbox/snapshots', undefined, other)).json() as { data: unknown[] }).data.length).toBe(1);

    expect((await t.call('DELETE', '/sandbox/snapshots/listed-1')).statusCode).toBe(204);
    envelope(await t.call('GET', '/sandbox/snapshots/listed-1'), 404, 'REFERENCE_NOT_FOUND');
    // The other platform's copy of the name is still there.
    expect((await t.call('GET', '/sandbox/snapshots/listed-1', undefined, other)).statusCode).toBe(200);
  });

  it('error paths: every invalid field listed, unknown and foreign names 404, credentials and permission', async () => {
    const other = await otherPlatformAuth(t);
    expect((await t.call('POST', '/sandbox/snapshots', { name: 'mine-only' })).statusCode).toBe(201);

    const bad = envelope(await t.call('POST', '/sandbox/snapshots', { name: 'has space/slash', extra: 1 }), 400, 'INVALID_INPUT');
    const fields = (bad.details!.errors as Array<{ field: string }>).map((e) => e.field).sort();
    expect(fields).toEqual(['extra', 'name']);
    envelope(await t.call('POST', '/sandbox/snapshots', {}), 400, 'INVALID_INPUT');
    envelope(await t.call('POST', '/sandbox/snapshots', { name: 'x'.repeat(65) }), 400, 'INVALID_INPUT');

    for (const [method, path] of [['GET', '/sandbox/snapshots/nope'], ['POST', '/sandbox/snapshots/nope/restore'], ['DELETE', '/sandbox/snapshots/nope']] as const) {
      envelope(await t.call(method, path), 404, 'REFERENCE_NOT_FOUND');
      // Another platform's snapshot is the same 404 and stays as it was.
      envelope(await t.call(method, path.replace('nope', 'mine-only'), undefined, other), 404, 'REFERENCE_NOT_FOUND');
    }
    expect((await t.call('GET', '/sandbox/snapshots/mine-only')).statusCode).toBe(200);

    envelope(await t.call('GET', '/sandbox/snapshots', undefined, { authorization: '' }), 401, 'UNAUTHORIZED');
    const viewer = (await t.call('POST', '/tokens', { name: 'viewer', permissions: ['VIEW'] })).json() as { clientId: string; clientSecret: string };
    const viewOnly = { authorization: basic(viewer.clientId, viewer.clientSecret) };
    expect((await t.call('GET', '/sandbox/snapshots', undefined, viewOnly)).statusCode).toBe(200);
    envelope(await t.call('POST', '/sandbox/snapshots', { name: 'by-viewer' }, viewOnly), 403, 'FORBIDDEN');
    envelope(await t.call('POST', '/sandbox/snapshots/mine-only/restore', undefined, viewOnly), 403, 'FORBIDDEN');
    envelope(await t.call('DELETE', '/sandbox/snapshots/mine-only', undefined, viewOnly), 403, 'FORBIDDEN');

    envelope(await t.call('GET', '/admin/snapshots', undefined, { authorization: 'Bearer wrong' }), 401, 'UNAUTHORIZED');
    envelope(await t.call('POST', '/admin/snapshots/nope/restore', undefined, ADMIN), 404, 'REFERENCE_NOT_FOUND');
    // A platform's snapshot is not the operator's.
    envelope(await t.call('GET', '/admin/snapshots/mine-only', undefined, ADMIN), 404, 'REFERENCE_NOT_FOUND');
  });

  it('a reset keeps the snapshots, and a snapshot restores over a reset', async () => {
    const c = await newCustomer(t, ['USD']);
    expect((await t.call('POST', '/sandbox/snapshots', { name: 'before-reset' })).statusCode).toBe(201);
    expect((await t.call('POST', '/sandbox/reset')).statusCode).toBe(200);
    envelope(await t.call('GET', `/customers/${encodeURIComponent(c.id)}`), 404);
    expect((await t.call('GET', '/sandbox/snapshots/before-reset')).statusCode).toBe(200);
    expect((await t.call('POST', '/sandbox/snapshots/before-reset/restore')).statusCode).toBe(200);
    expect((await t.call('GET', `/customers/${encodeURIComponent(c.id)}`)).statusCode).toBe(200);
    await assertLedgerInvariants(t.store);
  });

  it('the operator snapshots the whole store: every platform back, platforms made after it gone', async () => {
    const before = (await t.call('GET', '/customers?limit=100')).json() as Page;
    const kept = await otherPlatformAuth(t);
    const keptCustomer = await newCustomer(t, ['USD'], { headers: kept });
    const saved = await t.call('POST', '/admin/snapshots', { name: 'everything' }, ADMIN);
    expect(saved.statusCode, saved.body).toBe(201);
    expect((saved.json() as { tables: Record<string, number> }).tables).toMatchObject({ platforms: expect.any(Number), api_tokens: expect.any(Number) });
    envelope(await t.call('POST', '/admin/snapshots', { name: 'everything' }, ADMIN), 409, 'CONFLICT');
    expect(((await t.call('GET', '/admin/snapshots', undefined, ADMIN)).json() as { data: Array<{ name: string }> }).data.map((s) => s.name)).toEqual(['everything']);

    const later = await otherPlatformAuth(t);
    expect((await t.call('GET', '/customers', undefined, later)).statusCode).toBe(200);
    await newCustomer(t, ['USD']);
    await t.call('DELETE', `/customers/${encodeURIComponent(keptCustomer.id)}`, undefined, kept);

    const res = await t.call('POST', '/admin/snapshots/everything/restore', undefined, ADMIN);
    expect(res.statusCode, res.body).toBe(200);
    envelope(await t.call('GET', '/customers', undefined, later), 401, 'UNAUTHORIZED');
    const after = (await t.call('GET', '/customers?limit=100')).json() as Page;
    expect(after.totalCount).toBe(before.totalCount);
    expect(after.data.map((c) => c.id)).toEqual(before.data.map((c) => c.id));
    const theirs = await t.call('GET', `/customers/${encodeURIComponent(keptCustomer.id)}`, undefined, kept);
    expect(theirs.statusCode).toBe(200);
    expect((theirs.json() as { isDeleted?: boolean }).isDeleted ?? false).toBe(false);
    // Platform snapshots survive a whole-store restore (they are not part of it).
    expect((await t.call('GET', '/sandbox/snapshots/seeded')).statusCode).toBe(200);
    expect((await t.call('DELETE', '/admin/snapshots/everything', undefined, ADMIN)).statusCode).toBe(204);
    await assertLedgerInvariants(t.store);
  });
});

// The point of snapshots: seed once, restore before each test. Each test below changes the
// platform, and each one starts from the same state.
describe(`a suite of tests each starting from one snapshot (${STORE})`, () => {
  let t: TestApp;
  let accountId: string;
  let externalId: string;
  let seeded: { customers: string[]; balance: { available: number; total: number } };
  beforeAll(async () => {
    t = await makeApp();
    const c = await newCustomer(t, ['USD']);
    accountId = c.accounts.USD!.id;
    externalId = await usdExternal(t, c.id);
    await fund(t, accountId, 10_000);
    expect((await t.call('POST', '/sandbox/snapshots', { name: 'suite' })).statusCode).toBe(201);
    seeded = { customers: ((await t.call('GET', '/customers')).json() as Page).data.map((x) => x.id), balance: await balanceOf(t, accountId) };
  });
  const durations: number[] = [];
  afterAll(async () => {
    // Measured, never asserted: docs/sandbox/snapshots.md "How fast".
    const sorted = [...durations].sort((a, b) => a - b);
    console.log(`[snapshots ${STORE}] ${sorted.length} restores before each test: median ${sorted[Math.floor(sorted.length / 2)]} ms, min ${sorted[0]} ms on the server`);
    await t?.close();
  });
  beforeEach(async () => {
    const res = await t.call('POST', '/sandbox/snapshots/suite/restore');
    expect(res.statusCode, res.body).toBe(200);
    durations.push((res.json() as { durationMs: number }).durationMs);
  });

  const starts = async () => {
    expect(((await t.call('GET', '/customers')).json() as Page).data.map((x) => x.id)).toEqual(seeded.customers);
    expect(await balanceOf(t, accountId)).toEqual(seeded.balance);
  };

  it('pays out part of the balance', async () => {
    await starts();
    const q = await t.call('POST', '/quotes', quoteRequest(accountId, externalId, 4_000, { immediatelyExecute: true }));
    expect(q.statusCode, q.body).toBe(201);
    await t.call('POST', '/sandbox/clock/advance', { seconds: 3_600 });
    expect((await balanceOf(t, accountId)).total).toBeLessThan(seeded.balance.total);
  });

  it('adds customers and funds', async () => {
    await starts();
    await newCustomer(t, ['USD']);
    await fund(t, accountId, 1);
    expect(((await t.call('GET', '/customers')).json() as Page).totalCount).toBe(seeded.customers.length + 1);
  });

  it('deletes the customer', async () => {
    await starts();
    expect((await t.call('DELETE', `/customers/${encodeURIComponent(seeded.customers[0]!)}`)).statusCode).toBe(200);
  });

  it('still starts from the snapshot after all that, with a consistent ledger', async () => {
    await starts();
    await assertLedgerInvariants(t.store);
  });
});
