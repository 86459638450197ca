import { base64urlnopad } from '@scure/base';
import { decodeJwt } from 'jose';
import type { Kysely, Transaction } from 'kysely';
import type { DB } from '../../kernel/db/schema.js';
import { apiError, type FieldError, invalidInput } from '../../kernel/errors.js';
import { newId } from '../../kernel/ids.js';
import { openSealed } from '../../kernel/sealed.js';
import { findCustomer } from '../customers/store.js';
import type { InternalAccountRow } from '../internal-accounts/store.js';
import type { PlatformRow } from '../../operator/platforms/store.js';
import { bytesToHex, compressedKey, hexToBytes, hpkeOpen, LEGACY_OIDC_TOKEN, LEGACY_PASSKEY_SIGNATURE, newKeyPair, pointOf, sha256Hex, targetBundle, uncompressedKey, verificationToken } from './crypto.js';
import type { AuthCredentialChallengeRequest, AuthCredentialCreateRequest, AuthCredentialVerifyRequest, AuthMethod, AuthMethodResponse, AuthMethodType, AuthSession, AuthSignedRequestChallenge, PasskeyAuthChallenge } from './schemas.js';
import * as store from './store.js';
import type { CredentialRow, WalletRow } from './store.js';
import { CHALLENGE_TTL_MS, DEFAULT_ALLOWED_ORIGINS, type Now, OIDC_MAX_AGE_S, OIDC_SKEW_S, OTP_TTL_MS, SANDBOX_OTP_CODE, SESSION_TTL_MS, SUPPORTED_OIDC_ISSUERS, type SignedHeaders, type WalletDeps, activity, credentialView, requireCredential, requirePoint, requireWallet, unauthorized, webauthn } from './service.js';
import { openSession } from './sessions.js';
import { type Pending, challengeOf, issue, legOf, retry } from './signed-retry.js';

// Wallet credentials (AuthMethods): EMAIL_OTP, SMS_OTP, OAUTH, PASSKEY: created, challenged,
// verified (opening a session), revoked; the allowed passkey origins.

type Db = Kysely<DB> | Transaction<DB>;

// ---- Credentials ------------------------------------------------------------------------------

export async function listCredentials(db: Db, platformId: string, accountId: string): Promise<{ data: AuthMethod[] }> {
  return { data: (await store.activeCredentials(db, platformId, accountId)).map(credentialView) };
}

/** The origins a platform accepts in WebAuthn client data. */
export async function allowedOrigins(db: Db, platformId: string): Promise<string[]> {
  return (await store.findAllowedOrigins(db, platformId)) ?? [...DEFAULT_ALLOWED_ORIGINS];
}

export async function setAllowedOrigins(db: Db, platformId: string, origins: string[], at: string): Promise<{ allowedOrigins: string[] }> {
  const unique = [...new Set(origins.map((o) => o.toLowerCase()))];
  await store.saveAllowedOrigins(db, platformId, unique, at);
  return { allowedOrigins: unique };
}

function originAccepted(origin: string, allowed: readonly string[]): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (url.origin !== origin || (url.protocol !== 'http:' && url.protocol !== 'https:')) return false;
  return allowed.some((a) => a === `${url.protocol}//*` || (a.endsWith(':*') ? `${url.protocol}//${url.hostname}` === a.slice(0, -2) : a === origin));
}

/** The RP IDs an origin may register under: its host and each parent domain (not a bare TLD). */
function rpIdCandidates(origin: string): string[] {
  const host = new URL(origin).hostname;
  if (/^[0-9.]+$/.test(host) || !host.includes('.')) return [host];
  const labels = host.split('.');
  const out: string[] = [];
  for (let i = 0; i < labels.length - 1; i++) out.push(labels.slice(i).join('.'));
  return out;
}

function clientOrigin(clientDataJson: string): string | undefined {
  try {
    const data = JSON.parse(new TextDecoder().decode(base64urlnopad.decode(clientDataJson.replace(/=+$/, '')))) as { origin?: unknown };
    return typeof data.origin === 'string' ? data.origin : undefined;
  } catch {
    return undefined;
  }
}

