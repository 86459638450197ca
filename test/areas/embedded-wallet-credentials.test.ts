import { base64urlnopad } from '@scure/base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envelope, makeApp, STORE, type TestApp } from '../helpers.js';
import { TERMS } from '../money-helpers.js';
import { clientKey, oidcToken, openSessionKey, sealOtp, sha256Hex, SoftAuthenticator, stamp } from '../wallet-client.js';
import { enc, otpLogin, signed, walletCustomer } from '../wallet-flows.js';

// Credentials beyond the first EMAIL_OTP: PASSKEY through a software authenticator (the
// WebAuthn checks one by one), OAUTH with JWT-shaped tokens (each claim check), SMS_OTP,
// revocation; and sessions: refresh, revoke.

const ORIGIN = 'http://localhost:5173';

describe(`embedded wallet credentials and sessions (${STORE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeApp();
  });
  afterAll(async () => t.close());

  /** The platform's sandbox clock offset (advanced by one test) and its now in seconds. */
  let offsetMs = 0;
  const nowS = () => Math.floor((t.clock.nowMs() + offsetMs) / 1000);
  const advance = async (seconds: number) => {
    expect((await t.call('POST', '/sandbox/clock/advance', { seconds })).statusCode).toBe(200);
    offsetMs += seconds * 1000;
  };
  const regChallenge = () => base64urlnopad.encode(crypto.getRandomValues(new Uint8Array(32)));

  async function withPasskey(origin = ORIGIN, rpId = 'localhost') {
    const w = await walletCustomer(t);
    const { key } = await otpLogin(t, w.emailCredentialId);
    const auth = new SoftAuthenticator(rpId, origin);
    const challenge = regChallenge();
    const body = { type: 'PASSKEY', accountId: w.accountId, nickname: 'iPhone Face-ID', challenge, attestation: auth.create(challenge) };
    const { first, retry } = await signed(t, 'POST', '/auth/credentials', body, key);
    return { w, key, auth, body, first, retry, id: (retry.json() as { id: string }).id };
  }

  async function passkeyChallenge(id: string, clientPublicKey: string) {
    const res = await t.call('POST', `/auth/credentials/${enc(id)}/challenge`, { clientPublicKey });
    expect(res.statusCode, res.body).toBe(200);
    // Verify echoes the challenge's request id: it is also the Request-Id response header.
    expect(res.headers['request-id']).toBe((res.json() as { requestId: string }).requestId);
    return res.json() as { challenge: string; requestId: string; credentialId: string; type: string };
  }

  it('passkey: registration (signed add), challenge, assertion, sealed session key that signs', async () => {
    const { w, auth, first, retry, id } = await withPasskey();
    expect(first.json()).toMatchObject({ type: 'PASSKEY', payloadToSign: expect.stringContaining('ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2') });
    expect(retry.statusCode, retry.body).toBe(201);
    expect(retry.json()).toMatchObject({ id: expect.stringMatching(/^AuthMethod:/), accountId: w.accountId, type: 'PASSKEY', nickname: 'iPhone Face-ID', credentialId: auth.credentialId });
    const ck = clientKey();
    const ch = await passkeyChallenge(id, ck.uncompressed);
    expect(ch).toMatchObject({ type: 'PASSKEY', credentialId: auth.credentialId, challenge: expect.stringMatching(/^[0-9a-f]{64}$/), requestId: expect.stringMatching(/^Request:/) });
    const res = await t.call('POST', `/auth/credentials/${enc(id)}/verify`, { type: 'PASSKEY', assertion: auth.get(ch.challenge) }, { 'request-id': ch.requestId });
    expect(res.statusCode, res.body).toBe(200);
    const session = res.json() as { id: string; type: string; encryptedSessionSigningKey: string };
    expect(session.type).toBe('PASSKEY');
    const sessionKey = await openSessionKey(session.encryptedSessionSigningKey, ck.privateKey);
    expect(sessionKey).toHaveLength(32);
    const patch = await signed(t, 'PATCH', `/internal-accounts/${enc(w.accountId)}`, { privateEnabled: true }, clientKey(sessionKey));
    expect(patch.retry.statusCode, patch.retry.body).toBe(200);
    // The challenge is single use.
    const again = await t.call('POST', `/auth/credentials/${enc(id)}/verify`, { type: 'PASSKEY', assertion: auth.get(ch.challenge) }, { 'request-id': ch.requestId });
    envelope(again, 401, 'UNAUTHORIZED');
  });

  it('passkey: a compressed clientPublicKey is also the session key (client-held model)', async () => {
    const { w, auth, id } = await withPasskey();
    const ck = clientKey();
    const ch = await passkeyChallenge(id, ck.compressed);
    const res = await t.call('POST', `/auth/credentials/${enc(id)}/verify`, { type: 'PASSKEY', assertion: auth.get(ch.challenge) }, { 'request-id': ch.requestId });
    expect(res.statusCode, res.body).toBe(200);
    const patch = await signed(t, 'PATCH', `/internal-accounts/${enc(w.accountId)}`, { privateEnabled: true }, ck);
    expect(patch.retry.statusCode, patch.retry.body).toBe(200);
  });

  it('passkey verify: each WebAuthn check is a 401 naming it; Request-Id is required', async () => {
    const { auth, id } = await withPasskey();
    const ck = clientKey();
    const verify = (assertion: unknown, rid?: string) => t.call('POST', `/auth/credentials/${enc(id)}/verify`, { type: 'PASSKEY', assertion }, rid ? { 'request-id': rid } : {});
    const ch = await passkeyChallenge(id, ck.uncompressed);
    envelope(await verify(auth.get(ch.challenge)), 401, 'REQUEST_ID_MISSING');
    const reason = async (assertion: unknown, rid = ch.requestId) => envelope(await verify(assertion, rid), 401, 'UNAUTHORIZED').details?.reason as string;
    expect(await reason(auth.get(ch.challenge), 'Request:00000000-0000-7000-8000-000000000000')).toMatch(/Request-Id/);
    expect(await reason({ ...auth.get(ch.challenge), credentialId: 'AAAA' })).toMatch(/credentialId/);
    expect(await reason(auth.get('0'.repeat(64)))).toMatch(/challenge/i);
    expect(await reason(auth.get(ch.challenge, { origin: 'https://evil.example' }))).toMatch(/origin/);
    expect(await reason(auth.get(ch.challenge, { rpId: 'evil.example' }))).toMatch(/RP ID/i);
    expect(await reason(auth.get(ch.challenge, { privateKey: clientKey().privateKey }))).toMatch(/signature/i);
    auth.flags = 0x00;
    expect(await reason(auth.get(ch.challenge))).toMatch(/not present/i);
    auth.flags = 0x01;
    // A good assertion passes and moves the counter; replaying an old counter is refused.
    const ok = await verify(auth.get(ch.challenge, { counter: 10 }), ch.requestId);
    expect(ok.statusCode, ok.body).toBe(200);
    const ch2 = await passkeyChallenge(id, ck.uncompressed);
    expect(await reason(auth.get(ch2.challenge, { counter: 10 }), ch2.requestId)).toMatch(/counter/i);
  });

  it('passkey: the legacy sandbox assertion signature skips WebAuthn verification', async () => {
    const { auth, id } = await withPasskey();
    const ck = clientKey();
    const ch = await passkeyChallenge(id, ck.uncompressed);
    const res = await t.call('POST', `/auth/credentials/${enc(id)}/verify`, { type: 'PASSKEY', assertion: { ...auth.get('0'.repeat(64), { origin: 'https://evil.example' }), signature: 'sandbox-valid-passkey-signature' } }, { 'request-id': ch.requestId });
    expect(res.statusCode, res.body).toBe(200);
  });

  it('passkey registration: the same WebAuthn credential twice is PASSKEY_CREDENTIAL_ALREADY_EXISTS; bad attestations are 401', async () => {
    const { w, key, auth, body } = await withPasskey();
    envelope(await t.call('POST', '/auth/credentials', body), 400, 'PASSKEY_CREDENTIAL_ALREADY_EXISTS');
    const challenge = regChallenge();
    const other = new SoftAuthenticator('localhost', ORIGIN);
    const wrongChallenge = { ...body, challenge, attestation: other.create(regChallenge()) };
    expect(envelope(await t.call('POST', '/auth/credentials', wrongChallenge), 401, 'UNAUTHORIZED').details?.reason).toMatch(/challenge/i);
    const wrongOrigin = { ...body, challenge, attestation: other.create(challenge, { origin: 'https://evil.example' }) };
    expect(envelope(await t.call('POST', '/auth/credentials', wrongOrigin), 401, 'UNAUTHORIZED').details?.reason).toMatch(/origin/);
    const wrongRp = { ...body, challenge, attestation: other.create(challenge, { rpId: 'evil.example' }) };
    expect(envelope(await t.call('POST', '/auth/credentials', wrongRp), 401, 'UNAUTHORIZED').details?.reason).toMatch(/RP ID/i);
    const wrongId = { ...body, challenge, attestation: { ...other.create(challenge), credentialId: auth.credentialId } };
    expect(envelope(await t.call('POST', '/auth/credentials', wrongId), 401, 'UNAUTHORIZED').details?.reason).toMatch(/credential/i);
    const missing = envelope(await t.call('POST', '/auth/credentials', { type: 'PASSKEY', accountId: w.accountId }), 400, 'INVALID_INPUT');
    expect((missing.details?.errors as Array<{ field: string }>).map((e) => e.field).sort()).toEqual(['attestation', 'challenge', 'nickname']);
    void key;
  });

  it('passkey origins: without a platform setting any http(s) origin, the RP ID still bound to it; a saved allowlist is enforced', async () => {
    expect((await t.call('GET', '/auth/passkey-settings')).json()).toEqual({ allowedOrigins: ['http://*', 'https://*'] });
    const w = await walletCustomer(t);
    const { key } = await otpLogin(t, w.emailCredentialId);
    // No setting saved: a production-like origin registers and verifies; the RP ID may be the origin's host or a parent domain of it.
    const app = new SoftAuthenticator('wallet.example', 'https://app.wallet.example');
    const c1 = regChallenge();
    const { retry } = await signed(t, 'POST', '/auth/credentials', { type: 'PASSKEY', accountId: w.accountId, nickname: 'Phone', challenge: c1, attestation: app.create(c1) }, key);
    expect(retry.statusCode, retry.body).toBe(201);
    const id = (retry.json() as { id: string }).id;
    const verify = async (assertion: unknown) => {
      const ch = await passkeyChallenge(id, clientKey().uncompressed);
      return t.call('POST', `/auth/credentials/${enc(id)}/verify`, { type: 'PASSKEY', assertion: typeof assertion === 'function' ? (assertion as (c: string) => unknown)(ch.challenge) : assertion }, { 'request-id': ch.requestId });
    };
    expect((await verify((c: string) => app.get(c))).statusCode).toBe(200);
    // Another site's origin: its host is not the RP ID (nor below it), at registration and at assertion.
    const c2 = regChallenge();
    const foreign = new SoftAuthenticator('wallet.example', 'https://evil.example');
    expect(envelope(await t.call('POST', '/auth/credentials', { type: 'PASSKEY', accountId: w.accountId, nickname: 'Laptop', challenge: c2, attestation: foreign.create(c2) }), 401, 'UNAUTHORIZED').details?.reason).toMatch(/RP ID.*origin https:\/\/evil\.example/);
    expect(envelope(await verify((c: string) => app.get(c, { origin: 'https://evil.example' })), 401, 'UNAUTHORIZED').details?.reason).toMatch(/RP ID wallet\.example is not the host of origin https:\/\/evil\.example/);
    expect(envelope(await verify((c: string) => app.get(c, { origin: 'https://notwallet.example' })), 401, 'UNAUTHORIZED').details?.reason).toMatch(/RP ID/);
    // Not http(s): refused whatever the setting.
    expect(envelope(await verify((c: string) => app.get(c, { origin: 'ftp://app.wallet.example' })), 401, 'UNAUTHORIZED').details?.reason).toMatch(/origin/);
    // A saved allowlist is enforced.
    const set = await t.call('PUT', '/auth/passkey-settings', { allowedOrigins: ['https://wallet.example'] });
    expect(set.statusCode, set.body).toBe(200);
    try {
      expect((await t.call('GET', '/auth/passkey-settings')).json()).toEqual({ allowedOrigins: ['https://wallet.example'] });
      expect(envelope(await verify((c: string) => app.get(c)), 401, 'UNAUTHORIZED').details?.reason).toMatch(/origin https:\/\/app\.wallet\.example is not an accepted origin/);
      const c3 = regChallenge();
      const local = new SoftAuthenticator('localhost', ORIGIN);
      expect(envelope(await t.call('POST', '/auth/credentials', { type: 'PASSKEY', accountId: w.accountId, nickname: 'Laptop', challenge: c3, attestation: local.create(c3) }), 401, 'UNAUTHORIZED').details?.reason).toMatch(/origin/);
      await t.call('PUT', '/auth/passkey-settings', { allowedOrigins: ['https://app.wallet.example'] });
      expect((await verify((c: string) => app.get(c))).statusCode).toBe(200);
      await t.call('PUT', '/auth/passkey-settings', { allowedOrigins: ['https://app.wallet.example:*'] });
      expect((await verify((c: string) => app.get(c))).statusCode).toBe(200);
    } finally {
      // Back to what no setting means (the other tests use localhost).
      await t.call('PUT', '/auth/passkey-settings', { allowedOrigins: ['http://*', 'https://*'] });
    }
    envelope(await t.call('PUT', '/auth/passkey-settings', { allowedOrigins: ['ftp://x'] }), 400, 'INVALID_INPUT');
  });

  // ---- OAUTH ----

  const claims = (extra: Record<string, unknown> = {}) => ({ iss: 'https://accounts.google.com', aud: 'sandbox-client', sub: 'user-123', email: 'oauth@example.com', iat: nowS(), exp: nowS() + 300, ...extra });

  async function withOauth() {
    const w = await walletCustomer(t);
    const { key } = await otpLogin(t, w.emailCredentialId);
    const { first, retry } = await signed(t, 'POST', '/auth/credentials', { type: 'OAUTH', accountId: w.accountId, oidcToken: oidcToken(claims()) }, key);
    expect(first.json()).toMatchObject({ type: 'OAUTH' });
    expect(retry.statusCode, retry.body).toBe(201);
    return { w, key, id: (retry.json() as { id: string }).id, cred: retry.json() as Record<string, unknown> };
  }

  it('oauth: registration stores the identity; verify with nonce = sha256(clientPublicKey) opens a sealed session', async () => {
    const { w, id, cred } = await withOauth();
    expect(cred).toMatchObject({ type: 'OAUTH', nickname: 'oauth@example.com', accountId: w.accountId });
    const ck = clientKey();
    const res = await t.call('POST', `/auth/credentials/${enc(id)}/verify`, { type: 'OAUTH', oidcToken: oidcToken(claims({ nonce: sha256Hex(ck.uncompressed) })), clientPublicKey: ck.uncompressed });
    expect(res.statusCode, res.body).toBe(200);
    const key = await openSessionKey((res.json() as { encryptedSessionSigningKey: string }).encryptedSessionSigningKey, ck.privateKey);
    const patch = await signed(t, 'PATCH', `/internal-accounts/${enc(w.accountId)}`, { privateEnabled: true }, clientKey(key));
    expect(patch.retry.statusCode).toBe(200);
    // aud as a single-element array is the same audience.
    const ck2 = clientKey();
    const res2 = await t.call('POST', `/auth/credentials/${enc(id)}/verify`, { type: 'OAUTH', oidcToken: oidcToken(claims({ aud: ['sandbox-client'], nonce: sha256Hex(ck2.compressed) })), clientPublicKey: ck2.compressed });
    expect(res2.statusCode, res2.body).toBe(200);
  });

  it('oauth registration: each failed claim check is a 401 naming it; malformed is 400; the fixed literal token is refused', async () => {
    const w = await walletCustomer(t);
    const create = (token: string) => t.call('POST', '/auth/credentials', { type: 'OAUTH', accountId: w.accountId, oidcToken: token });
    const reason = async (c: Record<string, unknown>) => envelope(await create(oidcToken(c)), 401, 'UNAUTHORIZED').details?.reason as string;
    const base = claims();
    expect(await reason({ ...base, iss: 'https://evil.example' })).toMatch(/^iss/);
    expect(await reason({ ...base, iss: undefined })).toMatch(/^iss/);
    expect(await reason({ ...base, aud: '' })).toMatch(/^aud/);
    expect(await reason({ ...base, aud: ['a', 'b'] })).toMatch(/^aud/);
    expect(await reason({ ...base, sub: '' })).toMatch(/^sub/);
    expect(await reason({ ...base, iat: 'now' })).toMatch(/^iat/);
    expect(await reason({ ...base, iat: nowS() - 66 })).toMatch(/^iat .*old/);
    expect(await reason({ ...base, iat: nowS() + 6 })).toMatch(/^iat .*future/);
    expect(await reason({ ...base, exp: undefined })).toMatch(/^exp/);
    expect(await reason({ ...base, exp: nowS() })).toMatch(/^exp/);
    expect(envelope(await create('sandbox-valid-oidc-token'), 401, 'UNAUTHORIZED').details?.reason).toMatch(/fixed/);
    const bad = envelope(await create('not.a-jwt'), 400, 'INVALID_INPUT');
    expect(bad.details?.errors).toEqual([expect.objectContaining({ field: 'oidcToken' })]);
    // Within the skew: 64 s old and 4 s ahead pass the checks (a signed add follows).
    expect((await create(oidcToken({ ...base, iat: nowS() - 64 }))).statusCode).toBe(202);
    expect((await create(oidcToken({ ...base, iat: nowS() + 4 }))).statusCode).toBe(202);
    for (const iss of ['accounts.google.com', 'https://appleid.apple.com']) expect((await create(oidcToken({ ...base, iss }))).statusCode).toBe(202);
  });

  it('oauth verify: identity and nonce must match', async () => {
    const { id } = await withOauth();
    const ck = clientKey();
    const verify = async (c: Record<string, unknown>, key = ck.uncompressed) =>
      envelope(await t.call('POST', `/auth/credentials/${enc(id)}/verify`, { type: 'OAUTH', oidcToken: oidcToken(c), clientPublicKey: key }), 401, 'UNAUTHORIZED').details?.reason as string;
    const nonce = sha256Hex(ck.uncompressed);
    expect(await verify(claims({ sub: 'someone-else', nonce }))).toMatch(/identity/);
    expect(await verify(claims({ aud: 'other-client', nonce }))).toMatch(/identity/);
    expect(await verify(claims({ iss: 'https://appleid.apple.com', nonce }))).toMatch(/identity/);
    expect(await verify(claims())).toMatch(/nonce is missing/);
    expect(await verify(claims({ nonce: sha256Hex(ck.compressed) }))).toMatch(/nonce is not/);
    expect(await verify(claims({ nonce, iat: nowS() - 120 }))).toMatch(/^iat/);
    const missing = envelope(await t.call('POST', `/auth/credentials/${enc(id)}/verify`, { type: 'OAUTH' }), 400, 'INVALID_INPUT');
    expect((missing.details?.errors as Array<{ field: string }>).map((e) => e.field)).toEqual(['oidcToken', 'clientPublicKey']);
    envelope(await t.call('POST', `/auth/credentials/${enc(id)}/challenge`, {}), 400, 'INVALID_INPUT');
  });

  // ---- OTP credentials ----

  it('SMS_OTP: added by a signed call (OTP issued at once), one per account; EMAIL_OTP is one per account too', async () => {
    const w = await walletCustomer(t, { phoneNumber: '+14155550123' });
    const { key } = await otpLogin(t, w.emailCredentialId);
    const { retry } = await signed(t, 'POST', '/auth/credentials', { type: 'SMS_OTP', accountId: w.accountId }, key);
    expect(retry.statusCode, retry.body).toBe(201);
    const sms = retry.json() as { id: string; nickname: string; otpEncryptionTargetBundle: string };
    expect(sms).toMatchObject({ type: 'SMS_OTP', nickname: '+14155550123' });
    envelope(await t.call('POST', '/auth/credentials', { type: 'SMS_OTP', accountId: w.accountId }), 400, 'SMS_OTP_CREDENTIAL_ALREADY_EXISTS');
    envelope(await t.call('POST', '/auth/credentials', { type: 'EMAIL_OTP', accountId: w.accountId }), 400, 'EMAIL_OTP_CREDENTIAL_ALREADY_EXISTS');
    // The OTP of the 201 verifies at once.
    const tek = clientKey();
    const body = { type: 'SMS_OTP', encryptedOtpBundle: await sealOtp(sms.otpEncryptionTargetBundle, '000000', tek.compressed) };
    const first = await t.call('POST', `/auth/credentials/${enc(sms.id)}/verify`, body);
    expect(first.statusCode, first.body).toBe(202);
    const c = first.json() as { payloadToSign: string; requestId: string };
    // Signed by another key than the TEK sealed in the bundle: refused.
    envelope(await t.call('POST', `/auth/credentials/${enc(sms.id)}/verify`, body, { 'service-wallet-signature': stamp(key.privateKey, c.payloadToSign), 'request-id': c.requestId }), 401, 'WALLET_SIGNATURE_INVALID');
    const done = await t.call('POST', `/auth/credentials/${enc(sms.id)}/verify`, body, { 'service-wallet-signature': stamp(tek.privateKey, c.payloadToSign), 'request-id': c.requestId });
    expect(done.statusCode, done.body).toBe(200);
    expect(done.json()).toMatchObject({ type: 'SMS_OTP' });
    // The OTP is used: the same bundle again needs a new challenge.
    expect(envelope(await t.call('POST', `/auth/credentials/${enc(sms.id)}/verify`, body), 401, 'UNAUTHORIZED').details?.reason).toMatch(/no OTP is pending/);
    // No phone on file: no SMS_OTP.
    const v = await walletCustomer(t);
    envelope(await t.call('POST', '/auth/credentials', { type: 'SMS_OTP', accountId: v.accountId }), 400, 'INVALID_INPUT');
  });

  it('OTP verify input: a bundle that is not {encappedPublic, ciphertext} is 400; one sealed to another key is 401', async () => {
    const w = await walletCustomer(t);
    await t.call('POST', `/auth/credentials/${enc(w.emailCredentialId)}/challenge`);
    envelope(await t.call('POST', `/auth/credentials/${enc(w.emailCredentialId)}/verify`, { type: 'EMAIL_OTP', encryptedOtpBundle: 'nope' }), 400, 'INVALID_INPUT');
    const strangerTarget = JSON.stringify({ version: 'v1.0.0', data: Buffer.from(JSON.stringify({ targetPublic: clientKey().uncompressed })).toString('hex'), dataSignature: '', enclaveQuorumPublic: '' });
    const wrong = await sealOtp(strangerTarget, '000000', clientKey().compressed);
    expect(envelope(await t.call('POST', `/auth/credentials/${enc(w.emailCredentialId)}/verify`, { type: 'EMAIL_OTP', encryptedOtpBundle: wrong }), 401, 'UNAUTHORIZED').details?.reason).toMatch(/decrypt/);
    envelope(await t.call('POST', `/auth/credentials/${enc(w.emailCredentialId)}/verify`, { type: 'SMS_OTP', encryptedOtpBundle: wrong }), 400, 'INVALID_INPUT');
    envelope(await t.call('POST', '/auth/credentials/AuthMethod:00000000-0000-7000-8000-000000000000/verify', { type: 'EMAIL_OTP', encryptedOtpBundle: wrong }), 404, 'REFERENCE_NOT_FOUND');
    // The OTP expires with the sandbox clock (300 s).
    const ch = await t.call('POST', `/auth/credentials/${enc(w.emailCredentialId)}/challenge`);
    const bundle = await sealOtp((ch.json() as { otpEncryptionTargetBundle: string }).otpEncryptionTargetBundle, '000000', clientKey().compressed);
    await advance(301);
    expect(envelope(await t.call('POST', `/auth/credentials/${enc(w.emailCredentialId)}/verify`, { type: 'EMAIL_OTP', encryptedOtpBundle: bundle }), 401, 'UNAUTHORIZED').details?.reason).toMatch(/expired/);
  });

  it('customer email changes reach the tied EMAIL_OTP; a failed sync is 424 EMAIL_OTP_CREDENTIAL_SYNC_FAILED and changes nothing', async () => {
    const w = await walletCustomer(t);
    const upd = await t.call('PATCH', `/customers/${enc(w.customerId)}`, { customerType: 'INDIVIDUAL', email: 'new@example.com' });
    expect(upd.statusCode, upd.body).toBe(200);
    const list = async () => ((await t.call('GET', `/auth/credentials?accountId=${enc(w.accountId)}`)).json() as { data: Array<{ nickname: string }> }).data;
    expect((await list())[0]!.nickname).toBe('new@example.com');
    envelope(await t.call('PATCH', `/customers/${enc(w.customerId)}`, { customerType: 'INDIVIDUAL', email: 'x+syncfail@example.com' }), 424, 'EMAIL_OTP_CREDENTIAL_SYNC_FAILED');
    expect((await list())[0]!.nickname).toBe('new@example.com');
    expect(((await t.call('GET', `/customers/${enc(w.customerId)}`)).json() as { email: string }).email).toBe('new@example.com');
    // The operation declares that answer.
    const doc = (await t.call('GET', '/openapi.json', undefined, { authorization: '' })).json() as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
    expect(Object.keys(doc.paths['/customers/{customerId}']!.patch!.responses)).toContain('424');
  });

  // ---- Revocation and sessions ----

  it('revoking a credential: signed by a session of another credential; the last one stays', async () => {
    const w = await walletCustomer(t);
    envelope(await t.call('DELETE', `/auth/credentials/${enc(w.emailCredentialId)}`), 400, 'INVALID_INPUT');
    const { key: emailKey } = await otpLogin(t, w.emailCredentialId);
    const { retry } = await signed(t, 'POST', '/auth/credentials', { type: 'OAUTH', accountId: w.accountId, oidcToken: oidcToken(claims()) }, emailKey);
    const oauthId = (retry.json() as { id: string }).id;
    // The email session cannot revoke its own credential.
    const own = await signed(t, 'DELETE', `/auth/credentials/${enc(w.emailCredentialId)}`, undefined, emailKey);
    expect(own.first.json()).toMatchObject({ type: 'EMAIL_OTP' });
    expect(envelope(own.retry, 401, 'WALLET_SIGNATURE_INVALID').details).toMatchObject({ reason: 'session belongs to the credential being revoked' });
    // It revokes the OAUTH credential.
    const del = await signed(t, 'DELETE', `/auth/credentials/${enc(oauthId)}`, undefined, emailKey);
    expect(del.retry.statusCode, del.retry.body).toBe(204);
    expect(((await t.call('GET', `/auth/credentials?accountId=${enc(w.accountId)}`)).json() as { data: Array<{ id: string }> }).data.map((c) => c.id)).toEqual([w.emailCredentialId]);
    envelope(await t.call('DELETE', `/auth/credentials/${enc(oauthId)}`), 404, 'REFERENCE_NOT_FOUND');
  });

  it('sessions: revoke (self-logout) and refresh (re-sealed key, the old session ends)', async () => {
    const w = await walletCustomer(t);
    const a = await otpLogin(t, w.emailCredentialId);
    const b = await otpLogin(t, w.emailCredentialId);
    // Refresh a: signed by a's key only.
    const ck = clientKey();
    const wrong = await signed(t, 'POST', `/auth/sessions/${enc(a.session.id)}/refresh`, { clientPublicKey: ck.uncompressed }, b.key);
    envelope(wrong.retry, 401, 'WALLET_SIGNATURE_INVALID');
    const ref = await signed(t, 'POST', `/auth/sessions/${enc(a.session.id)}/refresh`, { clientPublicKey: ck.uncompressed }, a.key);
    expect(ref.retry.statusCode, ref.retry.body).toBe(201);
    const fresh = ref.retry.json() as { id: string; encryptedSessionSigningKey: string };
    expect(fresh.id).not.toBe(a.session.id);
    const freshKey = clientKey(await openSessionKey(fresh.encryptedSessionSigningKey, ck.privateKey));
    const ids = async () => ((await t.call('GET', `/auth/sessions?accountId=${enc(w.accountId)}`)).json() as { data: Array<{ id: string; encryptedSessionSigningKey?: string }> }).data;
    expect((await ids()).map((s) => s.id).sort()).toEqual([b.session.id, fresh.id].sort());
    expect((await ids()).every((s) => s.encryptedSessionSigningKey === undefined)).toBe(true);
    // The old session is over.
    envelope(await t.call('POST', `/auth/sessions/${enc(a.session.id)}/refresh`, { clientPublicKey: ck.uncompressed }), 401, 'UNAUTHORIZED');
    // Self-logout of b, then b signs nothing; the refreshed key still does.
    const out = await signed(t, 'DELETE', `/auth/sessions/${enc(b.session.id)}`, undefined, b.key);
    expect(out.first.json()).toMatchObject({ type: 'EMAIL_OTP' });
    expect(out.retry.statusCode, out.retry.body).toBe(204);
    envelope((await signed(t, 'PATCH', `/internal-accounts/${enc(w.accountId)}`, { privateEnabled: true }, b.key)).retry, 401, 'WALLET_SIGNATURE_INVALID');
    expect((await signed(t, 'PATCH', `/internal-accounts/${enc(w.accountId)}`, { privateEnabled: true }, freshKey)).retry.statusCode).toBe(200);
    envelope(await t.call('DELETE', `/auth/sessions/${enc(b.session.id)}`), 404, 'REFERENCE_NOT_FOUND');
    envelope(await t.call('POST', '/auth/sessions/Session:00000000-0000-7000-8000-000000000000/refresh', { clientPublicKey: ck.compressed }), 404, 'REFERENCE_NOT_FOUND');
  });

  it('challenge and verify input: a passkey challenge needs clientPublicKey; the type must be the credential\'s; unknown ids are 404', async () => {
    const { id } = await withPasskey();
    const noKey = envelope(await t.call('POST', `/auth/credentials/${enc(id)}/challenge`), 400, 'INVALID_INPUT');
    expect(noKey.details?.errors).toEqual([expect.objectContaining({ field: 'clientPublicKey' })]);
    envelope(await t.call('POST', `/auth/credentials/${enc(id)}/challenge`, { clientPublicKey: '05abc' }), 400, 'INVALID_INPUT');
    const wrongType = envelope(await t.call('POST', `/auth/credentials/${enc(id)}/verify`, { type: 'EMAIL_OTP', encryptedOtpBundle: '{}' }), 400, 'INVALID_INPUT');
    expect(wrongType.details?.errors).toEqual([expect.objectContaining({ field: 'type', constraint: { enum: ['PASSKEY'] } })]);
    envelope(await t.call('POST', `/auth/credentials/${enc(id)}/verify`, { type: 'PASSKEY' }), 400, 'INVALID_INPUT');
    envelope(await t.call('POST', '/auth/credentials/AuthMethod:00000000-0000-7000-8000-000000000000/challenge'), 404, 'REFERENCE_NOT_FOUND');
    envelope(await t.call('DELETE', '/auth/credentials/AuthMethod:00000000-0000-7000-8000-000000000000'), 404, 'REFERENCE_NOT_FOUND');
  });

  it('a clientPublicKey that is well-formed hex but not a P-256 point is 400 INVALID_INPUT naming it, before any challenge or write', async () => {
    const OFF_CURVE = '04' + '00'.repeat(64);
    const OFF_CURVE_COMPRESSED = '02' + 'ff'.repeat(32);
    const { w, key, auth, id: passkeyId } = await withPasskey();
    const { retry } = await signed(t, 'POST', '/auth/credentials', { type: 'OAUTH', accountId: w.accountId, oidcToken: oidcToken(claims()) }, key);
    const oauthId = (retry.json() as { id: string }).id;
    const requests = async () => (await t.store.db.selectFrom('wallet_requests').select('id').where('account_id', '=', w.accountId).execute()).length;
    const sessions = async () => ((await t.call('GET', `/auth/sessions?accountId=${enc(w.accountId)}`)).json() as { data: unknown[] }).data.length;
    const before = { requests: await requests(), sessions: await sessions() };
    const named = (res: Parameters<typeof envelope>[0]) => expect(envelope(res, 400, 'INVALID_INPUT').details?.errors).toEqual([expect.objectContaining({ field: 'clientPublicKey', message: expect.stringMatching(/P-256/) })]);
    // Challenge, every type (a key sent must be one, even where it is not used).
    for (const k of [OFF_CURVE, OFF_CURVE_COMPRESSED]) named(await t.call('POST', `/auth/credentials/${enc(passkeyId)}/challenge`, { clientPublicKey: k }));
    named(await t.call('POST', `/auth/credentials/${enc(w.emailCredentialId)}/challenge`, { clientPublicKey: OFF_CURVE }));
    named(await t.call('POST', `/auth/credentials/${enc(oauthId)}/challenge`, { clientPublicKey: OFF_CURVE }));
    // Verify: OAUTH (the nonce even matches the key), and a key sent with any other type.
    for (const k of [OFF_CURVE, OFF_CURVE_COMPRESSED]) named(await t.call('POST', `/auth/credentials/${enc(oauthId)}/verify`, { type: 'OAUTH', oidcToken: oidcToken(claims({ nonce: sha256Hex(k) })), clientPublicKey: k }));
    const ch = await passkeyChallenge(passkeyId, clientKey().uncompressed);
    named(await t.call('POST', `/auth/credentials/${enc(passkeyId)}/verify`, { type: 'PASSKEY', assertion: auth.get(ch.challenge), clientPublicKey: OFF_CURVE }, { 'request-id': ch.requestId }));
    // Refresh and export, before any challenge.
    const { session } = await otpLogin(t, w.emailCredentialId);
    const mid = { requests: await requests(), sessions: await sessions() };
    named(await t.call('POST', `/auth/sessions/${enc(session.id)}/refresh`, { clientPublicKey: OFF_CURVE }));
    named(await t.call('POST', `/internal-accounts/${enc(w.accountId)}/export`, { clientPublicKey: OFF_CURVE }));
    expect({ requests: await requests(), sessions: await sessions() }).toEqual(mid);
    // Nothing was issued or opened by the refused calls: the passkey challenge and the OTP login above are the only new rows.
    expect(mid.requests).toBe(before.requests + 2);
    expect(mid.sessions).toBe(before.sessions + 1);
  });

  it('list operations need a well-formed accountId; an unknown one lists nothing', async () => {
    envelope(await t.call('GET', '/auth/credentials'), 400, 'INVALID_INPUT');
    envelope(await t.call('GET', '/auth/sessions?accountId=nope'), 400, 'INVALID_INPUT');
    expect((await t.call('GET', '/auth/sessions?accountId=InternalAccount:00000000-0000-7000-8000-000000000000')).json()).toEqual({ data: [] });
  });

  it('credentials are added only to an EMBEDDED_WALLET account', async () => {
    const res = await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Holding Only', currencies: ['USD'], endUserTermsConsent: TERMS });
    const id = (res.json() as { id: string }).id;
    const acct = ((await t.call('GET', `/customers/internal-accounts?customerId=${enc(id)}`)).json() as { data: Array<{ id: string }> }).data[0]!.id;
    envelope(await t.call('POST', '/auth/credentials', { type: 'EMAIL_OTP', accountId: acct }), 400, 'INVALID_INPUT');
    envelope(await t.call('POST', '/auth/credentials', { type: 'EMAIL_OTP', accountId: 'InternalAccount:00000000-0000-7000-8000-000000000000' }), 404, 'REFERENCE_NOT_FOUND');
    envelope(await t.call('POST', `/internal-accounts/${enc(acct)}/export`, { clientPublicKey: clientKey().uncompressed }), 400, 'INVALID_INPUT');
  });
});
