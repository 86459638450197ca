import { createHash, randomBytes } from 'node:crypto';
import { base32 } from '@scure/base';
import type { Kysely, Transaction } from 'kysely';
import type { Store } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { iso } from '../../kernel/clock.js';
import { ApiError, apiError, type FieldError, invalidInput, notFound } from '../../kernel/errors.js';
import { missingReference } from '../../kernel/references.js';
import { emitEvent } from '../../kernel/events.js';
import { effectTransaction } from '../../kernel/idempotency.js';
import { isIdOf, newId } from '../../kernel/ids.js';
import type { JobContext, JobQueue } from '../../kernel/jobs.js';
import { customerUnderMandatingProvider } from '../../sandbox/customer-authentication.js';
import {
  lockFor,
  SCA_CHALLENGE_TTL_MS,
  SCA_ENROLLMENT_TTL_MS,
  SCA_MAX_RESENDS,
  SCA_PASSKEY_ORIGINS,
  SCA_RELYING_PARTY_ID,
  SCA_RESET_LIMIT,
  SCA_RESET_PASSED_AFTER_MS,
  SCA_RESET_REVIEW_AFTER_MS,
  SCA_RESET_TTL_MS,
  SCA_RESET_WINDOW_MS,
  SCA_SANDBOX_CODE,
  SCA_SESSION_TTL_MS,
} from '../../sandbox/sca.js';
import { findCustomer, type CustomerRow, updateCustomer } from '../customers/store.js';
import { requireExternalAccount } from '../external-accounts/service.js';
import { balancesOf } from '../ledger/service.js';
import type { PlatformRow } from '../platforms/store.js';
import type { PaymentDeps } from '../quotes/service.js';
import { releaseAuthorizedQuote } from '../quotes/execute.js';
import { quoteView, requireQuote } from '../quotes/views.js';
import type { Quote } from '../quotes/schemas.js';
import { findQuote, type QuoteRow, updateQuoteStatus } from '../quotes/store.js';
import { findTransaction, updateTransaction, updateTransactionStatus } from '../transactions/store.js';
import { transactionView } from '../transactions/views.js';
import type {
  BeneficiaryTrustConfirmRequest,
  BeneficiaryTrustStart,
  ProofFields,
  RecordSecurityEventResponse,
  ScaChallenge,
  ScaFactor,
  ScaFactorConfirmRequest,
  ScaFactorConfirmResponse,
  ScaFactorEnrollStart,
  ScaFactorView,
  ScaLoginComplete,
  ScaLoginCompleteRequest,
  ScaLoginStart,
  TwoFactorResetCompleteRequest,
  TwoFactorResetStart,
  TwoFactorResetStatus,
} from './schemas.js';
import {
  activeSession,
  cancelPendingChallenges,
  type ChallengeRow,
  completeReset,
  countSend,
  deleteFactor,
  deleteFactors,
  type FactorRow,
  findChallenge,
  findReset,
  findSecurity,
  incrementFailures,
  insertChallenge,
  insertFactor,
  insertReset,
  insertSecurityEvent,
  insertSession,
  isTrusted,
  listFactors,
  pendingChallenge,
  type ResetRow,
  resetsSince,
  revokeSessions,
  saveSecurity,
  type SecurityRow,
  settleChallenge,
  trust,
  untrust,
  updateFactor,
} from './store.js';

// Strong Customer Authentication (docs/sca.md). Only customers the EU provider serves are in
// scope (src/sandbox/customer-authentication.ts, the rule contact verification uses); for
// anyone else every SCA operation is 409 and no challenge is ever issued. Wrong proofs count
// towards the login lock (423 ACCOUNT_LOCKED) and are committed before the error is answered.

type Db = Kysely<DB> | Transaction<DB>;
export type Now = { ms: number; at: string };
export interface ScaDeps {
  store: Store;
  jobs: JobQueue;
}

/** The durable job that ends a challenge nobody satisfied in time. */
export const SCA_CHALLENGE_EXPIRY_JOB = 'sca.challenge-expiry';

const sha256 = (v: string): string => createHash('sha256').update(v).digest('hex');

// ---- Scope ------------------------------------------------------------------------------

/** The customer, in scope for SCA: missing when unknown, another platform's or deleted (kernel/references.ts), 409 out of scope. */
async function requireScaCustomer(db: Db, platformId: string, customerId: string): Promise<CustomerRow> {
  const row = isIdOf('Customer', customerId) ? await findCustomer(db, platformId, customerId) : undefined;
  if (!row || row.is_deleted === 1) throw missingReference('USER_NOT_FOUND', 'Customer', customerId, 'customerId', row?.is_deleted === 1);
  assertInScope(row);
  return row;
}

function assertInScope(row: CustomerRow): void {
  if (!customerUnderMandatingProvider(row)) {
    throw apiError(409, 'CONFLICT', `Strong Customer Authentication is not required for customer ${row.id}${row.region ? ` (region ${row.region})` : ''}`, {
      customerId: row.id,
      reason: 'SCA_NOT_REQUIRED',
    });
  }
}

// ---- Login security (failures and locks) -----------------------------------------------

function securityOf(row: SecurityRow | undefined, platformId: string, customerId: string, at: string): SecurityRow {
  return row ?? { customer_id: customerId, platform_id: platformId, failed_attempts: 0, locked_until_ms: null, suspended: 0, updated_at: at };
}

function isLocked(sec: SecurityRow, nowMs: number): boolean {
  return sec.suspended === 1 || (sec.locked_until_ms !== null && Number(sec.locked_until_ms) > nowMs);
}

function lockDetails(sec: SecurityRow, nowMs: number): { failedAttempts: number; lockedUntil: string | null; suspended: boolean } {
  const until = sec.suspended !== 1 && sec.locked_until_ms !== null && Number(sec.locked_until_ms) > nowMs ? iso(Number(sec.locked_until_ms)) : null;
  return { failedAttempts: sec.failed_attempts, lockedUntil: until, suspended: sec.suspended === 1 };
}