async function checkedOrigin(db: Db, platformId: string, clientDataJson: string): Promise<string> {
  const origin = clientOrigin(clientDataJson);
  if (origin === undefined) throw unauthorized('clientDataJson is not base64url client data with an origin');
  if (!originAccepted(origin, await allowedOrigins(db, platformId))) throw unauthorized(`origin ${origin} is not an accepted origin of the platform`);
  return origin;
}

interface Registered {
  webauthnId: string;
  publicKey: string;
  counter: number;
  rpId: string;
}

async function verifyRegistration(db: Db, platformId: string, body: AuthCredentialCreateRequest): Promise<Registered> {
  const att = body.attestation!;
  const origin = await checkedOrigin(db, platformId, att.clientDataJson);
  let result;
  try {
    result = await (await webauthn()).verifyRegistrationResponse({
      response: { id: att.credentialId, rawId: att.credentialId, type: 'public-key', clientExtensionResults: {}, response: { clientDataJSON: att.clientDataJson, attestationObject: att.attestationObject, ...(att.transports ? { transports: att.transports } : {}) } },
      expectedChallenge: body.challenge!,
      expectedOrigin: origin,
      expectedRPID: rpIdCandidates(origin),
      requireUserVerification: false,
    });
  } catch (err) {
    // Any origin may be accepted: the RP ID binding is what ties the credential to it.
    const rp = (err as Error).name === 'UnexpectedRPIDHash' ? `: the RP ID must be the host of origin ${origin} or a parent domain of it` : '';
    throw unauthorized(`WebAuthn registration: ${(err as Error).message}${rp}`);
  }
  if (!result.verified) throw unauthorized('WebAuthn registration: attestation does not verify');
  const info = result.registrationInfo;
  if (info.credential.id !== att.credentialId) throw unauthorized('WebAuthn registration: credentialId is not the attested credential id');
  return { webauthnId: info.credential.id, publicKey: base64urlnopad.encode(info.credential.publicKey), counter: info.credential.counter, rpId: info.rpID ?? new URL(origin).hostname };
}

interface OidcIdentity {
  iss: string;
  aud: string;
  sub: string;
  email?: string;
  nonce?: string;
}

/** The sandbox's OIDC checks; 400 INVALID_INPUT for a token that is not a JWT, 401 with the failed check otherwise. */
function checkOidc(token: string, nowMs: number, field: string): OidcIdentity {
  if (token.trim() === LEGACY_OIDC_TOKEN) throw unauthorized('the fixed sandbox token is no longer accepted: send a JWT-shaped OIDC token');
  let claims: Record<string, unknown>;
  try {
    claims = decodeJwt(token);
  } catch {
    throw invalidInput([{ field, message: 'is not a JWT (header.payload.signature, base64url JSON)' }]);
  }
  const now = nowMs / 1000;
  const { iss, aud, sub, iat, exp, email, nonce } = claims;
  if (typeof iss !== 'string' || !(SUPPORTED_OIDC_ISSUERS as readonly string[]).includes(iss)) throw unauthorized(`iss is not a supported issuer (${SUPPORTED_OIDC_ISSUERS.join(', ')})`);
  const audience = typeof aud === 'string' ? aud : Array.isArray(aud) && aud.length === 1 && typeof aud[0] === 'string' ? aud[0] : undefined;
  if (audience === undefined || audience === '') throw unauthorized('aud must be a non-empty string or a single-element string array');
  if (typeof sub !== 'string' || sub === '') throw unauthorized('sub must be a non-empty string');
  if (typeof iat !== 'number' || !Number.isFinite(iat)) throw unauthorized('iat must be a number');
  if (now - iat > OIDC_MAX_AGE_S + OIDC_SKEW_S) throw unauthorized(`iat is more than ${OIDC_MAX_AGE_S} seconds old`);
  if (iat - now > OIDC_SKEW_S) throw unauthorized('iat is in the future');
  if (typeof exp !== 'number' || !Number.isFinite(exp)) throw unauthorized('exp must be a number');
  if (exp <= now) throw unauthorized('exp is not in the future: the token expired');
  const id: OidcIdentity = { iss, aud: audience, sub };
  if (typeof email === 'string' && email !== '') id.email = email;
  if (typeof nonce === 'string') id.nonce = nonce;
  return id;
}

