import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhookSignature } from '../../src/index.js';
import { makeApp, STORE, type TestApp } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import { fund, newCustomer, quoteRequest, type QuoteBody, usdExternal } from '../money-helpers.js';
import { Receiver } from '../webhook-receiver.js';

// The delayed sandbox outcomes, driven by POST /sandbox/clock/advance, reach the platform's
// webhook endpoint (a real receiver on a local port) signed and in order: the 003 long
// payment after about 6 minutes, the 005 delayed failure after about 30 seconds.

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

  const advance = async (seconds: number) => expect((await t.call('POST', '/sandbox/clock/advance', { seconds })).statusCode).toBe(200);
  const typesFor = (id: string) => receiver.got.filter((r) => (r.json.data as { id?: string }).id === id).map((r) => r.json.type);
  const payer = async (suffix: string) => {
    const c = await newCustomer(t, ['USD']);
    await fund(t, c.accounts.USD!.id, 100_000);
    return { src: c.accounts.USD!.id, ext: await usdExternal(t, c.id, `123456${suffix}`) };
  };

  it('003: the completion arrives after advancing about 6 minutes, signed', async () => {
    const p = await payer('003');
    const q = (await t.call('POST', '/quotes', { ...quoteRequest(p.src, p.ext, 5_000), immediatelyExecute: true })).json() as QuoteBody;
    await advance(1);
    expect(typesFor(q.transactionId)).toEqual(['OUTGOING_PAYMENT.PROCESSING']);
    await advance(359);
    expect(typesFor(q.transactionId)).toEqual(['OUTGOING_PAYMENT.PROCESSING', 'OUTGOING_PAYMENT.COMPLETED']);
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
    expect(typesFor(id)).toEqual(['OUTGOING_PAYMENT.PROCESSING']);
    await advance(2);
    expect(typesFor(id)).toEqual(['OUTGOING_PAYMENT.PROCESSING', 'OUTGOING_PAYMENT.FAILED', 'OUTGOING_PAYMENT.REFUND_PENDING', 'OUTGOING_PAYMENT.REFUND_COMPLETED']);
    const refunded = receiver.got.filter((r) => (r.json.data as { id?: string }).id === id).at(-1)!;
    expect(refunded.json.data).toMatchObject({ status: 'FAILED', failureReason: 'QUOTE_EXECUTION_FAILED', refund: { status: 'COMPLETED' } });
    await assertLedgerInvariants(t.store);
  });
});
