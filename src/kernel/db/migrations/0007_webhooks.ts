import { sql } from 'kysely';
import { newWebhookKeyPair } from '../../webhook-keys.js';
import type { AnyDb } from './support.js';

export async function up(db: AnyDb): Promise<void> {
  const bigint = 'bigint' as const;
  // Each platform's webhook signing key (P-256; private scalar hex, public key PEM).
  await db.schema.alterTable('platforms').addColumn('webhook_private_key', 'text').execute();
  await db.schema.alterTable('platforms').addColumn('webhook_public_key', 'text').execute();
  // Platforms that predate this migration get their key pair now.
  const existing = (await db.selectFrom('platforms').select('id').execute()) as Array<{ id: string }>;
  for (const p of existing) {
    const k = newWebhookKeyPair();
    await db.updateTable('platforms').set({ webhook_private_key: k.privateKeyHex, webhook_public_key: k.publicKeyPem }).where('id', '=', p.id).execute();
  }

  // One delivery per event (created with the event, in its transaction).
  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull().references('platforms.id').onDelete('cascade'))
    .addColumn('event_id', 'text', (c) => c.notNull().unique())
    .addColumn('event_seq', bigint, (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('resource_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_ms', bigint)
    .addColumn('lease_until_ms', bigint)
    .addColumn('last_status_code', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('delivered_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addCheckConstraint('webhook_deliveries_status', sql`status in ('PENDING', 'SENDING', 'DELIVERED', 'FAILED', 'NO_ENDPOINT')`)
    .execute();
  await db.schema.createIndex('webhook_deliveries_due').on('webhook_deliveries').columns(['status', 'next_attempt_ms']).execute();
  await db.schema.createIndex('webhook_deliveries_resource').on('webhook_deliveries').columns(['platform_id', 'resource_id', 'event_seq']).execute();
  await db.schema.createIndex('webhook_deliveries_platform').on('webhook_deliveries').columns(['platform_id', 'event_seq']).execute();

  await db.schema
    .createTable('webhook_attempts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull().references('platforms.id').onDelete('cascade'))
    .addColumn('delivery_id', 'text', (c) => c.notNull().references('webhook_deliveries.id').onDelete('cascade'))
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text', (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('error', 'text')
    .addColumn('latency_ms', 'integer', (c) => c.notNull())
    .addColumn('response_body', 'text')
    .execute();
  await db.schema.createIndex('webhook_attempts_delivery').on('webhook_attempts').columns(['delivery_id', 'attempt']).execute();
}
