// The sandbox's Strong Customer Authentication values (docs/sca.md). Nothing is sent to a
// phone and no WebAuthn signature is checked: the codes are fixed, and a passkey proof is
// accepted when it names the enrolled credential and an allowed origin.

/** The one code every SMS_OTP and TOTP proof takes (login, authorization, trust, TOTP enrollment). */
export const SCA_SANDBOX_CODE = '123456';

/** A login session lasts 180 days of platform time (the specification's limit). */
export const SCA_SESSION_TTL_MS = 180 * 24 * 60 * 60_000;

/** A challenge (login code, quote authorization step, trust change) is valid 5 minutes. */
export const SCA_CHALLENGE_TTL_MS = 5 * 60_000;

/** A TOTP or passkey enrollment must be confirmed within 10 minutes of its start. */
export const SCA_ENROLLMENT_TTL_MS = 10 * 60_000;

/** A challenge's SMS code can be sent again this many times (then 429 RATE_LIMITED). */
export const SCA_MAX_RESENDS = 5;

/**
 * Failed attempts → lock, the reference's escalation: the 5th consecutive failure locks the
 * login 15 minutes, the 6th 30 minutes, the 7th an hour, the 8th a day; the 9th suspends it
 * (no automatic expiry: only a 2FA reset or RESET_PASSWORD_COMPLETED clears it).
 */
export const SCA_LOCK_STEPS_MS: Readonly<Record<number, number>> = {
  5: 15 * 60_000,
  6: 30 * 60_000,
  7: 60 * 60_000,
  8: 24 * 60 * 60_000,
};
export const SCA_SUSPEND_AT = 9;

/** The lock a count of failures leads to: ms, 'SUSPENDED', or null (none). */
export function lockFor(failedAttempts: number): number | 'SUSPENDED' | null {
  if (failedAttempts >= SCA_SUSPEND_AT) return 'SUSPENDED';
  return SCA_LOCK_STEPS_MS[failedAttempts] ?? null;
}

/** 2FA reset: liveness is INITIATED for 30 s, PENDING_REVIEW until 60 s, then LIVENESS_PASSED. */
export const SCA_RESET_REVIEW_AFTER_MS = 30_000;
export const SCA_RESET_PASSED_AFTER_MS = 60_000;
/** A reset must be completed within 24 hours of its start (else EXPIRED). */
export const SCA_RESET_TTL_MS = 24 * 60 * 60_000;
/** At most 5 resets started per customer in any 24 hours (then 429 RATE_LIMITED). */
export const SCA_RESET_LIMIT = 5;
export const SCA_RESET_WINDOW_MS = 24 * 60 * 60_000;

/** The sandbox WebAuthn relying party and the origins a passkey ceremony may run against. */
export const SCA_RELYING_PARTY_ID = 'localhost';
export const SCA_PASSKEY_ORIGINS: readonly string[] = ['http://localhost', 'http://localhost:3000', 'https://localhost'];
