import { type TimeRange, whereTimeRange } from '../../kernel/pagination.js';
import type { Kysely, Selectable } from 'kysely';
import type { ApiTokensTable, DB } from '../../kernel/db/schema.js';

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
