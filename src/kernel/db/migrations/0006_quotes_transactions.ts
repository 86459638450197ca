import { sql } from 'kysely';
import type { AnyDb } from './support.js';

export async function up(db: AnyDb): Promise<void> {
  const bigint = 'bigint' as const;
  // Quotes (a priced, time-limited offer to move money) and the transactions they create.
  await db.schema
    .createTable('quotes')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull().references('platforms.id').onDelete('cascade'))
    .addColumn('customer_id', 'text')
    .addColumn('source_account_id', 'text', (c) => c.notNull())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('destination_account_id', 'text', (c) => c.notNull())
    .addColumn('destination', 'text', (c) => c.notNull())
    .addColumn('lookup_id', 'text')
    .addColumn('sending_currency', 'text', (c) => c.notNull())
    .addColumn('receiving_currency', 'text', (c) => c.notNull())
    .addColumn('locked_side', 'text', (c) => c.notNull())
    .addColumn('locked_amount', bigint, (c) => c.notNull())
    .addColumn('total_sending', bigint, (c) => c.notNull())
    .addColumn('total_receiving', bigint, (c) => c.notNull())
    .addColumn('fees', bigint, (c) => c.notNull())
    .addColumn('platform_fees', bigint, (c) => c.notNull())
    .addColumn('exchange_rate', 'text', (c) => c.notNull())
    .addColumn('rate_details', 'text', (c) => c.notNull())
    .addColumn('payment_rail', 'text')
    .addColumn('description', 'text')
    .addColumn('remittance_information', 'text')
    .addColumn('purpose_of_payment', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('transaction_id', 'text')
    .addColumn('expires_at_ms', bigint, (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('quotes_platform').on('quotes').columns(['platform_id', 'id']).execute();

  await db.schema
    .createTable('transactions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull().references('platforms.id').onDelete('cascade'))
    .addColumn('customer_id', 'text', (c) => c.notNull())
    .addColumn('platform_customer_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('direction', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('quote_id', 'text')
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('source_account_id', 'text')
    .addColumn('destination', 'text', (c) => c.notNull())
    .addColumn('destination_account_id', 'text')
    .addColumn('sent_amount', bigint, (c) => c.notNull())
    .addColumn('sent_currency', 'text', (c) => c.notNull())
    .addColumn('received_amount', bigint)
    .addColumn('received_currency', 'text')
    .addColumn('fees', bigint, (c) => c.notNull().defaultTo(0))
    .addColumn('platform_fees', bigint, (c) => c.notNull().defaultTo(0))
    .addColumn('exchange_rate', 'text')
    .addColumn('rate_details', 'text')
    .addColumn('payment_rail', 'text')
    .addColumn('description', 'text')
    .addColumn('hold_entry_id', 'text')
    .addColumn('failure_reason', 'text')
    .addColumn('settled_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addCheckConstraint('transactions_type', sql`type in ('INCOMING', 'OUTGOING')`)
    .execute();
  await db.schema.createIndex('transactions_platform').on('transactions').columns(['platform_id', 'id']).execute();
  await db.schema.createIndex('transactions_customer').on('transactions').columns(['platform_id', 'customer_id', 'id']).execute();
  // At most one transaction per quote: a second execute cannot create another.
  await sql`create unique index transactions_quote on transactions (quote_id) where quote_id is not null`.execute(db);
}
