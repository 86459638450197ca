import type { Kysely, Transaction } from 'kysely';
import type { Permission } from '../../kernel/auth.js';
import type { DB } from '../../kernel/db/schema.js';
import { notFound } from '../../kernel/errors.js';
import { newId } from '../../kernel/ids.js';
import { paginate, type Page } from '../../kernel/pagination.js';
import { hashSecret, randomHex } from '../../kernel/secrets.js';
import { findLiveToken, insertToken, markTokenDeleted, type TokenFilter, tokenQuery, type TokenRow } from './store.js';
import { effectTransaction } from '../../kernel/idempotency.js';

export interface TokenView {
  id: string;
  name: string;
  permissions: Permission[];
  clientId: string;
  clientSecret?: string;
  createdAt: string;
  updatedAt: string;
}

export function tokenView(row: TokenRow): TokenView {
  return {
    id: row.id,
    name: row.name,
    permissions: JSON.parse(row.permissions) as Permission[],
    clientId: row.client_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export interface NewTokenInput {
  name: string;
  permissions: Permission[];
  /** Chosen by the operator (PAYMENTS_API_TOKEN_ID); generated otherwise. */
  clientId?: string;
  clientSecret?: string;
  bootstrap?: boolean;
}

/** Create a token. The secret is returned here once; only its hash is stored. */
export async function createToken(db: Kysely<DB> | Transaction<DB>, platformId: string, at: string, input: NewTokenInput): Promise<TokenView & { clientSecret: string }> {
  const clientSecret = input.clientSecret ?? randomHex(24);
  const permissions = [...new Set(input.permissions)];
  const row: TokenRow = {
    id: newId('Token'),
    platform_id: platformId,
    name: input.name,
    permissions: JSON.stringify(permissions),
    client_id: input.clientId ?? randomHex(16),
    secret_hash: await hashSecret(clientSecret),
    is_bootstrap: input.bootstrap ? 1 : 0,
    created_at: at,
    updated_at: at,
    deleted_at: null,
  };
  await insertToken(db, row);
  return { ...tokenView(row), clientSecret };
}

/** POST /tokens: a token created with the request's Idempotency-Key answer (without the secret) in one transaction. */
export async function issueToken(db: Kysely<DB>, platformId: string, at: string, input: NewTokenInput): Promise<TokenView & { clientSecret: string }> {
  return effectTransaction(db, (trx) => createToken(trx, platformId, at, input));
}

export async function getToken(db: Kysely<DB>, platformId: string, id: string): Promise<TokenView> {
  const row = await findLiveToken(db, platformId, id);
  if (!row) throw notFound('TOKEN_NOT_FOUND', 'API token', id);
  return tokenView(row);
}

export async function listTokens(db: Kysely<DB>, platformId: string, filter: TokenFilter, page: { limit?: number | undefined; cursor?: string | undefined }): Promise<Page<TokenView>> {
  return paginate<TokenRow, TokenView>(tokenQuery(db, platformId, filter), 'id', page, tokenView);
}

/** Delete a token: it stops authenticating at once (every request reads the token row). */
export async function deleteToken(db: Kysely<DB>, platformId: string, id: string, at: string): Promise<void> {
  if (!(await markTokenDeleted(db, platformId, id, at))) throw notFound('TOKEN_NOT_FOUND', 'API token', id);
}