function lockedError(sec: SecurityRow, nowMs: number): ApiError {
  const d = lockDetails(sec, nowMs);
  const why = d.suspended ? 'suspended until a 2FA reset (or RESET_PASSWORD_COMPLETED)' : `locked until ${d.lockedUntil}`;
  return apiError(423, 'ACCOUNT_LOCKED', `The customer's login is ${why} after ${d.failedAttempts} failed attempts`, d);
}

async function assertNotLocked(db: Db, platformId: string, customerId: string, now: Now): Promise<void> {
  const sec = securityOf(await findSecurity(db, platformId, customerId), platformId, customerId, now.at);
  if (isLocked(sec, now.ms)) throw lockedError(sec, now.ms);
}

/** One more failed attempt, and the lock it leads to (the caller's transaction). */
async function addFailure(db: Db, platformId: string, customerId: string, now: Now): Promise<SecurityRow> {
  const sec = await incrementFailures(db, platformId, customerId, now.at);
  const lock = lockFor(sec.failed_attempts);
  if (lock === null) return sec;
  if (lock === 'SUSPENDED') sec.suspended = 1;
  else sec.locked_until_ms = now.ms + lock;
  await saveSecurity(db, sec);
  return sec;
}

async function clearFailures(db: Db, platformId: string, customerId: string, at: string): Promise<void> {
  const sec = await findSecurity(db, platformId, customerId);
  if (!sec || (sec.failed_attempts === 0 && sec.suspended === 0 && sec.locked_until_ms === null)) return;
  await saveSecurity(db, { ...sec, failed_attempts: 0, locked_until_ms: null, suspended: 0, updated_at: at });
}

/**
 * A wrong proof: the failure is committed on its own, then answered — 423 ACCOUNT_LOCKED
 * when it locked the login, else 400 INVALID_INPUT on the proof's field.
 */
async function wrongProof(store: Store, platformId: string, customerId: string, now: Now, field: string): Promise<never> {
  const sec = await store.db.transaction().execute((trx) => addFailure(trx, platformId, customerId, now));
  if (isLocked(sec, now.ms)) throw lockedError(sec, now.ms);
  throw invalidInput([{ field, message: 'is not a valid proof for this challenge' }], 'Invalid SCA proof', { failedAttempts: sec.failed_attempts });
}

// ---- Proofs -----------------------------------------------------------------------------

/** The shape of a proof: exactly one of `code` or `passkeyAssertion` (with `origin`); 400 listing what is wrong. */
function proofShape(p: ProofFields): 'CODE' | 'PASSKEY' {
  const hasCode = p.code !== undefined && p.code !== null;
  const hasPasskey = p.passkeyAssertion !== undefined && p.passkeyAssertion !== null;
  const errors: FieldError[] = [];
  if (!hasCode && !hasPasskey) errors.push({ field: 'code', message: 'or passkeyAssertion (with origin) is required' });
  if (hasCode && hasPasskey) errors.push({ field: 'passkeyAssertion', message: 'cannot be sent together with code: send one proof' });
  if (hasPasskey && (p.origin === undefined || p.origin === null)) errors.push({ field: 'origin', message: 'is required with passkeyAssertion' });
  if (errors.length > 0) throw invalidInput(errors);
  return hasCode ? 'CODE' : 'PASSKEY';
}

/** Is the proof right? Codes: the sandbox code; passkeys: the enrolled credential, from an allowed origin. */
function proofIsValid(p: ProofFields, kind: 'CODE' | 'PASSKEY', available: string[], factors: FactorRow[]): boolean {
  if (kind === 'CODE') return (available.includes('SMS_OTP') || available.includes('TOTP')) && p.code === SCA_SANDBOX_CODE;
  if (!available.includes('PASSKEY')) return false;
  const passkey = factors.find((f) => f.factor === 'PASSKEY' && f.status === 'ACTIVE');
  const a = p.passkeyAssertion as Record<string, unknown>;
  const credentialId = typeof a.credentialId === 'string' ? a.credentialId : typeof a.id === 'string' ? a.id : undefined;
  return passkey !== undefined && credentialId === passkey.credential_id && SCA_PASSKEY_ORIGINS.includes(p.origin ?? '');
}

const active = (factors: FactorRow[], f: string): FactorRow | undefined => factors.find((x) => x.factor === f && x.status === 'ACTIVE');

// ---- Factors ----------------------------------------------------------------------------

function factorView(f: FactorRow): ScaFactorView {
  const v: ScaFactorView = { factor: f.factor as ScaFactor };
  if (f.factor === 'PASSKEY' && f.credential_id !== null) v.credentialId = f.credential_id;
  if (f.name !== null) v.name = f.name;
  return v;
}

/** GET /sca/factors: SMS_OTP (always: the phone from customer creation), then TOTP and PASSKEY once enrolled. */
export async function listScaFactors(db: Db, platformId: string, customerId: string): Promise<{ factors: ScaFactorView[] }> {
  await requireScaCustomer(db, platformId, customerId);
  const rows = (await listFactors(db, platformId, customerId)).filter((f) => f.status === 'ACTIVE');
  return { factors: [{ factor: 'SMS_OTP' }, ...rows.map(factorView)] };
}

