import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { transactionQuery } from '../../src/api/transactions/store.js';
import { RECEIVER_NOT_DESTINATION } from '../../src/kernel/db/migrations.js';
import { envelope, makeApp, STORE, type TestApp } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import { fund, newCustomer, otherPlatformAuth, type QuoteBody, quoteRequest, type TxBody, usdExternal } from '../money-helpers.js';

// GET /transactions: the account-identifier filters, reference, sortOrder, combined with the
// other filters and cursor pages (issue 13). Every kind of transaction the sandbox makes is
// here: a payout to an external account, a pull from one, an internal transfer, an incoming
// UMA payment, a UMA payout and a real-time funded quote waiting for its funds.

interface Tx extends Omit<TxBody, 'source' | 'destination'> {
  source: { sourceType: string; accountId?: string; umaAddress?: string };
  destination: { destinationType: string; accountId?: string; umaAddress?: string };
  reconciliationInstructions?: { reference?: string };
  paymentInstructions?: Array<{ accountOrWalletInfo: { reference?: string } }>;
}
interface TxList { data: Tx[]; hasMore: boolean; nextCursor?: string; totalCount: number }

const UMA_SENDER = '$success.usd@sandbox.uma.money';

describe(`GET /transactions filters (${STORE})`, () => {
  let t: TestApp;
  let a: { id: string; usd: string; ext: string };
  let b: { id: string; usd: string; uma: string };
  /** The transactions in creation order. */
  const tx: Record<'fundA' | 'fundB' | 'payout' | 'pull' | 'internal' | 'umaIn' | 'umaOut' | 'realtime', string> = {} as never;
  const byId = new Map<string, Tx>();
  let created: string[];

  const list = async (query: string): Promise<TxList> => {
    const res = await t.call('GET', `/transactions${query}`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as TxList;
  };
  const ids = async (query: string): Promise<string[]> => {
    const page = await list(query);
    expect(page.totalCount).toBe(page.data.length);
    return page.data.map((x) => x.id);
  };
  /** Every id of the list, page by page (limit per page), checking each page's envelope. */
  const allPages = async (query: string, limit: number): Promise<{ ids: string[]; pages: number }> => {
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    let total: number | undefined;
    for (;;) {
      const page = await list(`${query}${query ? '&' : '?'}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      pages += 1;
      total ??= page.totalCount;
      expect(page.totalCount).toBe(total);
      expect(page.data.length).toBeLessThanOrEqual(limit);
      seen.push(...page.data.map((x) => x.id));
      if (!page.hasMore) {
        expect(page.nextCursor).toBeUndefined();
        break;
      }
      expect(page.data.length).toBe(limit);
      cursor = page.nextCursor;
    }
    expect(seen.length).toBe(total);
    return { ids: seen, pages };
  };
  const quote = async (body: Record<string, unknown>): Promise<QuoteBody> => {
    const res = await t.call('POST', '/quotes', body);
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as QuoteBody;
  };

  beforeAll(async () => {
    t = await makeApp();
    const ca = await newCustomer(t, ['USD']);
    const cb = await newCustomer(t, ['USD']);
    a = { id: ca.id, usd: ca.accounts.USD!.id, ext: await usdExternal(t, ca.id) };
    b = { id: cb.id, usd: cb.accounts.USD!.id, uma: ((await t.call('GET', `/customers/${encodeURIComponent(cb.id)}`)).json() as { umaAddress: string }).umaAddress };
    // Each sandbox funding is a deposit: a COMPLETED INCOMING transaction into the account.
    await fund(t, a.usd, 100_000);
    tx.fundA = (await list('?limit=100')).data[0]!.id;
    await fund(t, b.usd, 100_000);
    tx.fundB = (await list('?limit=100')).data[0]!.id;

    // One second apart, so the creation-time filters tell them apart too.
    const step = () => t.clock.advance(1_000);
    tx.payout = (await quote(quoteRequest(a.usd, a.ext, 1_000, { immediatelyExecute: true }))).transactionId;
    step();
    tx.pull = (await quote(quoteRequest(a.ext, a.usd, 2_000, { immediatelyExecute: true }))).transactionId;
    step();
    tx.internal = (await quote(quoteRequest(a.usd, b.usd, 3_000, { immediatelyExecute: true }))).transactionId;
    step();
    const received = await t.call('POST', '/sandbox/uma/receive', { senderUmaAddress: UMA_SENDER, customerId: b.id, receivingCurrencyCode: 'USD', receivingCurrencyAmount: 4_000 });
    expect(received.statusCode, received.body).toBe(200);
    tx.umaIn = (received.json() as Tx).id;
    step();
    const lookup = await t.call('GET', `/receiver/uma/${encodeURIComponent(UMA_SENDER)}?customerId=${encodeURIComponent(b.id)}`);
    expect(lookup.statusCode, lookup.body).toBe(200);
    tx.umaOut = (
      await quote({
        lookupId: (lookup.json() as { lookupId: string }).lookupId,
        source: { sourceType: 'ACCOUNT', accountId: b.usd },
        destination: { destinationType: 'UMA_ADDRESS', umaAddress: UMA_SENDER },
        lockedCurrencySide: 'SENDING',
        lockedCurrencyAmount: 5_000,
        immediatelyExecute: true,
      })
    ).transactionId;
    step();
    tx.realtime = (
      await quote({ source: { sourceType: 'REALTIME_FUNDING', currency: 'USD', customerId: a.id }, destination: { destinationType: 'ACCOUNT', accountId: a.ext }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 6_000 })
    ).transactionId;
    created = [tx.fundA, tx.fundB, tx.payout, tx.pull, tx.internal, tx.umaIn, tx.umaOut, tx.realtime];
    for (const x of (await list('?limit=100')).data) byId.set(x.id, x);
  });
  afterAll(async () => t.close());

  const newest = (...xs: string[]) => [...xs].sort((p, q) => created.indexOf(q) - created.indexOf(p));

  it('the fixtures are the kinds of transaction the filters tell apart', () => {
    expect(byId.size).toBe(8);
    expect(byId.get(tx.fundA)).toMatchObject({ type: 'INCOMING', status: 'COMPLETED', destination: { accountId: a.usd } });
    expect(byId.get(tx.fundB)).toMatchObject({ type: 'INCOMING', status: 'COMPLETED', destination: { accountId: b.usd } });
    expect(byId.get(tx.payout)).toMatchObject({ type: 'OUTGOING', source: { sourceType: 'ACCOUNT', accountId: a.usd }, destination: { destinationType: 'ACCOUNT', accountId: a.ext } });
    expect(byId.get(tx.pull)).toMatchObject({ type: 'INCOMING', source: { sourceType: 'ACCOUNT', accountId: a.ext }, destination: { destinationType: 'ACCOUNT', accountId: a.usd } });
    expect(byId.get(tx.internal)).toMatchObject({ source: { accountId: a.usd }, destination: { accountId: b.usd } });
    // An incoming UMA payment shows the customer's UMA address; the money lands in b.usd.
    expect(byId.get(tx.umaIn)).toMatchObject({ type: 'INCOMING', source: { sourceType: 'UMA_ADDRESS', umaAddress: UMA_SENDER }, destination: { destinationType: 'UMA_ADDRESS', umaAddress: b.uma } });
    expect(byId.get(tx.umaOut)).toMatchObject({ type: 'OUTGOING', source: { accountId: b.usd }, destination: { destinationType: 'UMA_ADDRESS', umaAddress: UMA_SENDER } });
    expect(byId.get(tx.realtime)).toMatchObject({ status: 'PENDING', source: { sourceType: 'REALTIME_FUNDING' }, destination: { accountId: a.ext } });
    expect(byId.get(tx.umaIn)!.reconciliationInstructions?.reference).toMatch(/^REF-/);
    expect(byId.get(tx.umaOut)!.reconciliationInstructions?.reference).toMatch(/^UMA-/);
    expect(byId.get(tx.realtime)!.paymentInstructions?.[0]?.accountOrWalletInfo.reference).toMatch(/^UMA-/);
  });

  it('senderAccountIdentifier: the source’s accountId or UMA address', async () => {
    expect(await ids(`?senderAccountIdentifier=${encodeURIComponent(a.usd)}`)).toEqual(newest(tx.payout, tx.internal));
    expect(await ids(`?senderAccountIdentifier=${encodeURIComponent(a.ext)}`)).toEqual([tx.pull]);
    expect(await ids(`?senderAccountIdentifier=${encodeURIComponent(b.usd)}`)).toEqual([tx.umaOut]);
    expect(await ids(`?senderAccountIdentifier=${encodeURIComponent(UMA_SENDER)}`)).toEqual([tx.umaIn]);
    // The receiving side of a transaction is not its sender.
    expect(await ids(`?senderAccountIdentifier=${encodeURIComponent(b.uma)}`)).toEqual([]);
  });

  it('receiverAccountIdentifier: the destination’s accountId or UMA address, or the internal account an incoming UMA payment credits', async () => {
    expect(await ids(`?receiverAccountIdentifier=${encodeURIComponent(a.ext)}`)).toEqual(newest(tx.payout, tx.realtime));
    expect(await ids(`?receiverAccountIdentifier=${encodeURIComponent(a.usd)}`)).toEqual(newest(tx.fundA, tx.pull));
    expect(await ids(`?receiverAccountIdentifier=${encodeURIComponent(b.usd)}`)).toEqual(newest(tx.fundB, tx.internal, tx.umaIn));
    expect(await ids(`?receiverAccountIdentifier=${encodeURIComponent(b.uma)}`)).toEqual([tx.umaIn]);
    expect(await ids(`?receiverAccountIdentifier=${encodeURIComponent(UMA_SENDER)}`)).toEqual([tx.umaOut]);
  });

  it('the receiver filter searches its partial index (migration 0030) and the destination index, no scan', async () => {
    const compiled = transactionQuery(t.store.db, 'Platform:x', { receiverAccountIdentifier: 'x' }, Date.now()).selectAll().compile();
    expect(compiled.sql).toContain(RECEIVER_NOT_DESTINATION);
    const explain = STORE === 'sqlite' ? 'explain query plan ' : 'explain ';
    const plan = await t.store.db.transaction().execute(async (trx) => {
      if (STORE === 'postgres') await sql`set local enable_seqscan = off`.execute(trx); // a table this small would be scanned anyway
      const rows = (await trx.executeQuery<Record<string, string>>({ ...compiled, sql: explain + compiled.sql, query: compiled.query })).rows;
      return rows.map((r) => Object.values(r).join(' ')).join('\n');
    });
    expect(plan).toContain('transactions_receiver');
    expect(plan).not.toMatch(/SCAN transactions\b(?! USING)|Seq Scan/);
    // (PostgreSQL picks among the platform's indexes by its statistics of this tiny table.)
    if (STORE === 'sqlite') expect(plan).toContain('transactions_destination_account');
  });

  it('accountIdentifier: either side', async () => {
    expect(await ids(`?accountIdentifier=${encodeURIComponent(a.usd)}`)).toEqual(newest(tx.fundA, tx.payout, tx.pull, tx.internal));
    expect(await ids(`?accountIdentifier=${encodeURIComponent(a.ext)}`)).toEqual(newest(tx.payout, tx.pull, tx.realtime));
    expect(await ids(`?accountIdentifier=${encodeURIComponent(b.usd)}`)).toEqual(newest(tx.fundB, tx.internal, tx.umaIn, tx.umaOut));
    expect(await ids(`?accountIdentifier=${encodeURIComponent(UMA_SENDER)}`)).toEqual(newest(tx.umaIn, tx.umaOut));
    expect(await ids('?accountIdentifier=InternalAccount:01890000-0000-7000-8000-000000000000')).toEqual([]);
  });

  it('reference: reconciliationInstructions.reference, or the payment instructions’ reference', async () => {
    for (const id of [tx.umaIn, tx.umaOut]) {
      expect(await ids(`?reference=${encodeURIComponent(byId.get(id)!.reconciliationInstructions!.reference!)}`)).toEqual([id]);
    }
    expect(await ids(`?reference=${encodeURIComponent(byId.get(tx.realtime)!.paymentInstructions![0]!.accountOrWalletInfo.reference!)}`)).toEqual([tx.realtime]);
    expect(await ids('?reference=REF-NOTHING')).toEqual([]);
  });

  it('combines with the other filters (all apply)', async () => {
    expect(await ids(`?accountIdentifier=${encodeURIComponent(a.usd)}&type=INCOMING`)).toEqual(newest(tx.fundA, tx.pull));
    expect(await ids(`?accountIdentifier=${encodeURIComponent(a.usd)}&type=OUTGOING`)).toEqual(newest(tx.payout, tx.internal));
    expect(await ids(`?receiverAccountIdentifier=${encodeURIComponent(a.ext)}&status=PENDING`)).toEqual([tx.realtime]);
    expect(await ids(`?receiverAccountIdentifier=${encodeURIComponent(b.usd)}&customerId=${encodeURIComponent(b.id)}`)).toEqual(newest(tx.fundB, tx.umaIn));
    expect(await ids(`?senderAccountIdentifier=${encodeURIComponent(a.usd)}&receiverAccountIdentifier=${encodeURIComponent(b.usd)}`)).toEqual([tx.internal]);
    expect(await ids(`?senderAccountIdentifier=${encodeURIComponent(a.usd)}&receiverAccountIdentifier=${encodeURIComponent(a.ext)}`)).toEqual([tx.payout]);
    const platformCustomerId = byId.get(tx.umaIn)!.platformCustomerId;
    expect(await ids(`?accountIdentifier=${encodeURIComponent(UMA_SENDER)}&platformCustomerId=${encodeURIComponent(platformCustomerId)}&type=INCOMING`)).toEqual([tx.umaIn]);
    const ref = byId.get(tx.umaIn)!.reconciliationInstructions!.reference!;
    expect(await ids(`?reference=${encodeURIComponent(ref)}&customerId=${encodeURIComponent(a.id)}`)).toEqual([]);
    const after = byId.get(tx.umaIn)!.createdAt;
    expect(await ids(`?accountIdentifier=${encodeURIComponent(b.usd)}&startDate=${encodeURIComponent(after)}`)).toEqual(newest(tx.umaIn, tx.umaOut));
  });

  it('sortOrder: desc (the default) newest first, asc oldest first', async () => {
    expect(await ids('')).toEqual([...created].reverse());
    expect(await ids('?sortOrder=desc')).toEqual([...created].reverse());
    expect(await ids('?sortOrder=asc')).toEqual(created);
    expect(await ids(`?accountIdentifier=${encodeURIComponent(a.usd)}&sortOrder=asc`)).toEqual([tx.fundA, tx.payout, tx.pull, tx.internal]);
  });

  it('cursor pages in both orders, over filtered and unfiltered lists; totalCount is the filtered count', async () => {
    for (const limit of [1, 2, 4]) {
      const desc = await allPages('?sortOrder=desc', limit);
      expect(desc.ids).toEqual([...created].reverse());
      expect(desc.pages).toBe(Math.ceil(created.length / limit));
      const asc = await allPages('?sortOrder=asc', limit);
      expect(asc.ids).toEqual(created);
      expect(asc.pages).toBe(Math.ceil(created.length / limit));
    }
    const filter = `?accountIdentifier=${encodeURIComponent(b.usd)}`;
    expect((await allPages(`${filter}&sortOrder=asc`, 1)).ids).toEqual([tx.fundB, tx.internal, tx.umaIn, tx.umaOut]);
    expect((await allPages(filter, 2)).ids).toEqual([tx.umaOut, tx.umaIn, tx.internal, tx.fundB]);
    const first = await list(`${filter}&sortOrder=asc&limit=2`);
    expect(first).toMatchObject({ totalCount: 4, hasMore: true });
    expect(first.data.map((x) => x.id)).toEqual([tx.fundB, tx.internal]);
  });

  it('a PENDING quote transaction whose quote expired filters as EXPIRED, as it shows', async () => {
    t.clock.advance(6 * 60_000);
    const shown = (await t.call('GET', `/transactions/${encodeURIComponent(tx.realtime)}`)).json() as Tx;
    expect(shown.status).toBe('EXPIRED');
    expect(await ids(`?accountIdentifier=${encodeURIComponent(a.ext)}&status=EXPIRED`)).toEqual([tx.realtime]);
    // The pull from a.ext is PENDING too, and started: it stays PENDING.
    expect(byId.get(tx.pull)!.status).toBe('PENDING');
    expect(await ids(`?accountIdentifier=${encodeURIComponent(a.ext)}&status=PENDING`)).toEqual([tx.pull]);
  });

  it('400 INVALID_INPUT for a bad sortOrder, listing every invalid parameter; another platform sees none of them', async () => {
    const e = envelope(await t.call('GET', '/transactions?sortOrder=up&limit=0&accountId=x'), 400, 'INVALID_INPUT');
    expect(e.details!.errors).toEqual([
      { field: 'accountId', message: 'is not a recognised parameter' },
      { field: 'limit', message: 'must be >= 1' },
      { field: 'sortOrder', message: 'must be one of: asc, desc', constraint: { enum: ['asc', 'desc'] } },
    ]);
    envelope(await t.call('GET', '/transactions?sortOrder=ASC'), 400, 'INVALID_INPUT');
    envelope(await t.call('GET', `/transactions?senderAccountIdentifier=${encodeURIComponent(a.usd)}&cursor=nope`), 400, 'INVALID_INPUT');
    const other = await otherPlatformAuth(t);
    for (const q of [`accountIdentifier=${encodeURIComponent(a.usd)}`, `senderAccountIdentifier=${encodeURIComponent(a.usd)}`, `receiverAccountIdentifier=${encodeURIComponent(b.usd)}`, `reference=${encodeURIComponent(byId.get(tx.umaIn)!.reconciliationInstructions!.reference!)}`]) {
      const res = await t.call('GET', `/transactions?${q}`, undefined, other);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({ data: [], hasMore: false, totalCount: 0 });
    }
    envelope(await t.call('GET', `/transactions/${encodeURIComponent(tx.internal)}`, undefined, other), 404, 'TRANSACTION_NOT_FOUND');
    await assertLedgerInvariants(t.store);
  });
});
