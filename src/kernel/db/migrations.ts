import { type Kysely, type Migration, type MigrationProvider, Migrator, sql } from 'kysely';
import type { Store } from './connect.js';

// One set of migrations for both stores, applied at start. Kysely's migrator takes a
// lock (an advisory lock on PostgreSQL) so two processes starting together apply each
// migration once; applied migrations are recorded and skipped next time.

type AnyDb = Kysely<any>; // eslint-disable-line @typescript-eslint/no-explicit-any

// New tables of an area come as a new entry ('0002_customers', …) at the end of this list;
// an entry is never edited once it has landed.
function migrations(kind: Store['kind']): Record<string, Migration> {
  const bigint = 'bigint' as const;
  return {
    '0001_foundation': {
      async up(db: AnyDb) {
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
      },
    },
    '0002_customers': {
      async up(db: AnyDb) {
        const blob = kind === 'postgres' ? ('bytea' as const) : ('blob' as const);
        await db.schema
          .createTable('customers')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('platform_id', 'text', (c) => c.notNull().references('platforms.id').onDelete('cascade'))
          .addColumn('customer_type', 'text', (c) => c.notNull())
          .addColumn('platform_customer_id', 'text', (c) => c.notNull())
          .addColumn('uma_address', 'text', (c) => c.notNull())
          .addColumn('region', 'text')
          .addColumn('email', 'text')
          .addColumn('phone_number', 'text')
          .addColumn('currencies', 'text', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('fields', 'text', (c) => c.notNull())
          .addColumn('end_user_terms_consent', 'text')
          .addColumn('contact_verification', 'text')
          .addColumn('is_deleted', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('updated_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('customers_platform').on('customers').columns(['platform_id', 'id']).execute();
        await sql`create unique index customers_platform_customer_id on customers (platform_id, platform_customer_id) where is_deleted = 0`.execute(db);
        await db.schema.createIndex('customers_uma_address').on('customers').column('uma_address').unique().execute();

        await db.schema
          .createTable('verifications')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('platform_id', 'text', (c) => c.notNull())
          .addColumn('customer_id', 'text', (c) => c.notNull().references('customers.id').onDelete('cascade'))
          .addColumn('verification_status', 'text', (c) => c.notNull())
          .addColumn('errors', 'text', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('updated_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('verifications_platform').on('verifications').columns(['platform_id', 'customer_id', 'id']).execute();

        await db.schema
          .createTable('beneficial_owners')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('platform_id', 'text', (c) => c.notNull())
          .addColumn('customer_id', 'text', (c) => c.notNull().references('customers.id').onDelete('cascade'))
          .addColumn('roles', 'text', (c) => c.notNull())
          .addColumn('ownership_percentage', 'integer', (c) => c.notNull())
          .addColumn('personal_info', 'text', (c) => c.notNull())
          .addColumn('kyc_status', 'text', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('updated_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('beneficial_owners_platform').on('beneficial_owners').columns(['platform_id', 'customer_id', 'id']).execute();

        await db.schema
          .createTable('documents')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('platform_id', 'text', (c) => c.notNull())
          .addColumn('document_holder', 'text', (c) => c.notNull())
          .addColumn('document_type', 'text', (c) => c.notNull())
          .addColumn('side', 'text')
          .addColumn('country', 'text', (c) => c.notNull())
          .addColumn('document_number', 'text')
          .addColumn('issuing_authority', 'text')
          .addColumn('file_name', 'text', (c) => c.notNull())
          .addColumn('content_type', 'text', (c) => c.notNull())
          .addColumn('size_bytes', 'integer', (c) => c.notNull())
          .addColumn('sha256', 'text', (c) => c.notNull())
          .addColumn('content', blob, (c) => c.notNull())
          .addColumn('submitted', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('updated_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('documents_platform').on('documents').columns(['platform_id', 'document_holder', 'id']).execute();

        await db.schema
          .createTable('kyc_links')
          .addColumn('token', 'text', (c) => c.primaryKey())
          .addColumn('platform_id', 'text', (c) => c.notNull())
          .addColumn('customer_id', 'text', (c) => c.notNull().references('customers.id').onDelete('cascade'))
          .addColumn('redirect_uri', 'text')
          .addColumn('expires_at_ms', bigint, (c) => c.notNull())
          .addColumn('used_at', 'text')
          .addColumn('created_at', 'text', (c) => c.notNull())
          .execute();
      },
    },
  };
}

export async function migrate(store: Store): Promise<string[]> {
  const all = migrations(store.kind);
  const provider: MigrationProvider = { getMigrations: async () => all };
  // On PostgreSQL, name the schema of Kysely's own tables: unqualified, the migrator takes
  // a kysely_migration table in any other schema of the database for its own.
  const schema =
    store.kind === 'postgres' ? (await sql<{ s: string }>`select current_schema() as s`.execute(store.db)).rows[0]?.s : undefined;
  const migrator = new Migrator({ db: store.db, provider, ...(schema ? { migrationTableSchema: schema } : {}) });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
