import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { advanceAndDeliver, envelope, makeApp, STORE, type TestApp } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import { balanceOf, eurExternal, fund, otherPlatformAuth, quoteRequest, TERMS, usdExternal } from '../money-helpers.js';
import { Receiver } from '../webhook-receiver.js';

// Strong Customer Authentication, black box: customers created in an EU/EEA region (the rule
// contact verification uses) enroll factors, log in for 180-day sessions and authorize their
// payments; everyone else gets 409 from every SCA endpoint and is never challenged.

const CODE = '123456';
const DAY = 24 * 3600;

interface Challenge {
  id: string;
  expiresAt: string;
  factor: string;
  availableFactors: string[];
  purpose?: string;
}
interface Q {
  id: string;
  status: string;
  transactionId: string;
  scaChallenge?: Challenge;
  paymentInstructions?: unknown[];
}

describe(`strong customer authentication (${STORE})`, () => {
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

  const enc = encodeURIComponent;
  /** Now on the platform's sandbox clock (it moves with every advance). */
  const nowMs = async () => Date.parse(((await t.call('GET', '/sandbox/clock')).json() as { now: string }).now);
  const typesFor = (id: string) => receiver.got.filter((r) => (r.json.data as { id?: string }).id === id).map((r) => r.json.type);

  async function customer(region: string, currencies = ['EUR', 'USD']): Promise<{ id: string; accounts: Record<string, string> }> {
    const tag = Math.random().toString(36).slice(2, 8);
    const res = await t.call('POST', '/customers', {
      customerType: 'INDIVIDUAL',
      fullName: `Erika Muster ${tag}x`,
      region,
      email: `erika.${tag}@example.eu`,
      phoneNumber: '+4915112345678',
      currencies,
      endUserTermsConsent: TERMS,
    });
    expect(res.statusCode, res.body).toBe(201);
    const id = (res.json() as { id: string }).id;
    await t.store.db.updateTable('customers').set({ status: 'APPROVED' }).where('id', '=', id).execute();
    const list = (await t.call('GET', `/customers/internal-accounts?customerId=${enc(id)}`)).json() as { data: Array<{ id: string; balance: { currency: { code: string } } }> };
    return { id, accounts: Object.fromEntries(list.data.map((a) => [a.balance.currency.code, a.id])) };
  }

  const sca = (method: 'GET' | 'POST' | 'DELETE', path: string, customerId: string, body?: unknown) => t.call(method, `/sca${path}?customerId=${enc(customerId)}`, body);

  async function login(customerId: string): Promise<string> {
    const start = await sca('POST', '/login/start', customerId, { factor: 'SMS_OTP' });
    expect(start.statusCode, start.body).toBe(200);
    const done = await sca('POST', '/login/complete', customerId, { factor: 'SMS_OTP', challengeId: start.json().challengeId, code: CODE, endUserIpAddress: '203.0.113.7' });
    expect(done.statusCode, done.body).toBe(200);
    return done.json().sessionExpiresAt as string;
  }

  async function funded(currency = 'EUR', amount = 100_000) {
    const c = await customer('DE');
    await fund(t, c.accounts[currency]!, amount);
    return c;
  }

  const quote = async (body: Record<string, unknown>) => {
    const res = await t.call('POST', '/quotes', body);
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as Q;
  };
  const execute = (q: Q) => t.call('POST', `/quotes/${enc(q.id)}/execute`);
  const authorize = (q: Q, body: unknown = { code: CODE }) => t.call('POST', `/quotes/${enc(q.id)}/authorize`, body);
  const tx = async (id: string) => (await t.call('GET', `/transactions/${enc(id)}`)).json() as { status: string; failureReason?: string };

  it('an EU customer end to end: factors, login, quote challenge, authorize, settle, webhooks', async () => {
    const c = await funded();
    const src = c.accounts.EUR!;
    const ext = await eurExternal(t, c.id);

    // Factors: SMS_OTP is implicit; TOTP enrolls with the secret and the sandbox code.
    expect((await sca('GET', '/factors', c.id)).json()).toEqual({ factors: [{ factor: 'SMS_OTP' }] });
    const totp = await sca('POST', '/factors', c.id, { type: 'TOTP' });
    expect(totp.statusCode, totp.body).toBe(200);
    expect(totp.json()).toMatchObject({ type: 'TOTP', secret: expect.any(String), secretBase32Encoded: expect.any(String), totpUri: expect.stringMatching(/^otpauth:\/\/totp\//) });
    envelope(await sca('POST', '/factors/confirm', c.id, { type: 'TOTP', secret: totp.json().secret, code: '000000' }), 400, 'INVALID_INPUT');
    envelope(await sca('POST', '/factors/confirm', c.id, { type: 'TOTP', secret: 'not-the-secret', code: CODE }), 400, 'INVALID_INPUT');
    const missing = envelope(await sca('POST', '/factors/confirm', c.id, { type: 'TOTP' }), 400, 'INVALID_INPUT');
    expect((missing.details!.errors as Array<{ field: string }>).map((e) => e.field)).toEqual(['secret', 'code']);
    const confirmed = await sca('POST', '/factors/confirm', c.id, { type: 'TOTP', secret: totp.json().secret, code: CODE });
    expect(confirmed.statusCode, confirmed.body).toBe(200);
    expect(confirmed.json().type).toBe('TOTP');
    expect(confirmed.json().recoveryCodes.length).toBeGreaterThan(0);
    envelope(await sca('POST', '/factors', c.id, { type: 'TOTP' }), 409, 'CONFLICT');

    // Login: a 180-day session on the sandbox clock.
    const before = (await nowMs());
    const expires = await login(c.id);
    expect(Date.parse(expires) - before).toBeGreaterThanOrEqual(180 * DAY * 1000);
    expect(Date.parse(expires) - before).toBeLessThan(180 * DAY * 1000 + 60_000);

    // Execute: PENDING_AUTHORIZATION with the challenge; nothing is held yet.
    const q = await quote(quoteRequest(src, ext, 10_000));
    const held = await execute(q);
    expect(held.statusCode, held.body).toBe(200);
    const h = held.json() as Q;
    expect(h.status).toBe('PENDING_AUTHORIZATION');
    expect(h.scaChallenge).toMatchObject({ id: expect.stringMatching(/^ScaChallenge:/), factor: 'SMS_OTP', availableFactors: ['SMS_OTP'], purpose: 'PAYOUT' });
    expect(Date.parse(h.scaChallenge!.expiresAt) - (await nowMs())).toBeLessThanOrEqual(5 * 60_000);
    expect((await t.call('GET', `/quotes/${enc(q.id)}`)).json()).toMatchObject({ status: 'PENDING_AUTHORIZATION', scaChallenge: { id: h.scaChallenge!.id } });
    expect((await tx(q.transactionId)).status).toBe('PENDING_AUTHORIZATION');
    expect(await balanceOf(t, src)).toEqual({ available: 100_000, total: 100_000 });
    // Re-executing is refused.
    envelope(await execute(q), 409);
    // Resend keeps the challenge and its expiry.
    const resent = await t.call('POST', `/quotes/${enc(q.id)}/authorize/resend`);
    expect(resent.statusCode, resent.body).toBe(204);
    expect(((await t.call('GET', `/quotes/${enc(q.id)}`)).json() as Q).scaChallenge).toEqual(h.scaChallenge);

    // A missing proof lists the field; the right code releases the payment.
    const noProof = envelope(await authorize(q, {}), 400, 'INVALID_INPUT');
    expect(noProof.details!.errors).toEqual([{ field: 'code', message: expect.any(String) }]);
    const ok = await authorize(q);
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json().status).toBe('PROCESSING');
    expect(ok.json().scaChallenge).toBeUndefined();
    expect(await balanceOf(t, src)).toEqual({ available: 90_000, total: 100_000 });
    envelope(await authorize(q), 409, 'CONFLICT');
    await advanceAndDeliver(t, 5);
    expect((await tx(q.transactionId)).status).toBe('COMPLETED');
    expect(typesFor(q.transactionId)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.PENDING_AUTHORIZATION', 'OUTGOING_PAYMENT.PROCESSING', 'OUTGOING_PAYMENT.COMPLETED']);
    const pa = receiver.got.find((r) => r.json.type === 'OUTGOING_PAYMENT.PENDING_AUTHORIZATION' && (r.json.data as { id: string }).id === q.transactionId)!;
    expect(pa.json.data).toMatchObject({ status: 'PENDING_AUTHORIZATION', quoteId: q.id });
    expect(await balanceOf(t, src)).toEqual({ available: 90_000, total: 90_000 });
    await assertLedgerInvariants(t.store);
  });

  it('a quote created with immediatelyExecute for an in-scope customer is held like an executed one, then authorized', async () => {
    // Issue 35 (fourth pass): such a quote and its transaction are written once, at their
    // start; a quote held for authorization is written first, then moved, as before.
    const c = await funded();
    const src = c.accounts.EUR!;
    const ext = await eurExternal(t, c.id);
    await login(c.id);
    const q = await quote(quoteRequest(src, ext, 10_000, { immediatelyExecute: true }));
    expect(q.status).toBe('PENDING_AUTHORIZATION');
    expect(q.scaChallenge).toMatchObject({ id: expect.stringMatching(/^ScaChallenge:/), purpose: 'PAYOUT' });
    expect((await t.call('GET', `/quotes/${enc(q.id)}`)).json()).toEqual(q);
    expect((await tx(q.transactionId)).status).toBe('PENDING_AUTHORIZATION');
    expect(await balanceOf(t, src)).toEqual({ available: 100_000, total: 100_000 });
    envelope(await execute(q), 409);
    const ok = await authorize(q);
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json().status).toBe('PROCESSING');
    expect(await balanceOf(t, src)).toEqual({ available: 90_000, total: 100_000 });
    await advanceAndDeliver(t, 5);
    expect((await tx(q.transactionId)).status).toBe('COMPLETED');
    expect(typesFor(q.transactionId)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.PENDING_AUTHORIZATION', 'OUTGOING_PAYMENT.PROCESSING', 'OUTGOING_PAYMENT.COMPLETED']);
    await assertLedgerInvariants(t.store);
  });

  it('a cross-currency payment takes two authorizations in sequence (conversion, then payout), by code and by passkey', async () => {
    const c = await funded('USD');
    const ext = await eurExternal(t, c.id);
    // A passkey: enrollment options, the credential from an allowed origin.
    const start = await sca('POST', '/factors', c.id, { type: 'PASSKEY' });
    expect(start.statusCode, start.body).toBe(200);
    expect(start.json()).toMatchObject({ type: 'PASSKEY', options: expect.any(Object), allowedOrigins: expect.any(Array), relyingPartyId: expect.any(String) });
    const origin = start.json().allowedOrigins[0] as string;
    const badOrigin = envelope(await sca('POST', '/factors/confirm', c.id, { type: 'PASSKEY', origin: 'https://evil.example', credential: {} }), 400, 'INVALID_INPUT');
    expect((badOrigin.details!.errors as Array<{ field: string }>).map((e) => e.field)).toEqual(['origin', 'credential.id']);
    const pk = await sca('POST', '/factors/confirm', c.id, { type: 'PASSKEY', origin, credential: { id: 'cred-abc', type: 'public-key' } });
    expect(pk.statusCode, pk.body).toBe(200);
    expect(pk.json()).toEqual({ type: 'PASSKEY', factor: { factor: 'PASSKEY', credentialId: 'cred-abc', name: 'Passkey' } });
    envelope(await sca('POST', '/factors', c.id, { type: 'PASSKEY' }), 409, 'PASSKEY_ALREADY_ENROLLED');
    await login(c.id);

    const q = await quote(quoteRequest(c.accounts.USD!, ext, 20_000));
    const first = (await execute(q)).json() as Q;
    expect(first.scaChallenge).toMatchObject({ purpose: 'CURRENCY_CONVERSION', availableFactors: ['SMS_OTP', 'PASSKEY'] });
    const second = await authorize(q);
    expect(second.statusCode, second.body).toBe(200);
    const s = second.json() as Q;
    expect(s.status).toBe('PENDING_AUTHORIZATION');
    expect(s.scaChallenge!.purpose).toBe('PAYOUT');
    expect(s.scaChallenge!.id).not.toBe(first.scaChallenge!.id);
    // A passkey proof needs its origin; a wrong credential is a failed attempt.
    const noOrigin = envelope(await authorize(q, { passkeyAssertion: { credentialId: 'cred-abc' } }), 400, 'INVALID_INPUT');
    expect(noOrigin.details!.errors).toEqual([{ field: 'origin', message: expect.any(String) }]);
    const wrong = envelope(await authorize(q, { passkeyAssertion: { credentialId: 'other' }, origin }), 400, 'INVALID_INPUT');
    expect(wrong.details!.failedAttempts).toBe(1);
    const done = await authorize(q, { passkeyAssertion: { credentialId: 'cred-abc', clientDataJson: 'x', authenticatorData: 'y', signature: 'z' }, origin });
    expect(done.statusCode, done.body).toBe(200);
    expect(done.json().status).toBe('PROCESSING');
    await advanceAndDeliver(t, 5);
    expect(typesFor(q.transactionId)).toEqual([
      'OUTGOING_PAYMENT.PENDING',
      'OUTGOING_PAYMENT.PENDING_AUTHORIZATION',
      'OUTGOING_PAYMENT.PENDING_AUTHORIZATION',
      'OUTGOING_PAYMENT.PROCESSING',
      'OUTGOING_PAYMENT.COMPLETED',
    ]);

    // The passkey is deleted by its credentialId; then it is gone (404 a second time).
    expect((await sca('DELETE', '/factors/cred-abc', c.id)).statusCode).toBe(204);
    expect((await sca('GET', '/factors', c.id)).json()).toEqual({ factors: [{ factor: 'SMS_OTP' }] });
    envelope(await sca('DELETE', '/factors/cred-abc', c.id), 404);
    await assertLedgerInvariants(t.store);
  });

  it('a customer outside SCA regions is never challenged and every SCA endpoint answers 409', async () => {
    const c = await customer('US');
    await fund(t, c.accounts.USD!, 50_000);
    const ext = await usdExternal(t, c.id);
    const calls = [
      sca('GET', '/factors', c.id),
      sca('POST', '/factors', c.id, { type: 'TOTP' }),
      sca('POST', '/factors/confirm', c.id, { type: 'TOTP', secret: 'x', code: CODE }),
      sca('DELETE', '/factors/cred', c.id),
      sca('POST', '/login/start', c.id, { factor: 'SMS_OTP' }),
      sca('POST', '/login/complete', c.id, { factor: 'SMS_OTP', code: CODE, endUserIpAddress: '203.0.113.7' }),
      sca('POST', '/record-event', c.id, { eventType: 'FAILED_LOGIN_ATTEMPT' }),
      sca('POST', '/factors/reset', c.id, { factor: 'SMS_OTP' }),
      sca('GET', '/factors/reset/TwoFactorReset:x', c.id),
      sca('POST', '/factors/reset/TwoFactorReset:x/complete', c.id),
      t.call('POST', `/customers/external-accounts/${enc(ext)}/trust`),
      t.call('POST', `/customers/external-accounts/${enc(ext)}/trust/confirm`, { code: CODE }),
      t.call('POST', `/customers/external-accounts/${enc(ext)}/untrust`),
      t.call('POST', `/customers/external-accounts/${enc(ext)}/untrust/confirm`, { code: CODE }),
    ];
    for (const res of await Promise.all(calls)) expect(envelope(res, 409, 'CONFLICT').details).toMatchObject({ reason: 'SCA_NOT_REQUIRED' });
    const q = await quote(quoteRequest(c.accounts.USD!, ext, 5_000));
    const ran = await execute(q);
    expect(ran.statusCode, ran.body).toBe(200);
    expect(ran.json().status).toBe('PROCESSING');
    expect(ran.json().scaChallenge).toBeUndefined();
    envelope(await authorize(q), 409, 'CONFLICT');
    envelope(await t.call('POST', `/quotes/${enc(q.id)}/authorize/resend`), 409, 'CONFLICT');
    // A region changed later does not move the customer to the EU provider.
    expect((await t.call('PATCH', `/customers/${enc(c.id)}`, { customerType: 'INDIVIDUAL', region: 'FR' })).statusCode).toBe(200);
    envelope(await sca('GET', '/factors', c.id), 409, 'CONFLICT');
    await assertLedgerInvariants(t.store);
  });

  it('unknown and other platforms’ customers and quotes are 404; a missing customerId is 400', async () => {
    const c = await customer('FR');
    const other = await otherPlatformAuth(t);
    envelope(await t.call('GET', `/sca/factors?customerId=${enc(c.id)}`, undefined, other), 404, 'USER_NOT_FOUND');
    const ext = await eurExternal(t, c.id);
    const mine = await quote(quoteRequest(c.accounts.EUR!, ext, 1_000));
    envelope(await t.call('POST', `/quotes/${enc(mine.id)}/authorize`, { code: CODE }, other), 404, 'QUOTE_NOT_FOUND');
    envelope(await t.call('POST', `/quotes/${enc(mine.id)}/authorize/resend`, undefined, other), 404, 'QUOTE_NOT_FOUND');
    envelope(await t.call('POST', `/customers/external-accounts/${enc(ext)}/trust`, undefined, other), 404);
    // Not executed yet: nothing to authorize.
    expect(envelope(await authorize(mine), 409, 'CONFLICT').details).toMatchObject({ reason: 'NO_PENDING_CHALLENGE' });
    envelope(await sca('GET', '/factors', 'Customer:00000000-0000-7000-8000-000000000000'), 404, 'USER_NOT_FOUND');
    envelope(await t.call('GET', '/sca/factors'), 400, 'INVALID_INPUT');
    envelope(await t.call('POST', '/quotes/Quote:00000000-0000-7000-8000-000000000000/authorize', { code: CODE }), 404, 'QUOTE_NOT_FOUND');
    envelope(await sca('POST', '/login/start', c.id, { factor: 'TOTP' }), 400, 'INVALID_INPUT');
    envelope(await sca('POST', '/login/complete', c.id, { factor: 'SMS_OTP', code: CODE, endUserIpAddress: '1.2.3.4' }), 400, 'INVALID_INPUT');
  });

  it('no session → 409 SCA_SESSION_REQUIRED; a session ends after 180 days of the sandbox clock', async () => {
    const c = await funded();
    const ext = await eurExternal(t, c.id);
    const q = await quote(quoteRequest(c.accounts.EUR!, ext, 1_000));
    expect((await execute(q)).json().status).toBe('PENDING_AUTHORIZATION');
    envelope(await authorize(q), 409, 'SCA_SESSION_REQUIRED');
    await login(c.id);
    expect((await authorize(q)).json().status).toBe('PROCESSING');

    await advanceAndDeliver(t, 180 * DAY - 10);
    const q2 = await quote(quoteRequest(c.accounts.EUR!, ext, 1_000));
    expect((await execute(q2)).json().status).toBe('PENDING_AUTHORIZATION');
    await advanceAndDeliver(t, 20);
    envelope(await authorize(q2), 409, 'SCA_SESSION_REQUIRED');
    await login(c.id);
    expect((await authorize(q2)).json().status).toBe('PROCESSING');
    await assertLedgerInvariants(t.store);
  });

  it('a challenge that expires fails the payment with SCA_NOT_COMPLETED and moves nothing', async () => {
    const c = await funded();
    const ext = await eurExternal(t, c.id);
    await login(c.id);
    const q = await quote(quoteRequest(c.accounts.EUR!, ext, 7_000));
    expect((await execute(q)).json().status).toBe('PENDING_AUTHORIZATION');
    await advanceAndDeliver(t, 299);
    expect((await tx(q.transactionId)).status).toBe('PENDING_AUTHORIZATION');
    await advanceAndDeliver(t, 2);
    expect(await tx(q.transactionId)).toMatchObject({ status: 'FAILED', failureReason: 'SCA_NOT_COMPLETED' });
    expect(((await t.call('GET', `/quotes/${enc(q.id)}`)).json() as Q).status).toBe('FAILED');
    expect(typesFor(q.transactionId)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.PENDING_AUTHORIZATION', 'OUTGOING_PAYMENT.FAILED']);
    expect(await balanceOf(t, c.accounts.EUR!)).toEqual({ available: 100_000, total: 100_000 });
    envelope(await authorize(q), 409, 'CONFLICT');
    envelope(await t.call('POST', `/quotes/${enc(q.id)}/authorize/resend`), 409, 'CONFLICT');
    await assertLedgerInvariants(t.store);
  });

  it('wrong codes lock the login (423 ACCOUNT_LOCKED); the 2FA reset on the sandbox clock unlocks it', async () => {
    const c = await funded();
    const ext = await eurExternal(t, c.id);
    await login(c.id);
    const q = await quote(quoteRequest(c.accounts.EUR!, ext, 3_000));
    await execute(q);
    for (let i = 1; i <= 4; i++) expect(envelope(await authorize(q, { code: '000000' }), 400, 'INVALID_INPUT').details!.failedAttempts).toBe(i);
    const locked = envelope(await authorize(q, { code: '000000' }), 423, 'ACCOUNT_LOCKED');
    expect(locked.details).toMatchObject({ failedAttempts: 5, suspended: false });
    expect(Date.parse(locked.details!.lockedUntil as string) - (await nowMs())).toBeGreaterThan(14 * 60_000);
    envelope(await authorize(q), 423, 'ACCOUNT_LOCKED');
    envelope(await sca('POST', '/login/complete', c.id, { factor: 'SMS_OTP', code: CODE, endUserIpAddress: '1.2.3.4' }), 423, 'ACCOUNT_LOCKED');

    // Reset: INITIATED, PENDING_REVIEW after 30 s, LIVENESS_PASSED after 60 s; complete unlocks.
    envelope(await sca('POST', '/factors/reset', c.id, { factor: 'TOTP' }), 400, 'INVALID_INPUT');
    const r = await sca('POST', '/factors/reset', c.id, { factor: 'SMS_OTP' });
    expect(r.statusCode, r.body).toBe(201);
    const resetId = r.json().resetId as string;
    expect(r.json()).toMatchObject({ expiresAt: expect.any(String), livenessAccessToken: expect.any(String), verificationLink: expect.any(String) });
    const status = async () => (await sca('GET', `/factors/reset/${enc(resetId)}`, c.id)).json();
    expect(await status()).toMatchObject({ status: 'INITIATED', factor: 'SMS_OTP', completedAt: null, enrollmentStatus: null });
    envelope(await sca('POST', `/factors/reset/${enc(resetId)}/complete`, c.id, { mobile: { countryCode: '+49', number: '15199999999' } }), 400, 'INVALID_INPUT');
    await advanceAndDeliver(t, 30);
    expect((await status()).status).toBe('PENDING_REVIEW');
    await advanceAndDeliver(t, 30);
    expect((await status()).status).toBe('LIVENESS_PASSED');
    const noMobile = envelope(await sca('POST', `/factors/reset/${enc(resetId)}/complete`, c.id), 400, 'INVALID_INPUT');
    expect(noMobile.details!.errors).toEqual([{ field: 'mobile', message: expect.any(String) }]);
    expect((await sca('POST', `/factors/reset/${enc(resetId)}/complete`, c.id, { mobile: { countryCode: '+49', number: '15199999999' } })).statusCode).toBe(204);
    expect(await status()).toMatchObject({ status: 'COMPLETED', completedAt: expect.any(String) });
    expect((await t.call('GET', `/customers/${enc(c.id)}`)).json().phoneNumber).toBe('+4915199999999');
    envelope(await sca('POST', `/factors/reset/${enc(resetId)}/complete`, c.id, { mobile: { countryCode: '+49', number: '15199999999' } }), 400, 'INVALID_INPUT');
    envelope(await sca('GET', '/factors/reset/TwoFactorReset:nope', c.id), 404);
    // Unlocked: the challenge (still live) is authorized.
    const ok = await authorize(q);
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json().status).toBe('PROCESSING');
    await assertLedgerInvariants(t.store);
  });

  it('record-event: failures escalate the lock (15 min, 30 min, 1 h, 24 h, suspended); the lock lapses; a password reset clears it', async () => {
    const c = await customer('NL');
    const event = (eventType: string) => sca('POST', '/record-event', c.id, { eventType });
    for (let i = 1; i <= 4; i++) expect((await event('FAILED_LOGIN_ATTEMPT')).json()).toEqual({ eventType: 'FAILED_LOGIN_ATTEMPT', failedAttempts: i, suspended: false, lockedUntil: null });
    const steps = [15 * 60, 30 * 60, 3600, DAY];
    for (const [i, seconds] of steps.entries()) {
      const res = await event('FAILED_LOGIN_ATTEMPT');
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ failedAttempts: 5 + i, suspended: false });
      expect(Date.parse(res.json().lockedUntil) - (await nowMs())).toBe(seconds * 1000);
      const refused = envelope(await event('FAILED_LOGIN_ATTEMPT'), 423, 'ACCOUNT_LOCKED');
      expect(refused.details).toMatchObject({ failedAttempts: 5 + i });
      await advanceAndDeliver(t, seconds - 1);
      envelope(await event('FAILED_LOGIN_ATTEMPT'), 423, 'ACCOUNT_LOCKED');
      await advanceAndDeliver(t, 1);
    }
    // Lapsed: a login works again (and clears the count).
    expect(await login(c.id)).toEqual(expect.any(String));
    for (let i = 1; i <= 8; i++) {
      await event('FAILED_LOGIN_ATTEMPT');
      await advanceAndDeliver(t, DAY);
    }
    const suspended = (await event('FAILED_LOGIN_ATTEMPT')).json();
    expect(suspended).toEqual({ eventType: 'FAILED_LOGIN_ATTEMPT', failedAttempts: 9, suspended: true, lockedUntil: null });
    await advanceAndDeliver(t, 30 * DAY);
    expect(envelope(await event('FAILED_LOGIN_ATTEMPT'), 423, 'ACCOUNT_LOCKED').details).toMatchObject({ suspended: true, lockedUntil: null });
    expect((await event('RESET_PASSWORD_COMPLETED')).json()).toEqual({ eventType: 'RESET_PASSWORD_COMPLETED', failedAttempts: 0, suspended: false, lockedUntil: null });
    expect((await event('FAILED_LOGIN_ATTEMPT')).json().failedAttempts).toBe(1);
    envelope(await event('SOMETHING_ELSE'), 400, 'INVALID_INPUT');
    const stored = await t.store.db.selectFrom('sca_security_events' as never).selectAll().where('customer_id' as never, '=', c.id as never).execute();
    expect(stored.length).toBeGreaterThanOrEqual(15);
  });

  it('RESET_PASSWORD_COMPLETED revokes the sessions: authorization needs a new login', async () => {
    const c = await funded();
    const ext = await eurExternal(t, c.id);
    await login(c.id);
    expect((await sca('POST', '/record-event', c.id, { eventType: 'RESET_PASSWORD_COMPLETED' })).statusCode).toBe(200);
    const q = await quote(quoteRequest(c.accounts.EUR!, ext, 1_000));
    await execute(q);
    envelope(await authorize(q), 409, 'SCA_SESSION_REQUIRED');
  });

  it('trusted beneficiaries: trust with confirm, payouts to them skip the challenge, no delete while trusted, untrust', async () => {
    const c = await funded();
    const ext = await eurExternal(t, c.id);
    await login(c.id);
    const start = await t.call('POST', `/customers/external-accounts/${enc(ext)}/trust`);
    expect(start.statusCode, start.body).toBe(200);
    const ch = start.json().scaChallenge as Challenge;
    expect(ch).toMatchObject({ factor: 'SMS_OTP', availableFactors: ['SMS_OTP'], purpose: 'BENEFICIARY_TRUST' });
    envelope(await t.call('POST', `/customers/external-accounts/${enc(ext)}/trust/confirm`, { challengeId: 'ScaChallenge:other', code: CODE }), 400, 'INVALID_INPUT');
    expect(envelope(await t.call('POST', `/customers/external-accounts/${enc(ext)}/trust/confirm`, { challengeId: ch.id, code: '999999' }), 400, 'INVALID_INPUT').details!.failedAttempts).toBe(1);
    envelope(await t.call('POST', `/customers/external-accounts/${enc(ext)}/untrust/confirm`, { code: CODE }), 400, 'INVALID_INPUT');
    const ok = await t.call('POST', `/customers/external-accounts/${enc(ext)}/trust/confirm`, { challengeId: ch.id, code: CODE });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json()).toEqual({ trusted: true });
    envelope(await t.call('POST', `/customers/external-accounts/${enc(ext)}/trust`), 409, 'CONFLICT');

    const q = await quote(quoteRequest(c.accounts.EUR!, ext, 2_000));
    const ran = await execute(q);
    expect(ran.statusCode, ran.body).toBe(200);
    expect(ran.json().status).toBe('PROCESSING');
    expect(ran.json().scaChallenge).toBeUndefined();

    envelope(await t.call('DELETE', `/customers/external-accounts/${enc(ext)}`), 409, 'BENEFICIARY_TRUSTED');
    const un = await t.call('POST', `/customers/external-accounts/${enc(ext)}/untrust`);
    expect(un.statusCode, un.body).toBe(200);
    expect(un.json().scaChallenge.purpose).toBe('BENEFICIARY_UNTRUST');
    const unOk = await t.call('POST', `/customers/external-accounts/${enc(ext)}/untrust/confirm`, { code: CODE });
    expect(unOk.json()).toEqual({ trusted: false });
    const q2 = await quote(quoteRequest(c.accounts.EUR!, ext, 2_000));
    expect((await execute(q2)).json().status).toBe('PENDING_AUTHORIZATION');
    expect((await authorize(q2)).json().status).toBe('PROCESSING');
    await advanceAndDeliver(t, 5);
    expect((await t.call('DELETE', `/customers/external-accounts/${enc(ext)}`)).statusCode).toBe(204);
    envelope(await t.call('POST', `/customers/external-accounts/${enc(ext)}/trust`), 404);
    await assertLedgerInvariants(t.store);
  });

  it('a real-time funded quote carries the challenge from creation and withholds its paymentInstructions until authorized', async () => {
    const c = await customer('ES');
    const ext = await eurExternal(t, c.id);
    await login(c.id);
    const q = await quote({ source: { sourceType: 'REALTIME_FUNDING', currency: 'EUR', customerId: c.id }, destination: { destinationType: 'ACCOUNT', accountId: ext }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 4_000 });
    expect(q.status).toBe('PENDING_AUTHORIZATION');
    expect(q.scaChallenge).toMatchObject({ purpose: 'PAYOUT' });
    expect(q.paymentInstructions).toBeUndefined();
    const ok = await authorize(q);
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json().status).toBe('PENDING');
    expect(ok.json().paymentInstructions.length).toBeGreaterThan(0);
    const sent = await t.call('POST', '/sandbox/send', { quoteId: q.id, currencyCode: 'EUR' });
    expect(sent.statusCode, sent.body).toBe(200);
    await advanceAndDeliver(t, 5);
    expect((await tx(q.transactionId)).status).toBe('COMPLETED');
    expect(typesFor(q.transactionId).slice(0, 3)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.PENDING_AUTHORIZATION', 'OUTGOING_PAYMENT.PENDING']);

    // Cross-currency, real-time funded: the second step ends with the quote, then the payment fails.
    const x = await quote({ source: { sourceType: 'REALTIME_FUNDING', currency: 'USD', customerId: c.id }, destination: { destinationType: 'ACCOUNT', accountId: ext }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 4_000 });
    const quoteExpires = (x as Q & { expiresAt: string }).expiresAt;
    expect(x.scaChallenge).toMatchObject({ purpose: 'CURRENCY_CONVERSION', expiresAt: quoteExpires });
    await advanceAndDeliver(t, 200);
    const step2 = (await authorize(x)).json() as Q;
    expect(step2.scaChallenge).toMatchObject({ purpose: 'PAYOUT', expiresAt: quoteExpires });
    await advanceAndDeliver(t, 101);
    expect(await tx(x.transactionId)).toMatchObject({ status: 'FAILED', failureReason: 'SCA_NOT_COMPLETED' });
    await assertLedgerInvariants(t.store);
  });

  it('limits: 5 resends per challenge, then 429 with Retry-After; 5 resets per 24 hours, then 429', async () => {
    const c = await funded();
    const ext = await eurExternal(t, c.id);
    const q = await quote(quoteRequest(c.accounts.EUR!, ext, 1_000));
    await execute(q);
    for (let i = 0; i < 5; i++) expect((await t.call('POST', `/quotes/${enc(q.id)}/authorize/resend`)).statusCode).toBe(204);
    const limited = await t.call('POST', `/quotes/${enc(q.id)}/authorize/resend`);
    envelope(limited, 429, 'RATE_LIMITED');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);

    for (let i = 0; i < 5; i++) expect((await sca('POST', '/factors/reset', c.id, { factor: 'SMS_OTP' })).statusCode).toBe(201);
    const six = await sca('POST', '/factors/reset', c.id, { factor: 'SMS_OTP' });
    envelope(six, 429, 'RATE_LIMITED');
    expect(Number(six.headers['retry-after'])).toBeGreaterThan(DAY - 600);
    await advanceAndDeliver(t, DAY);
    expect((await sca('POST', '/factors/reset', c.id, { factor: 'SMS_OTP' })).statusCode).toBe(201);
  });

  it('a TOTP reset clears the factor and lets it be enrolled again', async () => {
    const c = await customer('IT');
    const s = (await sca('POST', '/factors', c.id, { type: 'TOTP' })).json();
    expect((await sca('POST', '/factors/confirm', c.id, { type: 'TOTP', secret: s.secret, code: CODE })).statusCode).toBe(200);
    const r = (await sca('POST', '/factors/reset', c.id, { factor: 'TOTP' })).json();
    await advanceAndDeliver(t, 60);
    expect((await sca('POST', `/factors/reset/${enc(r.resetId)}/complete`, c.id)).statusCode).toBe(204);
    expect((await sca('GET', '/factors', c.id)).json()).toEqual({ factors: [{ factor: 'SMS_OTP' }] });
    expect((await sca('GET', `/factors/reset/${enc(r.resetId)}`, c.id)).json()).toMatchObject({ status: 'COMPLETED', enrollmentStatus: 'PENDING' });
    const again = (await sca('POST', '/factors', c.id, { type: 'TOTP' })).json();
    await advanceAndDeliver(t, 1);
    expect((await sca('POST', '/factors/confirm', c.id, { type: 'TOTP', secret: again.secret, code: CODE })).statusCode).toBe(200);
    expect((await sca('GET', `/factors/reset/${enc(r.resetId)}`, c.id)).json().enrollmentStatus).toBe('COMPLETED');
    // A reset left alone expires after 24 hours.
    const late = (await sca('POST', '/factors/reset', c.id, { factor: 'TOTP' })).json();
    await advanceAndDeliver(t, DAY + 1);
    expect((await sca('GET', `/factors/reset/${enc(late.resetId)}`, c.id)).json().status).toBe('EXPIRED');
  });
  it('a transfer-out of an EU customer waits for the authorization of its quote (the transaction’s quoteId)', async () => {
    const c = await funded();
    const ext = await eurExternal(t, c.id);
    await login(c.id);
    const res = await t.call('POST', '/transfer-out', { source: { accountId: c.accounts.EUR! }, destination: { accountId: ext }, amount: 6_000 });
    expect(res.statusCode, res.body).toBe(201);
    const out = res.json() as { id: string; status: string; quoteId: string };
    expect(out.status).toBe('PENDING_AUTHORIZATION');
    const q = (await t.call('GET', `/quotes/${enc(out.quoteId)}`)).json() as Q;
    expect(q.scaChallenge!.purpose).toBe('PAYOUT');
    expect((await authorize(q)).json().status).toBe('PROCESSING');
    await advanceAndDeliver(t, 5);
    expect((await tx(out.id)).status).toBe('COMPLETED');
    expect(await balanceOf(t, c.accounts.EUR!)).toEqual({ available: 94_000, total: 94_000 });
    await assertLedgerInvariants(t.store);
  });

  it('login with TOTP and with a passkey; the started factor, its challengeId and its 5 minutes are checked', async () => {
    const c = await customer('AT');
    const s = (await sca('POST', '/factors', c.id, { type: 'TOTP' })).json();
    expect((await sca('POST', '/factors/confirm', c.id, { type: 'TOTP', secret: s.secret, code: CODE })).statusCode).toBe(200);
    const start = await sca('POST', '/login/start', c.id, { factor: 'TOTP' });
    expect(start.json()).toEqual({ factor: 'TOTP' });
    const mismatch = envelope(await sca('POST', '/login/complete', c.id, { factor: 'SMS_OTP', code: CODE, endUserIpAddress: '1.2.3.4' }), 400, 'INVALID_INPUT');
    expect((mismatch.details!.errors as Array<{ field: string }>).map((e) => e.field)).toEqual(['factor']);
    const done = await sca('POST', '/login/complete', c.id, { factor: 'TOTP', code: CODE, endUserIpAddress: '1.2.3.4' });
    expect(done.statusCode, done.body).toBe(200);
    expect(done.json()).toEqual({ status: 'SUCCESS', sessionExpiresAt: expect.any(String) });
    // The same login cannot be completed twice.
    envelope(await sca('POST', '/login/complete', c.id, { factor: 'TOTP', code: CODE, endUserIpAddress: '1.2.3.4' }), 400, 'INVALID_INPUT');

    const p = (await sca('POST', '/factors', c.id, { type: 'PASSKEY' })).json();
    expect((await sca('POST', '/factors/confirm', c.id, { type: 'PASSKEY', origin: p.allowedOrigins[0], credential: { id: 'pk-1' } })).statusCode).toBe(200);
    const pkStart = (await sca('POST', '/login/start', c.id, { factor: 'PASSKEY' })).json();
    const codeForPasskey = envelope(await sca('POST', '/login/complete', c.id, { factor: 'PASSKEY', code: CODE, endUserIpAddress: '1.2.3.4' }), 400, 'INVALID_INPUT');
    expect(codeForPasskey.details).toEqual({ errors: [{ field: 'passkeyAssertion', message: expect.any(String) }] });
    expect(pkStart).toMatchObject({ factor: 'PASSKEY', passkeyOptions: expect.any(Object), allowedOrigins: p.allowedOrigins, relyingPartyId: expect.any(String) });
    const pkDone = await sca('POST', '/login/complete', c.id, { factor: 'PASSKEY', passkeyAssertion: { credentialId: 'pk-1' }, origin: p.allowedOrigins[0], endUserIpAddress: '1.2.3.4' });
    expect(pkDone.statusCode, pkDone.body).toBe(200);

    // SMS_OTP: the challengeId is required, and the code lasts 5 minutes.
    const sms = (await sca('POST', '/login/start', c.id, { factor: 'SMS_OTP' })).json();
    expect(Date.parse(sms.expiresAt) - (await nowMs())).toBe(5 * 60_000);
    const noId = envelope(await sca('POST', '/login/complete', c.id, { factor: 'SMS_OTP', code: CODE, endUserIpAddress: '1.2.3.4' }), 400, 'INVALID_INPUT');
    expect(noId.details!.errors).toEqual([{ field: 'challengeId', message: expect.any(String) }]);
    await advanceAndDeliver(t, 301);
    envelope(await sca('POST', '/login/complete', c.id, { factor: 'SMS_OTP', challengeId: sms.challengeId, code: CODE, endUserIpAddress: '1.2.3.4' }), 400, 'INVALID_INPUT');
    const wrong = envelope(await sca('POST', '/login/complete', c.id, { factor: 'SMS_OTP', challengeId: sms.challengeId, code: CODE, endUserIpAddress: '1.2.3.4' }), 400, 'INVALID_INPUT');
    expect(wrong.message).toMatch(/expired/);
  });
  it('error paths: an expired challenge answered before its job ran is refused and fails the payment, insufficient funds, deleted customers, platform resources, stale enrollments', async () => {
    const c = await funded('EUR', 5_000);
    const ext = await eurExternal(t, c.id);
    await login(c.id);
    // Not enough to hold: execute is refused and the quote stays PENDING.
    const big = await quote(quoteRequest(c.accounts.EUR!, ext, 9_000));
    expect(envelope(await execute(big), 400, 'INVALID_AMOUNT').details).toMatchObject({ reason: 'INSUFFICIENT_BALANCE', required: 9_000, available: 5_000 });
    expect(((await t.call('GET', `/quotes/${enc(big.id)}`)).json() as Q).status).toBe('PENDING');

    // Past expiresAt but before the expiry job ran (real time moved, no clock advance): a late answer is 400 and fails the payment.
    const q = await quote(quoteRequest(c.accounts.EUR!, ext, 1_000));
    await execute(q);
    t.clock.advance(5 * 60_000 + 1_000);
    expect(envelope(await t.call('POST', `/quotes/${enc(q.id)}/authorize/resend`), 409, 'CONFLICT').details).toMatchObject({ reason: 'CHALLENGE_EXPIRED' });
    expect(envelope(await authorize(q), 400, 'INVALID_INPUT').details).toMatchObject({ reason: 'SCA_CHALLENGE_EXPIRED' });
    // The late answer fails the payment at once (before the expiry job runs), and only once.
    expect(await tx(q.transactionId)).toMatchObject({ status: 'FAILED', failureReason: 'SCA_NOT_COMPLETED' });
    expect(((await t.call('GET', `/quotes/${enc(q.id)}`)).json() as Q).status).toBe('FAILED');
    expect(envelope(await authorize(q), 409, 'CONFLICT').details).toMatchObject({ reason: 'NO_PENDING_CHALLENGE' });
    await advanceAndDeliver(t, 1);
    expect(await tx(q.transactionId)).toMatchObject({ status: 'FAILED', failureReason: 'SCA_NOT_COMPLETED' });
    expect(typesFor(q.transactionId).filter((x) => x === 'OUTGOING_PAYMENT.FAILED')).toHaveLength(1);
    expect(await balanceOf(t, c.accounts.EUR!)).toEqual({ available: 5_000, total: 5_000 });

    // An enrollment not confirmed within 10 minutes is gone.
    const s = (await sca('POST', '/factors', c.id, { type: 'TOTP' })).json();
    await advanceAndDeliver(t, 601);
    envelope(await sca('POST', '/factors/confirm', c.id, { type: 'TOTP', secret: s.secret, code: CODE }), 400, 'INVALID_INPUT');
    envelope(await sca('POST', '/factors/confirm', c.id, { type: 'PASSKEY', origin: 'http://localhost', credential: { id: 'x' } }), 400, 'INVALID_INPUT');

    // The platform's own accounts and quotes are outside SCA.
    const platformEur = ((await t.call('GET', '/platform/internal-accounts?currency=EUR')).json() as { data: Array<{ id: string }> }).data[0]!.id;
    const pext = await t.call('POST', '/platform/external-accounts', {
      currency: 'EUR',
      platformAccountId: `treasury-${Math.random().toString(36).slice(2, 7)}`,
      accountInfo: { accountType: 'EUR_ACCOUNT', iban: 'DE89370400440532013000', swiftCode: 'COBADEFF', beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Rita Receiver', countryOfResidence: 'DE' } },
    });
    expect(pext.statusCode, pext.body).toBe(201);
    envelope(await t.call('POST', `/customers/external-accounts/${enc(pext.json().id)}/trust`), 404);
    await fund(t, platformEur, 2_000);
    const pq = await quote(quoteRequest(platformEur, pext.json().id, 1_000));
    expect((await execute(pq)).json().status).toBe('PROCESSING');
    expect(envelope(await authorize(pq), 409, 'CONFLICT').details).toMatchObject({ reason: 'SCA_NOT_REQUIRED' });

    // A deleted customer: not found, as the operation declares (404, no 410).
    const gone = await customer('PT');
    const goneExt = await eurExternal(t, gone.id);
    expect((await t.call('DELETE', `/customers/${enc(gone.id)}`)).statusCode).toBeLessThan(300);
    envelope(await sca('GET', '/factors', gone.id), 404, 'USER_NOT_FOUND');
    // The trust routes too: the beneficiary's customer is not found.
    envelope(await t.call('POST', `/customers/external-accounts/${enc(goneExt)}/trust`), 404, 'USER_NOT_FOUND');
    envelope(await t.call('POST', `/customers/external-accounts/${enc(goneExt)}/untrust/confirm`, { code: CODE }), 404, 'USER_NOT_FOUND');
    await assertLedgerInvariants(t.store);
  });
  it('a lock from wrong codes also refuses trust confirmation, and lapses after its 15 minutes', async () => {
    const c = await funded();
    const ext = await eurExternal(t, c.id);
    await login(c.id);
    const q = await quote(quoteRequest(c.accounts.EUR!, ext, 1_000));
    await execute(q);
    for (let i = 1; i <= 4; i++) envelope(await authorize(q, { code: '111111' }), 400, 'INVALID_INPUT');
    envelope(await authorize(q, { code: '111111' }), 423, 'ACCOUNT_LOCKED');
    const trust = (await t.call('POST', `/customers/external-accounts/${enc(ext)}/trust`)).json();
    envelope(await t.call('POST', `/customers/external-accounts/${enc(ext)}/trust/confirm`, { challengeId: trust.scaChallenge.id, code: CODE }), 423, 'ACCOUNT_LOCKED');
    await advanceAndDeliver(t, 15 * 60 - 1);
    envelope(await sca('POST', '/record-event', c.id, { eventType: 'FAILED_LOGIN_ATTEMPT' }), 423, 'ACCOUNT_LOCKED');
    await advanceAndDeliver(t, 1);
    // The first payment's challenge expired meanwhile; a new one is authorized.
    expect(await tx(q.transactionId)).toMatchObject({ status: 'FAILED', failureReason: 'SCA_NOT_COMPLETED' });
    const q2 = await quote(quoteRequest(c.accounts.EUR!, ext, 1_000));
    await execute(q2);
    const ok = await authorize(q2);
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json().status).toBe('PROCESSING');
    await assertLedgerInvariants(t.store);
  });
});