const NICKNAME = /^[\p{L}\p{N} .\-_'’()]{1,100}$/u;

/** The per-type fields of a create request: every missing or invalid one. */
function createFieldErrors(body: AuthCredentialCreateRequest): FieldError[] {
  const errors: FieldError[] = [];
  if (body.type === 'OAUTH' && body.oidcToken === undefined) errors.push({ field: 'oidcToken', message: 'is required for an OAUTH credential' });
  if (body.type === 'PASSKEY') {
    if (body.nickname === undefined) errors.push({ field: 'nickname', message: 'is required for a PASSKEY credential' });
    else if (!NICKNAME.test(body.nickname.trim())) errors.push({ field: 'nickname', constraint: { minLength: 1, maxLength: 100 }, message: 'must be 1-100 letters, numbers, spaces or . - _ \' ( )' });
    if (body.challenge === undefined || body.challenge === '') errors.push({ field: 'challenge', message: 'is required for a PASSKEY credential' });
    if (body.attestation === undefined) errors.push({ field: 'attestation', message: 'is required for a PASSKEY credential' });
  }
  return errors;
}

type NewCredential = Omit<CredentialRow, 'id' | 'platform_id' | 'account_id' | 'status' | 'created_at' | 'updated_at' | 'otp_target_key' | 'otp_expires_ms'>;

const EMPTY: NewCredential = {
  type: '',
  nickname: '',
  webauthn_id: null,
  webauthn_public_key: null,
  webauthn_counter: null,
  rp_id: null,
  transports: null,
  oauth_iss: null,
  oauth_aud: null,
  oauth_sub: null,
};

/** Check a new credential against the account (the sandbox rules) and say what it will be. */
async function prepareCredential(db: Db, platform: PlatformRow, now: Now, account: InternalAccountRow, body: AuthCredentialCreateRequest): Promise<{ cred: NewCredential; parameters: Record<string, unknown>; activityType: string }> {
  const existing = await store.activeCredentials(db, platform.id, account.id);
  if (body.type === 'EMAIL_OTP' || body.type === 'SMS_OTP') {
    if (existing.some((c) => c.type === body.type)) {
      if (body.type === 'EMAIL_OTP') throw apiError(400, 'EMAIL_OTP_CREDENTIAL_ALREADY_EXISTS', `${account.id} already has an EMAIL_OTP credential`, { accountId: account.id });
      throw apiError(400, 'SMS_OTP_CREDENTIAL_ALREADY_EXISTS', `${account.id} already has an SMS_OTP credential`, { accountId: account.id });
    }
    const customer = account.customer_id ? await findCustomer(db, platform.id, account.customer_id) : undefined;
    const contact = body.type === 'EMAIL_OTP' ? customer?.email : customer?.phone_number;
    if (!contact) throw invalidInput([{ field: 'accountId', message: `belongs to a customer without ${body.type === 'EMAIL_OTP' ? 'an email' : 'a phone number'} on file` }]);
    return body.type === 'EMAIL_OTP'
      ? { cred: { ...EMPTY, type: body.type, nickname: contact }, parameters: { userEmail: contact, userId: account.customer_id }, activityType: 'ACTIVITY_TYPE_UPDATE_USER_EMAIL' }
      : { cred: { ...EMPTY, type: body.type, nickname: contact }, parameters: { userId: account.customer_id, userPhoneNumber: contact }, activityType: 'ACTIVITY_TYPE_UPDATE_USER_PHONE_NUMBER' };
  }
  if (body.type === 'OAUTH') {
    const id = checkOidc(body.oidcToken!, now.ms, 'oidcToken');
    if (existing.some((c) => c.type === 'OAUTH' && c.oauth_iss === id.iss && c.oauth_aud === id.aud && c.oauth_sub === id.sub)) {
      throw invalidInput([{ field: 'oidcToken', message: 'names an identity (iss, aud, sub) already registered on this account' }]);
    }
    return {
      cred: { ...EMPTY, type: 'OAUTH', nickname: id.email ?? id.sub, oauth_iss: id.iss, oauth_aud: id.aud, oauth_sub: id.sub },
      parameters: { oauthProviders: [{ oidcToken: body.oidcToken, providerName: id.iss }], userId: account.customer_id },
      activityType: 'ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS',
    };
  }
  const reg = await verifyRegistration(db, platform.id, body);
  if (existing.some((c) => c.type === 'PASSKEY' && c.webauthn_id === reg.webauthnId)) {
    throw apiError(400, 'PASSKEY_CREDENTIAL_ALREADY_EXISTS', `The WebAuthn credential ${reg.webauthnId} is already registered on ${account.id}`, { accountId: account.id, credentialId: reg.webauthnId });
  }
  const att = body.attestation!;
  return {
    cred: {
      ...EMPTY,
      type: 'PASSKEY',
      nickname: body.nickname!.trim(),
      webauthn_id: reg.webauthnId,
      webauthn_public_key: reg.publicKey,
      webauthn_counter: reg.counter,
      rp_id: reg.rpId,
      transports: att.transports ? JSON.stringify(att.transports) : null,
    },
    parameters: {
      authenticators: [{ attestation: { attestationObject: att.attestationObject, clientDataJson: att.clientDataJson, credentialId: att.credentialId }, authenticatorName: body.nickname!.trim(), challenge: body.challenge, transports: att.transports ?? [] }],
      userId: account.customer_id,
    },
    activityType: 'ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2',
  };
}

export async function createCredential(
  deps: WalletDeps,
  platform: PlatformRow,
  now: Now,
  body: AuthCredentialCreateRequest,
  h: SignedHeaders,
): Promise<{ status: 201; body: AuthMethodResponse } | { status: 202; body: AuthSignedRequestChallenge }> {
  const errors = createFieldErrors(body);
  if (errors.length > 0) throw invalidInput(errors);
  return deps.store.db.transaction().execute(async (trx) => {
    const { account, wallet } = await requireWallet(trx, platform.id, body.accountId);
    const leg = legOf(h);
    const prepared = await prepareCredential(trx, platform, now, account, body);
    // A wallet is provisioned with its EMAIL_OTP and keeps at least one credential: adding is always signed.
    const p: Pending = { kind: 'ADD_CREDENTIAL', accountId: account.id, targetId: account.id, body };
    if (leg === 'first') {
      const c = await issue(trx, platform.id, now, p, activity(wallet, prepared.activityType, prepared.parameters, now.ms));
      return { status: 202 as const, body: { ...challengeOf(c), type: body.type } };
    }
    await retry(trx, platform.id, now, h, p, { kind: 'session' });
    const row: CredentialRow = { ...prepared.cred, id: newId('AuthMethod'), platform_id: platform.id, account_id: account.id, status: 'ACTIVE', otp_target_key: null, otp_expires_ms: null, created_at: now.at, updated_at: now.at };
    await store.insertCredential(trx, row);
    const v: AuthMethodResponse = credentialView(row);
    // An added OTP credential gets its first OTP at once.
    if (row.type === 'EMAIL_OTP' || row.type === 'SMS_OTP') v.otpEncryptionTargetBundle = await issueOtp(deps, trx, platform.id, now, row, wallet);
    return { status: 201 as const, body: v };
  });
}

/** A new OTP for an OTP credential: a fresh HPKE target key (kept sealed until the OTP expires or is used); answers the target bundle. */
async function issueOtp(deps: WalletDeps, db: Db, platformId: string, now: Now, cred: CredentialRow, wallet: WalletRow): Promise<string> {
  const target = newKeyPair();
  await store.updateCredential(db, platformId, cred.id, {
    otp_target_key: deps.sealer.seal(bytesToHex(target.privateKey), `wallet_credentials.otp_target_key:${cred.id}`),
    otp_expires_ms: now.ms + OTP_TTL_MS,
    updated_at: now.at,
  });
  return targetBundle(target.publicKey, wallet.organization_id, cred.account_id);
}

export async function challengeCredential(deps: WalletDeps, platformId: string, now: Now, id: string, body: AuthCredentialChallengeRequest): Promise<AuthMethodResponse | PasskeyAuthChallenge> {
  return deps.store.db.transaction().execute(async (trx) => {
    const cred = await requireCredential(trx, platformId, id);
    requirePoint(body.clientPublicKey, 'clientPublicKey');
    const wallet = (await store.findWallet(trx, platformId, cred.account_id))!;
    if (cred.type === 'OAUTH') throw invalidInput([{ field: 'id', message: 'is an OAUTH credential: it has no challenge step; verify it with a fresh OIDC token and a clientPublicKey' }]);
    if (cred.type === 'EMAIL_OTP' || cred.type === 'SMS_OTP') {
      const bundle = await issueOtp(deps, trx, platformId, now, cred, wallet);
      return { ...credentialView({ ...cred, updated_at: now.at }), otpEncryptionTargetBundle: bundle };
    }
    if (body.clientPublicKey === undefined) throw invalidInput([{ field: 'clientPublicKey', message: 'is required to challenge a PASSKEY credential' }]);
    const payload = activity(wallet, 'ACTIVITY_TYPE_STAMP_LOGIN', { publicKey: body.clientPublicKey, expirationSeconds: String(SESSION_TTL_MS / 1000) }, now.ms);
    const c = await issue(trx, platformId, now, { kind: 'PASSKEY_AUTH', accountId: cred.account_id, targetId: cred.id, body: {} }, payload, { clientPublicKey: body.clientPublicKey });
    return { ...credentialView({ ...cred, updated_at: now.at }), credentialId: cred.webauthn_id!, challenge: sha256Hex(payload), requestId: c.requestId, expiresAt: c.expiresAt };
  });
}

function verifyFieldErrors(body: AuthCredentialVerifyRequest, cred: CredentialRow): FieldError[] {
  const errors: FieldError[] = [];
  // Whatever the type: a clientPublicKey sent must be a point of P-256.
  if (body.clientPublicKey !== undefined && pointOf(body.clientPublicKey) === undefined) errors.push({ field: 'clientPublicKey', message: 'is not a point of the P-256 curve (SEC1 hex, compressed or uncompressed)' });
  if (body.type !== cred.type) errors.push({ field: 'type', constraint: { enum: [cred.type] }, message: `must be ${cred.type}, the type of credential ${cred.id}` });
  else if (body.type === 'EMAIL_OTP' || body.type === 'SMS_OTP') {
    if (body.encryptedOtpBundle === undefined) errors.push({ field: 'encryptedOtpBundle', message: `is required to verify an ${body.type} credential` });
  } else if (body.type === 'OAUTH') {
    if (body.oidcToken === undefined) errors.push({ field: 'oidcToken', message: 'is required to verify an OAUTH credential' });
    if (body.clientPublicKey === undefined) errors.push({ field: 'clientPublicKey', message: 'is required to verify an OAUTH credential' });
  } else if (body.assertion === undefined) errors.push({ field: 'assertion', message: 'is required to verify a PASSKEY credential' });
  return errors;
}

const HEX = /^(?:[0-9a-fA-F]{2})+$/;

function parseOtpBundle(text: string): { enc: Uint8Array; ciphertext: Uint8Array } {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    v = undefined;
  }
  const o = (v ?? {}) as Record<string, unknown>;
  if (typeof o.encappedPublic !== 'string' || typeof o.ciphertext !== 'string' || !HEX.test(o.encappedPublic) || !HEX.test(o.ciphertext) || uncompressedKey(o.encappedPublic) === undefined) {
    throw invalidInput([{ field: 'encryptedOtpBundle', message: 'must be a JSON string {"encappedPublic": SEC1 P-256 hex, "ciphertext": hex}' }]);
  }
  return { enc: hexToBytes(o.encappedPublic.toLowerCase()), ciphertext: hexToBytes(o.ciphertext.toLowerCase()) };
}