/** POST /sca/factors: start a TOTP or PASSKEY enrollment (a second passkey: 409 PASSKEY_ALREADY_ENROLLED). */
export async function startEnrollment(store: Store, platformId: string, now: Now, customerId: string, type: 'TOTP' | 'PASSKEY'): Promise<ScaFactorEnrollStart> {
  return store.db.transaction().execute(async (trx) => {
    const customer = await requireScaCustomer(trx, platformId, customerId);
    const factors = await listFactors(trx, platformId, customerId);
    if (type === 'PASSKEY' && active(factors, 'PASSKEY')) {
      throw apiError(409, 'PASSKEY_ALREADY_ENROLLED', `Customer ${customerId} already has a passkey: delete it (DELETE /sca/factors/{credentialId}) before enrolling another`, { customerId });
    }
    if (type === 'TOTP' && active(factors, 'TOTP')) {
      throw apiError(409, 'CONFLICT', `Customer ${customerId} already has a TOTP authenticator: reset it (POST /sca/factors/reset) to enroll another`, { customerId, reason: 'TOTP_ALREADY_ENROLLED' });
    }
    await deleteFactors(trx, platformId, customerId, type, 'PENDING');
    const row: FactorRow = {
      id: newId('ScaFactor'),
      platform_id: platformId,
      customer_id: customerId,
      factor: type,
      status: 'PENDING',
      credential_id: null,
      name: null,
      secret_hash: null,
      expires_at_ms: now.ms + SCA_ENROLLMENT_TTL_MS,
      created_at: now.at,
      confirmed_at: null,
    };
    if (type === 'TOTP') {
      const raw = randomBytes(20);
      const secret = base32.encode(raw).replace(/=+$/, '');
      row.secret_hash = sha256(secret);
      await insertFactor(trx, row);
      const label = encodeURIComponent(`Payments Service:${customer.email ?? customer.id}`);
      return { type, secret, secretBase32Encoded: secret, totpUri: `otpauth://totp/${label}?secret=${secret}&issuer=Payments%20Service&algorithm=SHA1&digits=6&period=30` };
    }
    const challenge = randomBytes(32).toString('base64url');
    row.secret_hash = sha256(challenge);
    await insertFactor(trx, row);
    return {
      type,
      options: {
        challenge,
        rp: { id: SCA_RELYING_PARTY_ID, name: 'Payments Service sandbox' },
        user: { id: Buffer.from(customerId).toString('base64url'), name: customer.email ?? customerId, displayName: customer.email ?? customerId },
        pubKeyCredParams: [
          { type: 'public-key', alg: -7 },
          { type: 'public-key', alg: -257 },
        ],
        timeout: SCA_ENROLLMENT_TTL_MS,
        attestation: 'none',
      },
      allowedOrigins: [...SCA_PASSKEY_ORIGINS],
      relyingPartyId: SCA_RELYING_PARTY_ID,
    };
  });
}

/** POST /sca/factors/confirm: finish the pending enrollment of that type. */
export async function confirmEnrollment(store: Store, platformId: string, now: Now, customerId: string, body: ScaFactorConfirmRequest): Promise<ScaFactorConfirmResponse> {
  return store.db.transaction().execute(async (trx) => {
    await requireScaCustomer(trx, platformId, customerId);
    const missing: FieldError[] = [];
    if (body.type === 'TOTP') {
      if (body.secret === undefined) missing.push({ field: 'secret', message: 'is required for a TOTP confirmation' });
      if (body.code === undefined) missing.push({ field: 'code', message: 'is required for a TOTP confirmation' });
    } else {
      if (body.origin === undefined) missing.push({ field: 'origin', message: 'is required for a PASSKEY confirmation' });
      if (body.credential === undefined) missing.push({ field: 'credential', message: 'is required for a PASSKEY confirmation' });
    }
    if (missing.length > 0) throw invalidInput(missing);
    const factors = await listFactors(trx, platformId, customerId);
    const pending = factors.find((f) => f.factor === body.type && f.status === 'PENDING' && Number(f.expires_at_ms) >= now.ms);
    if (body.type === 'TOTP') {
      if (!pending || pending.secret_hash !== sha256(body.secret!)) {
        throw invalidInput([{ field: 'secret', message: 'is not the secret of a pending TOTP enrollment (start one with POST /sca/factors; it lasts 10 minutes)' }]);
      }
      if (body.code !== SCA_SANDBOX_CODE) throw invalidInput([{ field: 'code', message: 'is not the authenticator’s current code' }], 'Invalid TOTP code');
      await updateFactor(trx, pending.id, { status: 'ACTIVE', confirmed_at: now.at, expires_at_ms: null, name: 'Authenticator app' });
      return { type: 'TOTP', recoveryCodes: Array.from({ length: 8 }, () => randomBytes(5).toString('hex')) };
    }
    if (active(factors, 'PASSKEY')) throw apiError(409, 'PASSKEY_ALREADY_ENROLLED', `Customer ${customerId} already has a passkey`, { customerId });
    if (!pending) throw invalidInput([{ field: 'credential', message: 'answers no pending passkey enrollment (start one with POST /sca/factors; it lasts 10 minutes)' }]);
    const errors: FieldError[] = [];
    if (!SCA_PASSKEY_ORIGINS.includes(body.origin!)) errors.push({ field: 'origin', constraint: { enum: [...SCA_PASSKEY_ORIGINS] }, message: 'is not one of the enrollment’s allowedOrigins' });
    const cred = body.credential as Record<string, unknown>;
    const credentialId = typeof cred.id === 'string' && cred.id.length > 0 ? cred.id : typeof cred.rawId === 'string' && cred.rawId.length > 0 ? cred.rawId : undefined;
    if (credentialId === undefined || credentialId.length > 1024) errors.push({ field: 'credential.id', message: 'is required: the credential id the device produced' });
    if (errors.length > 0) throw invalidInput(errors);
    const name = typeof cred.name === 'string' && cred.name.trim().length > 0 ? cred.name.trim().slice(0, 100) : 'Passkey';
    await updateFactor(trx, pending.id, { status: 'ACTIVE', confirmed_at: now.at, expires_at_ms: null, credential_id: credentialId!, name, secret_hash: null });
    return { type: 'PASSKEY', factor: { factor: 'PASSKEY', credentialId: credentialId!, name } };
  });
}

/** DELETE /sca/factors/{credentialId}: only passkeys carry a credentialId. */
export async function deleteScaFactor(store: Store, platformId: string, customerId: string, credentialId: string): Promise<void> {
  await store.db.transaction().execute(async (trx) => {
    await requireScaCustomer(trx, platformId, customerId);
    const row = (await listFactors(trx, platformId, customerId)).find((f) => f.factor === 'PASSKEY' && f.status === 'ACTIVE' && f.credential_id === credentialId);
    if (!row) throw notFound('REFERENCE_NOT_FOUND', 'SCA factor', credentialId);
    await deleteFactor(trx, row.id);
  });
}

// ---- Login ------------------------------------------------------------------------------

function newChallenge(platformId: string, customerId: string, kind: string, subjectId: string | null, factor: string, available: string[], purposes: string[], now: Now, capMs = Infinity): ChallengeRow {
  const expires = Math.min(now.ms + SCA_CHALLENGE_TTL_MS, capMs);
  return {
    id: newId('ScaChallenge'),
    platform_id: platformId,
    customer_id: customerId,
    kind,
    subject_id: subjectId,
    factor,
    available_factors: JSON.stringify(available),
    purpose: purposes[0] ?? null,
    next_purposes: JSON.stringify(purposes.slice(1)),
    status: 'PENDING',
    sends: 1,
    expires_at_ms: expires,
    expires_at: iso(expires),
    created_at: now.at,
  };
}

