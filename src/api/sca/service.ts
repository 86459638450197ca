import { createHash } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import type { Store } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { iso } from '../../kernel/clock.js';
import { ApiError, apiError, type FieldError, invalidInput } from '../../kernel/errors.js';
import { missingReference } from '../../kernel/references.js';
import { isIdOf, newId } from '../../kernel/ids.js';
import type { JobQueue } from '../../kernel/jobs.js';
import { customerUnderMandatingProvider } from '../../sandbox/rules/customer-authentication.js';
import { lockFor, SCA_CHALLENGE_TTL_MS, SCA_PASSKEY_ORIGINS, SCA_SANDBOX_CODE } from '../../sandbox/rules/sca.js';
import { findCustomer, type CustomerRow } from '../customers/store.js';
import type { ProofFields, ScaChallenge } from './schemas.js';
import { type ChallengeRow, type FactorRow, findSecurity, incrementFailures, saveSecurity, type SecurityRow } from './store.js';

type Db = Kysely<DB> | Transaction<DB>;

// Strong Customer Authentication (docs/sca.md). Only customers the EU provider serves are in
// scope (src/sandbox/rules/customer-authentication.ts, the rule contact verification uses); for
// anyone else every SCA operation is 409 and no challenge is ever issued. Wrong proofs count
// towards the login lock (423 ACCOUNT_LOCKED) and are committed before the error is answered.

export type Now = { ms: number; at: string };
export interface ScaDeps {
  store: Store;
  jobs: JobQueue;
}

/** The durable job that ends a challenge nobody satisfied in time. */
export const SCA_CHALLENGE_EXPIRY_JOB = 'sca.challenge-expiry';

export const sha256 = (v: string): string => createHash('sha256').update(v).digest('hex');

// ---- Scope ------------------------------------------------------------------------------

/** The customer, in scope for SCA: missing when unknown, another platform's or deleted (kernel/references.ts), 409 out of scope. */
export async function requireScaCustomer(db: Db, platformId: string, customerId: string): Promise<CustomerRow> {
  const row = isIdOf('Customer', customerId) ? await findCustomer(db, platformId, customerId) : undefined;
  if (!row || row.is_deleted === 1) throw missingReference('USER_NOT_FOUND', 'Customer', customerId, 'customerId', row?.is_deleted === 1);
  assertInScope(row);
  return row;
}

export function assertInScope(row: CustomerRow): void {
  if (!customerUnderMandatingProvider(row)) {
    throw apiError(409, 'CONFLICT', `Strong Customer Authentication is not required for customer ${row.id}${row.region ? ` (region ${row.region})` : ''}`, {
      customerId: row.id,
      reason: 'SCA_NOT_REQUIRED',
    });
  }
}

// ---- Login security (failures and locks) -----------------------------------------------

export function securityOf(row: SecurityRow | undefined, platformId: string, customerId: string, at: string): SecurityRow {
  return row ?? { customer_id: customerId, platform_id: platformId, failed_attempts: 0, locked_until_ms: null, suspended: 0, updated_at: at };
}

export function isLocked(sec: SecurityRow, nowMs: number): boolean {
  return sec.suspended === 1 || (sec.locked_until_ms !== null && Number(sec.locked_until_ms) > nowMs);
}

export function lockDetails(sec: SecurityRow, nowMs: number): { failedAttempts: number; lockedUntil: string | null; suspended: boolean } {
  const until = sec.suspended !== 1 && sec.locked_until_ms !== null && Number(sec.locked_until_ms) > nowMs ? iso(Number(sec.locked_until_ms)) : null;
  return { failedAttempts: sec.failed_attempts, lockedUntil: until, suspended: sec.suspended === 1 };
}

export function lockedError(sec: SecurityRow, nowMs: number): ApiError {
  const d = lockDetails(sec, nowMs);
  const why = d.suspended ? 'suspended until a 2FA reset (or RESET_PASSWORD_COMPLETED)' : `locked until ${d.lockedUntil}`;
  return apiError(423, 'ACCOUNT_LOCKED', `The customer's login is ${why} after ${d.failedAttempts} failed attempts`, d);
}

export async function assertNotLocked(db: Db, platformId: string, customerId: string, now: Now): Promise<void> {
  const sec = securityOf(await findSecurity(db, platformId, customerId), platformId, customerId, now.at);
  if (isLocked(sec, now.ms)) throw lockedError(sec, now.ms);
}

/** One more failed attempt, and the lock it leads to (the caller's transaction). */
export async function addFailure(db: Db, platformId: string, customerId: string, now: Now): Promise<SecurityRow> {
  const sec = await incrementFailures(db, platformId, customerId, now.at);
  const lock = lockFor(sec.failed_attempts);
  if (lock === null) return sec;
  if (lock === 'SUSPENDED') sec.suspended = 1;
  else sec.locked_until_ms = now.ms + lock;
  await saveSecurity(db, sec);
  return sec;
}

export async function clearFailures(db: Db, platformId: string, customerId: string, at: string): Promise<void> {
  const sec = await findSecurity(db, platformId, customerId);
  if (!sec || (sec.failed_attempts === 0 && sec.suspended === 0 && sec.locked_until_ms === null)) return;
  await saveSecurity(db, { ...sec, failed_attempts: 0, locked_until_ms: null, suspended: 0, updated_at: at });
}

/**
 * A wrong proof: the failure is committed on its own, then answered — 423 ACCOUNT_LOCKED
 * when it locked the login, else 400 INVALID_INPUT on the proof's field.
 */
export async function wrongProof(store: Store, platformId: string, customerId: string, now: Now, field: string): Promise<never> {
  const sec = await store.db.transaction().execute((trx) => addFailure(trx, platformId, customerId, now));
  if (isLocked(sec, now.ms)) throw lockedError(sec, now.ms);
  throw invalidInput([{ field, message: 'is not a valid proof for this challenge' }], 'Invalid SCA proof', { failedAttempts: sec.failed_attempts });
}

// ---- Proofs -----------------------------------------------------------------------------

/** The shape of a proof: exactly one of `code` or `passkeyAssertion` (with `origin`); 400 listing what is wrong. */
export function proofShape(p: ProofFields): 'CODE' | 'PASSKEY' {
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
export function proofIsValid(p: ProofFields, kind: 'CODE' | 'PASSKEY', available: string[], factors: FactorRow[]): boolean {
  if (kind === 'CODE') return (available.includes('SMS_OTP') || available.includes('TOTP')) && p.code === SCA_SANDBOX_CODE;
  if (!available.includes('PASSKEY')) return false;
  const passkey = factors.find((f) => f.factor === 'PASSKEY' && f.status === 'ACTIVE');
  const a = p.passkeyAssertion as Record<string, unknown>;
  const credentialId = typeof a.credentialId === 'string' ? a.credentialId : typeof a.id === 'string' ? a.id : undefined;
  return passkey !== undefined && credentialId === passkey.credential_id && SCA_PASSKEY_ORIGINS.includes(p.origin ?? '');
}

export const active = (factors: FactorRow[], f: string): FactorRow | undefined => factors.find((x) => x.factor === f && x.status === 'ACTIVE');

export function newChallenge(platformId: string, customerId: string, kind: string, subjectId: string | null, factor: string, available: string[], purposes: string[], now: Now, capMs = Infinity): ChallengeRow {
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
