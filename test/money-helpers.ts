import { expect } from 'vitest';
import { ADMIN_KEY, basic, type TestApp } from './helpers.js';

// Fixtures of the money tests (funding, quotes, transactions).

export interface Amount { amount: number; currency: { code: string; name: string; symbol: string; decimals: number } }
export interface Account { id: string; customerId?: string; balance: Amount; totalBalance: Amount; status: string }
export interface QuoteBody {
  id: string;
  status: string;
  createdAt: string;
  expiresAt: string;
  source: { sourceType: string; accountId: string; customerId?: string };
  destination: { destinationType: string; accountId: string; paymentRail?: string };
  sendingCurrency: { code: string };
  receivingCurrency: { code: string };
  totalSendingAmount: number;
  totalReceivingAmount: number;
  exchangeRate: number;
  feesIncluded: number;
  platformFeesIncluded: number;
  transactionId: string;
  rateDetails: Record<string, number>;
}
export interface TxBody {
  id: string;
  status: string;
  type: string;
  direction: string;
  customerId: string;
  platformCustomerId: string;
  source: { sourceType: string; accountId: string; currency?: string };
  destination: { destinationType: string; accountId: string; currency?: string };
  sentAmount: Amount;
  receivedAmount?: Amount;
  exchangeRate?: number;
  fees: number;
  platformFees: number;
  quoteId?: string;
  settledAt?: string;
  createdAt: string;
  updatedAt: string;
  paymentRail: string | null;
}

export const TERMS = { acceptedAt: '2025-10-01T00:00:00Z', ipAddress: '203.0.113.9', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' };
export const PERSON = { beneficiaryType: 'INDIVIDUAL', fullName: 'Rita Receiver', countryOfResidence: 'US' };

/**
 * A customer in `currencies`; by default APPROVED (set in the store) with the end-user terms
 * accepted at create, so it holds an internal account per currency. `terms: false` creates
 * it without them: on an unregulated platform it then has no internal accounts.
 */
export async function newCustomer(t: TestApp, currencies: string[], opts: { approved?: boolean; terms?: boolean; headers?: Record<string, string> } = {}): Promise<{ id: string; accounts: Record<string, Account> }> {
  const body = { customerType: 'INDIVIDUAL', fullName: `Pat Payer ${Math.random().toString(36).slice(2, 7)}x`, currencies, ...(opts.terms === false ? {} : { endUserTermsConsent: TERMS }) };
  const res = await t.call('POST', '/customers', body, opts.headers);
  expect(res.statusCode, res.body).toBe(201);
  const id = (res.json() as { id: string }).id;
  await t.store.db
    .updateTable('customers')
    .set({ status: opts.approved === false ? 'UNVERIFIED' : 'APPROVED' })
    .where('id', '=', id)
    .execute();
  const list = await t.call('GET', `/customers/internal-accounts?customerId=${encodeURIComponent(id)}`, undefined, opts.headers);
  const accounts: Record<string, Account> = {};
  for (const a of (list.json() as { data: Account[] }).data) accounts[a.balance.currency.code] = a;
  return { id, accounts };
}

export async function usdExternal(t: TestApp, customerId: string, accountNumber = '123456789', headers?: Record<string, string>): Promise<string> {
  const res = await t.call(
    'POST',
    '/customers/external-accounts',
    { customerId, currency: 'USD', accountInfo: { accountType: 'USD_ACCOUNT', accountNumber, routingNumber: '021000021', bankName: 'Sandbox Bank', beneficiary: PERSON } },
    headers,
  );
  expect(res.statusCode, res.body).toBe(201);
  return (res.json() as { id: string }).id;
}

export async function eurExternal(t: TestApp, customerId: string): Promise<string> {
  const res = await t.call('POST', '/customers/external-accounts', {
    customerId,
    currency: 'EUR',
    accountInfo: { accountType: 'EUR_ACCOUNT', iban: 'DE89370400440532013000', swiftCode: 'COBADEFF', beneficiary: PERSON },
  });
  expect(res.statusCode, res.body).toBe(201);
  return (res.json() as { id: string }).id;
}

export async function fund(t: TestApp, accountId: string, amount: number, headers?: Record<string, string>): Promise<void> {
  const res = await t.call('POST', `/sandbox/internal-accounts/${encodeURIComponent(accountId)}/fund`, { amount }, headers);
  expect(res.statusCode, res.body).toBe(200);
}

export async function balanceOf(t: TestApp, accountId: string, headers?: Record<string, string>): Promise<{ available: number; total: number }> {
  for (const path of ['/customers/internal-accounts?limit=100', '/platform/internal-accounts']) {
    const res = await t.call('GET', path, undefined, headers);
    const a = (res.json() as { data: Account[] }).data.find((x) => x.id === accountId);
    if (a) return { available: a.balance.amount, total: a.totalBalance.amount };
  }
  throw new Error(`no account ${accountId}`);
}

export function quoteRequest(source: string, destination: string, amount: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { source: { sourceType: 'ACCOUNT', accountId: source }, destination: { destinationType: 'ACCOUNT', accountId: destination }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: amount, ...extra };
}

/**
 * `n` payments (1,000 + i minor units, `immediatelyExecute`) from a new funded USD customer to
 * a US account of its own, settled by an hour of sandbox clock. Answers the paying account.
 */
export async function settledPayments(t: TestApp, n: number): Promise<{ accountId: string }> {
  const c = await newCustomer(t, ['USD']);
  const usd = c.accounts.USD!.id;
  const dest = await usdExternal(t, c.id, '000000456');
  await fund(t, usd, 1_000_000);
  for (let i = 0; i < n; i++) {
    const r = await t.call('POST', '/quotes', quoteRequest(usd, dest, 1_000 + i, { immediatelyExecute: true }));
    expect(r.statusCode, r.body).toBe(201);
  }
  const adv = await t.call('POST', '/sandbox/clock/advance', { seconds: 3_600 });
  expect(adv.statusCode, adv.body).toBe(200);
  return { accountId: usd };
}

export async function otherPlatformAuth(t: TestApp): Promise<Record<string, string>> {
  const res = await t.call('POST', '/admin/platforms', { name: `Other ${Math.random().toString(36).slice(2, 8)}` }, { authorization: `Bearer ${ADMIN_KEY}` });
  expect(res.statusCode, res.body).toBe(201);
  const created = res.json() as { credentials: { clientId: string; clientSecret: string } };
  return { authorization: basic(created.credentials.clientId, created.credentials.clientSecret) };
}
