import type { AnyDb } from './support.js';

export async function up(db: AnyDb): Promise<void> {
  const bigint = 'bigint' as const;
  // UMA invitations (invitations area): the code is the key, shared by link.
  await db.schema
    .createTable('invitations')
    .addColumn('code', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull())
    .addColumn('inviter_customer_id', 'text', (c) => c.notNull())
    .addColumn('inviter_uma', 'text', (c) => c.notNull())
    .addColumn('invitee_uma', 'text')
    .addColumn('claimed_by_platform_id', 'text')
    .addColumn('first_name', 'text')
    .addColumn('amount_to_send', bigint)
    .addColumn('currency', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text')
    .addColumn('expires_at_ms', bigint)
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('claimed_at', 'text')
    .addColumn('cancelled_at', 'text')
    .execute();
  await db.schema.createIndex('invitations_platform').on('invitations').columns(['platform_id', 'code']).execute();
}