/** POST /sca/login/start: SMS_OTP sends a code (challengeId, expiresAt); TOTP and PASSKEY must be enrolled. */
export async function startLogin(store: Store, platformId: string, now: Now, customerId: string, factor: ScaFactor): Promise<ScaLoginStart> {
  return store.db.transaction().execute(async (trx) => {
    await requireScaCustomer(trx, platformId, customerId);
    const factors = await listFactors(trx, platformId, customerId);
    if (factor !== 'SMS_OTP' && !active(factors, factor)) {
      throw invalidInput([{ field: 'factor', message: `${factor} is not enrolled for this customer (enroll it with POST /sca/factors)` }]);
    }
    await cancelPendingChallenges(trx, platformId, ['LOGIN'], { customerId });
    const ch = newChallenge(platformId, customerId, 'LOGIN', null, factor, [factor], [], now);
    await insertChallenge(trx, ch);
    if (factor === 'SMS_OTP') return { factor, challengeId: ch.id, expiresAt: ch.expires_at };
    if (factor === 'TOTP') return { factor };
    const passkey = active(factors, 'PASSKEY')!;
    return {
      factor,
      passkeyOptions: { challenge: randomBytes(32).toString('base64url'), rpId: SCA_RELYING_PARTY_ID, allowCredentials: [{ type: 'public-key', id: passkey.credential_id }], timeout: SCA_CHALLENGE_TTL_MS, userVerification: 'required' },
      allowedOrigins: [...SCA_PASSKEY_ORIGINS],
      relyingPartyId: SCA_RELYING_PARTY_ID,
    };
  });
}

/** POST /sca/login/complete: the proof of the started login opens a 180-day session. */
export async function completeLogin(store: Store, platformId: string, now: Now, customerId: string, body: ScaLoginCompleteRequest): Promise<ScaLoginComplete> {
  const db = store.db;
  await requireScaCustomer(db, platformId, customerId);
  await assertNotLocked(db, platformId, customerId, now);
  const ch = await pendingChallenge(db, platformId, ['LOGIN'], { customerId });
  if (!ch) throw invalidInput([{ field: 'factor', message: 'no login was started for this customer: call POST /sca/login/start first' }]);
  const errors: FieldError[] = [];
  if (ch.factor !== body.factor) errors.push({ field: 'factor', constraint: { enum: [ch.factor] }, message: `does not match the started login (${ch.factor})` });
  if (ch.factor === 'SMS_OTP' && body.challengeId !== ch.id) errors.push({ field: 'challengeId', message: body.challengeId ? 'is not the challenge of the started login' : 'is required for an SMS_OTP login' });
  if (errors.length > 0) throw invalidInput(errors);
  if (now.ms > Number(ch.expires_at_ms)) throw invalidInput([{ field: ch.factor === 'SMS_OTP' ? 'challengeId' : 'factor', message: `the login expired at ${ch.expires_at}: start a new one` }], 'The SCA login expired');
  const kind = proofShape(body);
  // The proof must be the started factor's kind: a code for SMS_OTP / TOTP, an assertion for PASSKEY (not counted).
  if ((kind === 'PASSKEY') !== (ch.factor === 'PASSKEY')) {
    throw invalidInput([kind === 'CODE' ? { field: 'passkeyAssertion', message: 'is required to complete a PASSKEY login (with origin)' } : { field: 'code', message: `is required to complete a ${ch.factor} login` }]);
  }
  const factors = await listFactors(db, platformId, customerId);
  if (!proofIsValid(body, kind, [ch.factor], factors)) await wrongProof(store, platformId, customerId, now, kind === 'CODE' ? 'code' : 'passkeyAssertion');
  return db.transaction().execute(async (trx) => {
    if (!(await settleChallenge(trx, ch.id, 'SATISFIED'))) throw invalidInput([{ field: 'factor', message: 'the started login was already completed: start a new one' }]);
    await clearFailures(trx, platformId, customerId, now.at);
    const expires = now.ms + SCA_SESSION_TTL_MS;
    await insertSession(trx, {
      id: newId('ScaSession'),
      platform_id: platformId,
      customer_id: customerId,
      factor: ch.factor,
      end_user_ip: body.endUserIpAddress,
      revoked: 0,
      expires_at_ms: expires,
      expires_at: iso(expires),
      created_at: now.at,
    });
    return { status: 'SUCCESS', sessionExpiresAt: iso(expires) };
  });
}

// ---- Security events --------------------------------------------------------------------

/**
 * POST /sca/record-event. FAILED_LOGIN_ATTEMPT adds a failure (and the lock it leads to);
 * while locked it is refused with 423. RESET_PASSWORD_COMPLETED revokes every session and
 * clears the failures, lock and suspension. The event is stored with the state it left.
 */
export async function recordSecurityEvent(store: Store, platformId: string, now: Now, customerId: string, eventType: 'RESET_PASSWORD_COMPLETED' | 'FAILED_LOGIN_ATTEMPT'): Promise<RecordSecurityEventResponse> {
  return store.db.transaction().execute(async (trx) => {
    await requireScaCustomer(trx, platformId, customerId);
    let sec = securityOf(await findSecurity(trx, platformId, customerId), platformId, customerId, now.at);
    if (eventType === 'FAILED_LOGIN_ATTEMPT') {
      if (isLocked(sec, now.ms)) throw lockedError(sec, now.ms);
      sec = await addFailure(trx, platformId, customerId, now);
    } else {
      await revokeSessions(trx, platformId, customerId);
      sec = { ...sec, failed_attempts: 0, locked_until_ms: null, suspended: 0, updated_at: now.at };
      await saveSecurity(trx, sec);
    }
    const d = lockDetails(sec, now.ms);
    await insertSecurityEvent(trx, {
      id: newId('ScaSecurityEvent'),
      platform_id: platformId,
      customer_id: customerId,
      event_type: eventType,
      failed_attempts: d.failedAttempts,
      locked_until: d.lockedUntil,
      suspended: d.suspended ? 1 : 0,
      created_at: now.at,
    });
    return { eventType, suspended: d.suspended, failedAttempts: d.failedAttempts, lockedUntil: d.lockedUntil };
  });
}

