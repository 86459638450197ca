import { Type, type Static } from 'typebox';

// Embedded Wallet Auth: credentials, sessions, delegated keys, and the signed-retry shapes
// (reference names). Request bodies are one object per operation whose fields depend on
// `type`; the service checks the per-type fields and lists every one that is wrong.

export const AUTH_METHOD_TYPES = ['OAUTH', 'EMAIL_OTP', 'SMS_OTP', 'PASSKEY'] as const;
export type AuthMethodType = (typeof AUTH_METHOD_TYPES)[number];
export const AuthMethodType = Type.Enum([...AUTH_METHOD_TYPES], { title: 'AuthMethodType', description: 'OAUTH: an OIDC identity; EMAIL_OTP / SMS_OTP: a one-time code to the email / phone on file; PASSKEY: a WebAuthn passkey' });

const P256_KEY = '^(0[23][0-9a-fA-F]{64}|04[0-9a-fA-F]{128})$';
const ClientPublicKey = Type.String({
  pattern: P256_KEY,
  description: 'Client-generated P-256 public key, SEC1 hex: compressed (66 hex, the client keeps it as the session signing key) or uncompressed (130 hex, the session signing key is sealed to it)',
});

const authMethodProps = {
  id: Type.String({ description: 'AuthMethod:<uuid>' }),
  accountId: Type.String({ description: 'The EMBEDDED_WALLET internal account the credential authenticates' }),
  type: AuthMethodType,
  credentialId: Type.Optional(Type.String({ description: 'PASSKEY only: the base64url WebAuthn credential id' })),
  nickname: Type.String({ description: 'EMAIL_OTP: the email; SMS_OTP: the phone number; OAUTH: the email claim (else the subject); PASSKEY: the nickname given at registration' }),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
};

export const AuthMethod = Type.Object(authMethodProps, { title: 'AuthMethod' });
export type AuthMethod = Static<typeof AuthMethod>;

export const AuthMethodResponse = Type.Object(
  {
    ...authMethodProps,
    otpEncryptionTargetBundle: Type.Optional(Type.String({ description: 'OTP credentials, when an OTP was issued: the HPKE target bundle to seal {otp_code, public_key} to' })),
  },
  { title: 'AuthMethodResponse' },
);
export type AuthMethodResponse = Static<typeof AuthMethodResponse>;

const challengeProps = {
  payloadToSign: Type.String({ description: 'Stamp these exact bytes with the signing key and retry with Service-Wallet-Signature and Request-Id' }),
  requestId: Type.String({ description: 'Request:<uuid>: echo it in the Request-Id header of the signed retry' }),
  expiresAt: Type.String({ format: 'date-time', description: 'The signed retry must come before this time' }),
};

export const SignedRequestChallenge = Type.Object(challengeProps, { title: 'SignedRequestChallenge' });
export type SignedRequestChallenge = Static<typeof SignedRequestChallenge>;

export const AuthSignedRequestChallenge = Type.Object({ ...challengeProps, type: AuthMethodType }, { title: 'AuthSignedRequestChallenge' });
export type AuthSignedRequestChallenge = Static<typeof AuthSignedRequestChallenge>;

export const PasskeyAuthChallenge = Type.Object(
  {
    ...authMethodProps,
    credentialId: Type.String({ description: 'The base64url WebAuthn credential id, for allowCredentials' }),
    challenge: Type.String({ description: 'Lowercase hex SHA-256 of the pending session-creation payload; its UTF-8 bytes are the WebAuthn challenge' }),
    requestId: Type.String({ description: 'Request:<uuid>: echo it in Request-Id on verify' }),
    expiresAt: Type.String({ format: 'date-time' }),
  },
  { title: 'PasskeyAuthChallenge' },
);
export type PasskeyAuthChallenge = Static<typeof PasskeyAuthChallenge>;

export const AuthCredentialChallengeResponse = Type.Union([PasskeyAuthChallenge, AuthMethodResponse], { title: 'AuthCredentialResponseOneOf' });

