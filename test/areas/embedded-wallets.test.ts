import { validateMnemonic } from '@scure/bip39';
import { wordlist as english } from '@scure/bip39/wordlists/english.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envelope, makeApp, STORE, type TestApp } from '../helpers.js';
import { otherPlatformAuth } from '../money-helpers.js';
import { clientKey, openExport, sealOtp, stamp, targetOf } from '../wallet-client.js';
import { enc, otpLogin, signed, walletCustomer } from '../wallet-flows.js';

// The embedded wallet of a customer, the OTP login with real HPKE and stamps, and the
// signed-retry protocol of wallet actions with each of its 401 codes.

describe(`embedded wallets: provisioning, OTP, signed actions (${STORE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeApp();
  });
  afterAll(async () => t.close());

  it('provisions an EMBEDDED_WALLET (USDC) with an EMAIL_OTP credential tied to the customer email', async () => {
    const w = await walletCustomer(t);
    const acct = await t.call('GET', `/customers/internal-accounts?customerId=${enc(w.customerId)}&type=EMBEDDED_WALLET`);
    const a = (acct.json() as { data: Array<Record<string, unknown>> }).data[0]!;
    expect(a).toMatchObject({ id: w.accountId, customerId: w.customerId, type: 'EMBEDDED_WALLET', status: 'ACTIVE', privateEnabled: false, balance: { amount: 0, currency: { code: 'USDC' } } });
    const creds = (await t.call('GET', `/auth/credentials?accountId=${enc(w.accountId)}`)).json() as { data: unknown[] };
    expect(creds.data).toEqual([expect.objectContaining({ id: w.emailCredentialId, accountId: w.accountId, type: 'EMAIL_OTP', nickname: 'wally@example.com' })]);
    // The holding accounts are unchanged: one per currency, and the type filter leaves the wallet out.
    const holding = (await t.call('GET', `/customers/internal-accounts?customerId=${enc(w.customerId)}&type=INTERNAL_FIAT`)).json() as { data: unknown[] };
    expect(holding.data).toHaveLength(1);
  });

  it('no wallet for a customer that may not hold accounts yet; it comes with the terms', async () => {
    const res = await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Terms Later', email: 'later@example.com', currencies: ['USD'] });
    const id = (res.json() as { id: string }).id;
    const list = async () => ((await t.call('GET', `/customers/internal-accounts?customerId=${enc(id)}&type=EMBEDDED_WALLET`)).json() as { data: unknown[] }).data;
    expect(await list()).toHaveLength(0);
    const upd = await t.call('PATCH', `/customers/${enc(id)}`, { customerType: 'INDIVIDUAL', endUserTermsConsent: { acceptedAt: '2025-10-01T00:00:00Z', ipAddress: '203.0.113.9', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' } });
    expect(upd.statusCode, upd.body).toBe(200);
    expect(await list()).toHaveLength(1);
  });

  it('OTP login: a real HPKE bundle with 000000 gives 202, the TEK stamp gives the session', async () => {
    const w = await walletCustomer(t);
    const ch = await t.call('POST', `/auth/credentials/${enc(w.emailCredentialId)}/challenge`);
    expect(ch.statusCode).toBe(200);
    const bundle = (ch.json() as { otpEncryptionTargetBundle: string }).otpEncryptionTargetBundle;
    expect(targetOf(bundle).signatureValid).toBe(true);
    const { session, key } = await otpLogin(t, w.emailCredentialId);
    expect(session).toMatchObject({ id: expect.stringMatching(/^Session:/), accountId: w.accountId, type: 'EMAIL_OTP', nickname: 'wally@example.com' });
    expect(session).not.toHaveProperty('encryptedSessionSigningKey');
    expect(Date.parse(session.expiresAt) - t.clock.nowMs()).toBeGreaterThan(14 * 60_000);
    const sessions = (await t.call('GET', `/auth/sessions?accountId=${enc(w.accountId)}`)).json() as { data: Array<{ id: string }> };
    expect(sessions.data.map((s) => s.id)).toEqual([session.id]);
    // The session signs: PATCH privacy.
    const { retry } = await signed(t, 'PATCH', `/internal-accounts/${enc(w.accountId)}`, { privateEnabled: true }, key);
    expect(retry.statusCode, retry.body).toBe(200);
    expect(retry.json()).toMatchObject({ id: w.accountId, type: 'EMBEDDED_WALLET', privateEnabled: true });
  });

  it('any other OTP code is 401 UNAUTHORIZED with reason "Invalid OTP code"', async () => {
    const w = await walletCustomer(t);
    const ch = await t.call('POST', `/auth/credentials/${enc(w.emailCredentialId)}/challenge`);
    const tek = clientKey();
    const bundle = await sealOtp((ch.json() as { otpEncryptionTargetBundle: string }).otpEncryptionTargetBundle, '123456', tek.compressed);
    const res = await t.call('POST', `/auth/credentials/${enc(w.emailCredentialId)}/verify`, { type: 'EMAIL_OTP', encryptedOtpBundle: bundle });
    expect(envelope(res, 401, 'UNAUTHORIZED').details).toEqual({ reason: 'Invalid OTP code' });
    expect(res.json().reason).toBe('Invalid OTP code');
  });

  it('export: 202, signed retry answers the secret sealed to the clientPublicKey', async () => {
    const w = await walletCustomer(t);
    const { key } = await otpLogin(t, w.emailCredentialId);
    const exportKey = clientKey();
    const { first, retry } = await signed(t, 'POST', `/internal-accounts/${enc(w.accountId)}/export`, { clientPublicKey: exportKey.uncompressed }, key);
    expect(first.json().payloadToSign).toContain(exportKey.uncompressed);
    expect(retry.statusCode, retry.body).toBe(200);
    const out = await openExport((retry.json() as { encryptedWalletCredentials: string }).encryptedWalletCredentials, exportKey.privateKey);
    // A BIP-39 mnemonic (hosted docs, exporting-wallet): 24 words of the English list, valid checksum.
    expect(out.secret.split(' ')).toHaveLength(24);
    expect(validateMnemonic(out.secret, english)).toBe(true);
  });

  it('the 401 codes of a signed retry', async () => {
    const w = await walletCustomer(t);
    const { key } = await otpLogin(t, w.emailCredentialId);
    const url = `/internal-accounts/${enc(w.accountId)}`;
    const first = await t.call('PATCH', url, { privateEnabled: true });
    expect(first.statusCode).toBe(202);
    const c = first.json() as { payloadToSign: string; requestId: string; expiresAt: string };
    expect(c.requestId).toMatch(/^Request:/);
    const good = stamp(key.privateKey, c.payloadToSign);
    envelope(await t.call('PATCH', url, { privateEnabled: true }, { 'request-id': c.requestId }), 401, 'WALLET_SIGNATURE_MISSING');
    envelope(await t.call('PATCH', url, { privateEnabled: true }, { 'service-wallet-signature': good }), 401, 'REQUEST_ID_MISSING');
    envelope(await t.call('PATCH', url, { privateEnabled: true }, { 'service-wallet-signature': 'not-a-stamp', 'request-id': c.requestId }), 401, 'WALLET_SIGNATURE_MALFORMED');
    envelope(await t.call('PATCH', url, { privateEnabled: true }, { 'service-wallet-signature': stamp(key.privateKey, c.payloadToSign, { scheme: 'OTHER' }), 'request-id': c.requestId }), 401, 'WALLET_SIGNATURE_MALFORMED');
    envelope(await t.call('PATCH', url, { privateEnabled: false }, { 'service-wallet-signature': good, 'request-id': c.requestId }), 401, 'WALLET_SIGNATURE_BODY_MISMATCH');
    envelope(await t.call('PATCH', url, { privateEnabled: true }, { 'service-wallet-signature': stamp(key.privateKey, `${c.payloadToSign} `), 'request-id': c.requestId }), 401, 'WALLET_SIGNATURE_INVALID');
    // A key that signs correctly but holds no session of the wallet.
    const stranger = clientKey();
    const bad = envelope(await t.call('PATCH', url, { privateEnabled: true }, { 'service-wallet-signature': stamp(stranger.privateKey, c.payloadToSign), 'request-id': c.requestId }), 401, 'WALLET_SIGNATURE_INVALID');
    expect(bad.details).toMatchObject({ reason: 'signing key is not an active session of the wallet' });
    const unknown = envelope(await t.call('PATCH', url, { privateEnabled: true }, { 'service-wallet-signature': good, 'request-id': 'Request:00000000-0000-7000-8000-000000000000' }), 401, 'UNAUTHORIZED');
    expect(unknown.details?.reason).toMatch(/Request-Id/);
    // The stamp is parsed first: a garbage one is malformed whatever the Request-Id names or the body is.
    envelope(await t.call('PATCH', url, { privateEnabled: true }, { 'service-wallet-signature': 'not-a-stamp', 'request-id': 'Request:00000000-0000-7000-8000-000000000000' }), 401, 'WALLET_SIGNATURE_MALFORMED');
    envelope(await t.call('PATCH', url, { privateEnabled: false }, { 'service-wallet-signature': 'not-a-stamp', 'request-id': c.requestId }), 401, 'WALLET_SIGNATURE_MALFORMED');
    envelope(await t.call('POST', `/auth/credentials/${enc(w.emailCredentialId)}/verify`, { type: 'EMAIL_OTP', encryptedOtpBundle: '{}' }, { 'service-wallet-signature': 'e30', 'request-id': 'nope' }), 401, 'WALLET_SIGNATURE_MALFORMED');
    // The legacy value is not a stamp, and still reaches the Request-Id check.
    envelope(await t.call('PATCH', url, { privateEnabled: true }, { 'service-wallet-signature': 'sandbox-valid-signature', 'request-id': 'Request:00000000-0000-7000-8000-000000000000' }), 401, 'UNAUTHORIZED');
    // None of the refusals used the challenge: the good retry still passes, once.
    const ok = await t.call('PATCH', url, { privateEnabled: true }, { 'service-wallet-signature': good, 'request-id': c.requestId });
    expect(ok.statusCode, ok.body).toBe(200);
    envelope(await t.call('PATCH', url, { privateEnabled: true }, { 'service-wallet-signature': good, 'request-id': c.requestId }), 401, 'UNAUTHORIZED');
  });

  it('the legacy sandbox signature is still accepted', async () => {
    const w = await walletCustomer(t);
    const { retry } = await signed(t, 'PATCH', `/internal-accounts/${enc(w.accountId)}`, { privateEnabled: true }, 'sandbox-valid-signature');
    expect(retry.statusCode, retry.body).toBe(200);
  });

  it('a session of another wallet signs nothing here', async () => {
    const a = await walletCustomer(t);
    const b = await walletCustomer(t);
    const { key } = await otpLogin(t, b.emailCredentialId);
    const { retry } = await signed(t, 'PATCH', `/internal-accounts/${enc(a.accountId)}`, { privateEnabled: true }, key);
    expect(envelope(retry, 401, 'WALLET_SIGNATURE_INVALID').details).toMatchObject({ reason: 'signing key is not an active session of the wallet' });
  });

  it('sessions expire on the sandbox clock and then sign nothing', async () => {
    const w = await walletCustomer(t);
    const { session, key } = await otpLogin(t, w.emailCredentialId);
    const adv = await t.call('POST', '/sandbox/clock/advance', { seconds: 15 * 60 + 1 });
    expect(adv.statusCode).toBe(200);
    expect(((await t.call('GET', `/auth/sessions?accountId=${enc(w.accountId)}`)).json() as { data: unknown[] }).data).toHaveLength(0);
    const { retry } = await signed(t, 'PATCH', `/internal-accounts/${enc(w.accountId)}`, { privateEnabled: true }, key);
    envelope(retry, 401, 'WALLET_SIGNATURE_INVALID');
    envelope(await t.call('DELETE', `/auth/sessions/${enc(session.id)}`), 404, 'REFERENCE_NOT_FOUND');
  });

  it('tenancy: another platform sees none of it', async () => {
    const w = await walletCustomer(t);
    const other = await otherPlatformAuth(t);
    envelope(await t.call('POST', `/auth/credentials/${enc(w.emailCredentialId)}/challenge`, undefined, other), 404, 'REFERENCE_NOT_FOUND');
    envelope(await t.call('PATCH', `/internal-accounts/${enc(w.accountId)}`, { privateEnabled: true }, other), 404, 'REFERENCE_NOT_FOUND');
    expect(((await t.call('GET', `/auth/credentials?accountId=${enc(w.accountId)}`, undefined, other)).json() as { data: unknown[] }).data).toEqual([]);
  });
});