// ---- 2FA reset --------------------------------------------------------------------------

/** A 429 with the seconds to wait (the route sets Retry-After). */
export function rateLimited(message: string, retryAfterSeconds: number, details: Record<string, unknown> = {}): ApiError {
  return apiError(429, 'RATE_LIMITED', message, { ...details, retryAfterSeconds });
}

/** POST /sca/factors/reset: open a liveness-gated reset of an enrolled factor (5 per 24 hours). */
export async function startReset(store: Store, platformId: string, now: Now, customerId: string, factor: ScaFactor): Promise<TwoFactorResetStart> {
  return store.db.transaction().execute(async (trx) => {
    await requireScaCustomer(trx, platformId, customerId);
    if (factor !== 'SMS_OTP' && !active(await listFactors(trx, platformId, customerId), factor)) {
      throw invalidInput([{ field: 'factor', message: `${factor} is not enrolled for this customer: there is nothing to reset` }]);
    }
    const recent = await resetsSince(trx, platformId, customerId, now.ms - SCA_RESET_WINDOW_MS);
    if (recent.length >= SCA_RESET_LIMIT) {
      const wait = Math.max(1, Math.ceil((recent[recent.length - SCA_RESET_LIMIT]! + SCA_RESET_WINDOW_MS - now.ms) / 1000));
      throw rateLimited(`At most ${SCA_RESET_LIMIT} 2FA resets can be started per customer in 24 hours; retry after ${wait} s`, wait, { customerId });
    }
    const id = newId('TwoFactorReset');
    const expires = now.ms + SCA_RESET_TTL_MS;
    await insertReset(trx, { id, platform_id: platformId, customer_id: customerId, factor, completed_at: null, created_at_ms: now.ms, expires_at_ms: expires, expires_at: iso(expires) });
    return { resetId: id, expiresAt: iso(expires), livenessAccessToken: `liveness_${randomBytes(16).toString('hex')}`, verificationLink: `https://liveness.sandbox.invalid/reset/${encodeURIComponent(id)}` };
  });
}

function resetStatus(r: ResetRow, nowMs: number): TwoFactorResetStatus['status'] {
  if (r.completed_at !== null) return 'COMPLETED';
  if (nowMs > Number(r.expires_at_ms)) return 'EXPIRED';
  const elapsed = nowMs - Number(r.created_at_ms);
  if (elapsed < SCA_RESET_REVIEW_AFTER_MS) return 'INITIATED';
  if (elapsed < SCA_RESET_PASSED_AFTER_MS) return 'PENDING_REVIEW';
  return 'LIVENESS_PASSED';
}

async function requireReset(db: Db, platformId: string, customerId: string, resetId: string): Promise<ResetRow> {
  const r = await findReset(db, platformId, customerId, resetId);
  if (!r) throw notFound('REFERENCE_NOT_FOUND', '2FA reset', resetId);
  return r;
}

/** GET /sca/factors/reset/{resetId}: the status on the sandbox clock. */
export async function getResetStatus(db: Db, platformId: string, now: Now, customerId: string, resetId: string): Promise<TwoFactorResetStatus> {
  await requireScaCustomer(db, platformId, customerId);
  const r = await requireReset(db, platformId, customerId, resetId);
  let enrollment: 'PENDING' | 'COMPLETED' | null = null;
  if (r.factor !== 'SMS_OTP') {
    const again = r.completed_at !== null && (await listFactors(db, platformId, customerId)).some((f) => f.factor === r.factor && f.status === 'ACTIVE' && (f.confirmed_at ?? '') >= r.completed_at!);
    enrollment = again ? 'COMPLETED' : 'PENDING';
  }
  return { status: resetStatus(r, now.ms), factor: r.factor as ScaFactor, expiresAt: r.expires_at, completedAt: r.completed_at, enrollmentStatus: enrollment };
}

/** POST /sca/factors/reset/{resetId}/complete: clear the lost factor (SMS_OTP: enroll the new number) and unlock the login. */
export async function completeResetFlow(store: Store, platformId: string, now: Now, customerId: string, resetId: string, body: TwoFactorResetCompleteRequest): Promise<void> {
  await store.db.transaction().execute(async (trx) => {
    const customer = await requireScaCustomer(trx, platformId, customerId);
    const r = await requireReset(trx, platformId, customerId, resetId);
    const status = resetStatus(r, now.ms);
    if (status !== 'LIVENESS_PASSED') {
      const why = status === 'COMPLETED' ? 'was already completed' : status === 'EXPIRED' ? `expired at ${r.expires_at}: start a new one` : `is ${status}: liveness has not passed yet`;
      throw apiError(400, 'INVALID_INPUT', `The 2FA reset ${r.id} ${why}`, { errors: [{ field: 'resetId', message: why }], status });
    }
    if (r.factor === 'SMS_OTP') {
      if (!body.mobile) throw invalidInput([{ field: 'mobile', message: 'is required to complete an SMS_OTP reset: the new number to enroll' }]);
      const phone = `${body.mobile.countryCode}${body.mobile.number}`;
      const cv = customer.contact_verification ? (JSON.parse(customer.contact_verification) as Record<string, unknown>) : null;
      if (cv) {
        cv.phone = 'VERIFIED'; // completing the reset enrolls the number
        delete cv.phoneCodeSentTo;
      }
      await updateCustomer(trx, customer.id, { phone_number: phone, ...(cv ? { contact_verification: JSON.stringify(cv) } : {}), updated_at: now.at });
    } else {
      await deleteFactors(trx, platformId, customerId, r.factor);
    }
    if (!(await completeReset(trx, r.id, now.at))) throw apiError(400, 'INVALID_INPUT', `The 2FA reset ${r.id} was already completed`, { errors: [{ field: 'resetId', message: 'was already completed' }] });
    await clearFailures(trx, platformId, customerId, now.at);
  });
}

