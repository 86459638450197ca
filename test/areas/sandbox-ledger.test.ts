import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { advanceAndDeliver, basic, envelope, makeApp, STORE, type TestApp } from '../helpers.js';
import { fund, newCustomer, otherPlatformAuth, quoteRequest, usdExternal } from '../money-helpers.js';

// GET /sandbox/internal-accounts/{accountId}/ledger-entries: the entries that moved an
// internal account, through HTTP as a platform reads them.

interface Entry {
  id: string;
  accountId: string;
  kind: string;
  currency: string;
  postings: Array<{ bucket: string; amount: number }>;
  availableChange: number;
  totalChange: number;
  referenceId: string | null;
  relatedEntryId: string | null;
  memo: string | null;
  createdAt: string;
}
interface EntryPage {
  data: Entry[];
  hasMore: boolean;
  nextCursor?: string;
  totalCount: number;
}

describe(`sandbox ledger entries (${STORE})`, () => {
  let t: TestApp;
  let account: string;
  let payment: string;
  const entries = async (id: string, query = '', headers?: Record<string, string>) => t.call('GET', `/sandbox/internal-accounts/${encodeURIComponent(id)}/ledger-entries${query}`, undefined, headers);

  beforeAll(async () => {
    t = await makeApp();
    const c = await newCustomer(t, ['USD']);
    account = c.accounts.USD!.id;
    await fund(t, account, 50_000);
    const ext = await usdExternal(t, c.id);
    const q = await t.call('POST', '/quotes', quoteRequest(account, ext, 20_000));
    expect(q.statusCode, q.body).toBe(201);
    const executed = await t.call('POST', `/quotes/${q.json().id}/execute`);
    expect(executed.statusCode, executed.body).toBe(200);
    payment = q.json().transactionId as string;
    await advanceAndDeliver(t, 5);
  });
  afterAll(async () => t.close());

  it('lists what moved the account, newest first, with its lines on it and what caused them', async () => {
    const res = await entries(account);
    expect(res.statusCode, res.body).toBe(200);
    const page = res.json() as EntryPage;
    expect(page.hasMore).toBe(false);
    expect(page.totalCount).toBe(page.data.length);
    const kinds = page.data.map((e) => e.kind);
    expect(kinds.at(-1)).toBe('FUNDING');
    const funding = page.data.at(-1)!;
    expect(funding).toMatchObject({ accountId: account, currency: 'USD', postings: [{ bucket: 'available', amount: 50_000 }], availableChange: 50_000, totalChange: 50_000 });
    expect(funding.referenceId).toMatch(/^Transaction:/);
    expect(funding.createdAt).toMatch(/^\d{4}-\d\d-\d\dT/);
    // The payment's entries name it; together they take 20,000 out of the account.
    const ofPayment = page.data.filter((e) => e.referenceId === payment);
    expect(ofPayment.length).toBeGreaterThan(0);
    expect(ofPayment.reduce((n, e) => n + e.totalChange, 0)).toBe(-20_000);
    // The sum of every change is the balance.
    const total = page.data.reduce((n, e) => n + e.totalChange, 0);
    const available = page.data.reduce((n, e) => n + e.availableChange, 0);
    const list = (await t.call('GET', '/customers/internal-accounts?limit=100')).json() as { data: Array<{ id: string; balance: { amount: number }; totalBalance: { amount: number } }> };
    const a = list.data.find((x) => x.id === account)!;
    expect(available).toBe(a.balance.amount);
    expect(total).toBe(a.totalBalance.amount);
    const ids = page.data.map((e) => e.id);
    expect([...ids].sort().reverse()).toEqual(ids);
  });

  it('pages with limit and cursor like the other lists', async () => {
    const all = ((await entries(account)).json() as EntryPage).data.map((e) => e.id);
    expect(all.length).toBeGreaterThan(1);
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const res = await entries(account, `?limit=1${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.statusCode, res.body).toBe(200);
      const page = res.json() as EntryPage;
      expect(page.totalCount).toBe(all.length);
      seen.push(...page.data.map((e) => e.id));
      cursor = page.hasMore ? page.nextCursor : undefined;
    } while (cursor);
    expect(seen).toEqual(all);
    envelope(await entries(account, '?cursor=nonsense'), 400, 'INVALID_INPUT');
    envelope(await entries(account, '?limit=0'), 400, 'INVALID_INPUT');
    envelope(await entries(account, '?unknown=1'), 400, 'INVALID_INPUT');
  });

  it('an account without movements has none; a platform account is readable too', async () => {
    const c = await newCustomer(t, ['EUR']);
    const res = await entries(c.accounts.EUR!.id);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ data: [], hasMore: false, totalCount: 0 });
    const own = (await t.call('GET', '/platform/internal-accounts')).json() as { data: Array<{ id: string }> };
    expect((await entries(own.data[0]!.id)).statusCode).toBe(200);
  });

  it('answers 404 for an unknown account and for another platform’s, whose entries it never shows', async () => {
    envelope(await entries('InternalAccount:019a0000-0000-7000-8000-000000000000'), 404, 'REFERENCE_NOT_FOUND');
    const other = await otherPlatformAuth(t);
    envelope(await entries(account, '', other), 404, 'REFERENCE_NOT_FOUND');
    // And the other platform's own account is not ours to read.
    const theirs = await newCustomer(t, ['USD'], { headers: other });
    await fund(t, theirs.accounts.USD!.id, 1_000, other);
    envelope(await entries(theirs.accounts.USD!.id), 404, 'REFERENCE_NOT_FOUND');
    expect(((await entries(theirs.accounts.USD!.id, '', other)).json() as EntryPage).data.map((e) => e.kind)).toEqual(['FUNDING']);
  });

  it('needs credentials; VIEW is enough', async () => {
    envelope(await entries(account, '', { authorization: '' }), 401, 'UNAUTHORIZED');
    const tok = await t.call('POST', '/tokens', { name: 'viewer', permissions: ['VIEW'] });
    expect(tok.statusCode, tok.body).toBe(201);
    const { clientId, clientSecret } = tok.json() as { clientId: string; clientSecret: string };
    expect((await entries(account, '', { authorization: basic(clientId, clientSecret) })).statusCode).toBe(200);
  });

  it('is a sandbox extension in the OpenAPI document', async () => {
    const doc = (await t.call('GET', '/openapi.json', undefined, { authorization: '' })).json() as { paths: Record<string, Record<string, Record<string, unknown>>> };
    expect(doc.paths['/sandbox/internal-accounts/{accountId}/ledger-entries']!.get!['x-extension']).toBe(true);
  });
});
