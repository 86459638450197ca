import type { Kysely, Transaction } from 'kysely';
import type { Store } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { apiError, invalidInput, notFound } from '../../kernel/errors.js';
import type { Sealer } from '../../kernel/sealed.js';
import { requireInternalAccount } from '../internal-accounts/service.js';
import type { InternalAccountRow } from '../internal-accounts/store.js';
import { pointOf, sha256Hex } from './crypto.js';
import type { AuthMethod, AuthMethodType, AuthSession } from './schemas.js';
import * as store from './store.js';
import type { CredentialRow, SessionRow, WalletRow } from './store.js';

type Db = Kysely<DB> | Transaction<DB>;

/** @simplewebauthn/server, loaded at the first passkey ceremony (half a second of start-up otherwise). */
let webauthnOnce: Promise<typeof import('@simplewebauthn/server')> | undefined;
export const webauthn = () => (webauthnOnce ??= import('@simplewebauthn/server'));

// Embedded wallets (docs/embedded-wallets.md): the EMBEDDED_WALLET internal account of a
// customer, the credentials that authenticate its owner, the sessions they open, and the
// signed-retry protocol every wallet action goes through (first call 202 with a payload to
// sign; the retry carries a stamp made with a key of an active session of the wallet).

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

export function unauthorized(reason: string, message = `Authentication failed: ${reason}`) {
  return apiError(401, 'UNAUTHORIZED', message, { reason });
}

/**
 * A client key must be a point of P-256: SEC1 hex of the right length (the schemas' pattern)
 * can still be off the curve (e.g. 04 followed by 64 zero bytes). 400 INVALID_INPUT naming
 * the field, before any challenge is issued or anything written.
 */
export function requirePoint(hex: string | undefined, field: string): void {
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

export const bodyHash = (body: unknown) => sha256Hex(stable(body ?? {}));

// ---- Views ------------------------------------------------------------------------------------

export function credentialView(row: CredentialRow): AuthMethod {
  const v: AuthMethod = { id: row.id, accountId: row.account_id, type: row.type as AuthMethodType, nickname: row.nickname, createdAt: row.created_at, updatedAt: row.updated_at };
  if (row.webauthn_id !== null) v.credentialId = row.webauthn_id;
  return v;
}

export function sessionView(row: SessionRow, cred: Pick<CredentialRow, 'type' | 'nickname' | 'webauthn_id'>): AuthSession {
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
export async function requireWallet(db: Db, platformId: string, accountId: string, field = 'accountId'): Promise<{ account: InternalAccountRow; wallet: WalletRow }> {
  const account = await requireInternalAccount(db, platformId, accountId);
  const wallet = account.type === 'EMBEDDED_WALLET' ? await store.findWallet(db, platformId, accountId) : undefined;
  if (!wallet) throw invalidInput([{ field, message: `is a ${account.type} account, not an EMBEDDED_WALLET` }]);
  return { account, wallet };
}

export async function requireCredential(db: Db, platformId: string, id: string): Promise<CredentialRow> {
  const row = await store.findCredential(db, platformId, id);
  if (!row) throw notFound('REFERENCE_NOT_FOUND', 'Authentication credential', id);
  return row;
}

export function activity(wallet: WalletRow, type: string, parameters: Record<string, unknown>, nowMs: number): string {
  return JSON.stringify({ organizationId: wallet.organization_id, parameters, timestampMs: String(nowMs), type });
}
