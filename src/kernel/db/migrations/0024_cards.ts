import { type AnyDb, storeKind } from './support.js';

// Cards (src/api/cards, docs/cards.md): the cards, their card transactions (the parent
// row of an authorization with its pulls, clearings and refunds rolled up into counters),
// and the audit trail of PAN reveals (who asked, when; never the URL or the PAN).
export async function up(db: AnyDb): Promise<void> {
  const bigint = 'bigint' as const;
  await db.schema
    .createTable('cards')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull().references('platforms.id').onDelete('cascade'))
    .addColumn('customer_id', 'text', (c) => c.notNull().references('customers.id').onDelete('cascade'))
    .addColumn('platform_card_id', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('state_reason', 'text')
    .addColumn('brand', 'text', (c) => c.notNull())
    .addColumn('form', 'text', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('funding_sources', 'text', (c) => c.notNull())
    .addColumn('max_spend_per_transaction', bigint)
    .addColumn('last4', 'text')
    .addColumn('exp_month', 'integer')
    .addColumn('exp_year', 'integer')
    .addColumn('pan_sealed', 'text')
    .addColumn('cvv_sealed', 'text')
    .addColumn('issuance_suffix', 'text', (c) => c.notNull())
    .addColumn('processor_ref', 'text', (c) => c.notNull())
    .addColumn('issuer_ref', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('cards_platform_customer').on('cards').columns(['platform_id', 'customer_id', 'id']).execute();
  await db.schema.createIndex('cards_platform_card_id').on('cards').columns(['platform_id', 'platform_card_id', 'id']).execute();
  await db.schema.createIndex('cards_platform_id').on('cards').columns(['platform_id', 'id']).execute();

  await db.schema
    .createTable('card_transactions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull().references('platforms.id').onDelete('cascade'))
    .addColumn('card_id', 'text', (c) => c.notNull().references('cards.id').onDelete('cascade'))
    .addColumn('customer_id', 'text', (c) => c.notNull())
    .addColumn('platform_customer_id', 'text', (c) => c.notNull())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('direction', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('merchant', 'text', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('authorized_amount', bigint, (c) => c.notNull())
    .addColumn('open_amount', bigint, (c) => c.notNull())
    .addColumn('settled_amount', bigint, (c) => c.notNull())
    .addColumn('refunded_amount', bigint, (c) => c.notNull())
    .addColumn('released_amount', bigint, (c) => c.notNull())
    .addColumn('pull_count', 'integer', (c) => c.notNull())
    .addColumn('pull_total', bigint, (c) => c.notNull())
    .addColumn('pull_pending', 'integer', (c) => c.notNull())
    .addColumn('settlement_count', 'integer', (c) => c.notNull())
    .addColumn('refund_count', 'integer', (c) => c.notNull())
    .addColumn('event_count', 'integer', (c) => c.notNull())
    .addColumn('issuer_transaction_token', 'text', (c) => c.notNull())
    .addColumn('authorized_at', 'text', (c) => c.notNull())
    .addColumn('last_event_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('card_transactions_card').on('card_transactions').columns(['platform_id', 'card_id', 'id']).execute();

  await db.schema
    .createTable('card_reveals')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull().references('platforms.id').onDelete('cascade'))
    .addColumn('card_id', 'text', (c) => c.notNull().references('cards.id').onDelete('cascade'))
    .addColumn('actor', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('card_reveals_card').on('card_reveals').columns(['platform_id', 'card_id', 'id']).execute();
}
