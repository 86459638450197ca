import { type AnyDb, storeKind } from './support.js';

export async function up(db: AnyDb): Promise<void> {
  const bigint = 'bigint' as const;
  // Embedded wallets (issue 16): the wallet's privacy flag on its internal account, its
  // secrets, the credentials that authenticate its owner, the sessions they open, the
  // pending signed-retry challenges, delegated keys, and each platform's passkey origins.
  await db.schema.alterTable('internal_accounts').addColumn('private_enabled', 'integer').execute();
  await db.schema
    .createTable('embedded_wallets')
    .addColumn('account_id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull())
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('wallet_address', 'text', (c) => c.notNull())
    .addColumn('mnemonic', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('wallet_credentials')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('nickname', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('webauthn_id', 'text')
    .addColumn('webauthn_public_key', 'text')
    .addColumn('webauthn_counter', bigint)
    .addColumn('rp_id', 'text')
    .addColumn('transports', 'text')
    .addColumn('oauth_iss', 'text')
    .addColumn('oauth_aud', 'text')
    .addColumn('oauth_sub', 'text')
    .addColumn('otp_target_key', 'text')
    .addColumn('otp_expires_ms', bigint)
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('wallet_credentials_account').on('wallet_credentials').columns(['platform_id', 'account_id', 'id']).execute();
  await db.schema
    .createTable('wallet_sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('credential_id', 'text', (c) => c.notNull())
    .addColumn('public_key', 'text', (c) => c.notNull())
    .addColumn('client_key', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('expires_at_ms', bigint, (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('wallet_sessions_account').on('wallet_sessions').columns(['platform_id', 'account_id', 'id']).execute();
  await db.schema
    .createTable('wallet_requests')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('target_id', 'text', (c) => c.notNull())
    .addColumn('body_hash', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('expires_at_ms', bigint, (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('wallet_requests_target').on('wallet_requests').columns(['platform_id', 'target_id', 'kind']).execute();
  await db.schema
    .createTable('delegated_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('card_id', 'text', (c) => c.notNull())
    .addColumn('funding_source_id', 'text', (c) => c.notNull())
    .addColumn('public_key', 'text', (c) => c.notNull())
    .addColumn('private_key', 'text', (c) => c.notNull())
    .addColumn('nickname', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('delegated_keys_account').on('delegated_keys').columns(['platform_id', 'account_id', 'id']).execute();
  await db.schema
    .createTable('wallet_settings')
    .addColumn('platform_id', 'text', (c) => c.primaryKey())
    .addColumn('allowed_origins', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
}
