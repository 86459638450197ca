import { sql } from 'kysely';
import { type AnyDb, storeKind } from './support.js';

export async function up(db: AnyDb): Promise<void> {
  const kind = storeKind(db);
  const bigint = 'bigint' as const;
  await db.schema
    .createTable('platforms')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('regulated', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('is_default', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('options', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('clock_offset_ms', bigint, (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  // At most one default platform.
  await sql`create unique index platforms_one_default on platforms (is_default) where is_default = 1`.execute(db);

  await db.schema
    .createTable('platform_configs')
    .addColumn('platform_id', 'text', (c) => c.primaryKey().references('platforms.id').onDelete('cascade'))
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('uma_domain', 'text', (c) => c.notNull())
    .addColumn('proxy_uma_subdomain', 'text')
    .addColumn('webhook_endpoint', 'text')
    .addColumn('supported_currencies', 'text', (c) => c.notNull())
    .addColumn('embedded_wallet_config', 'text')
    .addColumn('card_tokenization_2fa_config', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('fee_configs')
    .addColumn('platform_id', 'text', (c) => c.notNull().references('platforms.id').onDelete('cascade'))
    .addColumn('fee_type', 'text', (c) => c.notNull())
    .addColumn('source_currency', 'text', (c) => c.notNull())
    .addColumn('variable_fee_bps', 'integer', (c) => c.notNull())
    .addColumn('fixed_fee_amount', bigint, (c) => c.notNull())
    .addColumn('fixed_fee_currency', 'text', (c) => c.notNull())
    .addColumn('active', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('fee_configs_pk', ['platform_id', 'fee_type', 'source_currency'])
    .execute();

  await db.schema
    .createTable('api_tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull().references('platforms.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('permissions', 'text', (c) => c.notNull())
    .addColumn('client_id', 'text', (c) => c.notNull().unique())
    .addColumn('secret_hash', 'text', (c) => c.notNull())
    .addColumn('is_bootstrap', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('deleted_at', 'text')
    .execute();
  await db.schema.createIndex('api_tokens_platform').on('api_tokens').columns(['platform_id', 'id']).execute();

  await db.schema
    .createTable('idempotency_keys')
    .addColumn('platform_id', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('request_hash', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('response_status', 'integer')
    .addColumn('response_body', 'text')
    .addColumn('response_content_type', 'text')
    .addColumn('created_ms', bigint, (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pk', ['platform_id', 'key'])
    .execute();

  await db.schema
    .createTable('jobs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text')
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('run_at_ms', bigint, (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('max_attempts', 'integer', (c) => c.notNull())
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('jobs_due').on('jobs').columns(['status', 'run_at_ms']).execute();

  let events = db.schema.createTable('events');
  events =
    kind === 'postgres'
      ? events.addColumn('seq', 'bigserial', (c) => c.primaryKey())
      : events.addColumn('seq', 'integer', (c) => c.primaryKey().autoIncrement());
  await events
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('platform_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('resource_id', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('events_platform').on('events').columns(['platform_id', 'seq']).execute();
}
