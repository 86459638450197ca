import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { advanceAndDeliver, makeApp, STORE, type TestApp } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import { fund, newCustomer, type QuoteBody, quoteRequest, type TxBody, usdExternal } from '../money-helpers.js';
import { Receiver } from '../webhook-receiver.js';

// expectedSettlementAt and settlementTimelineSeconds of outgoing transactions (the
// reference's OutgoingTransaction): unknown (null) until the payment starts, then the
// sandbox outcome's own timing on the platform clock, counted from the quote's creation;
// expectedSettlementAt is null when the payment settles at once on an instant rail or with
// no rail. The webhooks carry the same values.

type Settling = TxBody & { expectedSettlementAt: string | null; settlementTimelineSeconds: number | null; failureReason?: string };

describe(`expected settlement of outgoing transactions (${STORE})`, () => {
  let t: TestApp;
  let receiver: Receiver;

  beforeAll(async () => {
    t = await makeApp();
    receiver = await new Receiver().start();
    expect((await t.call('PATCH', '/config', { webhookEndpoint: receiver.url })).statusCode).toBe(200);
  });
  afterAll(async () => {
    await receiver.stop();
    await t.close();
  });

  const advance = (seconds: number) => advanceAndDeliver(t, seconds);
  const tx = async (id: string): Promise<Settling> => {
    const res = await t.call('GET', `/transactions/${encodeURIComponent(id)}`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as Settling;
  };
  const quote = async (body: unknown): Promise<QuoteBody> => {
    const res = await t.call('POST', '/quotes', body);
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as QuoteBody;
  };
  const plus = (at: string, seconds: number) => new Date(Date.parse(at) + seconds * 1000).toISOString();
  const payer = async (suffix: string) => {
    const c = await newCustomer(t, ['USD']);
    await fund(t, c.accounts.USD!.id, 100_000);
    return { c, src: c.accounts.USD!.id, ext: await usdExternal(t, c.id, `123456${suffix}`) };
  };
  const hooksFor = (id: string) => receiver.got.filter((r) => (r.json.data as { id?: string }).id === id).map((r) => ({ type: r.json.type, data: r.json.data as Settling }));

  it('ACH payout: null before execution; executed 10 s after the quote and settling 1 s later: 11 s, in the webhooks too', async () => {
    const p = await payer('789');
    const q = await quote(quoteRequest(p.src, p.ext, 5_000));
    expect(q.destination.paymentRail).toBe('ACH');
    expect(await tx(q.transactionId)).toMatchObject({ status: 'PENDING', expectedSettlementAt: null, settlementTimelineSeconds: null });

    await advance(10);
    expect((await t.call('POST', `/quotes/${encodeURIComponent(q.id)}/execute`)).statusCode).toBe(200);
    const expected = { expectedSettlementAt: plus(q.createdAt, 11), settlementTimelineSeconds: 11 };
    expect(await tx(q.transactionId)).toMatchObject({ status: 'PROCESSING', paymentRail: 'ACH', ...expected });

    await advance(1);
    const done = await tx(q.transactionId);
    expect(done).toMatchObject({ status: 'COMPLETED', ...expected });
    expect(done.settledAt).toBe(expected.expectedSettlementAt);

    const hooks = hooksFor(q.transactionId);
    expect(hooks.map((h) => h.type)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.PROCESSING', 'OUTGOING_PAYMENT.COMPLETED']);
    expect(hooks[0]!.data).toMatchObject({ expectedSettlementAt: null, settlementTimelineSeconds: null });
    expect(hooks[1]!.data).toMatchObject(expected);
    expect(hooks[2]!.data).toMatchObject(expected);
    await assertLedgerInvariants(t.store);
  });

  it('an instant rail settling at once has no expectedSettlementAt; the 003 long payment on it does (6 minutes)', async () => {
    const p = await payer('789');
    const rtp = await quote({ ...quoteRequest(p.src, p.ext, 1_000, { immediatelyExecute: true }), destination: { destinationType: 'ACCOUNT', accountId: p.ext, paymentRail: 'RTP' } });
    expect(await tx(rtp.transactionId)).toMatchObject({ status: 'PROCESSING', paymentRail: 'RTP', expectedSettlementAt: null, settlementTimelineSeconds: 1 });

    const slow = await payer('003');
    const long = await quote({ ...quoteRequest(slow.src, slow.ext, 1_000, { immediatelyExecute: true }), destination: { destinationType: 'ACCOUNT', accountId: slow.ext, paymentRail: 'RTP' } });
    const expected = { expectedSettlementAt: plus(long.createdAt, 360), settlementTimelineSeconds: 360 };
    expect(await tx(long.transactionId)).toMatchObject({ status: 'PROCESSING', paymentRail: 'RTP', ...expected });
    await advance(359);
    expect((await tx(long.transactionId)).status).toBe('PROCESSING');
    await advance(1);
    const done = await tx(long.transactionId);
    expect(done).toMatchObject({ status: 'COMPLETED', ...expected });
    expect(done.settledAt).toBe(expected.expectedSettlementAt);
    await assertLedgerInvariants(t.store);
  });

  it('transfer-out 005 is expected when it ends, 30 s on; a 002 that fails at once expects no settlement', async () => {
    const p = await payer('005');
    const res = await t.call('POST', '/transfer-out', { source: { accountId: p.src }, destination: { accountId: p.ext }, amount: 2_000 });
    expect(res.statusCode, res.body).toBe(201);
    // The answer is the PENDING snapshot transfer-out answers with (nothing expected yet);
    // the started payment, read back, expects its end 30 s on.
    const started = res.json() as Settling;
    expect(started).toMatchObject({ status: 'PENDING', paymentRail: 'ACH', expectedSettlementAt: null, settlementTimelineSeconds: null });
    expect(await tx(started.id)).toMatchObject({ status: 'PROCESSING', paymentRail: 'ACH', expectedSettlementAt: plus(started.createdAt, 30), settlementTimelineSeconds: 30 });

    const f = await payer('002');
    const failed = await t.call('POST', '/transfer-out', { source: { accountId: f.src }, destination: { accountId: f.ext }, amount: 2_000 });
    expect(failed.statusCode, failed.body).toBe(201);
    expect(failed.json()).toMatchObject({ status: 'FAILED', expectedSettlementAt: null, settlementTimelineSeconds: null });
    await advance(31);
    expect(await tx(started.id)).toMatchObject({ status: 'FAILED', expectedSettlementAt: plus(started.createdAt, 30), settlementTimelineSeconds: 30 });
    await assertLedgerInvariants(t.store);
  });

  it('real-time funding counts from the quote’s creation; a transfer between internal accounts (no rail) settles at once', async () => {
    const p = await payer('789');
    const q = await quote({ source: { sourceType: 'REALTIME_FUNDING', currency: 'USD', customerId: p.c.id }, destination: { destinationType: 'ACCOUNT', accountId: p.ext }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 3_000 });
    await advance(100);
    const sent = await t.call('POST', '/sandbox/send', { quoteId: q.id, currencyCode: 'USD' });
    expect(sent.statusCode, sent.body).toBe(200);
    expect(sent.json()).toMatchObject({ status: 'PROCESSING', paymentRail: 'ACH', expectedSettlementAt: plus(q.createdAt, 101), settlementTimelineSeconds: 101 });

    const other = await newCustomer(t, ['USD']);
    const internal = await quote(quoteRequest(p.src, other.accounts.USD!.id, 1_000, { immediatelyExecute: true }));
    expect(await tx(internal.transactionId)).toMatchObject({ status: 'PROCESSING', paymentRail: null, expectedSettlementAt: null, settlementTimelineSeconds: 1 });
    await advance(1);
    await assertLedgerInvariants(t.store);
  });
});