// ---- Challenges on money movement (quotes) ---------------------------------------------

function challengeView(ch: ChallengeRow, factors: FactorRow[]): ScaChallenge {
  const v: ScaChallenge = {
    id: ch.id,
    expiresAt: ch.expires_at,
    factor: ch.factor as ScaFactor,
    availableFactors: JSON.parse(ch.available_factors) as ScaFactor[],
  };
  if (ch.purpose !== null) v.purpose = ch.purpose;
  const passkey = active(factors, 'PASSKEY');
  if (ch.factor === 'PASSKEY' && passkey) {
    v.passkeyAssertionOptions = { challenge: sha256(ch.id), rpId: SCA_RELYING_PARTY_ID, allowCredentials: [{ type: 'public-key', id: passkey.credential_id }] };
  }
  return v;
}

/** Per-payment challenges: SMS_OTP, and a passkey once enrolled (TOTP cannot carry dynamic linking). */
function paymentFactors(factors: FactorRow[]): ScaFactor[] {
  return ['SMS_OTP', ...(active(factors, 'PASSKEY') ? (['PASSKEY'] as const) : [])];
}

/** The authorization steps of a quote: the conversion (cross-currency), then the payout (or transfer). */
function purposesOf(row: QuoteRow): string[] {
  const last = row.destination_account_id?.startsWith('InternalAccount:') ? 'TRANSFER' : 'PAYOUT';
  return row.sending_currency !== row.receiving_currency ? ['CURRENCY_CONVERSION', last] : [last];
}

async function scheduleExpiry(trx: Transaction<DB>, jobs: JobQueue, ch: ChallengeRow, at: string): Promise<void> {
  await jobs.schedule(trx, { platformId: ch.platform_id, kind: SCA_CHALLENGE_EXPIRY_JOB, payload: { challengeId: ch.id }, runAtMs: Number(ch.expires_at_ms) + 1, at });
}

/** Issue a quote's next challenge: the quote shows it, its transaction announces PENDING_AUTHORIZATION. */
async function issueQuoteChallenge(trx: Transaction<DB>, jobs: JobQueue, row: QuoteRow, purposes: string[], now: Now, fromStatus: 'PENDING' | 'PENDING_AUTHORIZATION'): Promise<void> {
  const factors = await listFactors(trx, row.platform_id, row.customer_id!);
  // A real-time funded quote must still be fundable once authorized: its steps end with the quote.
  const cap = row.source_type === 'REALTIME_FUNDING' ? Number(row.expires_at_ms) : Infinity;
  const ch = newChallenge(row.platform_id, row.customer_id!, 'QUOTE', row.id, 'SMS_OTP', paymentFactors(factors), purposes, now, cap);
  await insertChallenge(trx, ch);
  const moved = await updateQuoteStatus(trx, row.platform_id, row.id, fromStatus, { status: 'PENDING_AUTHORIZATION', sca_challenge: JSON.stringify(challengeView(ch, factors)), updated_at: now.at });
  if (!moved) throw apiError(409, 'INVALID_STATE_TRANSITION', `Quote ${row.id} changed concurrently`, { quoteId: row.id });
  const tx = await findTransaction(trx, row.platform_id, row.transaction_id!);
  if (tx) {
    await updateTransaction(trx, row.platform_id, tx.id, { status: 'PENDING_AUTHORIZATION', updated_at: now.at });
    const view = { ...tx, status: 'PENDING_AUTHORIZATION', updated_at: now.at };
    await emitEvent(trx, row.platform_id, now.at, { type: 'OUTGOING_PAYMENT.PENDING_AUTHORIZATION', resourceId: tx.id, data: transactionView(view) });
  }
  await scheduleExpiry(trx, jobs, ch, now.at);
}

/**
 * The quotes area's authorization gate (setAuthorizationGate): a quote of an in-scope customer
 * waits for authorization — at execute (prefunded), or at creation (REALTIME_FUNDING, whose
 * paymentInstructions are withheld until then). Not held: platform quotes, pulls, and payouts
 * to a trusted beneficiary. A prefunded source must hold the amount now (else 400 INVALID_AMOUNT).
 */
export async function holdForAuthorization(trx: Transaction<DB>, deps: PaymentDeps, _platform: PlatformRow, row: QuoteRow, now: Now): Promise<boolean> {
  if (row.customer_id === null || row.source_account_id?.startsWith('ExternalAccount:')) return false;
  const customer = await findCustomer(trx, row.platform_id, row.customer_id);
  if (!customer || !customerUnderMandatingProvider(customer)) return false;
  if (row.destination_account_id?.startsWith('ExternalAccount:') && (await isTrusted(trx, row.platform_id, row.destination_account_id))) return false;
  if (row.source_type !== 'REALTIME_FUNDING' && row.source_account_id !== null) {
    const available = (await balancesOf(trx, [row.source_account_id])).get(row.source_account_id)?.available ?? 0;
    const total = Number(row.total_sending);
    if (available < total) {
      throw apiError(400, 'INVALID_AMOUNT', `The source account has ${available} ${row.sending_currency} available; the payment needs ${total}`, {
        reason: 'INSUFFICIENT_BALANCE',
        accountId: row.source_account_id,
        currency: row.sending_currency,
        available,
        required: total,
        shortfall: total - available,
      });
    }
  }
  await issueQuoteChallenge(trx, deps.jobs, row, purposesOf(row), now, 'PENDING');
  return true;
}

/** The quote, its in-scope customer and its pending challenge (404 / 409 otherwise). */
async function requireHeldQuote(db: Db, platformId: string, quoteId: string): Promise<{ row: QuoteRow; ch: ChallengeRow }> {
  const row = await requireQuote(db, platformId, quoteId);
  if (row.customer_id === null) {
    throw apiError(409, 'CONFLICT', `Quote ${row.id} is the platform's own: Strong Customer Authentication does not apply`, { quoteId: row.id, reason: 'SCA_NOT_REQUIRED' });
  }
  const customer = await findCustomer(db, platformId, row.customer_id);
  if (!customer) throw notFound('QUOTE_NOT_FOUND', 'Quote', quoteId);
  assertInScope(customer);
  const ch = row.status === 'PENDING_AUTHORIZATION' ? await pendingChallenge(db, platformId, ['QUOTE'], { subjectId: row.id }) : undefined;
  if (!ch) {
    throw apiError(409, 'CONFLICT', `Quote ${row.id} has no challenge to authorize (status ${row.status})`, { quoteId: row.id, status: row.status, reason: 'NO_PENDING_CHALLENGE' });
  }
  return { row, ch };
}

