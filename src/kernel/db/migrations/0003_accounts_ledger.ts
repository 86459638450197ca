import { sql } from 'kysely';
import { type AnyDb, storeKind } from './support.js';

// Internal accounts and the double-entry ledger their balances come from (docs/ledger.md).
export async function up(db: AnyDb): Promise<void> {
  const bigint = 'bigint' as const;
  await db.schema
    .createTable('internal_accounts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull().references('platforms.id').onDelete('cascade'))
    // NULL for the platform's own accounts.
    .addColumn('customer_id', 'text', (c) => c.references('customers.id').onDelete('cascade'))
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('funding_reference', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('internal_accounts_platform').on('internal_accounts').columns(['platform_id', 'customer_id', 'id']).execute();
  // One holding account per (owner, currency). NULL never equals NULL in a unique index,
  // so the platform's accounts (customer_id NULL) have their own partial index.
  // Embedded wallets (a later issue) are not holding accounts and are not constrained here.
  await sql`create unique index internal_accounts_customer_currency on internal_accounts (platform_id, customer_id, currency)
    where customer_id is not null and type in ('INTERNAL_FIAT', 'INTERNAL_CRYPTO')`.execute(db);
  await sql`create unique index internal_accounts_platform_currency on internal_accounts (platform_id, currency)
    where customer_id is null and type in ('INTERNAL_FIAT', 'INTERNAL_CRYPTO')`.execute(db);

  // One row per ledger account: an internal account (account_id = its id) or a
  // counter-account such as the platform's per-currency 'outside world' (WORLD).
  await db.schema
    .createTable('ledger_balances')
    .addColumn('account_id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull().references('platforms.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('allow_negative', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('available', bigint, (c) => c.notNull().defaultTo(0))
    .addColumn('pending', bigint, (c) => c.notNull().defaultTo(0))
    .addColumn('held', bigint, (c) => c.notNull().defaultTo(0))
    .addColumn('version', bigint, (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('ledger_balances_platform').on('ledger_balances').columns(['platform_id', 'kind', 'currency']).execute();

  await db.schema
    .createTable('ledger_entries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull().references('platforms.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    // The resource the entry belongs to (a transaction, a quote …), and the entry it
    // settles or reverses (a release names its hold).
    .addColumn('reference_id', 'text')
    .addColumn('related_entry_id', 'text', (c) => c.references('ledger_entries.id'))
    // Optional caller key: at most one entry per (platform, key).
    .addColumn('idempotency_key', 'text')
    .addColumn('memo', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('ledger_entries_reference').on('ledger_entries').columns(['platform_id', 'reference_id']).execute();
  await sql`create unique index ledger_entries_idempotency on ledger_entries (platform_id, idempotency_key) where idempotency_key is not null`.execute(db);

  await db.schema
    .createTable('ledger_postings')
    .addColumn('entry_id', 'text', (c) => c.notNull().references('ledger_entries.id').onDelete('cascade'))
    .addColumn('line', 'integer', (c) => c.notNull())
    .addColumn('platform_id', 'text', (c) => c.notNull())
    .addColumn('account_id', 'text', (c) => c.notNull().references('ledger_balances.account_id'))
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('bucket', 'text', (c) => c.notNull())
    // Signed minor units: positive raises the account's bucket, negative lowers it.
    .addColumn('amount', bigint, (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('ledger_postings_pk', ['entry_id', 'line'])
    .addCheckConstraint('ledger_postings_bucket', sql`bucket in ('available', 'pending', 'held')`)
    .addCheckConstraint('ledger_postings_nonzero', sql`amount <> 0`)
    .execute();
  await db.schema.createIndex('ledger_postings_account').on('ledger_postings').columns(['account_id', 'entry_id']).execute();
}
