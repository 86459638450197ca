import type { Kysely, Transaction } from 'kysely';
import type { DB } from '../../kernel/db/schema.js';
import { apiError } from '../../kernel/errors.js';
import { newId } from '../../kernel/ids.js';
import { LEGACY_WALLET_SIGNATURE, parseStamp, verifyStamp } from './crypto.js';
import type { SignedRequestChallenge } from './schemas.js';
import * as store from './store.js';
import type { RequestRow } from './store.js';
import { CHALLENGE_TTL_MS, type Now, type SignedHeaders, bodyHash, unauthorized } from './service.js';

// The signed-retry protocol of wallet actions: the first call answers 202 with payloadToSign
// and requestId; the retry carries the session's stamp (docs/embedded-wallets.md).

type Db = Kysely<DB> | Transaction<DB>;

// ---- The signed-retry protocol ----------------------------------------------------------------

type Signer =
  /** Any active session of the wallet (optionally: not one of this credential; or only this session). */
  | { kind: 'session'; notCredentialId?: string; onlySessionId?: string }
  /** The public key the first leg bound (request data.publicKey). */
  | { kind: 'bound' };

export interface Pending {
  kind: string;
  accountId: string;
  targetId: string;
  body: unknown;
}

/** Which leg a call is: 'first' without signature headers; a retry otherwise (both headers needed). */
export function legOf(h: SignedHeaders): 'first' | 'retry' {
  const sig = h.signature?.trim() || undefined;
  const rid = h.requestId?.trim() || undefined;
  if (!sig && !rid) return 'first';
  if (!sig) throw apiError(401, 'WALLET_SIGNATURE_MISSING', 'The signed retry needs the Service-Wallet-Signature header (or its alias Grid-Wallet-Signature)');
  if (!rid) throw apiError(401, 'REQUEST_ID_MISSING', 'The signed retry needs the Request-Id header of the 202 answer');
  return 'retry';
}

export async function issue(db: Db, platformId: string, now: Now, p: Pending, payload: string, data: Record<string, unknown> = {}, ttlMs = CHALLENGE_TTL_MS): Promise<SignedRequestChallenge & { row: RequestRow }> {
  const expires = now.ms + ttlMs;
  const row: RequestRow = {
    id: newId('Request'),
    platform_id: platformId,
    account_id: p.accountId,
    kind: p.kind,
    target_id: p.targetId,
    body_hash: bodyHash(p.body),
    payload,
    data: JSON.stringify(data),
    status: 'PENDING',
    expires_at_ms: expires,
    created_at: now.at,
  };
  await store.insertRequest(db, row);
  return { payloadToSign: payload, requestId: row.id, expiresAt: new Date(expires).toISOString(), row };
}

export function challengeOf(c: SignedRequestChallenge): SignedRequestChallenge {
  return { payloadToSign: c.payloadToSign, requestId: c.requestId, expiresAt: c.expiresAt };
}

/** Check a signed retry against its pending request and consume it; answers the session that signed (null: the legacy value). */
export async function retry(db: Db, platformId: string, now: Now, h: SignedHeaders, p: Pending, signer: Signer): Promise<{ request: RequestRow; sessionId: string | null }> {
  // A stamp that does not parse is malformed whatever the Request-Id names (checked again, with its key, below).
  const header = h.signature!.trim();
  if (header !== LEGACY_WALLET_SIGNATURE && !parseStamp(header)) throw malformedSignature();
  const rid = h.requestId!.trim();
  const request = await store.findRequest(db, platformId, rid);
  if (!request || request.kind !== p.kind || request.target_id !== p.targetId || request.status !== 'PENDING' || Number(request.expires_at_ms) <= now.ms) {
    throw unauthorized('Request-Id does not match an unexpired pending challenge of this operation', `Request-Id ${rid} does not match an unexpired pending challenge of this operation`);
  }
  if (request.body_hash !== bodyHash(p.body)) {
    throw apiError(401, 'WALLET_SIGNATURE_BODY_MISMATCH', 'The signed retry carries a different body from the call that issued the challenge: the signature covers that one');
  }
  const data = JSON.parse(request.data) as Record<string, unknown>;
  const sessionId = await checkSignature(db, platformId, now, header, request.payload, request.account_id, signer, data);
  if (!(await store.useRequest(db, platformId, request.id))) throw unauthorized('the challenge was already used', `Request-Id ${rid} was already used`);
  return { request, sessionId };
}

function malformedSignature() {
  return apiError(401, 'WALLET_SIGNATURE_MALFORMED', 'Service-Wallet-Signature is not a stamp: base64url of JSON {publicKey, scheme: SIGNATURE_SCHEME_TK_API_P256, signature (DER hex)}');
}

/**
 * Verify a stamp over `payload`: it parses, its P-256 signature verifies over the exact
 * payload bytes, and its key is the one the action needs. The legacy sandbox value passes.
 */
export async function checkSignature(db: Db, platformId: string, now: Now, header: string, payload: string, accountId: string, signer: Signer, data: Record<string, unknown>): Promise<string | null> {
  if (header === LEGACY_WALLET_SIGNATURE) return null;
  const stamp = parseStamp(header);
  if (!stamp) throw malformedSignature();
  if (!verifyStamp(stamp, payload)) {
    throw apiError(401, 'WALLET_SIGNATURE_INVALID', 'The wallet signature does not verify over the pending payloadToSign', { reason: 'signature does not verify over the payload' });
  }
  if (signer.kind === 'bound') {
    if (stamp.publicKey !== data.publicKey) {
      throw apiError(401, 'WALLET_SIGNATURE_INVALID', 'The wallet signature was made with another key than the one this challenge is bound to', { reason: 'signing key is not the bound key' });
    }
    return null;
  }
  const sessions = await store.activeSessions(db, platformId, accountId, now.ms);
  const session = sessions.find((s) => s.public_key === stamp.publicKey || s.client_key === stamp.publicKey);
  if (!session) {
    throw apiError(401, 'WALLET_SIGNATURE_INVALID', 'The signing key is not the key of an active session of this wallet', { reason: 'signing key is not an active session of the wallet' });
  }
  if (signer.notCredentialId !== undefined && session.credential_id === signer.notCredentialId) {
    throw apiError(401, 'WALLET_SIGNATURE_INVALID', 'A credential is revoked with a session of another credential of the wallet', { reason: 'session belongs to the credential being revoked' });
  }
  if (signer.onlySessionId !== undefined && session.id !== signer.onlySessionId) {
    throw apiError(401, 'WALLET_SIGNATURE_INVALID', 'A session is refreshed with its own signing key', { reason: 'signing key is not the key of the session being refreshed' });
  }
  return session.id;
}
