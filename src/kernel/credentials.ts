import type { Kysely, Selectable } from 'kysely';
import { prepared } from './db/prepared.js';
import type { ApiTokensTable, DB, PlatformsTable } from './db/schema.js';

// The credential check's query (kernel/auth.ts): the live API token named by a Basic user
// name, with its platform, in one statement. The kernel owns it (it reads the tokens and
// platforms tables for every request) so that authentication never imports an area.

/** A platform row (the platforms area's PlatformRow is the same type). */
export type PlatformRow = Selectable<PlatformsTable>;
/** An API token row (the tokens area's TokenRow is the same type). */
export type TokenRow = Selectable<ApiTokensTable>;

type CredentialRow = {
  [K in keyof TokenRow as `t_${K & string}`]: TokenRow[K];
} & {
  [K in Exclude<keyof PlatformRow, 'webhook_private_key'> as `p_${K & string}`]: PlatformRow[K];
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
): Promise<{ token: TokenRow; platform: PlatformRow } | undefined> {
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