export const AuthSession = Type.Object(
  {
    ...authMethodProps,
    id: Type.String({ description: 'Session:<uuid>' }),
    encryptedSessionSigningKey: Type.Optional(
      Type.String({ description: 'The session signing key (32-byte P-256 scalar) HPKE-sealed to the clientPublicKey: base58check of the compressed encapsulated key followed by the AES-256-GCM ciphertext. Never in lists' }),
    ),
    expiresAt: Type.String({ format: 'date-time', description: 'After this time the session signs nothing' }),
  },
  { title: 'AuthSession' },
);
export type AuthSession = Static<typeof AuthSession>;

export const PasskeyAttestation = Type.Object(
  {
    credentialId: Type.String({ minLength: 1, description: 'base64url of PublicKeyCredential.rawId' }),
    clientDataJson: Type.String({ minLength: 1, description: 'base64url clientDataJSON of navigator.credentials.create()' }),
    attestationObject: Type.String({ minLength: 1, description: 'base64url CBOR attestation object' }),
    transports: Type.Optional(Type.Array(Type.Enum(['usb', 'nfc', 'ble', 'internal', 'hybrid']))),
  },
  { title: 'PasskeyAttestation' },
);

export const PasskeyAssertion = Type.Object(
  {
    credentialId: Type.String({ minLength: 1 }),
    clientDataJson: Type.String({ minLength: 1 }),
    authenticatorData: Type.String({ minLength: 1 }),
    signature: Type.String({ minLength: 1 }),
    userHandle: Type.Optional(Type.String()),
  },
  { title: 'PasskeyAssertion' },
);

export const AuthCredentialCreateRequest = Type.Object(
  {
    type: AuthMethodType,
    accountId: Type.String({ description: 'The EMBEDDED_WALLET internal account' }),
    oidcToken: Type.Optional(Type.String({ description: 'OAUTH: the OIDC ID token (JWT)' })),
    nickname: Type.Optional(Type.String({ description: 'PASSKEY: 1-100 characters' })),
    challenge: Type.Optional(Type.String({ description: 'PASSKEY: the base64url registration challenge the platform issued' })),
    attestation: Type.Optional(PasskeyAttestation),
  },
  { title: 'AuthCredentialCreateRequest' },
);
export type AuthCredentialCreateRequest = Static<typeof AuthCredentialCreateRequest>;

export const AuthCredentialVerifyRequest = Type.Object(
  {
    type: AuthMethodType,
    encryptedOtpBundle: Type.Optional(Type.String({ description: 'EMAIL_OTP / SMS_OTP: JSON {encappedPublic, ciphertext} (hex) of the HPKE-sealed {otp_code, public_key}' })),
    oidcToken: Type.Optional(Type.String({ description: 'OAUTH: a fresh OIDC ID token' })),
    clientPublicKey: Type.Optional(ClientPublicKey),
    assertion: Type.Optional(PasskeyAssertion),
  },
  { title: 'AuthCredentialVerifyRequest' },
);
export type AuthCredentialVerifyRequest = Static<typeof AuthCredentialVerifyRequest>;

export const AuthCredentialChallengeRequest = Type.Object({ clientPublicKey: Type.Optional(ClientPublicKey) }, { title: 'AuthCredentialChallengeRequest' });
export type AuthCredentialChallengeRequest = Static<typeof AuthCredentialChallengeRequest>;

export const AuthSessionRefreshRequest = Type.Object({ clientPublicKey: ClientPublicKey }, { title: 'AuthSessionRefreshRequest' });

export const AccountQuery = Type.Object({ accountId: Type.String({ pattern: '^InternalAccount:[0-9a-fA-F-]{36}$', description: 'InternalAccount:<uuid>' }) });

