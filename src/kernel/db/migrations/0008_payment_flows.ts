import { sql } from 'kysely';
import { type AnyDb, storeKind } from './support.js';

export async function up(db: AnyDb): Promise<void> {
  const kind = storeKind(db);
  const bigint = 'bigint' as const;
  // Quotes gain real-time funding sources and UMA destinations: no account on that side.
  if (kind === 'postgres') {
    await sql`alter table quotes alter column source_account_id drop not null`.execute(db);
    await sql`alter table quotes alter column destination_account_id drop not null`.execute(db);
  } else {
    // SQLite cannot drop NOT NULL: rebuild the table with the same columns, nullable.
    await db.schema
      .createTable('quotes_new')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('platform_id', 'text', (c) => c.notNull().references('platforms.id').onDelete('cascade'))
      .addColumn('customer_id', 'text')
      .addColumn('source_account_id', 'text')
      .addColumn('source', 'text', (c) => c.notNull())
      .addColumn('destination_account_id', 'text')
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
    await sql`insert into quotes_new select id, platform_id, customer_id, source_account_id, source, destination_account_id, destination, lookup_id,
      sending_currency, receiving_currency, locked_side, locked_amount, total_sending, total_receiving, fees, platform_fees, exchange_rate,
      rate_details, payment_rail, description, remittance_information, purpose_of_payment, status, transaction_id, expires_at_ms, expires_at,
      created_at, updated_at from quotes`.execute(db);
    await sql`drop table quotes`.execute(db);
    await sql`alter table quotes_new rename to quotes`.execute(db);
    await db.schema.createIndex('quotes_platform').on('quotes').columns(['platform_id', 'id']).execute();
  }
  await db.schema.alterTable('quotes').addColumn('source_type', 'text', (c) => c.notNull().defaultTo('ACCOUNT')).execute();
  await db.schema.alterTable('quotes').addColumn('destination_type', 'text', (c) => c.notNull().defaultTo('ACCOUNT')).execute();
  await db.schema.alterTable('quotes').addColumn('payment_instructions', 'text').execute();
  await db.schema.alterTable('quotes').addColumn('sender_customer_info', 'text').execute();
  await db.schema.alterTable('quotes').addColumn('fee_override', 'text').execute();
  await db.schema.alterTable('quotes').addColumn('receiver', 'text').execute();

  // Transactions: the rest of the reference's fields and the sandbox flow state.
  const text = ['pending_reason', 'refund', 'counterparty_information', 'reconciliation', 'receipt_delivery_confirmed_at', 'rail_selection_mode',
    'payment_instructions', 'outcome', 'requested_receiver_fields', 'receiver_customer_info', 'agent_id', 'hold_account_id', 'flow'];
  for (const column of text) await db.schema.alterTable('transactions').addColumn(column, 'text').execute();
  await db.schema.alterTable('transactions').addColumn('approval_deadline_ms', bigint).execute();
  await db.schema.alterTable('transactions').addColumn('expires_at_ms', bigint).execute();
  await db.schema.createIndex('transactions_platform_created').on('transactions').columns(['platform_id', 'created_at']).execute();
}
