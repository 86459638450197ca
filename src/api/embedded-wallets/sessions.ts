import type { Kysely, Transaction } from 'kysely';
import type { DB } from '../../kernel/db/schema.js';
import { invalidInput, notFound } from '../../kernel/errors.js';
import { newId } from '../../kernel/ids.js';
import { bytesToHex, compressedKey, newKeyPair, sessionBundle, uncompressedKey } from './crypto.js';
import type { AuthMethodType, AuthSession, AuthSignedRequestChallenge, SignedRequestChallenge } from './schemas.js';
import * as store from './store.js';
import type { CredentialRow, SessionRow } from './store.js';
import { type Now, SESSION_TTL_MS, type SignedHeaders, type WalletDeps, activity, requirePoint, sessionView, unauthorized } from './service.js';
import { type Pending, challengeOf, issue, legOf, retry } from './signed-retry.js';

// Wallet sessions: opened by verifying a credential, listed, refreshed, revoked (signed).

type Db = Kysely<DB> | Transaction<DB>;

// ---- Sessions ---------------------------------------------------------------------------------

/**
 * Open a session for a verified credential. OTP: the TEK is the session key. PASSKEY/OAUTH:
 * a new session key sealed to clientPublicKey (encryptedSessionSigningKey); a compressed
 * clientPublicKey is also accepted as the session's key (the client-held model).
 */
export async function openSession(db: Db, platformId: string, now: Now, cred: CredentialRow, keys: { tek: string } | { clientPublicKey: string }): Promise<AuthSession> {
  const expires = now.ms + SESSION_TTL_MS;
  let publicKey: string;
  let clientKey: string | null = null;
  let sealed: string | undefined;
  if ('tek' in keys) {
    publicKey = keys.tek;
  } else {
    const recipient = uncompressedKey(keys.clientPublicKey);
    // Checked where the key came in (requirePoint); a key that is not a point never reaches here.
    if (recipient === undefined) throw invalidInput([{ field: 'clientPublicKey', message: 'is not a point of the P-256 curve' }]);
    const kp = newKeyPair();
    publicKey = bytesToHex(kp.publicKey);
    if (keys.clientPublicKey.length === 66) clientKey = compressedKey(keys.clientPublicKey)!;
    sealed = await sessionBundle(kp.privateKey, recipient);
  }
  const row: SessionRow = {
    id: newId('Session'),
    platform_id: platformId,
    account_id: cred.account_id,
    credential_id: cred.id,
    public_key: publicKey,
    client_key: clientKey,
    status: 'ACTIVE',
    expires_at_ms: expires,
    expires_at: new Date(expires).toISOString(),
    created_at: now.at,
    updated_at: now.at,
  };
  await store.insertSession(db, row);
  const v = sessionView(row, cred);
  if (sealed !== undefined) v.encryptedSessionSigningKey = sealed;
  return v;
}

export async function listSessions(db: Db, platformId: string, accountId: string, now: Now): Promise<{ data: AuthSession[] }> {
  const creds = new Map((await db.selectFrom('wallet_credentials').selectAll().where('platform_id', '=', platformId).where('account_id', '=', accountId).execute()).map((c) => [c.id, c]));
  const sessions = await store.activeSessions(db, platformId, accountId, now.ms);
  return { data: sessions.filter((s) => creds.has(s.credential_id)).map((s) => sessionView(s, creds.get(s.credential_id)!)) };
}

async function requireSession(db: Db, platformId: string, id: string, now: Now): Promise<SessionRow> {
  const row = await store.findActiveSession(db, platformId, id, now.ms);
  if (!row) throw notFound('REFERENCE_NOT_FOUND', 'Session', id);
  return row;
}

export async function revokeSession(deps: WalletDeps, platformId: string, now: Now, id: string, h: SignedHeaders): Promise<AuthSignedRequestChallenge | null> {
  return deps.store.db.transaction().execute(async (trx) => {
    const session = await requireSession(trx, platformId, id, now);
    const cred = await trx.selectFrom('wallet_credentials').select('type').where('id', '=', session.credential_id).executeTakeFirstOrThrow();
    const p: Pending = { kind: 'REVOKE_SESSION', accountId: session.account_id, targetId: id, body: {} };
    if (legOf(h) === 'first') {
      const wallet = (await store.findWallet(trx, platformId, session.account_id))!;
      const c = await issue(trx, platformId, now, p, activity(wallet, 'ACTIVITY_TYPE_DELETE_SESSIONS', { sessionIds: [id] }, now.ms));
      return { ...challengeOf(c), type: cred.type as AuthMethodType };
    }
    await retry(trx, platformId, now, h, p, { kind: 'session' });
    await store.revokeSessions(trx, platformId, { id }, now.at);
    return null;
  });
}

export async function refreshSession(deps: WalletDeps, platformId: string, now: Now, id: string, clientPublicKey: string, h: SignedHeaders): Promise<{ challenge: SignedRequestChallenge } | { session: AuthSession }> {
  requirePoint(clientPublicKey, 'clientPublicKey');
  return deps.store.db.transaction().execute(async (trx) => {
    const any = await trx.selectFrom('wallet_sessions').selectAll().where('platform_id', '=', platformId).where('id', '=', id).executeTakeFirst();
    if (!any) throw notFound('REFERENCE_NOT_FOUND', 'Session', id);
    if (any.status !== 'ACTIVE' || Number(any.expires_at_ms) <= now.ms) throw unauthorized('session is no longer active', `Session ${id} is no longer active: verify a credential again`);
    const p: Pending = { kind: 'REFRESH_SESSION', accountId: any.account_id, targetId: id, body: { clientPublicKey } };
    if (legOf(h) === 'first') {
      const wallet = (await store.findWallet(trx, platformId, any.account_id))!;
      return { challenge: challengeOf(await issue(trx, platformId, now, p, activity(wallet, 'ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2', { targetPublicKey: clientPublicKey }, now.ms))) };
    }
    await retry(trx, platformId, now, h, p, { kind: 'session', onlySessionId: id });
    const cred = await trx.selectFrom('wallet_credentials').selectAll().where('id', '=', any.credential_id).executeTakeFirstOrThrow();
    await store.revokeSessions(trx, platformId, { id }, now.at);
    return { session: await openSession(trx, platformId, now, cred, { clientPublicKey }) };
  });
}
