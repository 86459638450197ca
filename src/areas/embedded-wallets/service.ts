import { entropyToMnemonic } from '@scure/bip39';
import { wordlist as english } from '@scure/bip39/wordlists/english.js';
import { base64urlnopad } from '@scure/base';
import { decodeJwt } from 'jose';
import type { Kysely, Transaction } from 'kysely';
import type { Store } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { apiError, type FieldError, invalidInput, notFound } from '../../kernel/errors.js';
import { findCard } from '../cards/store.js';
import type { CustomerCreatedEvent } from '../../kernel/hooks.js';
import { newId } from '../../kernel/ids.js';
import { openSealed, type Sealer } from '../../kernel/sealed.js';
import { fundingReference } from '../../sandbox/funding-instructions.js';
import { platformSettings } from '../config/service.js';
import { findCustomer } from '../customers/store.js';
import { getInternalAccount, requireInternalAccount } from '../internal-accounts/service.js';
import type { InternalAccount } from '../internal-accounts/schemas.js';
import { insertAccounts, type InternalAccountRow } from '../internal-accounts/store.js';
import { openInternalLedgerAccounts } from '../ledger/service.js';
import type { PlatformRow } from '../platforms/store.js';
import { findQuote, type QuoteRow } from '../quotes/store.js';
import {
  bytesToHex,
  compressedKey,
  exportBundle,
  hexToBytes,
  hpkeOpen,
  LEGACY_OIDC_TOKEN,
  LEGACY_PASSKEY_SIGNATURE,
  LEGACY_WALLET_SIGNATURE,
  newKeyPair,
  parseStamp,
  pointOf,
  sessionBundle,
  sha256Hex,
  targetBundle,
  uncompressedKey,
  verificationToken,
  verifyStamp,
} from './crypto.js';
import type {
  AuthCredentialChallengeRequest,
  AuthCredentialCreateRequest,
  AuthCredentialVerifyRequest,
  AuthMethod,
  AuthMethodResponse,
  AuthMethodType,
  AuthSession,
  AuthSignedRequestChallenge,
  DelegatedKey,
  DelegatedKeyCreateRequest,
  InternalAccountUpdateRequest,
  PasskeyAuthChallenge,
  SignedRequestChallenge,
} from './schemas.js';
import * as store from './store.js';
import type { CredentialRow, DelegatedKeyRow, RequestRow, SessionRow, WalletRow } from './store.js';

/** @simplewebauthn/server, loaded at the first passkey ceremony (half a second of start-up otherwise). */
let webauthnOnce: Promise<typeof import('@simplewebauthn/server')> | undefined;
const webauthn = () => (webauthnOnce ??= import('@simplewebauthn/server'));

// Embedded wallets (docs/embedded-wallets.md): the EMBEDDED_WALLET internal account of a
// customer, the credentials that authenticate its owner, the sessions they open, and the
// signed-retry protocol every wallet action goes through (first call 202 with a payload to
// sign; the retry carries a stamp made with a key of an active session of the wallet).

type Db = Kysely<DB> | Transaction<DB>;
export interface WalletDeps {
  store: Store;
  sealer: Sealer;
}
export interface Now {
  ms: number;
  at: string;
}
export interface SignedHeaders {
  signature?: string | undefined;
  requestId?: string | undefined;
}

/** Sessions live 15 minutes (hosted docs: client keys, session lifetime). */
export const SESSION_TTL_MS = 15 * 60_000;
/** A signed-retry challenge (and a passkey assertion challenge) is open 5 minutes. */
export const CHALLENGE_TTL_MS = 5 * 60_000;
/** An OTP (and its encryption target) is valid 300 s (the embedded-wallet config's default). */
export const OTP_TTL_MS = 300_000;
export const SANDBOX_OTP_CODE = '000000';
/** OIDC freshness: iat at most 60 s old, with 5 s of clock skew either way. */
export const OIDC_MAX_AGE_S = 60;
export const OIDC_SKEW_S = 5;
/** The OIDC issuers the sandbox accepts. */
export const SUPPORTED_OIDC_ISSUERS = ['https://accounts.google.com', 'accounts.google.com', 'https://appleid.apple.com'] as const;
/**
 * Accepted WebAuthn origins until the platform saves its own allowlist: any http(s) origin
 * (`scheme://*` is any host and port; a trailing :* is any port). The RP ID binding is checked
 * whatever the origin: the RP ID must be the origin's host or a parent domain of it.
 */
export const DEFAULT_ALLOWED_ORIGINS = ['http://*', 'https://*'] as const;
/** The currency of a customer's embedded wallet (the hosted docs' USDB, which this service does not list, maps to USDC). */
export const WALLET_CURRENCY = 'USDC';
/** Sandbox: a customer email update to an address whose local part ends in +syncfail fails to reach tied EMAIL_OTP credentials (424). */
export const SYNC_FAILURE_EMAIL = /\+syncfail@/i;

