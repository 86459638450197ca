import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envelope, makeApp, STORE, type TestApp } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import { balanceOf, fund, newCustomer, otherPlatformAuth, quoteRequest, type QuoteBody, usdExternal } from '../money-helpers.js';

// The deprecated same-currency transfers without `amount` (optional in the reference): a
// transfer-out moves the whole AVAILABLE balance of its internal-account source; a source
// whose balance cannot be known (an external account being pulled from) needs the amount;
// nothing available is refused. A refusal writes nothing.

interface Tx {
  id: string;
  status: string;
  type: string;
  sentAmount: { amount: number; currency: { code: string } };
  receivedAmount?: { amount: number };
  source: { accountId?: string };
  destination: { accountId?: string };
}

describe(`transfers without an amount (${STORE})`, () => {
  let t: TestApp;

  const counts = async () => ({
    transactions: (await t.store.db.selectFrom('transactions').select('id').execute()).length,
    quotes: (await t.store.db.selectFrom('quotes').select('id').execute()).length,
    entries: (await t.store.db.selectFrom('ledger_entries').select('id').execute()).length,
  });
  const advance = async (seconds: number) => expect((await t.call('POST', '/sandbox/clock/advance', { seconds })).statusCode).toBe(200);
  const getTx = async (id: string) => (await t.call('GET', `/transactions/${encodeURIComponent(id)}`)).json() as Tx;

  beforeAll(async () => {
    t = await makeApp();
  });
  afterAll(async () => t.close());

  it('transfer-out without amount moves the whole available balance (not what is held), and completes', async () => {
    const c = await newCustomer(t, ['USD']);
    const src = c.accounts.USD!.id;
    await fund(t, src, 100_000);
    // A long (003) payout keeps 30,000 held: available 70,000, total 100,000.
    const slow = await usdExternal(t, c.id, '555000003');
    const q = await t.call('POST', '/quotes', { ...quoteRequest(src, slow, 30_000), immediatelyExecute: true });
    expect(q.statusCode, q.body).toBe(201);
    expect(await balanceOf(t, src)).toEqual({ available: 70_000, total: 100_000 });

    const ext = await usdExternal(t, c.id, '555000789');
    const res = await t.call('POST', '/transfer-out', { source: { accountId: src }, destination: { accountId: ext } });
    expect(res.statusCode, res.body).toBe(201);
    const tx = res.json() as Tx;
    expect(tx).toMatchObject({ status: 'PENDING', type: 'OUTGOING', sentAmount: { amount: 70_000, currency: { code: 'USD' } }, receivedAmount: { amount: 70_000 } });
    expect(tx.source.accountId).toBe(src);
    expect(tx.destination.accountId).toBe(ext);
    expect(await balanceOf(t, src)).toEqual({ available: 0, total: 100_000 });
    await advance(1);
    expect((await getTx(tx.id)).status).toBe('COMPLETED');
    expect(await balanceOf(t, src)).toEqual({ available: 0, total: 30_000 });
    await assertLedgerInvariants(t.store);
  });

  it('transfer-out without amount from the platform’s own account', async () => {
    const list = await t.call('GET', '/platform/internal-accounts?currency=USD');
    const platformUsd = (list.json() as { data: Array<{ id: string }> }).data[0]!.id;
    await fund(t, platformUsd, 4_321);
    const before = await balanceOf(t, platformUsd);
    const c = await newCustomer(t, ['USD']);
    const ext = await usdExternal(t, c.id, '555001789');
    const res = await t.call('POST', '/transfer-out', { source: { accountId: platformUsd }, destination: { accountId: ext } });
    expect(res.statusCode, res.body).toBe(201);
    expect((res.json() as Tx).sentAmount.amount).toBe(before.available);
    expect((await balanceOf(t, platformUsd)).available).toBe(0);
    await advance(1);
    await assertLedgerInvariants(t.store);
  });

  it('transfer-in without amount: 400 INVALID_INPUT naming amount (an external source’s balance cannot be known), nothing written', async () => {
    const c = await newCustomer(t, ['USD']);
    const ext = await usdExternal(t, c.id, '555002321');
    const before = await counts();
    const e = envelope(await t.call('POST', '/transfer-in', { source: { accountId: ext }, destination: { accountId: c.accounts.USD!.id } }), 400, 'INVALID_INPUT');
    const errors = (e.details as { errors: Array<{ field: string; message: string }> }).errors;
    expect(errors).toHaveLength(1);
    expect(errors[0]!.field).toBe('amount');
    expect(errors[0]!.message).toContain('required when the source is an external account');
    expect(await counts()).toEqual(before);
    expect(await balanceOf(t, c.accounts.USD!.id)).toEqual({ available: 0, total: 0 });
    // With the amount it pulls as before.
    const ok = await t.call('POST', '/transfer-in', { source: { accountId: ext }, destination: { accountId: c.accounts.USD!.id }, amount: 2_500 });
    expect(ok.statusCode, ok.body).toBe(201);
    expect(ok.json()).toMatchObject({ status: 'PENDING', type: 'INCOMING', receivedAmount: { amount: 2_500 } });
    await advance(1);
    expect(await balanceOf(t, c.accounts.USD!.id)).toEqual({ available: 2_500, total: 2_500 });
    await assertLedgerInvariants(t.store);
  });

  it('nothing available: 400 INVALID_AMOUNT (also when everything is held), nothing written', async () => {
    const c = await newCustomer(t, ['USD']);
    const src = c.accounts.USD!.id;
    const ext = await usdExternal(t, c.id, '555003789');
    let before = await counts();
    const empty = envelope(await t.call('POST', '/transfer-out', { source: { accountId: src }, destination: { accountId: ext } }), 400, 'INVALID_AMOUNT');
    expect(empty.details).toMatchObject({ reason: 'NO_AVAILABLE_BALANCE', field: 'amount', accountId: src, currency: 'USD', available: 0 });
    expect(await counts()).toEqual(before);

    await fund(t, src, 8_000);
    const slow = await usdExternal(t, c.id, '555004003');
    const q = (await t.call('POST', '/quotes', { ...quoteRequest(src, slow, 8_000), immediatelyExecute: true })).json() as QuoteBody;
    expect(q.status).toBe('PROCESSING');
    before = await counts();
    const held = envelope(await t.call('POST', '/transfer-out', { source: { accountId: src }, destination: { accountId: ext } }), 400, 'INVALID_AMOUNT');
    expect(held.details).toMatchObject({ reason: 'NO_AVAILABLE_BALANCE', available: 0 });
    expect(await counts()).toEqual(before);
    expect(await balanceOf(t, src)).toEqual({ available: 0, total: 8_000 });
    await assertLedgerInvariants(t.store);
  });

  it('unknown or another platform’s source without amount: 404, nothing written', async () => {
    const c = await newCustomer(t, ['USD']);
    await fund(t, c.accounts.USD!.id, 1_000);
    const ext = await usdExternal(t, c.id, '555005789');
    const before = await counts();
    envelope(await t.call('POST', '/transfer-out', { source: { accountId: 'InternalAccount:01900000-0000-7000-8000-000000000000' }, destination: { accountId: ext } }), 404, 'REFERENCE_NOT_FOUND');
    envelope(await t.call('POST', '/transfer-in', { source: { accountId: 'ExternalAccount:01900000-0000-7000-8000-000000000000' }, destination: { accountId: c.accounts.USD!.id } }), 404, 'REFERENCE_NOT_FOUND');
    const other = await otherPlatformAuth(t);
    envelope(await t.call('POST', '/transfer-out', { source: { accountId: c.accounts.USD!.id }, destination: { accountId: ext } }, other), 404, 'REFERENCE_NOT_FOUND');
    expect(await counts()).toEqual(before);
    expect(await balanceOf(t, c.accounts.USD!.id)).toEqual({ available: 1_000, total: 1_000 });
    await assertLedgerInvariants(t.store);
  });

  it('an amount given is still validated: 0 or negative is 400 INVALID_INPUT on amount', async () => {
    const c = await newCustomer(t, ['USD']);
    const ext = await usdExternal(t, c.id, '555006789');
    for (const amount of [0, -5, 1.5]) {
      const e = envelope(await t.call('POST', '/transfer-out', { source: { accountId: c.accounts.USD!.id }, destination: { accountId: ext }, amount }), 400, 'INVALID_INPUT');
      expect((e.details as { errors: Array<{ field: string }> }).errors.map((x) => x.field)).toEqual(['amount']);
    }
  });
});
