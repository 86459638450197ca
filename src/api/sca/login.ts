import { randomBytes } from 'node:crypto';
import type { Store } from '../../kernel/db/connect.js';
import { iso } from '../../kernel/clock.js';
import { type FieldError, invalidInput } from '../../kernel/errors.js';
import { newId } from '../../kernel/ids.js';
import { SCA_CHALLENGE_TTL_MS, SCA_PASSKEY_ORIGINS, SCA_RELYING_PARTY_ID, SCA_SESSION_TTL_MS } from '../../sandbox/rules/sca.js';
import type { ScaFactor, ScaLoginComplete, ScaLoginCompleteRequest, ScaLoginStart } from './schemas.js';
import { cancelPendingChallenges, insertChallenge, insertSession, listFactors, pendingChallenge, settleChallenge } from './store.js';
import { type Now, active, assertNotLocked, clearFailures, newChallenge, proofIsValid, proofShape, requireScaCustomer, wrongProof } from './service.js';

// SCA login: a challenge on an enrolled factor, completed with its proof.

// ---- Login ------------------------------------------------------------------------------

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
