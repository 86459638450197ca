import { type AnyDb, storeKind } from './support.js';

export async function up(db: AnyDb): Promise<void> {
  const bigint = 'bigint' as const;
  // Strong Customer Authentication (src/api/sca). Factors a customer enrolled (PENDING
  // while an enrollment waits for its confirmation; secrets only as hashes).
  await db.schema
    .createTable('sca_factors')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull())
    .addColumn('customer_id', 'text', (c) => c.notNull())
    .addColumn('factor', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('credential_id', 'text')
    .addColumn('name', 'text')
    .addColumn('secret_hash', 'text')
    .addColumn('expires_at_ms', bigint)
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('confirmed_at', 'text')
    .execute();
  await db.schema.createIndex('sca_factors_customer').on('sca_factors').columns(['platform_id', 'customer_id', 'id']).execute();
  // Each customer's login-security state: failed attempts and the lock they led to.
  await db.schema
    .createTable('sca_security')
    .addColumn('customer_id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull())
    .addColumn('failed_attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('locked_until_ms', bigint)
    .addColumn('suspended', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  // Recorded security events (POST /sca/record-event), with the state they left.
  await db.schema
    .createTable('sca_security_events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull())
    .addColumn('customer_id', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('failed_attempts', 'integer', (c) => c.notNull())
    .addColumn('locked_until', 'text')
    .addColumn('suspended', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('sca_security_events_customer').on('sca_security_events').columns(['platform_id', 'customer_id', 'id']).execute();
  // Login sessions (180 days of platform time).
  await db.schema
    .createTable('sca_sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull())
    .addColumn('customer_id', 'text', (c) => c.notNull())
    .addColumn('factor', 'text', (c) => c.notNull())
    .addColumn('end_user_ip', 'text', (c) => c.notNull())
    .addColumn('revoked', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('expires_at_ms', bigint, (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('sca_sessions_customer').on('sca_sessions').columns(['platform_id', 'customer_id', 'expires_at_ms']).execute();
  // Challenges: a login's, a quote's (one per authorization step), a trust change's.
  await db.schema
    .createTable('sca_challenges')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull())
    .addColumn('customer_id', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('subject_id', 'text')
    .addColumn('factor', 'text', (c) => c.notNull())
    .addColumn('available_factors', 'text', (c) => c.notNull())
    .addColumn('purpose', 'text')
    .addColumn('next_purposes', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('sends', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('expires_at_ms', bigint, (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('sca_challenges_subject').on('sca_challenges').columns(['platform_id', 'subject_id', 'status']).execute();
  await db.schema.createIndex('sca_challenges_customer').on('sca_challenges').columns(['platform_id', 'customer_id', 'kind', 'status']).execute();
  // 2FA resets (liveness-gated recovery of a lost factor).
  await db.schema
    .createTable('sca_resets')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull())
    .addColumn('customer_id', 'text', (c) => c.notNull())
    .addColumn('factor', 'text', (c) => c.notNull())
    .addColumn('completed_at', 'text')
    .addColumn('created_at_ms', bigint, (c) => c.notNull())
    .addColumn('expires_at_ms', bigint, (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('sca_resets_customer').on('sca_resets').columns(['platform_id', 'customer_id', 'created_at_ms']).execute();
  // Trusted beneficiaries: external accounts whose payouts skip the per-payment challenge.
  await db.schema
    .createTable('sca_trusted_beneficiaries')
    .addColumn('external_account_id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull())
    .addColumn('customer_id', 'text', (c) => c.notNull())
    .addColumn('trusted_at', 'text', (c) => c.notNull())
    .execute();
  // A quote waiting for authorization shows its current challenge (JSON, the API view).
  await db.schema.alterTable('quotes').addColumn('sca_challenge', 'text').execute();
}
