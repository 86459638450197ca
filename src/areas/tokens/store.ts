import { type TimeRange, whereTimeRange } from '../../kernel/pagination.js';
import type { Kysely, Selectable } from 'kysely';
import type { ApiTokensTable, DB, PlatformsTable } from '../../kernel/db/schema.js';
import { prepared } from '../../kernel/db/prepared.js';

export type TokenRow = Selectable<ApiTokensTable>;

export async function insertToken(db: Kysely<DB>, row: TokenRow): Promise<void> {
  await db.insertInto('api_tokens').values(row).execute();
}

export async function findLiveToken(db: Kysely<DB>, platformId: string, id: string): Promise<TokenRow | undefined> {
  return db
    .selectFrom('api_tokens')
    .selectAll()
    .where('platform_id', '=', platformId)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

export async function findTokenByClientId(db: Kysely<DB>, clientId: string): Promise<TokenRow | undefined> {
  return db.selectFrom('api_tokens').selectAll().where('client_id', '=', clientId).executeTakeFirst();
}

export async function markTokenDeleted(db: Kysely<DB>, platformId: string, id: string, at: string): Promise<boolean> {
  const r = await db
    .updateTable('api_tokens')
    .set({ deleted_at: at, updated_at: at })
    .where('platform_id', '=', platformId)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

export async function updateTokenSecret(db: Kysely<DB>, id: string, secretHash: string, at: string): Promise<void> {
  await db.updateTable('api_tokens').set({ secret_hash: secretHash, deleted_at: null, updated_at: at }).where('id', '=', id).execute();
}

export async function hasBootstrapToken(db: Kysely<DB>, platformId: string): Promise<boolean> {
  const r = await db
    .selectFrom('api_tokens')
    .select('id')
    .where('platform_id', '=', platformId)
    .where('is_bootstrap', '=', 1)
    .executeTakeFirst();
  return r !== undefined;
}

export interface TokenFilter extends TimeRange {
  name?: string | undefined;
}

export function tokenQuery(db: Kysely<DB>, platformId: string, f: TokenFilter) {
  let q = db.selectFrom('api_tokens').where('platform_id', '=', platformId).where('deleted_at', 'is', null);
  if (f.name !== undefined) q = q.where('name', '=', f.name);
  return whereTimeRange(q, f);
}

type CredentialRow = {
  [K in keyof TokenRow as `t_${K & string}`]: TokenRow[K];
} & {
  [K in Exclude<keyof Selectable<PlatformsTable>, 'webhook_private_key'> as `p_${K & string}`]: Selectable<PlatformsTable>[K];
};

/** The credential check's one query, by client id or by `Token:` id: the live token with its platform. */
const credentialBy = (column: 't.id' | 't.client_id') =>
  prepared<{ username: string }, CredentialRow>((db, p) =>
    db
      .selectFrom('api_tokens as t')
      .innerJoin('platforms as p', 'p.id', 't.platform_id')
      .select([
        't.id as t_id', 't.platform_id as t_platform_id', 't.name as t_name', 't.permissions as t_permissions',
        't.client_id as t_client_id', 't.secret_hash as t_secret_hash', 't.is_bootstrap as t_is_bootstrap',
        't.created_at as t_created_at', 't.updated_at as t_updated_at', 't.deleted_at as t_deleted_at',
        'p.id as p_id', 'p.name as p_name', 'p.regulated as p_regulated', 'p.is_default as p_is_default',
        'p.options as p_options', 'p.clock_offset_ms as p_clock_offset_ms', 'p.created_at as p_created_at',
        'p.updated_at as p_updated_at', 'p.webhook_public_key as p_webhook_public_key',
      ])
      .where(column, '=', p('username'))
      .where('t.deleted_at', 'is', null),
  );
const credentialByTokenId = credentialBy('t.id');
const credentialByClientId = credentialBy('t.client_id');

/** The live token named by a Basic user name (client id or `Token:` id), with its platform. */
export async function findCredential(
  db: Kysely<DB>,
  username: string,
): Promise<{ token: TokenRow; platform: Selectable<PlatformsTable> } | undefined> {
  const row = await (username.startsWith('Token:') ? credentialByTokenId : credentialByClientId).first(db, { username });
  if (!row) return undefined;
  return {
    token: {
      id: row.t_id, platform_id: row.t_platform_id, name: row.t_name, permissions: row.t_permissions,
      client_id: row.t_client_id, secret_hash: row.t_secret_hash, is_bootstrap: row.t_is_bootstrap,
      created_at: row.t_created_at, updated_at: row.t_updated_at, deleted_at: row.t_deleted_at,
    },
    platform: {
      id: row.p_id, name: row.p_name, regulated: row.p_regulated, is_default: row.p_is_default,
      options: row.p_options, clock_offset_ms: row.p_clock_offset_ms, created_at: row.p_created_at,
      updated_at: row.p_updated_at,
      // The signing key is never loaded per request; the webhooks area reads it when it signs.
      webhook_private_key: null,
      webhook_public_key: row.p_webhook_public_key,
    },
  };
}
