import type { Kysely, Transaction } from 'kysely';
import type { DB } from '../../kernel/db/schema.js';
import { apiError, invalidInput, notFound } from '../../kernel/errors.js';
import { findCard } from '../cards/store.js';
import { newId } from '../../kernel/ids.js';
import { bytesToHex, newKeyPair, sha256Hex } from './crypto.js';
import type { DelegatedKey, DelegatedKeyCreateRequest, SignedRequestChallenge } from './schemas.js';
import * as store from './store.js';
import type { DelegatedKeyRow } from './store.js';
import { type Now, type SignedHeaders, type WalletDeps, activity } from './service.js';
import { type Pending, challengeOf, issue, legOf, retry } from './signed-retry.js';

// Delegated keys: a card's spending key on a wallet (created, listed, revoked).

type Db = Kysely<DB> | Transaction<DB>;

// ---- Delegated keys -----------------------------------------------------------------------------

function delegatedView(row: DelegatedKeyRow): DelegatedKey {
  return {
    id: row.id,
    cardId: row.card_id,
    fundingSourceId: row.funding_source_id,
    accountId: row.account_id,
    publicKey: row.public_key,
    nickname: row.nickname,
    status: row.status as DelegatedKey['status'],
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** The card funding source of a (card, wallet) pair: a stable id derived from both. */
export function fundingSourceIdOf(platformId: string, cardId: string, accountId: string): string {
  const h = sha256Hex(`${platformId}|${cardId}|${accountId}`);
  return `CardFundingSource:${h.slice(0, 8)}-${h.slice(8, 12)}-7${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

export async function createDelegatedKey(deps: WalletDeps, platformId: string, now: Now, body: DelegatedKeyCreateRequest, h: SignedHeaders): Promise<{ status: 202; body: SignedRequestChallenge } | { status: 201; body: DelegatedKey }> {
  return deps.store.db.transaction().execute(async (trx) => {
    const account = await trx.selectFrom('internal_accounts').selectAll().where('platform_id', '=', platformId).where('id', '=', body.internalAccountId).executeTakeFirst();
    const wallet = account?.type === 'EMBEDDED_WALLET' ? await store.findWallet(trx, platformId, account.id) : undefined;
    if (!account || !wallet) throw notFound('REFERENCE_NOT_FOUND', 'Embedded wallet funding account', body.internalAccountId);
    // The card must be one of the platform's, issued to the wallet's owner (src/api/cards).
    const card = await findCard(trx, platformId, body.cardId);
    if (!card || card.customer_id !== account.customer_id) throw notFound('REFERENCE_NOT_FOUND', 'Card of the wallet’s customer', body.cardId);
    const fundingSourceId = fundingSourceIdOf(platformId, body.cardId, account.id);
    const active = await store.activeDelegatedKeyFor(trx, platformId, fundingSourceId);
    if (active) throw apiError(409, 'CONFLICT', `Delegated key ${active.id} is ACTIVE for this card funding source: revoke it first`, { delegatedKeyId: active.id, fundingSourceId });
    const leg1: Pending = { kind: 'DELEGATED_KEY_1', accountId: account.id, targetId: account.id, body };
    if (legOf(h) === 'first') {
      const kp = newKeyPair();
      const publicKey = bytesToHex(kp.publicKey);
      const payload = activity(wallet, 'ACTIVITY_TYPE_CREATE_USERS_V3', { users: [{ apiKeys: [{ apiKeyName: body.nickname, curveType: 'API_KEY_CURVE_P256', publicKey }], userName: `delegated-${publicKey.slice(0, 12)}` }] }, now.ms);
      const c = await issue(trx, platformId, now, leg1, payload, { publicKey, privateKey: deps.sealer.seal(bytesToHex(kp.privateKey), `delegated_keys.private_key:${publicKey}`) });
      return { status: 202 as const, body: challengeOf(c) };
    }
    const pending = await store.findRequest(trx, platformId, h.requestId!.trim());
    if (pending?.kind === 'DELEGATED_KEY_2') {
      const { request } = await retry(trx, platformId, now, h, { ...leg1, kind: 'DELEGATED_KEY_2' }, { kind: 'session' });
      const keyId = (JSON.parse(request.data) as { keyId: string }).keyId;
      await store.setDelegatedKeyStatus(trx, platformId, keyId, 'PENDING', 'ACTIVE', now.at);
      return { status: 201 as const, body: delegatedView((await store.findDelegatedKey(trx, platformId, keyId))!) };
    }
    const { request } = await retry(trx, platformId, now, h, leg1, { kind: 'session' });
    const data = JSON.parse(request.data) as { publicKey: string; privateKey: string };
    const row: DelegatedKeyRow = {
      id: newId('DelegatedKey'),
      platform_id: platformId,
      account_id: account.id,
      card_id: body.cardId,
      funding_source_id: fundingSourceId,
      public_key: data.publicKey,
      private_key: data.privateKey,
      nickname: body.nickname,
      status: 'PENDING',
      created_at: now.at,
      updated_at: now.at,
    };
    await store.insertDelegatedKey(trx, row);
    const payload = activity(wallet, 'ACTIVITY_TYPE_CREATE_POLICIES', { policies: [{ effect: 'EFFECT_ALLOW', policyName: `delegated signing ${row.id}`, consensus: `approvers.any(user, user.publicKey == '${row.public_key}')` }] }, now.ms);
    const c = await issue(trx, platformId, now, { ...leg1, kind: 'DELEGATED_KEY_2' }, payload, { keyId: row.id });
    return { status: 202 as const, body: challengeOf(c) };
  });
}

export async function listDelegatedKeys(db: Db, platformId: string, q: { accountId?: string | undefined; fundingSourceId?: string | undefined }): Promise<{ data: DelegatedKey[] }> {
  if (q.accountId === undefined && q.fundingSourceId === undefined) {
    throw invalidInput([
      { field: 'accountId', message: 'or fundingSourceId is required' },
      { field: 'fundingSourceId', message: 'or accountId is required' },
    ]);
  }
  return { data: (await store.listDelegatedKeys(db, platformId, q)).map(delegatedView) };
}

export async function getDelegatedKey(db: Db, platformId: string, id: string): Promise<DelegatedKey> {
  const row = await store.findDelegatedKey(db, platformId, id);
  if (!row) throw notFound('REFERENCE_NOT_FOUND', 'Delegated key', id);
  return delegatedView(row);
}

export async function revokeDelegatedKey(db: Kysely<DB>, platformId: string, now: Now, id: string): Promise<void> {
  const row = await store.findDelegatedKey(db, platformId, id);
  if (!row) throw notFound('REFERENCE_NOT_FOUND', 'Delegated key', id);
  if (!(await store.setDelegatedKeyStatus(db, platformId, id, 'ACTIVE', 'REVOKED', now.at))) {
    throw invalidInput([{ field: 'id', message: `is ${row.status}: only an ACTIVE delegated key can be revoked` }]);
  }
}
