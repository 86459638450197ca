import { sql } from 'kysely';
import { type AnyDb, storeKind } from './support.js';

export async function up(db: AnyDb): Promise<void> {
  const kind = storeKind(db);
  const bigint = 'bigint' as const;
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
}
