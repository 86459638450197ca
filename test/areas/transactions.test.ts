import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envelope, makeApp, STORE, type TestApp } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import { fund, newCustomer, otherPlatformAuth, type QuoteBody, quoteRequest, type TxBody, usdExternal } from '../money-helpers.js';

// GET /transactions (filters, cursor pages) and GET /transactions/{transactionId}. The
// sandbox fundings are transactions too (INCOMING, COMPLETED).

interface TxList { data: TxBody[]; hasMore: boolean; nextCursor?: string; totalCount: number }

describe(`transactions (${STORE})`, () => {
  let t: TestApp;
  let platformId: string;
  let alice: string;
  let bob: string;
  /** The payouts, oldest first. */
  const txIds: string[] = [];
  /** Every transaction (fundings and payouts), oldest first. */
  const allIds: string[] = [];
  const fundings: string[] = [];
  let platformTx: string;
  let firstCreatedAt: string;

  const list = async (query = ''): Promise<TxList> => {
    const res = await t.call('GET', `/transactions${query}`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as TxList;
  };

  const send = async (source: string, dest: string, amount: number): Promise<string> => {
    const res = await t.call('POST', '/quotes', quoteRequest(source, dest, amount, { immediatelyExecute: true }));
    expect(res.statusCode, res.body).toBe(201);
    return (res.json() as QuoteBody).transactionId;
  };

  /** Fund an account; its INCOMING transaction is the newest of the platform. */
  const funded = async (accountId: string, amount: number): Promise<string> => {
    await fund(t, accountId, amount);
    const id = (await list('?limit=1')).data[0]!.id;
    fundings.push(id);
    allIds.push(id);
    return id;
  };
  const sent = async (source: string, dest: string, amount: number): Promise<string> => {
    const id = await send(source, dest, amount);
    txIds.push(id);
    allIds.push(id);
    return id;
  };

  beforeAll(async () => {
    t = await makeApp();
    platformId = (await t.store.db.selectFrom('platforms').select('id').where('is_default', '=', 1).executeTakeFirstOrThrow()).id;
    const a = await newCustomer(t, ['USD']);
    const b = await newCustomer(t, ['USD']);
    alice = a.id;
    bob = b.id;
    const aDest = await usdExternal(t, a.id);
    const bDest = await usdExternal(t, b.id);
    await funded(a.accounts.USD!.id, 100_000);
    await funded(b.accounts.USD!.id, 100_000);
    await sent(a.accounts.USD!.id, aDest, 1_000);
    firstCreatedAt = ((await t.call('GET', `/transactions/${encodeURIComponent(txIds[0]!)}`)).json() as TxBody).createdAt;
    // The first one settles; the later ones stay PROCESSING.
    t.clock.advance(1_000);
    await t.running.jobs.runDue();
    t.clock.advance(60_000);
    await sent(b.accounts.USD!.id, bDest, 2_000);
    await sent(a.accounts.USD!.id, aDest, 3_000);
    // The platform pays from its own account: customerId is the platform id.
    const platformUsd = ((await t.call('GET', '/platform/internal-accounts?currency=USD')).json() as { data: Array<{ id: string }> }).data[0]!.id;
    await funded(platformUsd, 10_000);
    const pDest = await usdExternal(t, b.id, '987654321');
    platformTx = await sent(platformUsd, pDest, 4_000);
  });
  afterAll(async () => t.close());

  it('lists every transaction newest first with the reference envelope', async () => {
    const page = await list();
    expect(page.totalCount).toBe(7);
    expect(page.hasMore).toBe(false);
    expect(page.nextCursor).toBeUndefined();
    expect(page.data.map((x) => x.id)).toEqual([...allIds].reverse());
    expect(page.data.filter((x) => txIds.includes(x.id)).every((x) => x.type === 'OUTGOING' && x.direction === 'DEBIT')).toBe(true);
    expect(page.data.filter((x) => fundings.includes(x.id)).every((x) => x.type === 'INCOMING' && x.direction === 'CREDIT' && x.status === 'COMPLETED')).toBe(true);
    expect(page.data.find((x) => x.id === platformTx)!.customerId).toBe(platformId);
  });

  it('filters by customerId (the platform id: the platform’s own), status, type and creation time', async () => {
    const [fundA, fundB, fundP] = fundings;
    expect((await list(`?customerId=${encodeURIComponent(alice)}`)).data.map((x) => x.id)).toEqual([txIds[2], txIds[0], fundA]);
    // The platform's payment to one of bob's accounts is listed under bob too (it shows the platform as its customer).
    expect((await list(`?customerId=${encodeURIComponent(bob)}`)).data.map((x) => x.id)).toEqual([platformTx, txIds[1], fundB]);
    expect((await list(`?customerId=${encodeURIComponent(platformId)}`)).data.map((x) => x.id)).toEqual([platformTx, fundP]);
    expect((await list('?customerId=Customer:01890000-0000-7000-8000-000000000000')).totalCount).toBe(0);
    expect((await list('?status=COMPLETED')).data.map((x) => x.id)).toEqual([fundP, txIds[0], fundB, fundA]);
    expect((await list('?status=PROCESSING')).totalCount).toBe(3);
    expect((await list('?type=OUTGOING')).data.map((x) => x.id)).toEqual([...txIds].reverse());
    expect((await list('?type=INCOMING')).data.map((x) => x.id)).toEqual([fundP, fundB, fundA]);
    // The first payout and the two fundings before it share its creation time (the manual clock stood still).
    expect((await list(`?createdBefore=${encodeURIComponent(firstCreatedAt)}`)).data.map((x) => x.id)).toEqual([txIds[0], fundB, fundA]);
    const after = new Date(Date.parse(firstCreatedAt) + 1).toISOString();
    expect((await list(`?createdAfter=${encodeURIComponent(after)}`)).totalCount).toBe(4);
    expect((await list(`?startDate=${encodeURIComponent(after)}`)).totalCount).toBe(4);
  });

  it('pages with a cursor', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = await list(`?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(page.totalCount).toBe(7);
      seen.push(...page.data.map((x) => x.id));
      if (!page.hasMore) break;
      cursor = page.nextCursor;
    }
    expect(seen).toEqual([...allIds].reverse());
  });

  it('400 for invalid filters', async () => {
    envelope(await t.call('GET', '/transactions?status=DONE'), 400, 'INVALID_INPUT');
    envelope(await t.call('GET', '/transactions?limit=0'), 400, 'INVALID_INPUT');
    envelope(await t.call('GET', '/transactions?cursor=nope'), 400, 'INVALID_INPUT');
    envelope(await t.call('GET', '/transactions?createdAfter=yesterday'), 400, 'INVALID_INPUT');
  });

  it('reads one transaction; 404 TRANSACTION_NOT_FOUND for unknown, malformed and another platform’s ids', async () => {
    const res = await t.call('GET', `/transactions/${encodeURIComponent(txIds[0]!)}`);
    expect(res.statusCode, res.body).toBe(200);
    const tx = res.json() as TxBody;
    expect(tx.status).toBe('COMPLETED');
    expect(tx.settledAt).toBeDefined();
    expect(tx.sentAmount.amount).toBe(1_000);
    envelope(await t.call('GET', '/transactions/Transaction:01890000-0000-7000-8000-000000000000'), 404, 'TRANSACTION_NOT_FOUND');
    envelope(await t.call('GET', '/transactions/whatever'), 404, 'TRANSACTION_NOT_FOUND');
    const other = await otherPlatformAuth(t);
    envelope(await t.call('GET', `/transactions/${encodeURIComponent(txIds[0]!)}`, undefined, other), 404, 'TRANSACTION_NOT_FOUND');
    const theirs = await t.call('GET', '/transactions', undefined, other);
    expect((theirs.json() as TxList).totalCount).toBe(0);
    await assertLedgerInvariants(t.store);
  });
});