export async function verifyCredential(
  deps: WalletDeps,
  platformId: string,
  now: Now,
  id: string,
  body: AuthCredentialVerifyRequest,
  h: SignedHeaders,
): Promise<{ status: 200; body: AuthSession } | { status: 202; body: AuthSignedRequestChallenge }> {
  return deps.store.db.transaction().execute(async (trx) => {
    const cred = await requireCredential(trx, platformId, id);
    const errors = verifyFieldErrors(body, cred);
    if (errors.length > 0) throw invalidInput(errors);
    if (cred.type === 'EMAIL_OTP' || cred.type === 'SMS_OTP') {
      const p: Pending = { kind: 'OTP_VERIFY', accountId: cred.account_id, targetId: cred.id, body };
      if (legOf(h) === 'retry') {
        const { request } = await retry(trx, platformId, now, h, p, { kind: 'bound' });
        await store.updateCredential(trx, platformId, cred.id, { otp_target_key: null, otp_expires_ms: null, updated_at: now.at });
        const tek = (JSON.parse(request.data) as { publicKey: string }).publicKey;
        return { status: 200 as const, body: await openSession(trx, platformId, now, cred, { tek }) };
      }
      const { enc, ciphertext } = parseOtpBundle(body.encryptedOtpBundle!);
      const sealedKey = cred.otp_target_key;
      if (sealedKey === null || Number(cred.otp_expires_ms) <= now.ms) throw unauthorized('no OTP is pending for this credential (or it expired): call POST /auth/credentials/{id}/challenge');
      const targetHex = openSealed(sealedKey, `wallet_credentials.otp_target_key:${cred.id}`);
      if (targetHex === undefined) throw unauthorized('the pending OTP can no longer be opened: call POST /auth/credentials/{id}/challenge');
      let plain: Uint8Array;
      try {
        plain = await hpkeOpen(ciphertext, enc, hexToBytes(targetHex));
      } catch {
        throw unauthorized('encryptedOtpBundle does not decrypt with the pending OTP encryption target');
      }
      let attempt: { otp_code?: unknown; public_key?: unknown };
      try {
        attempt = JSON.parse(new TextDecoder().decode(plain)) as typeof attempt;
      } catch {
        throw unauthorized('the decrypted OTP bundle is not JSON {otp_code, public_key}');
      }
      if (attempt.otp_code !== SANDBOX_OTP_CODE) throw unauthorized('Invalid OTP code', 'Invalid OTP code');
      const tek = typeof attempt.public_key === 'string' ? compressedKey(attempt.public_key) : undefined;
      if (tek === undefined) throw unauthorized('public_key in the OTP bundle is not a P-256 public key');
      const iat = Math.floor(now.ms / 1000);
      const c = await issue(trx, platformId, now, p, '', { publicKey: tek });
      const token = verificationToken({ sub: cred.id, id: c.requestId, contact: cred.nickname, purpose: 'OTP_LOGIN', public_key: tek, iat, exp: iat + CHALLENGE_TTL_MS / 1000 });
      await trx.updateTable('wallet_requests').set({ payload: token }).where('id', '=', c.requestId).execute();
      return { status: 202 as const, body: { payloadToSign: token, requestId: c.requestId, expiresAt: c.expiresAt, type: cred.type as AuthMethodType } };
    }
    if (cred.type === 'OAUTH') {
      const claims = checkOidc(body.oidcToken!, now.ms, 'oidcToken');
      if (claims.iss !== cred.oauth_iss || claims.aud !== cred.oauth_aud || claims.sub !== cred.oauth_sub) throw unauthorized('the token identity (iss, aud, sub) is not the identity of this credential');
      if (claims.nonce === undefined) throw unauthorized('nonce is missing: it must be the SHA-256 hex of clientPublicKey');
      if (claims.nonce !== sha256Hex(body.clientPublicKey!)) throw unauthorized('nonce is not the SHA-256 hex of clientPublicKey');
      return { status: 200 as const, body: await openSession(trx, platformId, now, cred, { clientPublicKey: body.clientPublicKey! }) };
    }
    // PASSKEY: the assertion answers the challenge named by Request-Id.
    const rid = h.requestId?.trim();
    if (!rid) throw apiError(401, 'REQUEST_ID_MISSING', 'Passkey verify needs the Request-Id of the challenge answer');
    const request = await store.findRequest(trx, platformId, rid);
    if (!request || request.kind !== 'PASSKEY_AUTH' || request.target_id !== cred.id || request.status !== 'PENDING' || Number(request.expires_at_ms) <= now.ms) {
      throw unauthorized('Request-Id does not match an unexpired pending challenge of this credential');
    }
    const a = body.assertion!;
    if (a.credentialId !== cred.webauthn_id) throw unauthorized('assertion credentialId is not the WebAuthn credential of this credential');
    if (a.signature !== LEGACY_PASSKEY_SIGNATURE) {
      const origin = await checkedOrigin(trx, platformId, a.clientDataJson);
      // The credential's RP ID must be the origin's host or a parent domain of it (any origin may be accepted).
      if (!rpIdCandidates(origin).includes(cred.rp_id!)) throw unauthorized(`the credential's RP ID ${cred.rp_id} is not the host of origin ${origin} or a parent domain of it`);
      let result;
      try {
        result = await (await webauthn()).verifyAuthenticationResponse({
          response: {
            id: a.credentialId,
            rawId: a.credentialId,
            type: 'public-key',
            clientExtensionResults: {},
            response: { clientDataJSON: a.clientDataJson, authenticatorData: a.authenticatorData, signature: a.signature, ...(a.userHandle ? { userHandle: a.userHandle } : {}) },
          },
          expectedChallenge: base64urlnopad.encode(new TextEncoder().encode(sha256Hex(request.payload))),
          expectedOrigin: origin,
          expectedRPID: cred.rp_id!,
          credential: { id: cred.webauthn_id!, publicKey: new Uint8Array(base64urlnopad.decode(cred.webauthn_public_key!)), counter: Number(cred.webauthn_counter ?? 0) },
          requireUserVerification: false,
        });
      } catch (err) {
        throw unauthorized(`WebAuthn assertion: ${(err as Error).message}`);
      }
      if (!result.verified) throw unauthorized('WebAuthn assertion: signature does not verify');
      await store.updateCredential(trx, platformId, cred.id, { webauthn_counter: result.authenticationInfo.newCounter, updated_at: now.at });
    }
    if (!(await store.useRequest(trx, platformId, request.id))) throw unauthorized('the challenge was already used');
    const clientPublicKey = (JSON.parse(request.data) as { clientPublicKey: string }).clientPublicKey;
    return { status: 200 as const, body: await openSession(trx, platformId, now, cred, { clientPublicKey }) };
  });
}

