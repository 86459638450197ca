import type { LightMyRequestResponse } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { idempotencyFaults } from '../../src/kernel/idempotency.js';
import { DEFAULT_AUTH, envelope, makeApp, STORE, type TestApp, V } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import { balanceOf, fund, newCustomer, usdExternal } from '../money-helpers.js';
import { Receiver } from '../webhook-receiver.js';

// Exactly once per Idempotency-Key for EVERY POST that has an effect, not only the money
// moving ones (docs/reliability.md): each route stores its answer in the transaction of its
// effect. The crash window is simulated with the kernel's fault seam: a throw right after the
// effect's transaction committed, so the request answers 500 and onSend never stores the
// answer (before this design it released the key, and the retry ran the request again: a
// second customer, token, document …). The retry with the key must replay the committed
// answer, byte for byte, and create nothing more.

type Table = 'customers' | 'api_tokens' | 'external_accounts' | 'beneficial_owners' | 'documents' | 'kyc_links' | 'events' | 'verifications' | 'ledger_entries';

const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');

describe(`Idempotency-Key on every POST with an effect, after a crash (${STORE})`, () => {
  let t: TestApp;

  const crashOnce = (point: 'afterEffectCommit' | 'afterEffectStep') => {
    idempotencyFaults[point] = () => {
      delete idempotencyFaults[point];
      throw new Error(`simulated crash ${point}`);
    };
  };
  const count = async (table: Table, where?: [string, string]) => {
    let q = t.store.db.selectFrom(table).select((eb) => eb.fn.countAll().as('n'));
    if (where) q = q.where(where[0] as never, '=', where[1] as never);
    return Number((await q.executeTakeFirstOrThrow()).n);
  };

  /** Send once with a crash right after the effect's commit (500), then retry: the retry must replay, and so must a further one. */
  async function crashThenReplay(send: (key: string) => Promise<LightMyRequestResponse>, key: string, status: number): Promise<LightMyRequestResponse> {
    crashOnce('afterEffectCommit');
    const lost = await send(key);
    expect(lost.statusCode, lost.body).toBe(500);
    expect(idempotencyFaults.afterEffectCommit, 'the effect did not commit through effectTransaction').toBeUndefined();
    const retry = await send(key);
    expect(retry.statusCode, retry.body).toBe(status);
    expect(retry.headers['idempotent-replayed'], `${key}: the retry ran the request again`).toBe('true');
    const again = await send(key);
    expect(again.statusCode).toBe(status);
    expect(again.body).toBe(retry.body);
    return retry;
  }
  const post = (path: string, body?: unknown) => (key: string) => t.call('POST', path, body, { 'idempotency-key': key });

  beforeAll(async () => {
    t = await makeApp();
  });
  afterEach(() => {
    delete idempotencyFaults.afterEffectCommit;
    delete idempotencyFaults.afterEffectStep;
  });
  afterAll(async () => t.close());

  it('POST /customers: one customer', async () => {
    const before = await count('customers');
    const retry = await crashThenReplay(post('/customers', { customerType: 'INDIVIDUAL', fullName: 'Ada Once' }), 'customer-1', 201);
    expect(await count('customers')).toBe(before + 1);
    const id = (retry.json() as { id: string }).id;
    expect((await t.call('GET', `/customers/${id}`)).statusCode).toBe(200);
  });

  it('POST /tokens: one token, and the replay carries no secret', async () => {
    const before = await count('api_tokens');
    const retry = await crashThenReplay(post('/tokens', { name: 'ci', permissions: ['VIEW'] }), 'token-1', 201);
    expect(await count('api_tokens')).toBe(before + 1);
    expect(retry.json()).not.toHaveProperty('clientSecret');
    expect(retry.json()).toMatchObject({ name: 'ci', permissions: ['VIEW'] });
  });

  it('external accounts: create, ownership challenge and verify each take effect once', async () => {
    const c = await newCustomer(t, ['USD']);
    const before = await count('external_accounts');
    const bank = {
      customerId: c.id,
      currency: 'USD',
      accountInfo: { accountType: 'USD_ACCOUNT', accountNumber: '555000111', routingNumber: '021000021', beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Rita Receiver' } },
    };
    await crashThenReplay(post('/customers/external-accounts', bank), 'ext-1', 201);
    expect(await count('external_accounts')).toBe(before + 1);

    const wallet = await t.call('POST', '/customers/external-accounts', {
      customerId: c.id,
      currency: 'USDC',
      ownershipType: 'FIRST_PARTY',
      accountInfo: { accountType: 'ETHEREUM_WALLET', address: '0x52908400098527886E0F7030069857D2E4169EE7' },
    });
    expect(wallet.statusCode, wallet.body).toBe(201);
    const walletId = (wallet.json() as { id: string }).id;
    const challenge = await crashThenReplay(post(`/customers/external-accounts/${walletId}/challenge`, { method: 'WALLET_SIGNATURE' }), 'challenge-1', 201);
    // The replayed challenge is the one outstanding: its nonce is the stored one.
    const row = await t.store.db.selectFrom('external_accounts').select('challenge_nonce').where('id', '=', walletId).executeTakeFirstOrThrow();
    expect((challenge.json() as { nonce: string }).nonce).toBe(row.challenge_nonce);
    const statusEvents = await count('events', ['resource_id', walletId]);
    const verified = await crashThenReplay(post(`/customers/external-accounts/${walletId}/verify`, { signature: 'SANDBOX_VALID_SIGNATURE' }), 'verify-1', 200);
    expect((verified.json() as { status: string }).status).toBe('ACTIVE');
    expect(await count('events', ['resource_id', walletId])).toBe(statusEvents + 1);
  });

  it('POST /beneficial-owners: one owner, the sealed answer replayed', async () => {
    const b = await t.call('POST', '/customers', {
      customerType: 'BUSINESS',
      businessInfo: { legalName: 'Acme Once Inc', country: 'US', incorporatedOn: '2015-03-01', taxId: '12-3456789', registrationNumber: 'RN-001' },
    });
    expect(b.statusCode, b.body).toBe(201);
    const business = (b.json() as { id: string }).id;
    const before = await count('beneficial_owners');
    const personalInfo = {
      firstName: 'Jane', lastName: 'Smith', birthDate: '1978-06-15', nationality: 'US',
      address: { line1: '1 Market Street', city: 'San Francisco', state: 'CA', postalCode: '94105', country: 'US' },
      idType: 'SSN', identifier: '123-45-6789',
    };
    const retry = await crashThenReplay(post('/beneficial-owners', { customerId: business, roles: ['UBO'], ownershipPercentage: 51, personalInfo }), 'owner-1', 201);
    expect(await count('beneficial_owners')).toBe(before + 1);
    expect(retry.json()).toMatchObject({ customerId: business, personalInfo: { identifier: '123-45-6789' } });
    // Stored sealed, as before.
    const stored = await t.store.db.selectFrom('idempotency_keys').select('response_body').where('key', '=', 'owner-1').executeTakeFirstOrThrow();
    expect(stored.response_body).not.toContain('123-45-6789');
  });

  it('POST /documents (multipart): one document', async () => {
    const c = await newCustomer(t, ['USD']);
    const before = await count('documents');
    const send = (key: string) => {
      const fd = new FormData();
      fd.append('documentHolder', c.id);
      fd.append('documentType', 'PASSPORT');
      fd.append('country', 'GB');
      fd.append('file', new Blob([PNG], { type: 'image/png' }), 'passport.png');
      return t.app.inject({ method: 'POST', url: `${V}/documents`, payload: fd, headers: { authorization: DEFAULT_AUTH, 'idempotency-key': key } });
    };
    await crashThenReplay(send, 'doc-1', 201);
    expect(await count('documents')).toBe(before + 1);
  });

  it('KYC link, verification, contact verification: each once', async () => {
    const c = await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Marie Curie', region: 'FR', email: 'marie@example.fr' });
    expect(c.statusCode, c.body).toBe(201);
    const id = (c.json() as { id: string }).id;

    // 204, answered with nothing: the replay is a 204 too.
    const sent = await crashThenReplay(post(`/customers/${id}/verify-email`), 'send-1', 204);
    expect(sent.body).toBe('');
    const confirmed = await crashThenReplay(post(`/customers/${id}/verify-email/confirm`, { code: '123456' }), 'confirm-1', 200);
    expect((confirmed.json() as { contactVerification: { email: string } }).contactVerification.email).toBe('VERIFIED');

    const links = await count('kyc_links');
    const link = await crashThenReplay(post(`/customers/${id}/kyc-link`), 'kyc-1', 201);
    expect(await count('kyc_links')).toBe(links + 1);
    expect((link.json() as { kycUrl: string }).kycUrl).toContain('/');

    const events = await count('events');
    const verification = await crashThenReplay(post('/verifications', { customerId: id }), 'verification-1', 200);
    expect(await count('verifications')).toBeGreaterThanOrEqual(1);
    const vid = (verification.json() as { id: string }).id;
    // One submission: one VERIFICATION.* event for it.
    expect(await count('events', ['resource_id', vid])).toBe(1);
    expect(await count('events')).toBeGreaterThan(events);
  });

  it('transactions: confirm and cancel each once; the cancel refunds once', async () => {
    const c = await newCustomer(t, ['USD']);
    const usd = c.accounts.USD!.id;
    await fund(t, usd, 100_000);
    const ext = await usdExternal(t, c.id, '123456789');
    const out = await t.call('POST', '/transfer-out', { source: { accountId: usd }, destination: { accountId: ext, paymentRail: 'ACH' }, amount: 10_000 });
    expect(out.statusCode, out.body).toBe(201);
    const txId = (out.json() as { id: string }).id;

    const receipt = await crashThenReplay(post(`/transactions/${txId}/confirm`, { receiptDeliveryConfirmedAt: '2025-10-01T00:00:00Z' }), 'confirm-tx-1', 200);
    expect(receipt.json()).toMatchObject({ id: txId, receiptDeliveryConfirmedAt: '2025-10-01T00:00:00.000Z' });

    const entries = await count('ledger_entries');
    const cancelled = await crashThenReplay(post(`/transactions/${txId}/cancel`, { reason: 'REQUESTED_AFTER_HOURS' }), 'cancel-1', 200);
    expect(cancelled.json()).toMatchObject({ status: 'FAILED', refund: { reason: 'USER_CANCELLATION' } });
    const afterCancel = await count('ledger_entries');
    expect(afterCancel).toBeGreaterThan(entries);
    expect(await balanceOf(t, usd)).toEqual({ available: 100_000, total: 100_000 });
    // Without the key, a cancel now is the usual 409: the first one took effect.
    envelope(await t.call('POST', `/transactions/${txId}/cancel`), 409, 'TRANSACTION_NOT_CANCELLABLE');
    await assertLedgerInvariants(t.store);
  });

  it('approve and reject of a payment pending the platform: each decided once', async () => {
    const rx = await new Receiver().start();
    try {
      rx.behave = (r) => (r.json.type === 'INCOMING_PAYMENT.PENDING' ? 202 : 200);
      expect((await t.call('PATCH', '/config', { webhookEndpoint: rx.url })).statusCode).toBe(200);
      const c = await newCustomer(t, ['USD']);
      const usd = c.accounts.USD!.id;
      const receive = async (amount: number) => {
        const res = await t.call('POST', '/sandbox/uma/receive', { senderUmaAddress: '$success.usd@sandbox.uma.money', customerId: c.id, receivingCurrencyCode: 'USD', receivingCurrencyAmount: amount });
        expect(res.statusCode, res.body).toBe(200);
        await t.running.webhooks.runDue();
        return (res.json() as { id: string }).id;
      };
      const a = await receive(4_000);
      const approved = await crashThenReplay(post(`/transactions/${a}/approve`, {}), 'approve-1', 200);
      expect(approved.json()).toMatchObject({ id: a, status: 'COMPLETED' });
      const r = await receive(3_000);
      const rejected = await crashThenReplay(post(`/transactions/${r}/reject`, { reason: 'not expected' }), 'reject-1', 200);
      expect(rejected.json()).toMatchObject({ id: r, status: 'REJECTED' });
      expect((await balanceOf(t, usd)).available).toBe(4_000);
      await assertLedgerInvariants(t.store);
    } finally {
      expect((await t.call('PATCH', '/config', { webhookEndpoint: null })).statusCode).toBe(200);
      await rx.stop();
    }
  });

  const offsetSeconds = async () => ((await t.call('GET', '/sandbox/clock')).json() as { offsetSeconds: number }).offsetSeconds;

  it('POST /sandbox/clock/advance: a crash after the move replays; the clock moved once', async () => {
    const start = await offsetSeconds();
    const retry = await crashThenReplay(post('/sandbox/clock/advance', { seconds: 60 }), 'advance-1', 200);
    expect((retry.json() as { offsetSeconds: number }).offsetSeconds).toBe(start + 60);
    expect(await offsetSeconds()).toBe(start + 60);
  });

  it('POST /sandbox/clock/advance: a crash midway (jobs run, clock partly moved) is finished by the retry, to the same target', async () => {
    const c = await newCustomer(t, ['USD']);
    const usd = c.accounts.USD!.id;
    await fund(t, usd, 50_000);
    const ext = await usdExternal(t, c.id, '123456789');
    const out = await t.call('POST', '/transfer-out', { source: { accountId: usd }, destination: { accountId: ext }, amount: 1_000 });
    expect(out.statusCode, out.body).toBe(201);
    const start = await offsetSeconds();
    crashOnce('afterEffectStep');
    const lost = await t.call('POST', '/sandbox/clock/advance', { seconds: 600 }, { 'idempotency-key': 'advance-2' });
    expect(lost.statusCode, lost.body).toBe(500);
    const partial = await offsetSeconds();
    expect(partial).toBeGreaterThan(start);
    expect(partial).toBeLessThan(start + 600);
    // The process that held the claim is gone: its lease lapsed.
    await t.store.db.updateTable('idempotency_keys').set({ lease_ms: 0 }).where('key', '=', 'advance-2').execute();
    const retry = await t.call('POST', '/sandbox/clock/advance', { seconds: 600 }, { 'idempotency-key': 'advance-2' });
    expect(retry.statusCode, retry.body).toBe(200);
    expect((retry.json() as { offsetSeconds: number }).offsetSeconds).toBe(start + 600);
    expect(await offsetSeconds()).toBe(start + 600);
    const again = await t.call('POST', '/sandbox/clock/advance', { seconds: 600 }, { 'idempotency-key': 'advance-2' });
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toBe(retry.body);
    expect(await offsetSeconds()).toBe(start + 600);
    const tx = await t.call('GET', `/transactions/${(out.json() as { id: string }).id}`);
    expect((tx.json() as { status: string }).status).toBe('COMPLETED');
    await assertLedgerInvariants(t.store);
  });

  it('PATCH and DELETE take no Idempotency-Key: the header is ignored, nothing is stored', async () => {
    const c = await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Pat Patch' });
    const id = (c.json() as { id: string }).id;
    const patched = await t.call('PATCH', `/customers/${id}`, { customerType: 'INDIVIDUAL', fullName: 'Pat Patched' }, { 'idempotency-key': 'patch-1' });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(await t.store.db.selectFrom('idempotency_keys').select('key').where('key', '=', 'patch-1').executeTakeFirst()).toBeUndefined();
  });
});
