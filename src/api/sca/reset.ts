import { randomBytes } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import type { Store } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { iso } from '../../kernel/clock.js';
import { ApiError, apiError, invalidInput, notFound } from '../../kernel/errors.js';
import { newId } from '../../kernel/ids.js';
import { SCA_RESET_LIMIT, SCA_RESET_PASSED_AFTER_MS, SCA_RESET_REVIEW_AFTER_MS, SCA_RESET_TTL_MS, SCA_RESET_WINDOW_MS } from '../../sandbox/rules/sca.js';
import { updateCustomer } from '../customers/store.js';
import type { ScaFactor, TwoFactorResetCompleteRequest, TwoFactorResetStart, TwoFactorResetStatus } from './schemas.js';
import { completeReset, deleteFactors, findReset, insertReset, listFactors, type ResetRow, resetsSince } from './store.js';
import { type Now, active, clearFailures, requireScaCustomer } from './service.js';

// The 2FA reset flow: start, status, completion (rate limited).

type Db = Kysely<DB> | Transaction<DB>;

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