function unauthorized(reason: string, message = `Authentication failed: ${reason}`) {
  return apiError(401, 'UNAUTHORIZED', message, { reason });
}

/**
 * A client key must be a point of P-256: SEC1 hex of the right length (the schemas' pattern)
 * can still be off the curve (e.g. 04 followed by 64 zero bytes). 400 INVALID_INPUT naming
 * the field, before any challenge is issued or anything written.
 */
function requirePoint(hex: string | undefined, field: string): void {
  if (hex !== undefined && pointOf(hex) === undefined) throw invalidInput([{ field, message: 'is not a point of the P-256 curve (SEC1 hex, compressed or uncompressed)' }]);
}

function stable(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(stable).join(',')}]`;
  const o = value as Record<string, unknown>;
  return `{${Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${stable(o[k])}`)
    .join(',')}}`;
}

const bodyHash = (body: unknown) => sha256Hex(stable(body ?? {}));

// ---- Provisioning -----------------------------------------------------------------------------

/**
 * Open the customer's EMBEDDED_WALLET account (customerCreated / customerUpdated hook), once
 * the customer may hold internal accounts, has an email on file and the platform supports the
 * wallet currency, with its EMAIL_OTP credential tied to that email; keep tied EMAIL_OTP
 * credentials in step with the customer's email.
 */
export async function onCustomerChange(sealer: Sealer, e: CustomerCreatedEvent, opts: { created?: boolean } = {}): Promise<void> {
  const { trx, platform } = e;
  const customer = await findCustomer(trx, platform.id, e.customerId);
  if (!customer) return;
  // A customer created in this transaction has no wallet yet: no need to look (issue 15).
  const wallets = opts.created ? [] : await store.walletAccountsOf(trx, platform.id, e.customerId);
  if (wallets.length > 0) {
    for (const w of wallets) await syncEmailCredential(trx, platform.id, w.id, customer.email, e.at);
    return;
  }
  // The wallet's first credential is the EMAIL_OTP tied to the customer's email: no email, no wallet yet.
  if (!customer.email) return;
  const holds = await trx.selectFrom('internal_accounts').select('id').where('platform_id', '=', platform.id).where('customer_id', '=', e.customerId).executeTakeFirst();
  if (!holds) return; // not allowed to hold accounts yet (the end-user terms)
  if (!(await platformSettings(trx, platform.id)).supportedCurrencies.includes(WALLET_CURRENCY)) return;
  const id = newId('InternalAccount');
  const row: InternalAccountRow = {
    id,
    platform_id: platform.id,
    customer_id: e.customerId,
    currency: WALLET_CURRENCY,
    type: 'EMBEDDED_WALLET',
    status: 'ACTIVE',
    funding_reference: fundingReference(id),
    private_enabled: 0,
    created_at: e.at,
    updated_at: e.at,
  };
  const inserted = await insertAccounts(trx, [row]);
  await openInternalLedgerAccounts(trx, platform.id, inserted, e.at);
  const seed = bytesToHex(crypto.getRandomValues(new Uint8Array(32)));
  await store.insertWallet(trx, {
    account_id: id,
    platform_id: platform.id,
    organization_id: `org_${sha256Hex(`org:${id}`).slice(0, 24)}`,
    wallet_address: `spark1${sha256Hex(`wallet:${id}`).slice(0, 38)}`,
    mnemonic: sealer.seal(seed, `embedded_wallets.mnemonic:${id}`),
    created_at: e.at,
  });
  await insertOtpCredential(trx, platform.id, id, 'EMAIL_OTP', customer.email, e.at);
}

async function syncEmailCredential(db: Db, platformId: string, accountId: string, email: string | null, at: string): Promise<void> {
  const tied = (await store.activeCredentials(db, platformId, accountId)).filter((c) => c.type === 'EMAIL_OTP');
  for (const c of tied) {
    if (c.nickname === email) continue;
    if (!email || SYNC_FAILURE_EMAIL.test(email)) {
      throw apiError(424, 'EMAIL_OTP_CREDENTIAL_SYNC_FAILED', `The EMAIL_OTP credential ${c.id} of ${accountId} is tied to the customer's email and cannot follow its removal`, {
        credentialId: c.id,
        accountId,
      });
    }
    await store.updateCredential(db, platformId, c.id, { nickname: email, updated_at: at });
  }
}

async function insertOtpCredential(db: Db, platformId: string, accountId: string, type: 'EMAIL_OTP' | 'SMS_OTP', nickname: string, at: string): Promise<CredentialRow> {
  const row: CredentialRow = {
    id: newId('AuthMethod'),
    platform_id: platformId,
    account_id: accountId,
    type,
    nickname,
    status: 'ACTIVE',
    webauthn_id: null,
    webauthn_public_key: null,
    webauthn_counter: null,
    rp_id: null,
    transports: null,
    oauth_iss: null,
    oauth_aud: null,
    oauth_sub: null,
    otp_target_key: null,
    otp_expires_ms: null,
    created_at: at,
    updated_at: at,
  };
  await store.insertCredential(db, row);
  return row;
}

// ---- Views ------------------------------------------------------------------------------------

function credentialView(row: CredentialRow): AuthMethod {
  const v: AuthMethod = { id: row.id, accountId: row.account_id, type: row.type as AuthMethodType, nickname: row.nickname, createdAt: row.created_at, updatedAt: row.updated_at };
  if (row.webauthn_id !== null) v.credentialId = row.webauthn_id;
  return v;
}

function sessionView(row: SessionRow, cred: Pick<CredentialRow, 'type' | 'nickname' | 'webauthn_id'>): AuthSession {
  const v: AuthSession = {
    id: row.id,
    accountId: row.account_id,
    type: cred.type as AuthMethodType,
    nickname: cred.nickname,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    expiresAt: row.expires_at,
  };
  if (cred.webauthn_id !== null) v.credentialId = cred.webauthn_id;
  return v;
}

// ---- Accounts ---------------------------------------------------------------------------------

/** The wallet behind an EMBEDDED_WALLET internal account: 404 when unknown, 400 when the account is another type. */
async function requireWallet(db: Db, platformId: string, accountId: string, field = 'accountId'): Promise<{ account: InternalAccountRow; wallet: WalletRow }> {
  const account = await requireInternalAccount(db, platformId, accountId);
  const wallet = account.type === 'EMBEDDED_WALLET' ? await store.findWallet(db, platformId, accountId) : undefined;
  if (!wallet) throw invalidInput([{ field, message: `is a ${account.type} account, not an EMBEDDED_WALLET` }]);
  return { account, wallet };
}

async function requireCredential(db: Db, platformId: string, id: string): Promise<CredentialRow> {
  const row = await store.findCredential(db, platformId, id);
  if (!row) throw notFound('REFERENCE_NOT_FOUND', 'Authentication credential', id);
  return row;
}

function activity(wallet: WalletRow, type: string, parameters: Record<string, unknown>, nowMs: number): string {
  return JSON.stringify({ organizationId: wallet.organization_id, parameters, timestampMs: String(nowMs), type });
}

// ---- The signed-retry protocol ----------------------------------------------------------------

type Signer =
  /** Any active session of the wallet (optionally: not one of this credential; or only this session). */
  | { kind: 'session'; notCredentialId?: string; onlySessionId?: string }
  /** The public key the first leg bound (request data.publicKey). */
  | { kind: 'bound' };

interface Pending {
  kind: string;
  accountId: string;
  targetId: string;
  body: unknown;
}

/** Which leg a call is: 'first' without signature headers; a retry otherwise (both headers needed). */
function legOf(h: SignedHeaders): 'first' | 'retry' {
  const sig = h.signature?.trim() || undefined;
  const rid = h.requestId?.trim() || undefined;
  if (!sig && !rid) return 'first';
  if (!sig) throw apiError(401, 'WALLET_SIGNATURE_MISSING', 'The signed retry needs the Service-Wallet-Signature header (or its alias Grid-Wallet-Signature)');
  if (!rid) throw apiError(401, 'REQUEST_ID_MISSING', 'The signed retry needs the Request-Id header of the 202 answer');
  return 'retry';
}

async function issue(db: Db, platformId: string, now: Now, p: Pending, payload: string, data: Record<string, unknown> = {}, ttlMs = CHALLENGE_TTL_MS): Promise<SignedRequestChallenge & { row: RequestRow }> {
  const expires = now.ms + ttlMs;
  const row: RequestRow = {
    id: newId('Request'),
    platform_id: platformId,
    account_id: p.accountId,
    kind: p.kind,
    target_id: p.targetId,
    body_hash: bodyHash(p.body),
    payload,
    data: JSON.stringify(data),
    status: 'PENDING',
    expires_at_ms: expires,
    created_at: now.at,
  };
  await store.insertRequest(db, row);
  return { payloadToSign: payload, requestId: row.id, expiresAt: new Date(expires).toISOString(), row };
}

function challengeOf(c: SignedRequestChallenge): SignedRequestChallenge {
  return { payloadToSign: c.payloadToSign, requestId: c.requestId, expiresAt: c.expiresAt };
}

/** Check a signed retry against its pending request and consume it; answers the session that signed (null: the legacy value). */
async function retry(db: Db, platformId: string, now: Now, h: SignedHeaders, p: Pending, signer: Signer): Promise<{ request: RequestRow; sessionId: string | null }> {
  // A stamp that does not parse is malformed whatever the Request-Id names (checked again, with its key, below).
  const header = h.signature!.trim();
  if (header !== LEGACY_WALLET_SIGNATURE && !parseStamp(header)) throw malformedSignature();
  const rid = h.requestId!.trim();
  const request = await store.findRequest(db, platformId, rid);
  if (!request || request.kind !== p.kind || request.target_id !== p.targetId || request.status !== 'PENDING' || Number(request.expires_at_ms) <= now.ms) {
    throw unauthorized('Request-Id does not match an unexpired pending challenge of this operation', `Request-Id ${rid} does not match an unexpired pending challenge of this operation`);
  }
  if (request.body_hash !== bodyHash(p.body)) {
    throw apiError(401, 'WALLET_SIGNATURE_BODY_MISMATCH', 'The signed retry carries a different body from the call that issued the challenge: the signature covers that one');
  }
  const data = JSON.parse(request.data) as Record<string, unknown>;
  const sessionId = await checkSignature(db, platformId, now, header, request.payload, request.account_id, signer, data);
  if (!(await store.useRequest(db, platformId, request.id))) throw unauthorized('the challenge was already used', `Request-Id ${rid} was already used`);
  return { request, sessionId };
}

function malformedSignature() {
  return apiError(401, 'WALLET_SIGNATURE_MALFORMED', 'Service-Wallet-Signature is not a stamp: base64url of JSON {publicKey, scheme: SIGNATURE_SCHEME_TK_API_P256, signature (DER hex)}');
}

/**
 * Verify a stamp over `payload`: it parses, its P-256 signature verifies over the exact
 * payload bytes, and its key is the one the action needs. The legacy sandbox value passes.
 */
async function checkSignature(db: Db, platformId: string, now: Now, header: string, payload: string, accountId: string, signer: Signer, data: Record<string, unknown>): Promise<string | null> {
  if (header === LEGACY_WALLET_SIGNATURE) return null;
  const stamp = parseStamp(header);
  if (!stamp) throw malformedSignature();
  if (!verifyStamp(stamp, payload)) {
    throw apiError(401, 'WALLET_SIGNATURE_INVALID', 'The wallet signature does not verify over the pending payloadToSign', { reason: 'signature does not verify over the payload' });
  }
  if (signer.kind === 'bound') {
    if (stamp.publicKey !== data.publicKey) {
      throw apiError(401, 'WALLET_SIGNATURE_INVALID', 'The wallet signature was made with another key than the one this challenge is bound to', { reason: 'signing key is not the bound key' });
    }
    return null;
  }
  const sessions = await store.activeSessions(db, platformId, accountId, now.ms);
  const session = sessions.find((s) => s.public_key === stamp.publicKey || s.client_key === stamp.publicKey);
  if (!session) {
    throw apiError(401, 'WALLET_SIGNATURE_INVALID', 'The signing key is not the key of an active session of this wallet', { reason: 'signing key is not an active session of the wallet' });
  }
  if (signer.notCredentialId !== undefined && session.credential_id === signer.notCredentialId) {
    throw apiError(401, 'WALLET_SIGNATURE_INVALID', 'A credential is revoked with a session of another credential of the wallet', { reason: 'session belongs to the credential being revoked' });
  }
  if (signer.onlySessionId !== undefined && session.id !== signer.onlySessionId) {
    throw apiError(401, 'WALLET_SIGNATURE_INVALID', 'A session is refreshed with its own signing key', { reason: 'signing key is not the key of the session being refreshed' });
  }
  return session.id;
}

// ---- Sessions ---------------------------------------------------------------------------------

/**
 * Open a session for a verified credential. OTP: the TEK is the session key. PASSKEY/OAUTH:
 * a new session key sealed to clientPublicKey (encryptedSessionSigningKey); a compressed
 * clientPublicKey is also accepted as the session's key (the client-held model).
 */
async function openSession(db: Db, platformId: string, now: Now, cred: CredentialRow, keys: { tek: string } | { clientPublicKey: string }): Promise<AuthSession> {
  const expires = now.ms + SESSION_TTL_MS;
  let publicKey: string;
  let clientKey: string | null = null;
  let sealed: string | undefined;
  if ('tek' in keys) {
    publicKey = keys.tek;
  } else {
    const recipient = uncompressedKey(keys.clientPublicKey);
    // Checked where the key came in (requirePoint); a key that is not a point never reaches here.
    if (recipient === undefined) throw invalidInput([{ field: 'clientPublicKey', message: 'is not a point of the P-256 curve' }]);
    const kp = newKeyPair();
    publicKey = bytesToHex(kp.publicKey);
    if (keys.clientPublicKey.length === 66) clientKey = compressedKey(keys.clientPublicKey)!;
    sealed = await sessionBundle(kp.privateKey, recipient);
  }
  const row: SessionRow = {
    id: newId('Session'),
    platform_id: platformId,
    account_id: cred.account_id,
    credential_id: cred.id,
    public_key: publicKey,
    client_key: clientKey,
    status: 'ACTIVE',
    expires_at_ms: expires,
    expires_at: new Date(expires).toISOString(),
    created_at: now.at,
    updated_at: now.at,
  };
  await store.insertSession(db, row);
  const v = sessionView(row, cred);
  if (sealed !== undefined) v.encryptedSessionSigningKey = sealed;
  return v;
}

export async function listSessions(db: Db, platformId: string, accountId: string, now: Now): Promise<{ data: AuthSession[] }> {
  const creds = new Map((await db.selectFrom('wallet_credentials').selectAll().where('platform_id', '=', platformId).where('account_id', '=', accountId).execute()).map((c) => [c.id, c]));
  const sessions = await store.activeSessions(db, platformId, accountId, now.ms);
  return { data: sessions.filter((s) => creds.has(s.credential_id)).map((s) => sessionView(s, creds.get(s.credential_id)!)) };
}

async function requireSession(db: Db, platformId: string, id: string, now: Now): Promise<SessionRow> {
  const row = await store.findActiveSession(db, platformId, id, now.ms);
  if (!row) throw notFound('REFERENCE_NOT_FOUND', 'Session', id);
  return row;
}

export async function revokeSession(deps: WalletDeps, platformId: string, now: Now, id: string, h: SignedHeaders): Promise<AuthSignedRequestChallenge | null> {
  return deps.store.db.transaction().execute(async (trx) => {
    const session = await requireSession(trx, platformId, id, now);
    const cred = await trx.selectFrom('wallet_credentials').select('type').where('id', '=', session.credential_id).executeTakeFirstOrThrow();
    const p: Pending = { kind: 'REVOKE_SESSION', accountId: session.account_id, targetId: id, body: {} };
    if (legOf(h) === 'first') {
      const wallet = (await store.findWallet(trx, platformId, session.account_id))!;
      const c = await issue(trx, platformId, now, p, activity(wallet, 'ACTIVITY_TYPE_DELETE_SESSIONS', { sessionIds: [id] }, now.ms));
      return { ...challengeOf(c), type: cred.type as AuthMethodType };
    }
    await retry(trx, platformId, now, h, p, { kind: 'session' });
    await store.revokeSessions(trx, platformId, { id }, now.at);
    return null;
  });
}

export async function refreshSession(deps: WalletDeps, platformId: string, now: Now, id: string, clientPublicKey: string, h: SignedHeaders): Promise<{ challenge: SignedRequestChallenge } | { session: AuthSession }> {
  requirePoint(clientPublicKey, 'clientPublicKey');
  return deps.store.db.transaction().execute(async (trx) => {
    const any = await trx.selectFrom('wallet_sessions').selectAll().where('platform_id', '=', platformId).where('id', '=', id).executeTakeFirst();
    if (!any) throw notFound('REFERENCE_NOT_FOUND', 'Session', id);
    if (any.status !== 'ACTIVE' || Number(any.expires_at_ms) <= now.ms) throw unauthorized('session is no longer active', `Session ${id} is no longer active: verify a credential again`);
    const p: Pending = { kind: 'REFRESH_SESSION', accountId: any.account_id, targetId: id, body: { clientPublicKey } };
    if (legOf(h) === 'first') {
      const wallet = (await store.findWallet(trx, platformId, any.account_id))!;
      return { challenge: challengeOf(await issue(trx, platformId, now, p, activity(wallet, 'ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2', { targetPublicKey: clientPublicKey }, now.ms))) };
    }
    await retry(trx, platformId, now, h, p, { kind: 'session', onlySessionId: id });
    const cred = await trx.selectFrom('wallet_credentials').selectAll().where('id', '=', any.credential_id).executeTakeFirstOrThrow();
    await store.revokeSessions(trx, platformId, { id }, now.at);
    return { session: await openSession(trx, platformId, now, cred, { clientPublicKey }) };
  });
}

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

// ---- Internal account actions -----------------------------------------------------------------

export async function exportWallet(deps: WalletDeps, platformId: string, now: Now, accountId: string, clientPublicKey: string, h: SignedHeaders): Promise<{ challenge: SignedRequestChallenge } | { body: { id: string; encryptedWalletCredentials: string } }> {
  requirePoint(clientPublicKey, 'clientPublicKey');
  return deps.store.db.transaction().execute(async (trx) => {
    const { wallet } = await requireWallet(trx, platformId, accountId, 'id');
    const p: Pending = { kind: 'EXPORT', accountId, targetId: accountId, body: { clientPublicKey } };
    if (legOf(h) === 'first') {
      return { challenge: challengeOf(await issue(trx, platformId, now, p, activity(wallet, 'ACTIVITY_TYPE_EXPORT_WALLET', { targetPublicKey: clientPublicKey, walletId: wallet.wallet_address }, now.ms))) };
    }
    await retry(trx, platformId, now, h, p, { kind: 'session' });
    const seed = openSealed(wallet.mnemonic, `embedded_wallets.mnemonic:${accountId}`);
    if (seed === undefined) throw apiError(500, 'INTERNAL_ERROR', 'The wallet secret can no longer be opened with the server key');
    // The plaintext is the wallet's BIP-39 mnemonic: 24 English words from its 32 bytes of entropy.
    const mnemonic = entropyToMnemonic(hexToBytes(seed), english);
    return { body: { id: accountId, encryptedWalletCredentials: await exportBundle(mnemonic, uncompressedKey(clientPublicKey)!, wallet.organization_id) } };
  });
}

export async function updateWallet(deps: WalletDeps, platformId: string, now: Now, accountId: string, body: InternalAccountUpdateRequest, h: SignedHeaders): Promise<{ challenge: SignedRequestChallenge } | { account: InternalAccount }> {
  if (body.privateEnabled === undefined) throw invalidInput([{ field: 'privateEnabled', message: 'is required: the request changes nothing without it' }]);
  return deps.store.db.transaction().execute(async (trx) => {
    const { wallet } = await requireWallet(trx, platformId, accountId, 'id');
    const p: Pending = { kind: 'UPDATE_ACCOUNT', accountId, targetId: accountId, body };
    if (legOf(h) === 'first') {
      return { challenge: challengeOf(await issue(trx, platformId, now, p, activity(wallet, 'ACTIVITY_TYPE_UPDATE_WALLET', { privateEnabled: body.privateEnabled, walletId: wallet.wallet_address }, now.ms))) };
    }
    await retry(trx, platformId, now, h, p, { kind: 'session' });
    await store.setPrivacy(trx, platformId, accountId, body.privateEnabled!, now.at);
    return { account: await getInternalAccount(trx, platformId, accountId) };
  });
}

// ---- Quotes from a wallet -----------------------------------------------------------------------

/**
 * The paymentInstructions of a quote whose source is an embedded wallet (null for any other
 * source): the transaction payload the wallet's session key stamps for execute. Such a quote
 * cannot be executed at creation (the payload only exists in its answer).
 */
export async function walletQuoteInstructions(db: Db, platformId: string, nowMs: number, q: { quoteId: string; sourceAccountId: string; amount: number; currency: string; destination: string; immediatelyExecute: boolean; field: string }): Promise<string | null> {
  const wallet = await store.findWallet(db, platformId, q.sourceAccountId);
  if (!wallet) return null;
  if (q.immediatelyExecute) {
    // Executed at creation (immediatelyExecute, or a deprecated transfer): no payload could have been signed.
    throw invalidInput([{ field: q.field, message: 'cannot execute at once from an EMBEDDED_WALLET source: create the quote, then execute it with the wallet signature over its payloadToSign' }]);
  }
  const payloadToSign = JSON.stringify({
    type: 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2',
    timestampMs: String(nowMs),
    organizationId: wallet.organization_id,
    parameters: { signWith: wallet.wallet_address, unsignedTransaction: sha256Hex(`${q.quoteId}|${q.amount}|${q.currency}|${q.destination}`), type: 'TRANSACTION_TYPE_SPARK' },
    generateAppProofs: true,
  });
  return JSON.stringify([
    {
      instructionsNotes: 'Stamp payloadToSign byte for byte with a session key of the wallet and send the stamp as Service-Wallet-Signature on POST /quotes/{quoteId}/execute',
      accountOrWalletInfo: { accountType: 'EMBEDDED_WALLET', payloadToSign },
    },
  ]);
}

/** The payloadToSign of a quote from an embedded wallet that is still open, with its wallet; undefined for any other quote. */
async function walletQuotePayload(db: Db, platformId: string, nowMs: number, quote: QuoteRow): Promise<{ wallet: WalletRow; payload: string } | undefined> {
  if (quote.source_account_id === null || quote.payment_instructions === null || quote.status !== 'PENDING' || Number(quote.expires_at_ms) <= nowMs) return undefined;
  const wallet = await store.findWallet(db, platformId, quote.source_account_id);
  if (!wallet) return undefined;
  const payload = (JSON.parse(quote.payment_instructions) as Array<{ accountOrWalletInfo: { payloadToSign?: string } }>)[0]?.accountOrWalletInfo.payloadToSign;
  return payload === undefined ? undefined : { wallet, payload };
}

/** The consent check itself, in the caller's transaction (see authorizeWalletExecute). */
async function walletExecuteConsent(trx: Db, platformId: string, now: Now, quote: QuoteRow, w: { wallet: WalletRow; payload: string }, h: SignedHeaders): Promise<SignedRequestChallenge | null> {
  const p: Pending = { kind: 'EXECUTE_QUOTE', accountId: w.wallet.account_id, targetId: quote.id, body: {} };
  const sig = h.signature?.trim() || undefined;
  const rid = h.requestId?.trim() || undefined;
  if (sig && !rid) {
    if (await store.pendingRequestFor(trx, platformId, quote.id, 'EXECUTE_QUOTE', now.ms)) {
      throw apiError(401, 'REQUEST_ID_MISSING', 'The signed retry needs the Request-Id of the 202 answer');
    }
    await checkSignature(trx, platformId, now, sig, w.payload, w.wallet.account_id, { kind: 'session' }, {});
    return null;
  }
  if (legOf(h) === 'first') return challengeOf(await issue(trx, platformId, now, p, w.payload, {}, Math.max(1, Number(quote.expires_at_ms) - now.ms)));
  await retry(trx, platformId, now, h, p, { kind: 'session' });
  return null;
}

/**
 * The wallet's consent to execute a quote from an embedded wallet (the execute route calls
 * this first): null when the quote needs none or the signature is good; a challenge (202)
 * for a call without signature headers. A signature without Request-Id is taken over the
 * quote's own payloadToSign, unless a 202 was issued for the quote (then its Request-Id is needed).
 */
export async function authorizeWalletExecute(deps: WalletDeps, platformId: string, now: Now, quoteId: string, h: SignedHeaders): Promise<SignedRequestChallenge | null> {
  // Most quotes are not from a wallet: answered from two reads, no transaction.
  const quote = await findQuote(deps.store.db, platformId, quoteId);
  const w = quote ? await walletQuotePayload(deps.store.db, platformId, now.ms, quote) : undefined;
  if (!quote || !w) return null;
  return deps.store.db.transaction().execute((trx) => walletExecuteConsent(trx, platformId, now, quote, w, h));
}

/**
 * The same consent inside the caller's transaction, for a quote it already holds (an agent's
 * execute: checked after its policy allowed the action and before the decision takes effect,
 * so a held action was signed at submission). A challenge issued here must be committed.
 */
export async function authorizeWalletExecuteIn(trx: Transaction<DB>, platformId: string, now: Now, quote: QuoteRow, h: SignedHeaders): Promise<SignedRequestChallenge | null> {
  const w = await walletQuotePayload(trx, platformId, now.ms, quote);
  return w ? walletExecuteConsent(trx, platformId, now, quote, w, h) : null;
}

// ---- Delegated keys -----------------------------------------------------------------------------

function delegatedView(row: DelegatedKeyRow): DelegatedKey {
  return {
    id: row.id,
    cardId: row.card_id,
    fundingSourceId: row.funding_source_id,
    accountId: row.account_id,
    publicKey: row.public_key,
    nickname: row.nickname,
    status: row.status as DelegatedKey['status'],
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** The card funding source of a (card, wallet) pair: a stable id derived from both. */
export function fundingSourceIdOf(platformId: string, cardId: string, accountId: string): string {
  const h = sha256Hex(`${platformId}|${cardId}|${accountId}`);
  return `CardFundingSource:${h.slice(0, 8)}-${h.slice(8, 12)}-7${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

export async function createDelegatedKey(deps: WalletDeps, platformId: string, now: Now, body: DelegatedKeyCreateRequest, h: SignedHeaders): Promise<{ status: 202; body: SignedRequestChallenge } | { status: 201; body: DelegatedKey }> {
  return deps.store.db.transaction().execute(async (trx) => {
    const account = await trx.selectFrom('internal_accounts').selectAll().where('platform_id', '=', platformId).where('id', '=', body.internalAccountId).executeTakeFirst();
    const wallet = account?.type === 'EMBEDDED_WALLET' ? await store.findWallet(trx, platformId, account.id) : undefined;
    if (!account || !wallet) throw notFound('REFERENCE_NOT_FOUND', 'Embedded wallet funding account', body.internalAccountId);
    // The card must be one of the platform's, issued to the wallet's owner (src/areas/cards).
    const card = await findCard(trx, platformId, body.cardId);
    if (!card || card.customer_id !== account.customer_id) throw notFound('REFERENCE_NOT_FOUND', 'Card of the wallet’s customer', body.cardId);
    const fundingSourceId = fundingSourceIdOf(platformId, body.cardId, account.id);
    const active = await store.activeDelegatedKeyFor(trx, platformId, fundingSourceId);
    if (active) throw apiError(409, 'CONFLICT', `Delegated key ${active.id} is ACTIVE for this card funding source: revoke it first`, { delegatedKeyId: active.id, fundingSourceId });
    const leg1: Pending = { kind: 'DELEGATED_KEY_1', accountId: account.id, targetId: account.id, body };
    if (legOf(h) === 'first') {
      const kp = newKeyPair();
      const publicKey = bytesToHex(kp.publicKey);
      const payload = activity(wallet, 'ACTIVITY_TYPE_CREATE_USERS_V3', { users: [{ apiKeys: [{ apiKeyName: body.nickname, curveType: 'API_KEY_CURVE_P256', publicKey }], userName: `delegated-${publicKey.slice(0, 12)}` }] }, now.ms);
      const c = await issue(trx, platformId, now, leg1, payload, { publicKey, privateKey: deps.sealer.seal(bytesToHex(kp.privateKey), `delegated_keys.private_key:${publicKey}`) });
      return { status: 202 as const, body: challengeOf(c) };
    }
    const pending = await store.findRequest(trx, platformId, h.requestId!.trim());
    if (pending?.kind === 'DELEGATED_KEY_2') {
      const { request } = await retry(trx, platformId, now, h, { ...leg1, kind: 'DELEGATED_KEY_2' }, { kind: 'session' });
      const keyId = (JSON.parse(request.data) as { keyId: string }).keyId;
      await store.setDelegatedKeyStatus(trx, platformId, keyId, 'PENDING', 'ACTIVE', now.at);
      return { status: 201 as const, body: delegatedView((await store.findDelegatedKey(trx, platformId, keyId))!) };
    }
    const { request } = await retry(trx, platformId, now, h, leg1, { kind: 'session' });
    const data = JSON.parse(request.data) as { publicKey: string; privateKey: string };
    const row: DelegatedKeyRow = {
      id: newId('DelegatedKey'),
      platform_id: platformId,
      account_id: account.id,
      card_id: body.cardId,
      funding_source_id: fundingSourceId,
      public_key: data.publicKey,
      private_key: data.privateKey,
      nickname: body.nickname,
      status: 'PENDING',
      created_at: now.at,
      updated_at: now.at,
    };
    await store.insertDelegatedKey(trx, row);
    const payload = activity(wallet, 'ACTIVITY_TYPE_CREATE_POLICIES', { policies: [{ effect: 'EFFECT_ALLOW', policyName: `delegated signing ${row.id}`, consensus: `approvers.any(user, user.publicKey == '${row.public_key}')` }] }, now.ms);
    const c = await issue(trx, platformId, now, { ...leg1, kind: 'DELEGATED_KEY_2' }, payload, { keyId: row.id });
    return { status: 202 as const, body: challengeOf(c) };
  });
}

export async function listDelegatedKeys(db: Db, platformId: string, q: { accountId?: string | undefined; fundingSourceId?: string | undefined }): Promise<{ data: DelegatedKey[] }> {
  if (q.accountId === undefined && q.fundingSourceId === undefined) {
    throw invalidInput([
      { field: 'accountId', message: 'or fundingSourceId is required' },
      { field: 'fundingSourceId', message: 'or accountId is required' },
    ]);
  }
  return { data: (await store.listDelegatedKeys(db, platformId, q)).map(delegatedView) };
}

export async function getDelegatedKey(db: Db, platformId: string, id: string): Promise<DelegatedKey> {
  const row = await store.findDelegatedKey(db, platformId, id);
  if (!row) throw notFound('REFERENCE_NOT_FOUND', 'Delegated key', id);
  return delegatedView(row);
}

export async function revokeDelegatedKey(db: Kysely<DB>, platformId: string, now: Now, id: string): Promise<void> {
  const row = await store.findDelegatedKey(db, platformId, id);
  if (!row) throw notFound('REFERENCE_NOT_FOUND', 'Delegated key', id);
  if (!(await store.setDelegatedKeyStatus(db, platformId, id, 'ACTIVE', 'REVOKED', now.at))) {
    throw invalidInput([{ field: 'id', message: `is ${row.status}: only an ACTIVE delegated key can be revoked` }]);
  }
}