export const AuthCredentialListResponse = Type.Object({ data: Type.Array(AuthMethod) }, { title: 'AuthCredentialListResponse' });
export const SessionListResponse = Type.Object({ data: Type.Array(AuthSession) }, { title: 'SessionListResponse' });

export const IdParams = Type.Object({ id: Type.String() });

export const InternalAccountUpdateRequest = Type.Object(
  { privateEnabled: Type.Optional(Type.Boolean({ description: 'Whether wallet privacy is enabled' })) },
  { title: 'InternalAccountUpdateRequest' },
);
export type InternalAccountUpdateRequest = Static<typeof InternalAccountUpdateRequest>;

export const InternalAccountExportRequest = Type.Object(
  { clientPublicKey: Type.String({ pattern: '^04[0-9a-fA-F]{128}$', description: 'A fresh P-256 public key, uncompressed SEC1 hex (130 characters)' }) },
  { title: 'InternalAccountExportRequest' },
);

export const InternalAccountExportResponse = Type.Object(
  {
    id: Type.String({ description: 'The exported internal account' }),
    encryptedWalletCredentials: Type.String({
      description: 'JSON {version, data, dataSignature, enclaveQuorumPublic}: data is hex of JSON {encappedPublic, ciphertext, organizationId}, the wallet mnemonic HPKE-sealed to clientPublicKey',
    }),
  },
  { title: 'InternalAccountExportResponse' },
);

export const DELEGATED_KEY_STATUSES = ['PENDING', 'ACTIVE', 'REVOKED'] as const;
export const DelegatedKey = Type.Object(
  {
    id: Type.String({ description: 'DelegatedKey:<uuid>' }),
    cardId: Type.String(),
    fundingSourceId: Type.String({ description: 'CardFundingSource:<uuid> of the (card, wallet) pair' }),
    accountId: Type.String({ description: 'The EMBEDDED_WALLET internal account' }),
    publicKey: Type.String({ description: 'Compressed P-256 public key (hex); the private key is custodied and never returned' }),
    nickname: Type.String(),
    status: Type.Enum([...DELEGATED_KEY_STATUSES], { title: 'DelegatedKeyStatus' }),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { title: 'DelegatedKey' },
);
export type DelegatedKey = Static<typeof DelegatedKey>;

export const DelegatedKeyCreateRequest = Type.Object(
  {
    cardId: Type.String({ pattern: '^Card:.+$', description: 'Card:<id>' }),
    internalAccountId: Type.String({ description: 'The EMBEDDED_WALLET internal account funding the card' }),
    nickname: Type.String({ minLength: 1, maxLength: 256 }),
  },
  { title: 'DelegatedKeyCreateRequest' },
);
export type DelegatedKeyCreateRequest = Static<typeof DelegatedKeyCreateRequest>;

export const DelegatedKeyQuery = Type.Object({ accountId: Type.Optional(Type.String()), fundingSourceId: Type.Optional(Type.String()) });
export const DelegatedKeyListResponse = Type.Object({ data: Type.Array(DelegatedKey) }, { title: 'DelegatedKeyListResponse' });

export const PasskeySettings = Type.Object(
  {
    allowedOrigins: Type.Array(Type.String({ minLength: 1, maxLength: 255, pattern: '^https?://[^/\\s]+$' }), {
      minItems: 1,
      maxItems: 50,
      description: 'Origins accepted in WebAuthn client data (scheme://host[:port]); a trailing :* accepts any port',
    }),
  },
  { title: 'PasskeySettings' },
);

export const SignedHeaders = Type.Object({
  'service-wallet-signature': Type.Optional(
    Type.String({
      description:
        'The stamp over the pending payloadToSign (required on the signed retry). Also accepted under the vendor’s name Grid-Wallet-Signature (what its CLI and SDK helpers send); both with different stamps: 401 WALLET_SIGNATURE_MALFORMED',
    }),
  ),
  'request-id': Type.Optional(Type.String({ description: 'The requestId of the 202 answer (required on the signed retry)' })),
});
