import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhookSignature } from '../../src/index.js';
import { advanceAndDeliver, makeApp, STORE, type TestApp } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import { fund, newCustomer, quoteRequest, type QuoteBody, usdExternal } from '../money-helpers.js';
import { Receiver } from '../webhook-receiver.js';

// Payout webhooks at the platform's endpoint (a real receiver on a local port), driven by
// POST /sandbox/clock/advance: every path gives OUTGOING_PAYMENT.PENDING, then .PROCESSING,
// then its terminal event, in that order, each once (a quote executed later or at once, a
// transfer-out, a failing destination); the 003 long payment after about 6 minutes, the 005
// delayed failure after about 30 seconds.

describe(`payment webhooks on the sandbox clock (${STORE})`, () => {
  let t: TestApp;
  let receiver: Receiver;
  let publicKey: string;

  beforeAll(async () => {
    t = await makeApp();
    receiver = await new Receiver().start();
    expect((await t.call('PATCH', '/config', { webhookEndpoint: receiver.url })).statusCode).toBe(200);
    publicKey = ((await t.call('GET', '/sandbox/webhooks/public-key')).json() as { publicKey: string }).publicKey;
  });
  afterAll(async () => {
    await receiver.stop();
    await t.close();
  });

  const advance = (seconds: number) => advanceAndDeliver(t, seconds);
  const hooksFor = (id: string) => receiver.got.filter((r) => (r.json.data as { id?: string }).id === id);
  const typesFor = (id: string) => hooksFor(id).map((r) => r.json.type);
  /** Each webhook's data.status, in arrival order. */
  const statusesFor = (id: string) => hooksFor(id).map((r) => (r.json.data as { status: string }).status);
  const deliver = async () => t.running.webhooks.runDue();
  const payer = async (suffix: string) => {
    const c = await newCustomer(t, ['USD']);
    await fund(t, c.accounts.USD!.id, 100_000);
    return { src: c.accounts.USD!.id, ext: await usdExternal(t, c.id, `123456${suffix}`) };
  };

  it('quote, then execute: PENDING at creation, PROCESSING at execution, COMPLETED a second later; each once, signed', async () => {
    const p = await payer('789');
    const created = await t.call('POST', '/quotes', quoteRequest(p.src, p.ext, 5_000));
    expect(created.statusCode, created.body).toBe(201);
    const q = created.json() as QuoteBody;
    await deliver();
    expect(typesFor(q.transactionId)).toEqual(['OUTGOING_PAYMENT.PENDING']);
    expect(hooksFor(q.transactionId)[0]!.json.data).toMatchObject({ id: q.transactionId, status: 'PENDING', type: 'OUTGOING', quoteId: q.id, sentAmount: { amount: 5_000 } });
    expect((await t.call('POST', `/quotes/${encodeURIComponent(q.id)}/execute`)).statusCode).toBe(200);
    await deliver();
    expect(typesFor(q.transactionId)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.PROCESSING']);
    await advance(1);
    expect(typesFor(q.transactionId)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.PROCESSING', 'OUTGOING_PAYMENT.COMPLETED']);
    expect(statusesFor(q.transactionId)).toEqual(['PENDING', 'PROCESSING', 'COMPLETED']);
    for (const r of hooksFor(q.transactionId)) expect(verifyWebhookSignature(r.body, String(r.headers['x-service-signature']), publicKey)).toBe(true);
    await advance(3600);
    expect(typesFor(q.transactionId)).toHaveLength(3);
    await assertLedgerInvariants(t.store);
  });

  it('quote with immediatelyExecute: PENDING, then PROCESSING from the one request, then COMPLETED', async () => {
    const p = await payer('789');
    const q = (await t.call('POST', '/quotes', { ...quoteRequest(p.src, p.ext, 5_000), immediatelyExecute: true })).json() as QuoteBody;
    expect(q.status).toBe('PROCESSING');
    await deliver();
    expect(typesFor(q.transactionId)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.PROCESSING']);
    expect(statusesFor(q.transactionId)).toEqual(['PENDING', 'PROCESSING']);
    await advance(1);
    expect(typesFor(q.transactionId)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.PROCESSING', 'OUTGOING_PAYMENT.COMPLETED']);
    const stamps = hooksFor(q.transactionId).map((r) => Date.parse(r.json.timestamp));
    expect(stamps[2]! - stamps[1]!).toBeGreaterThanOrEqual(1_000);
    await assertLedgerInvariants(t.store);
  });

  it('transfer-out: 201 with the transaction PENDING (the PENDING webhook’s data), then PROCESSING, then COMPLETED', async () => {
    const p = await payer('789');
    const res = await t.call('POST', '/transfer-out', { source: { accountId: p.src }, destination: { accountId: p.ext }, amount: 5_000 });
    expect(res.statusCode, res.body).toBe(201);
    const answer = res.json() as { id: string; status: string; type: string };
    expect(answer).toMatchObject({ status: 'PENDING', type: 'OUTGOING', direction: 'DEBIT' });
    await deliver();
    expect(typesFor(answer.id)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.PROCESSING']);
    expect(hooksFor(answer.id)[0]!.json.data).toEqual(answer);
    expect(hooksFor(answer.id)[1]!.json.data).toMatchObject({ id: answer.id, status: 'PROCESSING' });
    await advance(1);
    expect(typesFor(answer.id)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.PROCESSING', 'OUTGOING_PAYMENT.COMPLETED']);
    expect(statusesFor(answer.id)).toEqual(['PENDING', 'PROCESSING', 'COMPLETED']);
    await assertLedgerInvariants(t.store);
  });

  it('a failing destination (002): PENDING, PROCESSING, FAILED, then the refund; a transfer-out failing at once (003): PENDING, FAILED', async () => {
    const p = await payer('002');
    const q = (await t.call('POST', '/quotes', { ...quoteRequest(p.src, p.ext, 5_000), immediatelyExecute: true })).json() as QuoteBody;
    await advance(2);
    expect(typesFor(q.transactionId)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.PROCESSING', 'OUTGOING_PAYMENT.FAILED', 'OUTGOING_PAYMENT.REFUND_PENDING', 'OUTGOING_PAYMENT.REFUND_COMPLETED']);
    expect(statusesFor(q.transactionId)).toEqual(['PENDING', 'PROCESSING', 'FAILED', 'FAILED', 'FAILED']);
    expect(hooksFor(q.transactionId)[2]!.json.data).toMatchObject({ failureReason: 'QUOTE_EXECUTION_FAILED', refund: { status: 'PENDING' } });

    const closed = await payer('003');
    const res = await t.call('POST', '/transfer-out', { source: { accountId: closed.src }, destination: { accountId: closed.ext }, amount: 5_000 });
    expect(res.statusCode, res.body).toBe(201);
    const failed = res.json() as { id: string };
    expect(failed).toMatchObject({ status: 'FAILED', failureReason: 'ACCOUNT_INVALID' });
    await advance(2);
    expect(typesFor(failed.id)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.FAILED']);
    expect(statusesFor(failed.id)).toEqual(['PENDING', 'FAILED']);
    await assertLedgerInvariants(t.store);
  });

  it('003: the completion arrives after advancing about 6 minutes, signed', async () => {
    const p = await payer('003');
    const q = (await t.call('POST', '/quotes', { ...quoteRequest(p.src, p.ext, 5_000), immediatelyExecute: true })).json() as QuoteBody;
    await advance(1);
    expect(typesFor(q.transactionId)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.PROCESSING']);
    await advance(359);
    expect(typesFor(q.transactionId)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.PROCESSING', 'OUTGOING_PAYMENT.COMPLETED']);
    const completed = receiver.got.find((r) => r.json.type === 'OUTGOING_PAYMENT.COMPLETED' && (r.json.data as { id: string }).id === q.transactionId)!;
    expect(verifyWebhookSignature(completed.body, String(completed.headers['x-service-signature']), publicKey)).toBe(true);
    expect(completed.json.data).toMatchObject({ id: q.transactionId, status: 'COMPLETED', type: 'OUTGOING' });
    await assertLedgerInvariants(t.store);
  });

  it('005 (transfer-out): the failure and the refund arrive after advancing about 30 seconds, in order', async () => {
    const p = await payer('005');
    const res = await t.call('POST', '/transfer-out', { source: { accountId: p.src }, destination: { accountId: p.ext }, amount: 5_000 });
    const id = (res.json() as { id: string }).id;
    await advance(29);
    expect(typesFor(id)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.PROCESSING']);
    await advance(2);
    expect(typesFor(id)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.PROCESSING', 'OUTGOING_PAYMENT.FAILED', 'OUTGOING_PAYMENT.REFUND_PENDING', 'OUTGOING_PAYMENT.REFUND_COMPLETED']);
    const refunded = receiver.got.filter((r) => (r.json.data as { id?: string }).id === id).at(-1)!;
    expect(refunded.json.data).toMatchObject({ status: 'FAILED', failureReason: 'QUOTE_EXECUTION_FAILED', refund: { status: 'COMPLETED' } });
    await assertLedgerInvariants(t.store);
  });
});
