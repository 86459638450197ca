import { Type, type Static } from 'typebox';

// Strong Customer Authentication: factors, login sessions, security events, 2FA resets,
// quote authorization and trusted beneficiaries (docs/sca.md). Names follow the reference.

export const ScaFactor = Type.Enum(['SMS_OTP', 'TOTP', 'PASSKEY'], {
  title: 'ScaFactor',
  description: 'An SCA factor: SMS_OTP (a code sent to the customer’s phone, needs no enrollment), TOTP (authenticator app; not valid for per-payment challenges), PASSKEY (WebAuthn)',
});
export type ScaFactor = Static<typeof ScaFactor>;

export const CustomerIdQuery = Type.Object({ customerId: Type.String({ description: 'Customer:<uuid>' }) });
export const CredentialParams = Type.Object({ credentialId: Type.String({ description: 'The passkey’s credentialId' }) });
export const ResetParams = Type.Object({ resetId: Type.String({ description: 'The reset handle returned by the start' }) });

export const ScaFactorView = Type.Object(
  {
    factor: ScaFactor,
    credentialId: Type.Optional(Type.String({ description: 'PASSKEY only: the id to delete it with' })),
    name: Type.Optional(Type.String()),
  },
  { title: 'ScaFactorView' },
);
export type ScaFactorView = Static<typeof ScaFactorView>;

export const ScaFactorList = Type.Object({ factors: Type.Array(ScaFactorView) }, { title: 'ScaFactorList' });

export const ScaFactorEnrollRequest = Type.Object(
  { type: Type.Enum(['TOTP', 'PASSKEY'], { description: 'The factor to enroll (SMS_OTP needs no enrollment)' }) },
  { title: 'ScaFactorEnrollRequest' },
);

export const ScaFactorEnrollStart = Type.Object(
  {
    type: Type.Enum(['TOTP', 'PASSKEY']),
    secret: Type.Optional(Type.String({ description: 'TOTP: the shared secret, threaded back on the confirm call' })),
    secretBase32Encoded: Type.Optional(Type.String()),
    totpUri: Type.Optional(Type.String({ description: 'TOTP: the otpauth:// provisioning URI' })),
    options: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'PASSKEY: WebAuthn creation options' })),
    allowedOrigins: Type.Optional(Type.Array(Type.String())),
    relyingPartyId: Type.Optional(Type.String()),
  },
  { title: 'ScaFactorEnrollStart' },
);
export type ScaFactorEnrollStart = Static<typeof ScaFactorEnrollStart>;

export const ScaFactorConfirmRequest = Type.Object(
  {
    type: Type.Enum(['TOTP', 'PASSKEY']),
    secret: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'TOTP: the secret the start returned' })),
    code: Type.Optional(Type.String({ minLength: 1, maxLength: 32, description: 'TOTP: the first code (sandbox: always 123456)' })),
    origin: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'PASSKEY: one of the start’s allowedOrigins' })),
    credential: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'PASSKEY: the WebAuthn credential (its `id` becomes the credentialId)' })),
  },
  { title: 'ScaFactorConfirmRequest' },
);
export type ScaFactorConfirmRequest = Static<typeof ScaFactorConfirmRequest>;

export const ScaFactorConfirmResponse = Type.Object(
  {
    type: Type.Enum(['TOTP', 'PASSKEY']),
    recoveryCodes: Type.Optional(Type.Array(Type.String(), { description: 'TOTP: one-time recovery codes, shown once' })),
    factor: Type.Optional(ScaFactorView),
  },
  { title: 'ScaFactorConfirmResponse' },
);
export type ScaFactorConfirmResponse = Static<typeof ScaFactorConfirmResponse>;

export const ScaLoginStartRequest = Type.Object({ factor: ScaFactor }, { title: 'ScaLoginStartRequest' });

export const ScaLoginStart = Type.Object(
  {
    factor: ScaFactor,
    challengeId: Type.Optional(Type.String({ description: 'SMS_OTP: threaded back on the complete call' })),
    expiresAt: Type.Optional(Type.String({ format: 'date-time', description: 'SMS_OTP: when the code expires' })),
    passkeyOptions: Type.Optional(Type.Object({}, { additionalProperties: true })),
    allowedOrigins: Type.Optional(Type.Array(Type.String())),
    relyingPartyId: Type.Optional(Type.String()),
  },
  { title: 'ScaLoginStart' },
);
export type ScaLoginStart = Static<typeof ScaLoginStart>;

const Proof = {
  code: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 32 }), Type.Null()], { description: 'SMS_OTP / TOTP code (sandbox: always 123456)' })),
  passkeyAssertion: Type.Optional(Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()], { description: 'PASSKEY: the WebAuthn assertion' })),
  origin: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 512 }), Type.Null()], { description: 'PASSKEY: the origin the assertion was produced against' })),
};
export interface ProofFields {
  code?: string | null | undefined;
  passkeyAssertion?: object | null | undefined;
  origin?: string | null | undefined;
}

