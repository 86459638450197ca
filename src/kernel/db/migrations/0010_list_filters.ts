import { sql } from 'kysely';
import { type AnyDb, storeKind } from './support.js';

// The list filters of GET /transactions and GET /quotes. The identifiers they match are
// inside the JSON the API shows (source, destination, reconciliation, payment
// instructions), so each is a generated column computed by the database from that JSON:
// it exists for every row already there (no backfill to run) and can never disagree
// with what the API shows, whoever writes the row. PostgreSQL stores it; SQLite computes
// it on read (ALTER TABLE adds only virtual ones) and keeps it in the index. Writers never
// set these columns (kernel/db/schema.ts keeps them out of the row types).
export async function up(db: AnyDb): Promise<void> {
  const kind = storeKind(db);
  const text = (column: string, path: string[]): string =>
    kind === 'sqlite'
      ? `json_extract(${column}, '$${path.map((p) => (/^\d+$/.test(p) ? `[${p}]` : `.${p}`)).join('')}')`
      : `(${column}::jsonb${path.map((p, i) => `${i === path.length - 1 ? ' ->> ' : ' -> '}${/^\d+$/.test(p) ? p : `'${p}'`}`).join('')})`;
  const generated = async (table: string, column: string, expression: string) => {
    const how = kind === 'sqlite' ? 'virtual' : 'stored';
    await sql.raw(`alter table ${table} add column ${column} text generated always as (${expression}) ${how}`).execute(db);
  };
  // Transactions: who sent (the source's account id, UMA address, or the originator's
  // account identifier of a real-time funding), who received (the destination's account
  // id or UMA address), and the reference (reconciliationInstructions.reference, else
  // the one the payment instructions ask the payer to quote).
  await generated('transactions', 'sender_identifier', `coalesce(${text('source', ['accountId'])}, ${text('source', ['umaAddress'])}, ${text('source', ['accountIdentifier'])})`);
  await generated('transactions', 'receiver_identifier', `coalesce(${text('destination', ['accountId'])}, ${text('destination', ['umaAddress'])})`);
  await generated(
    'transactions',
    'reconciliation_reference',
    `coalesce(${text('reconciliation', ['reference'])}, ${text('payment_instructions', ['0', 'accountOrWalletInfo', 'reference'])})`,
  );
  // Each filter a platform with many transactions needs, with the id for the order and the cursor.
  await db.schema.createIndex('transactions_sender').on('transactions').columns(['platform_id', 'sender_identifier', 'id']).execute();
  await db.schema.createIndex('transactions_receiver').on('transactions').columns(['platform_id', 'receiver_identifier', 'id']).execute();
  await db.schema.createIndex('transactions_destination_account').on('transactions').columns(['platform_id', 'destination_account_id', 'id']).execute();
  await db.schema.createIndex('transactions_reference').on('transactions').columns(['platform_id', 'reconciliation_reference', 'id']).execute();
  await db.schema.createIndex('transactions_platform_customer').on('transactions').columns(['platform_id', 'platform_customer_id', 'id']).execute();
  await db.schema.createIndex('transactions_status').on('transactions').columns(['platform_id', 'status', 'id']).execute();

  // Quotes (GET /quotes): the UMA addresses of the source and destination.
  await generated('quotes', 'source_uma_address', text('source', ['umaAddress']));
  await generated('quotes', 'destination_uma_address', text('destination', ['umaAddress']));
  await db.schema.createIndex('quotes_customer').on('quotes').columns(['platform_id', 'customer_id', 'id']).execute();
  await db.schema.createIndex('quotes_source_account').on('quotes').columns(['platform_id', 'source_account_id', 'id']).execute();
  await db.schema.createIndex('quotes_destination_account').on('quotes').columns(['platform_id', 'destination_account_id', 'id']).execute();
  await db.schema.createIndex('quotes_destination_uma').on('quotes').columns(['platform_id', 'destination_uma_address', 'id']).execute();
}
