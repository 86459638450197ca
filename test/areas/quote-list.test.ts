import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envelope, makeApp, STORE, type TestApp } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import { fund, newCustomer, otherPlatformAuth, type QuoteBody, quoteRequest, usdExternal } from '../money-helpers.js';

// GET /quotes (issue 13): newer than the 2025-10-13 reference, called by the official SDK
// (client.quotes.list with QuoteListParams). Quotes exactly as GET /quotes/{quoteId} shows
// them, newest first, cursor pages, the SDK's filters.

interface QuoteList { data: QuoteBody[]; hasMore: boolean; nextCursor?: string; totalCount: number }

const UMA = '$success.usd@sandbox.uma.money';

describe(`GET /quotes (${STORE})`, () => {
  let t: TestApp;
  let platformId: string;
  let a: { id: string; usd: string; ext: string };
  let b: { id: string; usd: string; ext: string };
  const q: Record<'pending' | 'internal' | 'platform' | 'uma' | 'realtime', string> = {} as never;
  let created: string[];
  let createdAt: Record<string, string>;

  const list = async (query = ''): Promise<QuoteList> => {
    const res = await t.call('GET', `/quotes${query}`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as QuoteList;
  };
  const ids = async (query: string): Promise<string[]> => {
    const page = await list(query);
    expect(page.totalCount).toBe(page.data.length);
    return page.data.map((x) => x.id);
  };
  const newest = (...xs: string[]) => [...xs].sort((x, y) => created.indexOf(y) - created.indexOf(x));
  const create = async (body: Record<string, unknown>): Promise<string> => {
    t.clock.advance(1_000);
    const res = await t.call('POST', '/quotes', body);
    expect(res.statusCode, res.body).toBe(201);
    return (res.json() as QuoteBody).id;
  };

  beforeAll(async () => {
    t = await makeApp();
    platformId = t.running.bootstrap.platform.id;
    const ca = await newCustomer(t, ['USD']);
    const cb = await newCustomer(t, ['USD']);
    a = { id: ca.id, usd: ca.accounts.USD!.id, ext: await usdExternal(t, ca.id) };
    b = { id: cb.id, usd: cb.accounts.USD!.id, ext: await usdExternal(t, cb.id) };
    await fund(t, a.usd, 100_000);
    await fund(t, b.usd, 100_000);
    const platformUsd = ((await t.call('GET', '/platform/internal-accounts?currency=USD')).json() as { data: Array<{ id: string }> }).data[0]!.id;
    await fund(t, platformUsd, 100_000);

    q.pending = await create(quoteRequest(a.usd, a.ext, 1_000));
    q.internal = await create(quoteRequest(a.usd, b.usd, 2_000, { immediatelyExecute: true }));
    q.platform = await create(quoteRequest(platformUsd, b.ext, 3_000));
    const lookup = await t.call('GET', `/receiver/uma/${encodeURIComponent(UMA)}?customerId=${encodeURIComponent(b.id)}`);
    expect(lookup.statusCode, lookup.body).toBe(200);
    q.uma = await create({
      lookupId: (lookup.json() as { lookupId: string }).lookupId,
      source: { sourceType: 'ACCOUNT', accountId: b.usd },
      destination: { destinationType: 'UMA_ADDRESS', umaAddress: UMA },
      lockedCurrencySide: 'SENDING',
      lockedCurrencyAmount: 4_000,
    });
    q.realtime = await create({
      source: { sourceType: 'REALTIME_FUNDING', currency: 'USD', customerId: a.id },
      destination: { destinationType: 'ACCOUNT', accountId: a.ext },
      lockedCurrencySide: 'SENDING',
      lockedCurrencyAmount: 5_000,
    });
    created = [q.pending, q.internal, q.platform, q.uma, q.realtime];
    createdAt = Object.fromEntries((await list()).data.map((x) => [x.id, x.createdAt]));
  });
  afterAll(async () => t.close());

  it('lists every quote newest first in the list envelope, each exactly as GET /quotes/{quoteId} shows it', async () => {
    const page = await list();
    expect(page).toMatchObject({ totalCount: 5, hasMore: false });
    expect(page.nextCursor).toBeUndefined();
    expect(page.data.map((x) => x.id)).toEqual([...created].reverse());
    for (const item of page.data) {
      const one = await t.call('GET', `/quotes/${encodeURIComponent(item.id)}`);
      expect(one.statusCode, one.body).toBe(200);
      expect(item).toEqual(one.json());
    }
    const rt = page.data.find((x) => x.id === q.realtime) as QuoteBody & { paymentInstructions?: unknown[] };
    expect(rt.paymentInstructions!.length).toBeGreaterThan(0);
  });

  it('filters by the sender: customerId (the platform id: its own quotes), sendingAccountId, sendingUmaAddress', async () => {
    expect(await ids(`?customerId=${encodeURIComponent(a.id)}`)).toEqual(newest(q.pending, q.internal, q.realtime));
    expect(await ids(`?customerId=${encodeURIComponent(b.id)}`)).toEqual([q.uma]);
    expect(await ids(`?customerId=${encodeURIComponent(platformId)}`)).toEqual([q.platform]);
    expect(await ids('?customerId=Customer:01890000-0000-7000-8000-000000000000')).toEqual([]);
    expect(await ids(`?sendingAccountId=${encodeURIComponent(a.usd)}`)).toEqual(newest(q.pending, q.internal));
    expect(await ids(`?sendingAccountId=${encodeURIComponent(b.usd)}`)).toEqual([q.uma]);
    // No quote source is a UMA address: nothing matches.
    expect(await ids(`?sendingUmaAddress=${encodeURIComponent(UMA)}`)).toEqual([]);
  });

  it('filters by the receiver: receivingAccountId, receivingUmaAddress', async () => {
    expect(await ids(`?receivingAccountId=${encodeURIComponent(a.ext)}`)).toEqual(newest(q.pending, q.realtime));
    expect(await ids(`?receivingAccountId=${encodeURIComponent(b.usd)}`)).toEqual([q.internal]);
    expect(await ids(`?receivingAccountId=${encodeURIComponent(b.ext)}`)).toEqual([q.platform]);
    expect(await ids(`?receivingUmaAddress=${encodeURIComponent(UMA)}`)).toEqual([q.uma]);
    expect(await ids(`?receivingUmaAddress=${encodeURIComponent('$other@sandbox.uma.money')}`)).toEqual([]);
  });

  it('filters by creation time (inclusive) and status, all filters together', async () => {
    expect(await ids(`?createdAfter=${encodeURIComponent(createdAt[q.platform]!)}`)).toEqual(newest(q.platform, q.uma, q.realtime));
    expect(await ids(`?createdBefore=${encodeURIComponent(createdAt[q.platform]!)}`)).toEqual(newest(q.pending, q.internal, q.platform));
    expect(await ids(`?createdAfter=${encodeURIComponent(createdAt[q.internal]!)}&createdBefore=${encodeURIComponent(createdAt[q.uma]!)}&customerId=${encodeURIComponent(b.id)}`)).toEqual([q.uma]);
    const executed = ((await t.call('GET', `/quotes/${encodeURIComponent(q.internal)}`)).json() as QuoteBody).status;
    expect(executed).not.toBe('PENDING');
    expect(await ids(`?status=${executed}`)).toEqual([q.internal]);
    expect(await ids('?status=PENDING')).toEqual(newest(q.pending, q.platform, q.uma, q.realtime));
    expect(await ids(`?status=PENDING&customerId=${encodeURIComponent(a.id)}&receivingAccountId=${encodeURIComponent(a.ext)}`)).toEqual(newest(q.pending, q.realtime));
    expect(await ids('?status=EXPIRED')).toEqual([]);
  });

  it('pages with a cursor; totalCount is the filtered count', async () => {
    for (const [query, expected] of [
      ['', [...created].reverse()],
      [`customerId=${encodeURIComponent(a.id)}`, newest(q.pending, q.internal, q.realtime)],
    ] as const) {
      const seen: string[] = [];
      let cursor: string | undefined;
      for (;;) {
        const page = await list(`?limit=2${query ? `&${query}` : ''}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        expect(page.totalCount).toBe(expected.length);
        seen.push(...page.data.map((x) => x.id));
        if (!page.hasMore) break;
        expect(page.data.length).toBe(2);
        cursor = page.nextCursor;
      }
      expect(seen).toEqual(expected);
    }
  });

  it('a PENDING quote past its expiry shows and filters as EXPIRED', async () => {
    t.clock.advance(6 * 60_000);
    const page = await list();
    expect(page.data.filter((x) => x.status === 'EXPIRED').map((x) => x.id)).toEqual(newest(q.pending, q.platform, q.uma, q.realtime));
    expect(await ids('?status=EXPIRED')).toEqual(newest(q.pending, q.platform, q.uma, q.realtime));
    expect(await ids('?status=PENDING')).toEqual([]);
  });

  it('400 INVALID_INPUT listing every bad or unknown parameter; another platform sees none', async () => {
    const e = envelope(await t.call('GET', '/quotes?status=DONE&limit=101&createdAfter=yesterday&sortOrder=asc&sendingCustomerId=x'), 400, 'INVALID_INPUT');
    expect((e.details!.errors as Array<{ field: string; message: string }>).map((x) => `${x.field}: ${x.message}`).sort()).toEqual([
      'createdAfter: must be an ISO 8601 date-time',
      'limit: must be <= 100',
      'sendingCustomerId: is not a recognised parameter',
      'sortOrder: is not a recognised parameter',
      'status: must be one of: PENDING, PENDING_AUTHORIZATION, PROCESSING, COMPLETED, FAILED, EXPIRED',
    ]);
    envelope(await t.call('GET', '/quotes?cursor=nope'), 400, 'INVALID_INPUT');
    const other = await otherPlatformAuth(t);
    const theirs = await t.call('GET', `/quotes?customerId=${encodeURIComponent(a.id)}`, undefined, other);
    expect(theirs.statusCode, theirs.body).toBe(200);
    expect(theirs.json()).toEqual({ data: [], hasMore: false, totalCount: 0 });
    expect((await t.call('GET', '/quotes', undefined, other)).json()).toMatchObject({ totalCount: 0 });
    envelope(await t.call('GET', `/quotes/${encodeURIComponent(q.uma)}`, undefined, other), 404, 'QUOTE_NOT_FOUND');
    await assertLedgerInvariants(t.store);
  });

  it('is in the OpenAPI document as listQuotes, marked x-extension (GET /quotes/{quoteId} is not)', async () => {
    const doc = (await t.call('GET', '/openapi.json', undefined, { authorization: '' })).json() as {
      paths: Record<string, Record<string, { operationId?: string; 'x-extension'?: boolean; parameters?: Array<{ name: string; in: string }> }>>;
    };
    const op = doc.paths['/quotes']!.get!;
    expect(op.operationId).toBe('listQuotes');
    expect(op['x-extension']).toBe(true);
    expect(op.parameters!.filter((p) => p.in === 'query').map((p) => p.name).sort()).toEqual(
      ['createdAfter', 'createdBefore', 'cursor', 'customerId', 'limit', 'receivingAccountId', 'receivingUmaAddress', 'sendingAccountId', 'sendingUmaAddress', 'status'],
    );
    expect(doc.paths['/quotes/{quoteId}']!.get!['x-extension']).toBeUndefined();
    expect(doc.paths['/quotes']!.post!['x-extension']).toBeUndefined();
  });
});