/**
 * POST /quotes/{quoteId}/authorize. Checks in order: the quote's challenge (409), not expired
 * (400), the login not locked (423), a live SCA session (409 SCA_SESSION_REQUIRED), the proof
 * (400, counted). Then, in one transaction: the next step's challenge, or the release — a
 * prefunded quote's payment starts (PROCESSING), a REALTIME_FUNDING quote goes back to
 * PENDING with its paymentInstructions.
 */
export async function authorizeQuote(deps: PaymentDeps, platform: PlatformRow, now: Now, quoteId: string, proof: ProofFields): Promise<Quote> {
  const { store } = deps;
  const { row, ch } = await requireHeldQuote(store.db, platform.id, quoteId);
  const customerId = row.customer_id!;
  if (now.ms > Number(ch.expires_at_ms)) {
    // Past its time: the payment fails now, as the expiry job would (its job then finds nothing to do).
    await store.db.transaction().execute((trx) => expireChallenge(trx, platform.id, ch, now.ms));
    throw apiError(400, 'INVALID_INPUT', `The challenge ${ch.id} expired at ${ch.expires_at}; the payment failed with SCA_NOT_COMPLETED`, {
      errors: [{ field: 'code', message: 'answers a challenge that expired' }],
      reason: 'SCA_CHALLENGE_EXPIRED',
      challengeId: ch.id,
    });
  }
  await assertNotLocked(store.db, platform.id, customerId, now);
  const session = await activeSession(store.db, platform.id, customerId, now.ms);
  if (!session) {
    throw apiError(409, 'SCA_SESSION_REQUIRED', `Customer ${customerId} has no live SCA login session: log in (POST /sca/login/start and /complete), then authorize again`, { customerId });
  }
  const kind = proofShape(proof);
  const factors = await listFactors(store.db, platform.id, customerId);
  if (!proofIsValid(proof, kind, JSON.parse(ch.available_factors) as string[], factors)) await wrongProof(store, platform.id, customerId, now, kind === 'CODE' ? 'code' : 'passkeyAssertion');
  return effectTransaction(store.db, async (trx) => {
    const locked = await requireQuote(trx, platform.id, row.id, store.kind === 'postgres');
    if (locked.status !== 'PENDING_AUTHORIZATION' || !(await settleChallenge(trx, ch.id, 'SATISFIED'))) {
      throw apiError(409, 'CONFLICT', `The challenge ${ch.id} was already answered`, { quoteId: row.id, reason: 'NO_PENDING_CHALLENGE' });
    }
    await clearFailures(trx, platform.id, customerId, now.at);
    const next = JSON.parse(ch.next_purposes) as string[];
    if (next.length > 0) {
      await issueQuoteChallenge(trx, deps.jobs, locked, next, now, 'PENDING_AUTHORIZATION');
    } else if (locked.source_type === 'REALTIME_FUNDING') {
      await updateQuoteStatus(trx, platform.id, locked.id, 'PENDING_AUTHORIZATION', { status: 'PENDING', sca_challenge: null, updated_at: now.at });
      const tx = await findTransaction(trx, platform.id, locked.transaction_id!);
      if (tx && (await updateTransactionStatus(trx, platform.id, tx.id, 'PENDING_AUTHORIZATION', { status: 'PENDING', updated_at: now.at }))) {
        await emitEvent(trx, platform.id, now.at, { type: 'OUTGOING_PAYMENT.PENDING', resourceId: tx.id, data: transactionView({ ...tx, status: 'PENDING', updated_at: now.at }) });
      }
    } else {
      await releaseAuthorizedQuote(trx, deps, platform, locked, now);
    }
    return quoteView((await findQuote(trx, platform.id, locked.id))!, now.ms);
  });
}

/** POST /quotes/{quoteId}/authorize/resend: the same challenge's SMS code again (expiry unchanged). */
export async function resendQuoteCode(store: Store, platformId: string, now: Now, quoteId: string): Promise<void> {
  const { ch } = await requireHeldQuote(store.db, platformId, quoteId);
  if (ch.factor !== 'SMS_OTP') {
    throw apiError(409, 'CONFLICT', `The challenge ${ch.id} is a ${ch.factor} challenge: its code cannot be re-sent`, { quoteId, reason: 'NOT_RESENDABLE' });
  }
  if (now.ms > Number(ch.expires_at_ms)) {
    throw apiError(409, 'CONFLICT', `The challenge ${ch.id} expired at ${ch.expires_at}: there is no code to re-send`, { quoteId, reason: 'CHALLENGE_EXPIRED' });
  }
  if (ch.sends > SCA_MAX_RESENDS) {
    const wait = Math.max(1, Math.ceil((Number(ch.expires_at_ms) - now.ms) / 1000));
    throw rateLimited(`The code of challenge ${ch.id} was re-sent ${SCA_MAX_RESENDS} times already`, wait, { quoteId, challengeId: ch.id });
  }
  await countSend(store.db, ch.id);
}

/** The expiry job: a challenge still pending fails its quote's payment (SCA_NOT_COMPLETED); nothing moved. */
export async function runChallengeExpiry(ctx: JobContext): Promise<void> {
  const { trx, job } = ctx;
  if (job.platformId === null) return;
  const { challengeId } = job.payload as { challengeId: string };
  const ch = await findChallenge(trx, job.platformId, challengeId);
  if (!ch || ch.status !== 'PENDING' || ctx.nowMs <= Number(ch.expires_at_ms)) return;
  await expireChallenge(trx, job.platformId, ch, ctx.nowMs);
}

