// The demo data set (`payments-service seed`, the dashboard's Seed button), made through the
// public API only, on the platform of the credentials, so a new user sees a living sandbox:
// see docs/dashboard.md "Seed" for the list.

export type Caller = <T = unknown>(method: string, path: string, body?: unknown) => Promise<T>;

const ADDRESS = { line1: '123 Main Street', city: 'San Francisco', state: 'CA', postalCode: '94105', country: 'US' };
const TERMS = { acceptedAt: '2025-10-01T00:00:00Z', ipAddress: '203.0.113.9', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' };

interface Account {
  id: string;
  balance: { currency: { code: string } };
}

export interface SeedResult {
  customers: Array<{ id: string; name: string; status: string }>;
  internalAccounts: string[];
  externalAccounts: string[];
  transactions: Array<{ id: string; expected: string }>;
}

/** Create the demo data set through `api` (the platform's API). */
export async function seed(api: Caller): Promise<SeedResult> {
  const out: SeedResult = { customers: [], internalAccounts: [], externalAccounts: [], transactions: [] };
  const customer = async (body: Record<string, unknown>, name: string) => {
    const c = await api<{ id: string; kycStatus?: string; kybStatus?: string }>('POST', '/customers', body);
    out.customers.push({ id: c.id, name, status: c.kycStatus ?? c.kybStatus ?? 'UNVERIFIED' });
    return c.id;
  };
  // 1. An approved business (a registration number without a sandbox suffix is approved on submission).
  const acme = await customer(
    {
      customerType: 'BUSINESS',
      currencies: ['USD', 'EUR'],
      endUserTermsConsent: TERMS,
      region: 'US',
      address: ADDRESS,
      businessInfo: { legalName: 'Acme Imports LLC', country: 'US', incorporatedOn: '2015-03-01', registrationNumber: 'ACME-2024-123', taxId: '12-3456789' },
    },
    'Acme Imports LLC',
  );
  await api('POST', '/verifications', { customerId: acme }).catch(() => undefined);
  // 2. A business waiting for documents (suffix 001: manual review once complete).
  await customer(
    { customerType: 'BUSINESS', region: 'US', address: ADDRESS, currencies: ['USD'], businessInfo: { legalName: 'Pending Review Co', country: 'US', incorporatedOn: '2021-06-01', registrationNumber: 'PRC-001', taxId: '98-7654321' } },
    'Pending Review Co',
  );
  // 3. An individual with accounts, not verified yet.
  const jane = await customer({ customerType: 'INDIVIDUAL', fullName: 'Jane Doe', currencies: ['USD'], endUserTermsConsent: TERMS }, 'Jane Doe');
  // 4. An individual without the end-user terms (no internal accounts).
  await customer({ customerType: 'INDIVIDUAL', fullName: 'Sam Prospect', currencies: ['MXN'] }, 'Sam Prospect');
  for (const c of out.customers) {
    const now = await api<{ kycStatus?: string; kybStatus?: string }>('GET', `/customers/${encodeURIComponent(c.id)}`);
    c.status = now.kycStatus ?? now.kybStatus ?? c.status;
  }

  // Accounts: Acme's USD and EUR, Jane's USD; fund Acme's USD.
  const accounts = await api<{ data: Account[] }>('GET', `/customers/internal-accounts?customerId=${encodeURIComponent(acme)}`);
  const janeAccounts = await api<{ data: Account[] }>('GET', `/customers/internal-accounts?customerId=${encodeURIComponent(jane)}`);
  out.internalAccounts.push(...accounts.data.map((a) => a.id), ...janeAccounts.data.map((a) => a.id));
  const usd = accounts.data.find((a) => a.balance.currency.code === 'USD')!;
  await api('POST', `/sandbox/internal-accounts/${encodeURIComponent(usd.id)}/fund`, { amount: 2_500_000 });
  const janeUsd = janeAccounts.data.find((a) => a.balance.currency.code === 'USD');
  if (janeUsd) await api('POST', `/sandbox/internal-accounts/${encodeURIComponent(janeUsd.id)}/fund`, { amount: 15_000 });

  // External accounts whose numbers pick the sandbox outcome: ordinary (completes), 002 (fails), 003 (pending 6 minutes).
  const beneficiary = { beneficiaryType: 'BUSINESS', legalName: 'Globex Supplies Inc', countryOfResidence: 'US' };
  const ext: Record<string, string> = {};
  for (const [label, accountNumber] of [
    ['ok', '123456789'],
    ['fails', '1234567002'],
    ['slow', '1234567003'],
  ] as const) {
    const e = await api<{ id: string }>('POST', '/customers/external-accounts', {
      customerId: acme,
      currency: 'USD',
      accountInfo: { accountType: 'USD_ACCOUNT', accountNumber, routingNumber: '021000021', bankName: 'Sandbox Bank', beneficiary },
    });
    ext[label] = e.id;
    out.externalAccounts.push(e.id);
  }
  // Payments: one completes, one fails and is refunded, one stays pending.
  for (const [label, amount, expected] of [
    ['ok', 120_000, 'COMPLETED'],
    ['fails', 45_000, 'FAILED'],
    ['slow', 80_000, 'PROCESSING'],
  ] as const) {
    const q = await api<{ id: string }>('POST', '/quotes', {
      source: { sourceType: 'ACCOUNT', accountId: usd.id },
      destination: { destinationType: 'ACCOUNT', accountId: ext[label] },
      lockedCurrencySide: 'SENDING',
      lockedCurrencyAmount: amount,
      description: `Seed payment (${label})`,
    });
    const executed = await api<{ transactionId?: string; id: string }>('POST', `/quotes/${encodeURIComponent(q.id)}/execute`);
    out.transactions.push({ id: executed.transactionId ?? executed.id, expected });
  }
  // Let the quick outcomes happen (a few seconds of sandbox time), and send the test webhook.
  await api('POST', '/sandbox/clock/advance', { seconds: 5 });
  await api('POST', '/sandbox/webhooks/test').catch(() => undefined);
  return out;
}
