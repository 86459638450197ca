import type { AnyDb } from './support.js';

export async function up(db: AnyDb): Promise<void> {
  const bigint = 'bigint' as const;
  // Stablecoins (stablecoins area): provider account links, registered stablecoins, mints and burns.
  await db.schema
    .createTable('stablecoin_provider_accounts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('provider_account_id', 'text', (c) => c.notNull())
    .addColumn('provider_environment', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('api_client_id', 'text', (c) => c.notNull())
    .addColumn('secret_hash', 'text', (c) => c.notNull())
    .addColumn('last_verified_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('stablecoin_provider_accounts_platform').on('stablecoin_provider_accounts').columns(['platform_id', 'id']).execute();
  await db.schema
    .createTable('stablecoins')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull())
    .addColumn('provider_account_id', 'text', (c) => c.notNull())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('provider_environment', 'text', (c) => c.notNull())
    .addColumn('provider_token_identifier', 'text', (c) => c.notNull())
    .addColumn('network_token_identifier', 'text', (c) => c.notNull())
    .addColumn('network', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('symbol', 'text', (c) => c.notNull())
    .addColumn('decimals', 'integer', (c) => c.notNull())
    .addColumn('base_currency', 'text', (c) => c.notNull())
    .addColumn('issuance_status', 'text', (c) => c.notNull())
    .addColumn('operations_status', 'text', (c) => c.notNull())
    .addColumn('minted_account_id', 'text', (c) => c.notNull())
    .addColumn('burned_account_id', 'text', (c) => c.notNull())
    .addColumn('outstanding', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('stablecoins_platform').on('stablecoins').columns(['platform_id', 'id']).execute();
  await db.schema.createIndex('stablecoins_token').on('stablecoins').columns(['platform_id', 'provider_account_id', 'provider_token_identifier', 'network']).unique().execute();
  await db.schema
    .createTable('stablecoin_operations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull())
    .addColumn('stablecoin_id', 'text', (c) => c.notNull())
    .addColumn('operation_type', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('amount', 'text', (c) => c.notNull())
    .addColumn('fiat_minor', bigint, (c) => c.notNull())
    .addColumn('provider_account_id', 'text', (c) => c.notNull())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('destination', 'text', (c) => c.notNull())
    .addColumn('funding_account_id', 'text')
    .addColumn('hold_entry_id', 'text')
    .addColumn('failure_reason', 'text')
    .addColumn('description', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('stablecoin_operations_coin').on('stablecoin_operations').columns(['platform_id', 'stablecoin_id', 'id']).execute();
}
