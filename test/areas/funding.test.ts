import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listEvents } from '../../src/kernel/events.js';
import { envelope, makeApp, STORE, type TestApp } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import { otherPlatformAuth, TERMS, type TxBody } from '../money-helpers.js';
import { Receiver } from '../webhook-receiver.js';

// POST /sandbox/internal-accounts/{accountId}/fund: an immediate credit through the ledger,
// as a deposit: a COMPLETED INCOMING transaction and its INCOMING_PAYMENT.COMPLETED webhook.

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
    // The ledger entry: world −777, account +777, naming the funding's transaction.
    const [tx] = await t.store.db.selectFrom('transactions').select('id').where('destination_account_id', '=', eur.id).execute();
    const entries = await t.store.db.selectFrom('ledger_entries').selectAll().where('reference_id', '=', tx!.id).execute();
    expect(entries.map((e) => [e.kind, e.idempotency_key])).toEqual([['FUNDING', `funding:${tx!.id}`]]);
    const postings = await t.store.db.selectFrom('ledger_postings').select(['account_id', 'bucket', 'amount']).where('entry_id', '=', entries[0]!.id).orderBy('line').execute();
    expect(postings.map((p) => [p.account_id === eur.id ? 'account' : 'world', p.bucket, Number(p.amount)])).toEqual([
      ['world', 'available', -777],
      ['account', 'available', 777],
    ]);
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

  it('404 for an unknown account and for another platform’s account; no transaction written', async () => {
    const txCount = async () => (await t.store.db.selectFrom('transactions').select('id').execute()).length;
    const before = await txCount();
    envelope(await fund('InternalAccount:01890000-0000-7000-8000-000000000000', { amount: 1 }), 404, 'REFERENCE_NOT_FOUND');
    const other = await otherPlatformAuth(t);
    envelope(await fund(usd.id, { amount: 1 }, other), 404, 'REFERENCE_NOT_FOUND');
    envelope(await fund(usd.id, { amount: 0 }), 400, 'INVALID_INPUT');
    expect(await txCount()).toBe(before);
    expect((await accounts()).find((a) => a.id === usd.id)!.balance.amount).toBe(102_550);
    await assertLedgerInvariants(t.store);
  });
});

/** A deposit as the API shows it: the shared transaction body, with its own source and destination. */
type Tx = Omit<TxBody, 'source' | 'destination' | 'receivedAmount' | 'fees'> & {
  source: Record<string, unknown>;
  destination: Record<string, unknown>;
  receivedAmount: Amount;
  fees?: number;
  description?: string;
  reconciliationInstructions?: { reference?: string };
  failureReason?: string;
};