/** A pending challenge past its time: EXPIRED, and its quote's payment FAILED with SCA_NOT_COMPLETED (once; nothing moved). */
async function expireChallenge(trx: Transaction<DB>, platformId: string, ch: ChallengeRow, nowMs: number): Promise<void> {
  if (!(await settleChallenge(trx, ch.id, 'EXPIRED'))) return;
  if (ch.kind !== 'QUOTE' || ch.subject_id === null) return;
  const at = iso(nowMs);
  const quote = await findQuote(trx, platformId, ch.subject_id);
  if (!quote || !(await updateQuoteStatus(trx, platformId, quote.id, 'PENDING_AUTHORIZATION', { status: 'FAILED', sca_challenge: null, updated_at: at }))) return;
  const tx = await findTransaction(trx, platformId, quote.transaction_id!);
  if (tx && (await updateTransactionStatus(trx, platformId, tx.id, 'PENDING_AUTHORIZATION', { status: 'FAILED', failure_reason: 'SCA_NOT_COMPLETED', pending_reason: null, updated_at: at }))) {
    await emitEvent(trx, platformId, at, { type: 'OUTGOING_PAYMENT.FAILED', resourceId: tx.id, data: transactionView({ ...tx, status: 'FAILED', failure_reason: 'SCA_NOT_COMPLETED', pending_reason: null, updated_at: at }) });
  }
}

export function registerScaJobs(jobs: JobQueue): void {
  jobs.registerOnce(SCA_CHALLENGE_EXPIRY_JOB, runChallengeExpiry);
}

// ---- Trusted beneficiaries --------------------------------------------------------------

/** The external account (a customer's: the platform's own are not under /customers, 404 as for GET) and its in-scope customer. */
async function requireBeneficiary(db: Db, platformId: string, externalAccountId: string): Promise<{ customerId: string }> {
  const account = await requireExternalAccount(db, platformId, externalAccountId, 'customer');
  const customer = account.customer_id === null ? undefined : await findCustomer(db, platformId, account.customer_id);
  if (!customer) throw notFound('REFERENCE_NOT_FOUND', 'External account', externalAccountId);
  // A deleted customer's beneficiary: the customer is not found, as on every SCA operation.
  if (customer.is_deleted === 1) throw missingReference('USER_NOT_FOUND', 'Customer', customer.id, 'externalAccountId', true);
  assertInScope(customer);
  return { customerId: customer.id };
}

/** POST …/trust and …/untrust: a challenge (SMS_OTP, or any enrolled factor) to confirm the change with. */
export async function startTrustChange(store: Store, platformId: string, now: Now, externalAccountId: string, change: 'TRUST' | 'UNTRUST'): Promise<BeneficiaryTrustStart> {
  return store.db.transaction().execute(async (trx) => {
    const { customerId } = await requireBeneficiary(trx, platformId, externalAccountId);
    const trusted = await isTrusted(trx, platformId, externalAccountId);
    if (trusted === (change === 'TRUST')) {
      throw apiError(409, 'CONFLICT', `External account ${externalAccountId} is ${trusted ? 'already' : 'not'} a trusted beneficiary`, { externalAccountId, trusted, reason: trusted ? 'ALREADY_TRUSTED' : 'NOT_TRUSTED' });
    }
    await cancelPendingChallenges(trx, platformId, ['TRUST', 'UNTRUST'], { subjectId: externalAccountId });
    const factors = await listFactors(trx, platformId, customerId);
    const available: ScaFactor[] = ['SMS_OTP', ...(['TOTP', 'PASSKEY'] as const).filter((f) => active(factors, f))];
    const ch = newChallenge(platformId, customerId, change, externalAccountId, 'SMS_OTP', available, [change === 'TRUST' ? 'BENEFICIARY_TRUST' : 'BENEFICIARY_UNTRUST'], now);
    await insertChallenge(trx, ch);
    return { scaChallenge: challengeView(ch, factors) };
  });
}

/** POST …/trust/confirm and …/untrust/confirm: the proof makes the change. */
export async function confirmTrustChange(store: Store, platformId: string, now: Now, externalAccountId: string, change: 'TRUST' | 'UNTRUST', body: BeneficiaryTrustConfirmRequest): Promise<{ trusted: boolean }> {
  const db = store.db;
  const { customerId } = await requireBeneficiary(db, platformId, externalAccountId);
  const ch = await pendingChallenge(db, platformId, [change], { subjectId: externalAccountId });
  const path = change === 'TRUST' ? 'trust' : 'untrust';
  if (!ch) throw invalidInput([{ field: 'challengeId', message: `answers no pending ${path} of this beneficiary: start one with POST /customers/external-accounts/{externalAccountId}/${path}` }]);
  if (body.challengeId !== undefined && body.challengeId !== null && body.challengeId !== ch.id) throw invalidInput([{ field: 'challengeId', message: `is not the challenge of the pending ${path}` }]);
  if (now.ms > Number(ch.expires_at_ms)) throw invalidInput([{ field: 'challengeId', message: `the challenge expired at ${ch.expires_at}: start again` }], 'The SCA challenge expired');
  await assertNotLocked(db, platformId, customerId, now);
  const kind = proofShape(body);
  const factors = await listFactors(db, platformId, customerId);
  if (!proofIsValid(body, kind, JSON.parse(ch.available_factors) as string[], factors)) await wrongProof(store, platformId, customerId, now, kind === 'CODE' ? 'code' : 'passkeyAssertion');
  return db.transaction().execute(async (trx) => {
    if (!(await settleChallenge(trx, ch.id, 'SATISFIED'))) throw invalidInput([{ field: 'challengeId', message: 'was already answered' }]);
    await clearFailures(trx, platformId, customerId, now.at);
    if (change === 'TRUST') await trust(trx, platformId, customerId, externalAccountId, now.at);
    else await untrust(trx, platformId, externalAccountId);
    return { trusted: change === 'TRUST' };
  });
}

/** The external-accounts area's delete guard: a trusted beneficiary cannot be deleted (409 BENEFICIARY_TRUSTED). */
export async function refuseTrustedDelete(db: Db, platformId: string, externalAccountId: string): Promise<void> {
  if (await isTrusted(db, platformId, externalAccountId)) {
    throw apiError(409, 'BENEFICIARY_TRUSTED', `External account ${externalAccountId} is a trusted beneficiary: untrust it first (POST /customers/external-accounts/{externalAccountId}/untrust and its /confirm)`, {
      externalAccountId,
    });
  }
}
