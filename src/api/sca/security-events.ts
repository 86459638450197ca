import type { Store } from '../../kernel/db/connect.js';
import { newId } from '../../kernel/ids.js';
import type { RecordSecurityEventResponse } from './schemas.js';
import { findSecurity, insertSecurityEvent, revokeSessions, saveSecurity } from './store.js';
import { type Now, addFailure, isLocked, lockDetails, lockedError, requireScaCustomer, securityOf } from './service.js';

// Security events a platform records (failed logins, password resets) and what they do to
// the customer's lock.

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