describe(`sandbox funding: the incoming transaction and its webhooks (${STORE})`, () => {
  let t: TestApp;
  let receiver: Receiver;
  let platformId: string;

  const fund = (id: string, amount: number, headers?: Record<string, string>) => t.call('POST', `/sandbox/internal-accounts/${encodeURIComponent(id)}/fund`, { amount }, headers);
  const newCustomer = async (currencies: string[]) => {
    const c = await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Dee Positor', platformCustomerId: `ext-${Math.random().toString(36).slice(2, 9)}`, currencies, endUserTermsConsent: TERMS });
    expect(c.statusCode, c.body).toBe(201);
    const body = c.json() as { id: string; platformCustomerId: string };
    const list = await t.call('GET', `/customers/internal-accounts?customerId=${encodeURIComponent(body.id)}`);
    return { ...body, accounts: (list.json() as { data: Account[] }).data };
  };
  const hooksFor = (id: string) => receiver.got.filter((r) => (r.json.data as { id?: string }).id === id);
  const txsTo = async (accountId: string) => t.store.db.selectFrom('transactions').selectAll().where('destination_account_id', '=', accountId).execute();

  beforeAll(async () => {
    t = await makeApp();
    platformId = (await t.store.db.selectFrom('platforms').select('id').where('is_default', '=', 1).executeTakeFirstOrThrow()).id;
    receiver = await new Receiver().start();
    expect((await t.call('PATCH', '/config', { webhookEndpoint: receiver.url })).statusCode).toBe(200);
  });
  afterAll(async () => {
    await receiver.stop();
    await t.close();
  });

  it('a COMPLETED INCOMING transaction into the account, in GET /transactions and GET /transactions/{id}; the answer is still the account', async () => {
    const c = await newCustomer(['USD']);
    const usd = c.accounts[0]!;
    const res = await fund(usd.id, 100_000);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ id: usd.id, balance: { amount: 100_000 }, totalBalance: { amount: 100_000 } });
    expect(Object.keys(res.json() as object)).not.toContain('direction');

    const list = await t.call('GET', `/transactions?customerId=${encodeURIComponent(c.id)}&type=INCOMING`);
    expect(list.statusCode, list.body).toBe(200);
    const data = (list.json() as { data: Tx[] }).data;
    expect(data).toHaveLength(1);
    const tx = data[0]!;
    expect(tx.id).toMatch(/^Transaction:/);
    expect(tx).toMatchObject({
      status: 'COMPLETED',
      type: 'INCOMING',
      direction: 'CREDIT',
      customerId: c.id,
      platformCustomerId: c.platformCustomerId,
      source: { sourceType: 'REALTIME_FUNDING', currency: 'USD', customerId: c.id },
      destination: { destinationType: 'ACCOUNT', accountId: usd.id, currency: 'USD' },
      sentAmount: { amount: 100_000, currency: { code: 'USD', decimals: 2 } },
      receivedAmount: { amount: 100_000, currency: { code: 'USD', name: 'United States Dollar', symbol: '$', decimals: 2 } },
      fees: 0,
      description: 'Internal account funding (sandbox)',
    });
    expect(tx.failureReason).toBeUndefined();
    expect(tx.settledAt).toBe(tx.createdAt);
    expect(tx.reconciliationInstructions?.reference).toMatch(/^UMA-/);
    const one = await t.call('GET', `/transactions/${encodeURIComponent(tx.id)}`);
    expect(one.statusCode, one.body).toBe(200);
    expect(one.json()).toEqual(tx);
    expect(((await t.call('GET', `/transactions?status=COMPLETED&type=INCOMING`)).json() as { data: Tx[] }).data.map((x) => x.id)).toContain(tx.id);
    // Another platform does not see it.
    envelope(await t.call('GET', `/transactions/${encodeURIComponent(tx.id)}`, undefined, await otherPlatformAuth(t)), 404, 'TRANSACTION_NOT_FOUND');
    await assertLedgerInvariants(t.store);
  });

  it('INCOMING_PAYMENT.COMPLETED (the transaction) and INTERNAL_ACCOUNT.BALANCE_UPDATED reach the endpoint', async () => {
    const c = await newCustomer(['EUR']);
    const eur = c.accounts[0]!;
    expect((await fund(eur.id, 4_200)).statusCode).toBe(200);
    await t.running.webhooks.runDue();
    const [tx] = await txsTo(eur.id);
    const txHooks = hooksFor(tx!.id);
    expect(txHooks.map((r) => r.json.type)).toEqual(['INCOMING_PAYMENT.COMPLETED']);
    expect(txHooks[0]!.json.data).toEqual((await t.call('GET', `/transactions/${encodeURIComponent(tx!.id)}`)).json());
    const balanceHooks = hooksFor(eur.id);
    expect(balanceHooks.map((r) => r.json.type)).toEqual(['INTERNAL_ACCOUNT.BALANCE_UPDATED']);
    expect(balanceHooks[0]!.json.data).toMatchObject({ id: eur.id, balance: { amount: 4_200 } });
    const events = await listEvents(t.store.db, platformId, { resourceId: tx!.id });
    expect(events.map((e) => e.type)).toEqual(['INCOMING_PAYMENT.COMPLETED']);
    await assertLedgerInvariants(t.store);
  });

  it('an Idempotency-Key retry answers the same and funds once: one transaction, one entry, one event', async () => {
    const c = await newCustomer(['USD']);
    const usd = c.accounts[0]!;
    const key = { 'idempotency-key': `fund-${usd.id}` };
    const first = await fund(usd.id, 7_500, key);
    const again = await fund(usd.id, 7_500, key);
    expect(first.statusCode, first.body).toBe(200);
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json()).toEqual(first.json());
    const txs = await txsTo(usd.id);
    expect(txs).toHaveLength(1);
    expect(await t.store.db.selectFrom('ledger_entries').select('id').where('reference_id', '=', txs[0]!.id).execute()).toHaveLength(1);
    expect((await listEvents(t.store.db, platformId, { resourceId: txs[0]!.id })).map((e) => e.type)).toEqual(['INCOMING_PAYMENT.COMPLETED']);
    expect((await listEvents(t.store.db, platformId, { type: 'INTERNAL_ACCOUNT.BALANCE_UPDATED', resourceId: usd.id })).length).toBe(1);
    const list = await t.call('GET', `/customers/internal-accounts?customerId=${encodeURIComponent(c.id)}`);
    expect((list.json() as { data: Account[] }).data[0]!.balance.amount).toBe(7_500);
    // Without the key, a second call is a second deposit.
    expect((await fund(usd.id, 7_500)).statusCode).toBe(200);
    expect(await txsTo(usd.id)).toHaveLength(2);
    await assertLedgerInvariants(t.store);
  });

  it('the platform’s own account: the transaction is the platform’s (customerId the platform id)', async () => {
    const res = await t.call('GET', '/platform/internal-accounts?currency=USD');
    const platformUsd = (res.json() as { data: Account[] }).data[0]!;
    expect((await fund(platformUsd.id, 321)).statusCode).toBe(200);
    const [row] = await txsTo(platformUsd.id);
    const tx = (await t.call('GET', `/transactions/${encodeURIComponent(row!.id)}`)).json() as Tx;
    expect(tx).toMatchObject({ customerId: platformId, platformCustomerId: platformId, status: 'COMPLETED', receivedAmount: { amount: 321 } });
    expect(tx.source).toEqual({ sourceType: 'REALTIME_FUNDING', currency: 'USD' });
    await assertLedgerInvariants(t.store);
  });
});