export async function revokeCredential(deps: WalletDeps, platformId: string, now: Now, id: string, h: SignedHeaders): Promise<AuthSignedRequestChallenge | null> {
  return deps.store.db.transaction().execute(async (trx) => {
    const cred = await requireCredential(trx, platformId, id);
    const all = await store.activeCredentials(trx, platformId, cred.account_id);
    if (all.length <= 1) throw invalidInput([{ field: 'id', message: `is the only credential of ${cred.account_id}: a wallet keeps at least one` }]);
    const p: Pending = { kind: 'REVOKE_CREDENTIAL', accountId: cred.account_id, targetId: id, body: {} };
    if (legOf(h) === 'first') {
      const wallet = (await store.findWallet(trx, platformId, cred.account_id))!;
      const c = await issue(trx, platformId, now, p, activity(wallet, 'ACTIVITY_TYPE_DELETE_AUTHENTICATION_METHOD', { authMethodId: id, type: cred.type }, now.ms));
      return { ...challengeOf(c), type: cred.type as AuthMethodType };
    }
    await retry(trx, platformId, now, h, p, { kind: 'session', notCredentialId: id });
    await store.updateCredential(trx, platformId, id, { status: 'REVOKED', otp_target_key: null, updated_at: now.at });
    await store.revokeSessions(trx, platformId, { credentialId: id }, now.at);
    return null;
  });
}
