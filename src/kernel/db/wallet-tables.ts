// Table types of the embedded-wallets area (migration 0021_embedded_wallets, src/api/embedded-wallets), part of the
// DB interface in kernel/db/schema.ts.

/** One row per EMBEDDED_WALLET internal account: its provider-side names and sealed mnemonic. */
export interface EmbeddedWalletsTable {
  account_id: string;
  platform_id: string;
  /** The `organizationId` carried in the wallet's payloads (one per wallet, like a sub-organization). */
  organization_id: string;
  /** The wallet's `signWith` address in its transaction payloads. */
  wallet_address: string;
  /** The wallet's recovery mnemonic, sealed (kernel/sealed.ts, context embedded_wallets.mnemonic:<account id>). */
  mnemonic: string;
  created_at: string;
}

/** An authentication credential (AuthMethod) of a wallet. */
export interface WalletCredentialsTable {
  /** `AuthMethod:<uuid>`. */
  id: string;
  platform_id: string;
  account_id: string;
  /** EMAIL_OTP | SMS_OTP | OAUTH | PASSKEY. */
  type: string;
  nickname: string;
  /** ACTIVE | REVOKED. */
  status: string;
  /** PASSKEY: the WebAuthn credential id (base64url), its COSE public key (base64url), counter, RP ID, transports (JSON). */
  webauthn_id: string | null;
  webauthn_public_key: string | null;
  webauthn_counter: number | null;
  rp_id: string | null;
  transports: string | null;
  /** OAUTH: the registered identity. */
  oauth_iss: string | null;
  oauth_aud: string | null;
  oauth_sub: string | null;
  /** OTP: the private key of the current OTP encryption target (sealed), and when that OTP expires (epoch ms, platform clock). */
  otp_target_key: string | null;
  otp_expires_ms: number | null;
  created_at: string;
  updated_at: string;
}

/** A session opened by verifying a credential. */
export interface WalletSessionsTable {
  /** `Session:<uuid>`. */
  id: string;
  platform_id: string;
  account_id: string;
  /** The AuthMethod that opened it. */
  credential_id: string;
  /** Compressed SEC1 hex of the session signing key's public key. */
  public_key: string;
  /** A compressed clientPublicKey the client holds the private key of (client-held model), also accepted. */
  client_key: string | null;
  /** ACTIVE | REVOKED (expiry is read from expires_at_ms). */
  status: string;
  expires_at_ms: number;
  expires_at: string;
  created_at: string;
  updated_at: string;
}

/** A pending signed-retry challenge (`Request:<uuid>`): the payload to sign and what the retry must repeat. */
export interface WalletRequestsTable {
  id: string;
  platform_id: string;
  account_id: string;
  /** Which action (ADD_CREDENTIAL, REVOKE_CREDENTIAL, …). */
  kind: string;
  /** The resource acted on (credential, session, account, quote, delegated key). */
  target_id: string;
  /** Hash of the first call's body: the retry must carry the same. */
  body_hash: string;
  payload: string;
  /** JSON: what the first leg bound (keys, identities). */
  data: string;
  /** PENDING | USED. */
  status: string;
  expires_at_ms: number;
  created_at: string;
}

export interface DelegatedKeysTable {
  /** `DelegatedKey:<uuid>`. */
  id: string;
  platform_id: string;
  account_id: string;
  card_id: string;
  funding_source_id: string;
  /** Compressed SEC1 hex. */
  public_key: string;
  /** The custodied private key, sealed. */
  private_key: string;
  nickname: string;
  /** PENDING | ACTIVE | REVOKED. */
  status: string;
  created_at: string;
  updated_at: string;
}

export interface WalletSettingsTable {
  platform_id: string;
  /** JSON array of accepted WebAuthn origins (a trailing `:*` matches any port). */
  allowed_origins: string;
  updated_at: string;
}
