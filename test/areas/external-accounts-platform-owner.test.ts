import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envelope, makeApp, STORE, type TestApp } from '../helpers.js';

// POST /customers/external-accounts without customerId (docs/external-accounts.md): the
// reference's "created on behalf of the platform". The account is the one
// POST /platform/external-accounts makes: same validation, same answer, read, listed and
// deleted under /platform/external-accounts, and the same account for the 409 check.

type Json = Record<string, unknown>;
interface Account {
  id: string;
  customerId?: string;
  status: string;
  currency: string;
  platformAccountId?: string;
  defaultUmaDepositAccount?: boolean;
  accountInfo: Json & { accountType: string };
}
interface List {
  data: Account[];
  totalCount: number;
}

const PERSON = { beneficiaryType: 'INDIVIDUAL', fullName: 'Maria Garcia Lopez', countryOfResidence: 'US' };
const usd = (accountNumber: string): Json => ({ accountType: 'USD_ACCOUNT', accountNumber, routingNumber: '021000021', beneficiary: PERSON });

describe(`external accounts created without customerId (${STORE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeApp();
  });
  afterAll(async () => t?.close());

  it('creates the platform’s own account, the one POST /platform/external-accounts makes', async () => {
    const res = await t.call('POST', '/customers/external-accounts', { currency: 'USD', platformAccountId: 'ops-1', accountInfo: usd('4242001') });
    expect(res.statusCode, res.body).toBe(201);
    const a = res.json() as Account;
    expect(a.id).toMatch(/^ExternalAccount:/);
    expect(a.customerId).toBeUndefined();
    expect(a.defaultUmaDepositAccount).toBeUndefined();
    expect(a).toMatchObject({ status: 'ACTIVE', currency: 'USD', platformAccountId: 'ops-1', accountInfo: { accountType: 'USD_ACCOUNT', accountNumber: '4242001' } });

    // The same answer shape as the platform path's for an equivalent body.
    const twin = (await t.call('POST', '/platform/external-accounts', { currency: 'USD', platformAccountId: 'ops-2', accountInfo: usd('4242002') })).json() as Account;
    expect(Object.keys(a).sort()).toEqual(Object.keys(twin).sort());

    // Read, listed and deleted as a platform account; the customer paths do not show it.
    expect((await t.call('GET', `/platform/external-accounts/${a.id}`)).json()).toEqual(a);
    envelope(await t.call('GET', `/customers/external-accounts/${a.id}`), 404, 'REFERENCE_NOT_FOUND');
    const platformList = (await t.call('GET', '/platform/external-accounts')).json() as List;
    expect(platformList.data.map((x) => x.id)).toEqual([twin.id, a.id]);
    const customerList = (await t.call('GET', '/customers/external-accounts')).json() as List;
    expect(customerList.data.map((x) => x.id)).not.toContain(a.id);

    // The same account for the one-registration-per-owner rule, both ways.
    envelope(await t.call('POST', '/platform/external-accounts', { currency: 'USD', accountInfo: usd('4242001') }), 409, 'CONFLICT');
    envelope(await t.call('POST', '/customers/external-accounts', { currency: 'USD', accountInfo: usd('4242002') }), 409, 'CONFLICT');

    expect((await t.call('DELETE', `/platform/external-accounts/${a.id}`)).statusCode).toBe(204);
    envelope(await t.call('GET', `/platform/external-accounts/${a.id}`), 404, 'REFERENCE_NOT_FOUND');
  });

  it('validates the body as the platform path does: every problem in one 400, nothing stored', async () => {
    const body = { currency: 'GBP', accountInfo: { accountType: 'USD_ACCOUNT', accountNumber: '1', routingNumber: '021000022', beneficiary: PERSON } };
    const viaCustomers = envelope(await t.call('POST', '/customers/external-accounts', body), 400, 'INVALID_INPUT');
    const viaPlatform = envelope(await t.call('POST', '/platform/external-accounts', body), 400, 'INVALID_INPUT');
    const fields = (e: { details?: Json }) => (e.details!.errors as Array<{ field: string }>).map((x) => x.field).sort();
    expect(fields(viaCustomers)).toEqual(['accountInfo.routingNumber', 'currency']);
    expect(fields(viaCustomers)).toEqual(fields(viaPlatform));
    envelope(await t.call('POST', '/customers/external-accounts', { currency: 'USD', accountInfo: usd('9900105') }), 400, 'INVALID_BANK_ACCOUNT');
    const before = ((await t.call('GET', '/platform/external-accounts')).json() as List).totalCount;
    expect(before).toBe(1);
  });

  it('defaultUmaDepositAccount is a customer setting: without customerId it is ignored, as on the platform path', async () => {
    const res = await t.call('POST', '/customers/external-accounts', { currency: 'USD', defaultUmaDepositAccount: true, accountInfo: usd('4242003') });
    expect(res.statusCode, res.body).toBe(201);
    expect((res.json() as Account).defaultUmaDepositAccount).toBeUndefined();
    expect((res.json() as Account).customerId).toBeUndefined();
  });

  it('a customerId that is given still has to name a live customer', async () => {
    const e = envelope(await t.call('POST', '/customers/external-accounts', { customerId: 'Customer:01950000-0000-7000-8000-000000000000', currency: 'USD', accountInfo: usd('4242004') }), 400, 'INVALID_INPUT');
    expect((e.details!.errors as Array<{ field: string }>).map((x) => x.field)).toEqual(['customerId']);
  });

  it('the served OpenAPI document shows customerId as optional', async () => {
    const doc = (await t.call('GET', '/openapi.json')).json() as { components: { schemas: Record<string, { required?: string[]; properties: Json }> } };
    const schema = doc.components.schemas.ExternalAccountCreateRequest!;
    expect(schema.properties.customerId).toBeDefined();
    expect(schema.required ?? []).not.toContain('customerId');
  });
});
