import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listEvents } from '../../src/kernel/events.js';
import { envelope, makeApp, type TestApp } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import { otherPlatformAuth, TERMS } from '../money-helpers.js';

// POST /sandbox/internal-accounts/{accountId}/fund: an immediate credit through the ledger.

interface Amount { amount: number; currency: { code: string; decimals: number } }
interface Account { id: string; customerId?: string; balance: Amount; totalBalance: Amount; status: string }

describe('sandbox funding', () => {
  let t: TestApp;
  let customerId: string;
  let usd: Account;
  let eur: Account;

  const accounts = async (): Promise<Account[]> => {
    const res = await t.call('GET', `/customers/internal-accounts?customerId=${encodeURIComponent(customerId)}`);
    expect(res.statusCode, res.body).toBe(200);
    return (res.json() as { data: Account[] }).data;
  };
  const fund = (id: string, body: unknown, headers?: Record<string, string>) => t.call('POST', `/sandbox/internal-accounts/${encodeURIComponent(id)}/fund`, body, headers);

  beforeAll(async () => {
    t = await makeApp();
    // With the end-user terms on file: on this (unregulated) platform a customer holds accounts only then.
    const c = await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Fay Funder', currencies: ['USD', 'EUR'], endUserTermsConsent: TERMS });
    expect(c.statusCode, c.body).toBe(201);
    customerId = (c.json() as { id: string }).id;
    const list = await accounts();
    usd = list.find((a) => a.balance.currency.code === 'USD')!;
    eur = list.find((a) => a.balance.currency.code === 'EUR')!;
  });
  afterAll(async () => t.close());

  it('credits the available balance at once and answers the account', async () => {
    const res = await fund(usd.id, { amount: 100_000 });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json() as Account;
    expect(body.id).toBe(usd.id);
    expect(body.customerId).toBe(customerId);
    expect(body.balance).toEqual({ amount: 100_000, currency: { code: 'USD', name: 'United States Dollar', symbol: '$', decimals: 2 } });
    expect(body.totalBalance.amount).toBe(100_000);

    const again = await fund(usd.id, { amount: 2_550 });
    expect(again.statusCode, again.body).toBe(200);
    const list = await accounts();
    const after = list.find((a) => a.id === usd.id)!;
    expect(after.balance.amount).toBe(102_550);
    expect(after.totalBalance.amount).toBe(102_550);
    expect(list.find((a) => a.id === eur.id)!.balance.amount).toBe(0);
    await assertLedgerInvariants(t.store);
  });

  it('writes INTERNAL_ACCOUNT.BALANCE_UPDATED with the new balance', async () => {
    const res = await fund(eur.id, { amount: 777 });
    expect(res.statusCode, res.body).toBe(200);
    const platformId = (await t.store.db.selectFrom('internal_accounts').select('platform_id').where('id', '=', eur.id).executeTakeFirstOrThrow()).platform_id;
    const events = await listEvents(t.store.db, platformId, { type: 'INTERNAL_ACCOUNT.BALANCE_UPDATED', resourceId: eur.id });
    expect(events.length).toBe(1);
    const data = events[0]!.payload.data as Account;
    expect(data.id).toBe(eur.id);
    expect(data.balance.amount).toBe(777);
    // The ledger entry: world −777, account +777.
    const entries = await t.store.db.selectFrom('ledger_entries').selectAll().where('reference_id', '=', eur.id).execute();
    expect(entries.map((e) => e.kind)).toEqual(['FUNDING']);
    await assertLedgerInvariants(t.store);
  });

  it('funds the platform’s own account too', async () => {
    const res = await t.call('GET', '/platform/internal-accounts?currency=USD');
    const platformUsd = (res.json() as { data: Account[] }).data[0]!;
    const f = await fund(platformUsd.id, { amount: 5 });
    expect(f.statusCode, f.body).toBe(200);
    expect((f.json() as Account).balance.amount).toBe(platformUsd.balance.amount + 5);
    await assertLedgerInvariants(t.store);
  });

  for (const [label, amount] of [['zero', 0], ['negative', -5], ['non-integer', 10.5], ['a string', '100'], ['above the maximum', 100_000_000_001]] as const) {
    it(`400 INVALID_INPUT for an amount that is ${label}, nothing moved`, async () => {
      const before = (await accounts()).find((a) => a.id === usd.id)!.balance.amount;
      const res = await fund(usd.id, { amount });
      const e = envelope(res, 400, 'INVALID_INPUT');
      expect(JSON.stringify(e.details)).toContain('amount');
      expect((await accounts()).find((a) => a.id === usd.id)!.balance.amount).toBe(before);
    });
  }

  it('400 for a missing amount', async () => {
    envelope(await fund(usd.id, {}), 400, 'INVALID_INPUT');
  });

  it('404 for an unknown account and for another platform’s account', async () => {
    envelope(await fund('InternalAccount:01890000-0000-7000-8000-000000000000', { amount: 1 }), 404, 'REFERENCE_NOT_FOUND');
    const other = await otherPlatformAuth(t);
    envelope(await fund(usd.id, { amount: 1 }, other), 404, 'REFERENCE_NOT_FOUND');
    expect((await accounts()).find((a) => a.id === usd.id)!.balance.amount).toBe(102_550);
    await assertLedgerInvariants(t.store);
  });
});