export const ScaLoginCompleteRequest = Type.Object(
  {
    factor: ScaFactor,
    endUserIpAddress: Type.String({ minLength: 1, maxLength: 64, description: 'The end user’s IP address' }),
    challengeId: Type.Optional(Type.Union([Type.String({ maxLength: 128 }), Type.Null()], { description: 'SMS_OTP: the login start’s challengeId' })),
    ...Proof,
  },
  { title: 'ScaLoginCompleteRequest' },
);
export type ScaLoginCompleteRequest = Static<typeof ScaLoginCompleteRequest>;

export const ScaLoginComplete = Type.Object(
  {
    status: Type.String({ description: 'SUCCESS for a completed login' }),
    sessionExpiresAt: Type.Optional(Type.String({ format: 'date-time', description: 'When the session ends: 180 days of platform time after the login' })),
  },
  { title: 'ScaLoginComplete' },
);
export type ScaLoginComplete = Static<typeof ScaLoginComplete>;

export const SecurityEventType = Type.Enum(['RESET_PASSWORD_COMPLETED', 'FAILED_LOGIN_ATTEMPT']);
export const RecordSecurityEventRequest = Type.Object({ eventType: SecurityEventType }, { title: 'RecordSecurityEventRequest' });
export const RecordSecurityEventResponse = Type.Object(
  {
    eventType: SecurityEventType,
    suspended: Type.Boolean(),
    failedAttempts: Type.Integer({ minimum: 0 }),
    lockedUntil: Type.Optional(Type.Union([Type.String({ format: 'date-time' }), Type.Null()])),
  },
  { title: 'RecordSecurityEventResponse' },
);
export type RecordSecurityEventResponse = Static<typeof RecordSecurityEventResponse>;

export const TwoFactorResetStartRequest = Type.Object({ factor: ScaFactor }, { title: 'TwoFactorResetStartRequest' });
export const TwoFactorResetStart = Type.Object(
  {
    resetId: Type.String(),
    expiresAt: Type.Optional(Type.String({ format: 'date-time' })),
    livenessAccessToken: Type.Optional(Type.String()),
    verificationLink: Type.Optional(Type.String()),
  },
  { title: 'TwoFactorResetStart' },
);
export type TwoFactorResetStart = Static<typeof TwoFactorResetStart>;

export const TwoFactorResetStatus = Type.Object(
  {
    status: Type.Enum(['INITIATED', 'PENDING_REVIEW', 'LIVENESS_PASSED', 'COMPLETED', 'REJECTED', 'EXPIRED']),
    factor: ScaFactor,
    expiresAt: Type.String({ format: 'date-time' }),
    completedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    enrollmentStatus: Type.Union([Type.Enum(['PENDING', 'COMPLETED']), Type.Null()]),
  },
  { title: 'TwoFactorResetStatus' },
);
export type TwoFactorResetStatus = Static<typeof TwoFactorResetStatus>;

export const TwoFactorResetCompleteRequest = Type.Object(
  {
    mobile: Type.Optional(
      Type.Object({
        countryCode: Type.String({ pattern: '^\\+[0-9]{1,4}$', description: 'Dialing code with its +' }),
        number: Type.String({ pattern: '^[0-9]{4,14}$', description: 'The national number' }),
      }),
    ),
  },
  { title: 'TwoFactorResetCompleteRequest' },
);
export type TwoFactorResetCompleteRequest = Static<typeof TwoFactorResetCompleteRequest>;

export const ScaChallenge = Type.Object(
  {
    id: Type.String({ description: 'ScaChallenge:<uuid>' }),
    expiresAt: Type.String({ format: 'date-time', description: 'After this the challenge can no longer be authorized' }),
    factor: ScaFactor,
    availableFactors: Type.Array(ScaFactor),
    purpose: Type.Optional(Type.String({ description: 'What this step authorizes: CURRENCY_CONVERSION, PAYOUT, TRANSFER, BENEFICIARY_TRUST, BENEFICIARY_UNTRUST (informational; the set may grow)' })),
    passkeyAssertionOptions: Type.Optional(Type.Object({}, { additionalProperties: true })),
    passkeyAllowedOrigins: Type.Optional(Type.Array(Type.String())),
  },
  { title: 'ScaChallenge' },
);
export type ScaChallenge = Static<typeof ScaChallenge>;

export const ScaAuthorization = Type.Object(
  {
    ...Proof,
    endUserIpAddress: Type.Optional(Type.Union([Type.String({ maxLength: 64 }), Type.Null()])),
  },
  { title: 'ScaAuthorization' },
);
export type ScaAuthorization = Static<typeof ScaAuthorization>;

export const BeneficiaryTrustStart = Type.Object({ scaChallenge: Type.Optional(ScaChallenge) }, { title: 'BeneficiaryTrustStart' });
export type BeneficiaryTrustStart = Static<typeof BeneficiaryTrustStart>;
export const BeneficiaryTrustConfirmRequest = Type.Object(
  { challengeId: Type.Optional(Type.Union([Type.String({ maxLength: 128 }), Type.Null()])), ...Proof },
  { title: 'BeneficiaryTrustConfirmRequest' },
);
export type BeneficiaryTrustConfirmRequest = Static<typeof BeneficiaryTrustConfirmRequest>;
export const BeneficiaryTrustConfirm = Type.Object({ trusted: Type.Boolean() }, { title: 'BeneficiaryTrustConfirm' });
