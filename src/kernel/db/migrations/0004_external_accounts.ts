import { sql } from 'kysely';
import type { AnyDb } from './support.js';

// External bank accounts and wallets of customers (customer_id) and of the platform (customer_id NULL).
export async function up(db: AnyDb): Promise<void> {
  const bigint = 'bigint' as const;
  await db.schema
    .createTable('external_accounts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull().references('platforms.id').onDelete('cascade'))
    .addColumn('customer_id', 'text', (c) => c.references('customers.id').onDelete('cascade'))
    .addColumn('platform_account_id', 'text')
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('account_type', 'text', (c) => c.notNull())
    .addColumn('account_info', 'text', (c) => c.notNull())
    .addColumn('identifier_key', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('ownership_type', 'text')
    .addColumn('default_uma_deposit_account', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('beneficiary_verification_status', 'text')
    .addColumn('beneficiary_verified_data', 'text')
    .addColumn('challenge_method', 'text')
    .addColumn('challenge_nonce', 'text')
    .addColumn('challenge_message', 'text')
    .addColumn('challenge_token', 'text')
    .addColumn('challenge_expires_at_ms', bigint)
    .addColumn('is_deleted', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('external_accounts_platform').on('external_accounts').columns(['platform_id', 'customer_id', 'id']).execute();
  // The same account once per owner: identifier_key is owner|accountType|primary identifier.
  await sql`create unique index external_accounts_identifier on external_accounts (platform_id, identifier_key) where is_deleted = 0`.execute(db);
  // The hosted liveness page finds its challenge by token.
  await db.schema.createIndex('external_accounts_challenge_token').on('external_accounts').column('challenge_token').unique().execute();
}
