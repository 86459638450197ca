import { type Kysely, type Migration, type MigrationProvider, Migrator, sql } from 'kysely';
import type { Store } from './connect.js';
import { CHANGE_CHANNEL, CHANGE_NOTIFIED_TABLES, CHANGE_TRIGGER } from './pg-change-watch.js';
import { newWebhookKeyPair } from '../webhook-keys.js';

// One set of migrations for both stores, applied at start. Kysely's migrator takes a
// lock (an advisory lock on PostgreSQL) so two processes starting together apply each
// migration once; applied migrations are recorded and skipped next time.

type AnyDb = Kysely<any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * Statuses of an OUTGOING transaction whose money does not use the day's volume, as
 * migration 0009's triggers have them (src/areas/limits/store.ts checks it is its list).
 * Changing the list means a new migration that recreates the triggers.
 */
export const VOLUME_STATUSES_NOT_COUNTED = ['PENDING', 'FAILED', 'REFUNDED', 'REJECTED', 'EXPIRED'] as const;

// New tables of an area come as a new entry ('0002_customers', …) at the end of this list;
// an entry is never edited once it has landed.
export function migrations(kind: Store['kind']): Record<string, Migration> {
  const bigint = 'bigint' as const;
  return {
    '0001_foundation': {
      async up(db: AnyDb) {
        await db.schema
          .createTable('platforms')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('regulated', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('is_default', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('options', 'text', (c) => c.notNull().defaultTo('{}'))
          .addColumn('clock_offset_ms', bigint, (c) => c.notNull().defaultTo(0))
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('updated_at', 'text', (c) => c.notNull())
          .execute();
        // At most one default platform.
        await sql`create unique index platforms_one_default on platforms (is_default) where is_default = 1`.execute(db);

        await db.schema
          .createTable('platform_configs')
          .addColumn('platform_id', 'text', (c) => c.primaryKey().references('platforms.id').onDelete('cascade'))
          .addColumn('id', 'text', (c) => c.notNull().unique())
          .addColumn('uma_domain', 'text', (c) => c.notNull())
          .addColumn('proxy_uma_subdomain', 'text')
          .addColumn('webhook_endpoint', 'text')
          .addColumn('supported_currencies', 'text', (c) => c.notNull())
          .addColumn('embedded_wallet_config', 'text')
          .addColumn('card_tokenization_2fa_config', 'text')
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('updated_at', 'text', (c) => c.notNull())
          .execute();

        await db.schema
          .createTable('fee_configs')
          .addColumn('platform_id', 'text', (c) => c.notNull().references('platforms.id').onDelete('cascade'))
          .addColumn('fee_type', 'text', (c) => c.notNull())
          .addColumn('source_currency', 'text', (c) => c.notNull())
          .addColumn('variable_fee_bps', 'integer', (c) => c.notNull())
          .addColumn('fixed_fee_amount', bigint, (c) => c.notNull())
          .addColumn('fixed_fee_currency', 'text', (c) => c.notNull())
          .addColumn('active', 'integer', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('updated_at', 'text', (c) => c.notNull())
          .addPrimaryKeyConstraint('fee_configs_pk', ['platform_id', 'fee_type', 'source_currency'])
          .execute();

        await db.schema
          .createTable('api_tokens')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('platform_id', 'text', (c) => c.notNull().references('platforms.id').onDelete('cascade'))
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('permissions', 'text', (c) => c.notNull())
          .addColumn('client_id', 'text', (c) => c.notNull().unique())
          .addColumn('secret_hash', 'text', (c) => c.notNull())
          .addColumn('is_bootstrap', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('updated_at', 'text', (c) => c.notNull())
          .addColumn('deleted_at', 'text')
          .execute();
        await db.schema.createIndex('api_tokens_platform').on('api_tokens').columns(['platform_id', 'id']).execute();

        await db.schema
          .createTable('idempotency_keys')
          .addColumn('platform_id', 'text', (c) => c.notNull())
          .addColumn('key', 'text', (c) => c.notNull())
          .addColumn('request_hash', 'text', (c) => c.notNull())
          .addColumn('state', 'text', (c) => c.notNull())
          .addColumn('response_status', 'integer')
          .addColumn('response_body', 'text')
          .addColumn('response_content_type', 'text')
          .addColumn('created_ms', bigint, (c) => c.notNull())
          .addPrimaryKeyConstraint('idempotency_keys_pk', ['platform_id', 'key'])
          .execute();

        await db.schema
          .createTable('jobs')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('platform_id', 'text')
          .addColumn('kind', 'text', (c) => c.notNull())
          .addColumn('payload', 'text', (c) => c.notNull())
          .addColumn('run_at_ms', bigint, (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('max_attempts', 'integer', (c) => c.notNull())
          .addColumn('last_error', 'text')
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('updated_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('jobs_due').on('jobs').columns(['status', 'run_at_ms']).execute();

        let events = db.schema.createTable('events');
        events =
          kind === 'postgres'
            ? events.addColumn('seq', 'bigserial', (c) => c.primaryKey())
            : events.addColumn('seq', 'integer', (c) => c.primaryKey().autoIncrement());
        await events
          .addColumn('id', 'text', (c) => c.notNull().unique())
          .addColumn('platform_id', 'text', (c) => c.notNull())
          .addColumn('type', 'text', (c) => c.notNull())
          .addColumn('resource_id', 'text', (c) => c.notNull())
          .addColumn('payload', 'text', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('events_platform').on('events').columns(['platform_id', 'seq']).execute();
      },
    },
    '0002_customers': {
      async up(db: AnyDb) {
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
      },
    },
    '0003_accounts_ledger': {
      // Internal accounts and the double-entry ledger their balances come from (docs/ledger.md).
      async up(db: AnyDb) {
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
      },
    },
    '0004_external_accounts': {
      // External bank accounts and wallets of customers (customer_id) and of the platform (customer_id NULL).
      async up(db: AnyDb) {
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
      },
    },
    '0005_lookups': {
      async up(db: AnyDb) {
        // Receiver lookups (UMA address or external account): what was answered, for the quote
        // that names the lookupId.
        await db.schema
          .createTable('lookups')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('platform_id', 'text', (c) => c.notNull().references('platforms.id').onDelete('cascade'))
          .addColumn('kind', 'text', (c) => c.notNull())
          .addColumn('target', 'text', (c) => c.notNull())
          .addColumn('customer_id', 'text', (c) => c.notNull())
          .addColumn('sending_currency', 'text', (c) => c.notNull())
          .addColumn('quoted', 'text', (c) => c.notNull())
          .addColumn('required_payer_data_fields', 'text')
          .addColumn('receiver', 'text')
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addCheckConstraint('lookups_kind', sql`kind in ('UMA', 'EXTERNAL_ACCOUNT')`)
          .execute();
        await db.schema.createIndex('lookups_platform').on('lookups').columns(['platform_id', 'id']).execute();
      },
    },
    '0006_quotes_transactions': {
      async up(db: AnyDb) {
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
      },
    },
    '0007_webhooks': {
      async up(db: AnyDb) {
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
      },
    },
    '0008_payment_flows': {
      async up(db: AnyDb) {
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
      },
    },
    '0009_transaction_volumes': {
      // SQLite only: each corridor's day of counted OUTGOING volume, kept by triggers on
      // transactions, so the daily-volume check reads one row instead of summing the day's
      // transactions (src/areas/limits/store.ts). "Counted" mirrors STATUSES_NOT_COUNTED
      // there; a test checks the two agree. PostgreSQL sums with an index, as before: there,
      // concurrent writers of one corridor would queue on its row.
      async up(db: AnyDb) {
        if (kind !== 'sqlite') return;
        await sql`create table transaction_volumes (
          platform_id text not null,
          sent_currency text not null,
          received_currency text not null,
          day text not null,
          total bigint not null,
          primary key (platform_id, sent_currency, received_currency, day)
        ) without rowid`.execute(db);
        const counted = (r: string) =>
          `(${r}.type = 'OUTGOING' and ${r}.received_currency is not null and ${r}.status not in (${VOLUME_STATUSES_NOT_COUNTED.map((x) => `'${x}'`).join(', ')}))`;
        const key = (r: 'new' | 'old') => `${r}.platform_id, ${r}.sent_currency, ${r}.received_currency, substr(${r}.created_at, 1, 10)`;
        const add = (r: 'new' | 'old') =>
          `insert into transaction_volumes (platform_id, sent_currency, received_currency, day, total) select ${key(r)}, ${r}.sent_amount where ${counted(r)}
           on conflict (platform_id, sent_currency, received_currency, day) do update set total = total + excluded.total;`;
        const subtract = (r: 'new' | 'old') =>
          `update transaction_volumes set total = total - ${r}.sent_amount where ${counted(r)} and platform_id = ${r}.platform_id
           and sent_currency = ${r}.sent_currency and received_currency = ${r}.received_currency and day = substr(${r}.created_at, 1, 10);`;
        await sql.raw(`create trigger transaction_volumes_insert after insert on transactions when ${counted('new')} begin ${add('new')} end`).execute(db);
        await sql.raw(`create trigger transaction_volumes_delete after delete on transactions when ${counted('old')} begin ${subtract('old')} end`).execute(db);
        // An update that leaves the row counted as it was (most do: PROCESSING → COMPLETED) does nothing.
        const changed = `(${counted('old')} != ${counted('new')} or (${counted('new')} and (old.sent_amount != new.sent_amount or old.platform_id != new.platform_id
          or old.sent_currency != new.sent_currency or old.received_currency != new.received_currency or substr(old.created_at, 1, 10) != substr(new.created_at, 1, 10))))`;
        await sql.raw(`create trigger transaction_volumes_update after update on transactions when ${changed} begin ${subtract('old')} ${add('new')} end`).execute(db);
        await sql.raw(`insert into transaction_volumes (platform_id, sent_currency, received_currency, day, total)
          select platform_id, sent_currency, received_currency, substr(created_at, 1, 10), sum(sent_amount) from transactions t where ${counted('t')}
          group by platform_id, sent_currency, received_currency, substr(created_at, 1, 10)`).execute(db);
      },
    },
    '0010_list_filters': {
      // The list filters of GET /transactions and GET /quotes. The identifiers they match are
      // inside the JSON the API shows (source, destination, reconciliation, payment
      // instructions), so each is a generated column computed by the database from that JSON:
      // it exists for every row already there (no backfill to run) and can never disagree
      // with what the API shows, whoever writes the row. PostgreSQL stores it; SQLite computes
      // it on read (ALTER TABLE adds only virtual ones) and keeps it in the index. Writers never
      // set these columns (kernel/db/schema.ts keeps them out of the row types).
      async up(db: AnyDb) {
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
      },
    },
    '0011_webhook_retries': {
      async up(db: AnyDb) {
        // A sandbox clock advance stops at each pending retry of the platform's deliveries
        // (the 7-day schedule has 340 of them): the next one is found by platform and due time.
        await db.schema.createIndex('webhook_deliveries_platform_due').on('webhook_deliveries').columns(['platform_id', 'status', 'next_attempt_ms']).execute();
      },
    },
    '0012_fees_settlement': {
      // Outgoing transactions: when the payment is expected to settle, fixed when it starts
      // from its sandbox outcome (expectedSettlementAt, settlementTimelineSeconds).
      async up(db: AnyDb) {
        await db.schema.alterTable('transactions').addColumn('expected_settlement_at', 'text').execute();
        await db.schema.alterTable('transactions').addColumn('settlement_timeline_seconds', bigint).execute();
      },
    },
    '0013_onboarding': {
      // Platforms created before proxyUmaSubdomain was set get it from their UMA domain: its
      // first label, lower-cased (the rule of proxyUmaSubdomainOf in src/sandbox/platform-defaults.ts,
      // written out so this entry never changes). No schema change.
      async up(db: AnyDb) {
        const rows = (await db.selectFrom('platform_configs').select(['platform_id', 'uma_domain']).where('proxy_uma_subdomain', 'is', null).execute()) as Array<{
          platform_id: string;
          uma_domain: string;
        }>;
        for (const r of rows) {
          await db.updateTable('platform_configs').set({ proxy_uma_subdomain: r.uma_domain.toLowerCase().split('.')[0] }).where('platform_id', '=', r.platform_id).execute();
        }
      },
    },
    '0014_deposit_routing': {
      // At most one default UMA deposit account per customer (incoming UMA payments are paid
      // on to it): the create path moved the flag, but two concurrent creates could both keep
      // it. Duplicates are settled first (the newest live one keeps it), then an index holds it.
      async up(db: AnyDb) {
        await sql`update external_accounts set default_uma_deposit_account = 0
          where default_uma_deposit_account = 1 and (is_deleted = 1 or customer_id is null or id <> (
            select max(e.id) from external_accounts e
            where e.platform_id = external_accounts.platform_id and e.customer_id = external_accounts.customer_id
              and e.default_uma_deposit_account = 1 and e.is_deleted = 0))`.execute(db);
        await sql`create unique index external_accounts_one_default_uma on external_accounts (platform_id, customer_id)
          where default_uma_deposit_account = 1 and is_deleted = 0`.execute(db);
      },
    },
    '0015_sealed_identifiers': {
      async up(db: AnyDb) {
        // A beneficial owner's full identification number, sealed (kernel/sealed.ts); rows
        // from before keep only the last 4 in personal_info.
        await db.schema.alterTable('beneficial_owners').addColumn('identifier_sealed', 'text').execute();
        // The data key when PAYMENTS_DATA_KEY is not set: one row, written at the first start.
        await db.schema
          .createTable('data_keys')
          .addColumn('id', 'integer', (c) => c.primaryKey())
          .addColumn('data_key', 'text', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .execute();
      },
    },
    '0016_auth_documents': {
      // Document bytes in chunks of at most 256 KiB (documents area), written and read one at a
      // time so no upload or download holds a whole file; documents.content stays, emptied.
      async up(db: AnyDb) {
        const blob = kind === 'postgres' ? ('bytea' as const) : ('blob' as const);
        await db.schema
          .createTable('document_chunks')
          .addColumn('document_id', 'text', (c) => c.notNull())
          .addColumn('seq', 'integer', (c) => c.notNull())
          .addColumn('platform_id', 'text', (c) => c.notNull())
          .addColumn('bytes', blob, (c) => c.notNull())
          .addPrimaryKeyConstraint('document_chunks_pk', ['document_id', 'seq'])
          .execute();
        // Documents from before: their bytes become chunk 0.
        await sql`insert into document_chunks (document_id, seq, platform_id, bytes)
          select id, 0, platform_id, content from documents where size_bytes > 0`.execute(db);
        await sql`update documents set content = ${Buffer.alloc(0)}`.execute(db);
      },
    },
    '0017_idempotency_effects': {
      async up(db: AnyDb) {
        // Exactly once per Idempotency-Key (kernel/idempotency.ts): each claim gets a token
        // (the fence every later write of its request checks) and a lease its process renews
        // while the request runs (real epoch ms); a claim is taken over only once its lease
        // has lapsed and its effect has not committed.
        await db.schema.alterTable('idempotency_keys').addColumn('claim_token', 'text').execute();
        await db.schema.alterTable('idempotency_keys').addColumn('lease_ms', bigint).execute();
      },
    },
    '0018_delivery_lanes': {
      async up(db: AnyDb) {
        // Webhook deliveries go out in lanes (one per resource) with several lanes in flight:
        // a claim checks that no earlier delivery of the lane is still open (PENDING or
        // SENDING), and releasing a lane finds its next open one. With the status before the
        // sequence, both are two short index ranges, however many delivered rows the lane has.
        await db.schema.createIndex('webhook_deliveries_lane_open').on('webhook_deliveries').columns(['platform_id', 'resource_id', 'status', 'event_seq']).execute();
      },
    },
    '0019_idempotency_progress': {
      async up(db: AnyDb) {
        // An effect that commits in steps (the sandbox clock advance) keeps its plan with the
        // Idempotency-Key claim, so a retry after a crash midway finishes that plan (kernel/idempotency.ts claimPlan).
        await db.schema.alterTable('idempotency_keys').addColumn('progress', 'text').execute();
      },
    },
    '0023_sca': {
      async up(db: AnyDb) {
        // Strong Customer Authentication (src/areas/sca). Factors a customer enrolled (PENDING
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
      },
    },
    '0024_cards': {
      // Cards (src/areas/cards, docs/cards.md): the cards, their card transactions (the parent
      // row of an authorization with its pulls, clearings and refunds rolled up into counters),
      // and the audit trail of PAN reveals (who asked, when; never the URL or the PAN).
      async up(db: AnyDb) {
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
      },
    },
    '0025_customers_bulk': {
      async up(db: AnyDb) {
        // The bulk customer import (customers-bulk area): the job, its rows waiting to be
        // processed, and the problems of the rows that failed.
        await db.schema
          .createTable('bulk_imports')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('platform_id', 'text', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('file_name', 'text')
          .addColumn('columns', 'text', (c) => c.notNull())
          .addColumn('total', 'integer', (c) => c.notNull())
          .addColumn('processed', 'integer', (c) => c.notNull())
          .addColumn('successful', 'integer', (c) => c.notNull())
          .addColumn('failed', 'integer', (c) => c.notNull())
          .addColumn('error_count', 'integer', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('updated_at', 'text', (c) => c.notNull())
          .addColumn('completed_at', 'text')
          .execute();
        await db.schema.createIndex('bulk_imports_platform').on('bulk_imports').columns(['platform_id', 'id']).execute();
        await db.schema
          .createTable('bulk_import_rows')
          .addColumn('import_id', 'text', (c) => c.notNull())
          .addColumn('row_no', 'integer', (c) => c.notNull())
          .addColumn('line_no', 'integer', (c) => c.notNull())
          .addColumn('cells', 'text', (c) => c.notNull())
          .addPrimaryKeyConstraint('bulk_import_rows_pk', ['import_id', 'row_no'])
          .execute();
        await db.schema
          .createTable('bulk_import_errors')
          .addColumn('import_id', 'text', (c) => c.notNull())
          .addColumn('seq', 'integer', (c) => c.notNull())
          .addColumn('row_no', 'integer', (c) => c.notNull())
          .addColumn('line_no', 'integer', (c) => c.notNull())
          .addColumn('correlation_id', 'text', (c) => c.notNull())
          .addColumn('field', 'text', (c) => c.notNull())
          .addColumn('code', 'text', (c) => c.notNull())
          .addColumn('message', 'text', (c) => c.notNull())
          .addPrimaryKeyConstraint('bulk_import_errors_pk', ['import_id', 'seq'])
          .execute();
      },
    },
    '0025_invitations': {
      async up(db: AnyDb) {
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
      },
    },
    '0025_stablecoins': {
      async up(db: AnyDb) {
        // Stablecoins (stablecoins area): provider account links, registered stablecoins, mints and burns.
        await db.schema
          .createTable('stablecoin_provider_accounts')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('platform_id', 'text', (c) => c.notNull())
          .addColumn('provider', 'text', (c) => c.notNull())
          .addColumn('provider_account_id', 'text', (c) => c.notNull())
          .addColumn('provider_environment', 'text', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('api_client_id', 'text', (c) => c.notNull())
          .addColumn('secret_hash', 'text', (c) => c.notNull())
          .addColumn('last_verified_at', 'text')
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('updated_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('stablecoin_provider_accounts_platform').on('stablecoin_provider_accounts').columns(['platform_id', 'id']).execute();
        await db.schema
          .createTable('stablecoins')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('platform_id', 'text', (c) => c.notNull())
          .addColumn('provider_account_id', 'text', (c) => c.notNull())
          .addColumn('provider', 'text', (c) => c.notNull())
          .addColumn('provider_environment', 'text', (c) => c.notNull())
          .addColumn('provider_token_identifier', 'text', (c) => c.notNull())
          .addColumn('network_token_identifier', 'text', (c) => c.notNull())
          .addColumn('network', 'text', (c) => c.notNull())
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('symbol', 'text', (c) => c.notNull())
          .addColumn('decimals', 'integer', (c) => c.notNull())
          .addColumn('base_currency', 'text', (c) => c.notNull())
          .addColumn('issuance_status', 'text', (c) => c.notNull())
          .addColumn('operations_status', 'text', (c) => c.notNull())
          .addColumn('minted_account_id', 'text', (c) => c.notNull())
          .addColumn('burned_account_id', 'text', (c) => c.notNull())
          .addColumn('outstanding', 'text', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('updated_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('stablecoins_platform').on('stablecoins').columns(['platform_id', 'id']).execute();
        await db.schema.createIndex('stablecoins_token').on('stablecoins').columns(['platform_id', 'provider_account_id', 'provider_token_identifier', 'network']).unique().execute();
        await db.schema
          .createTable('stablecoin_operations')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('platform_id', 'text', (c) => c.notNull())
          .addColumn('stablecoin_id', 'text', (c) => c.notNull())
          .addColumn('operation_type', 'text', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('amount', 'text', (c) => c.notNull())
          .addColumn('fiat_minor', bigint, (c) => c.notNull())
          .addColumn('provider_account_id', 'text', (c) => c.notNull())
          .addColumn('source', 'text', (c) => c.notNull())
          .addColumn('destination', 'text', (c) => c.notNull())
          .addColumn('funding_account_id', 'text')
          .addColumn('hold_entry_id', 'text')
          .addColumn('failure_reason', 'text')
          .addColumn('description', 'text')
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('updated_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('stablecoin_operations_coin').on('stablecoin_operations').columns(['platform_id', 'stablecoin_id', 'id']).execute();
      },
    },
    '0021_embedded_wallets': {
      async up(db: AnyDb) {
        // Embedded wallets (issue 16): the wallet's privacy flag on its internal account, its
        // secrets, the credentials that authenticate its owner, the sessions they open, the
        // pending signed-retry challenges, delegated keys, and each platform's passkey origins.
        await db.schema.alterTable('internal_accounts').addColumn('private_enabled', 'integer').execute();
        await db.schema
          .createTable('embedded_wallets')
          .addColumn('account_id', 'text', (c) => c.primaryKey())
          .addColumn('platform_id', 'text', (c) => c.notNull())
          .addColumn('organization_id', 'text', (c) => c.notNull())
          .addColumn('wallet_address', 'text', (c) => c.notNull())
          .addColumn('mnemonic', 'text', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema
          .createTable('wallet_credentials')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('platform_id', 'text', (c) => c.notNull())
          .addColumn('account_id', 'text', (c) => c.notNull())
          .addColumn('type', 'text', (c) => c.notNull())
          .addColumn('nickname', 'text', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('webauthn_id', 'text')
          .addColumn('webauthn_public_key', 'text')
          .addColumn('webauthn_counter', bigint)
          .addColumn('rp_id', 'text')
          .addColumn('transports', 'text')
          .addColumn('oauth_iss', 'text')
          .addColumn('oauth_aud', 'text')
          .addColumn('oauth_sub', 'text')
          .addColumn('otp_target_key', 'text')
          .addColumn('otp_expires_ms', bigint)
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('updated_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('wallet_credentials_account').on('wallet_credentials').columns(['platform_id', 'account_id', 'id']).execute();
        await db.schema
          .createTable('wallet_sessions')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('platform_id', 'text', (c) => c.notNull())
          .addColumn('account_id', 'text', (c) => c.notNull())
          .addColumn('credential_id', 'text', (c) => c.notNull())
          .addColumn('public_key', 'text', (c) => c.notNull())
          .addColumn('client_key', 'text')
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('expires_at_ms', bigint, (c) => c.notNull())
          .addColumn('expires_at', 'text', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('updated_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('wallet_sessions_account').on('wallet_sessions').columns(['platform_id', 'account_id', 'id']).execute();
        await db.schema
          .createTable('wallet_requests')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('platform_id', 'text', (c) => c.notNull())
          .addColumn('account_id', 'text', (c) => c.notNull())
          .addColumn('kind', 'text', (c) => c.notNull())
          .addColumn('target_id', 'text', (c) => c.notNull())
          .addColumn('body_hash', 'text', (c) => c.notNull())
          .addColumn('payload', 'text', (c) => c.notNull())
          .addColumn('data', 'text', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('expires_at_ms', bigint, (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('wallet_requests_target').on('wallet_requests').columns(['platform_id', 'target_id', 'kind']).execute();
        await db.schema
          .createTable('delegated_keys')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('platform_id', 'text', (c) => c.notNull())
          .addColumn('account_id', 'text', (c) => c.notNull())
          .addColumn('card_id', 'text', (c) => c.notNull())
          .addColumn('funding_source_id', 'text', (c) => c.notNull())
          .addColumn('public_key', 'text', (c) => c.notNull())
          .addColumn('private_key', 'text', (c) => c.notNull())
          .addColumn('nickname', 'text', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('updated_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('delegated_keys_account').on('delegated_keys').columns(['platform_id', 'account_id', 'id']).execute();
        await db.schema
          .createTable('wallet_settings')
          .addColumn('platform_id', 'text', (c) => c.primaryKey())
          .addColumn('allowed_origins', 'text', (c) => c.notNull())
          .addColumn('updated_at', 'text', (c) => c.notNull())
          .execute();
      },
    },
    '0022_agents': {
      async up(db: AnyDb) {
        // Agents (areas/agents): a customer's delegated AI agent, its policy (JSON), and the
        // hash of its access token (SHA-256 hex, unique: the token is looked up by it).
        await db.schema
          .createTable('agents')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('platform_id', 'text', (c) => c.notNull())
          .addColumn('customer_id', 'text', (c) => c.notNull())
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('is_paused', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('is_connected', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('is_deleted', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('policy', 'text', (c) => c.notNull())
          .addColumn('token_hash', 'text', (c) => c.unique())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('updated_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('agents_platform_customer').on('agents').columns(['platform_id', 'customer_id', 'id']).execute();
        // Device codes: one agent may have several over time; only the newest unredeemed one is live.
        await db.schema
          .createTable('agent_device_codes')
          .addColumn('code', 'text', (c) => c.primaryKey())
          .addColumn('platform_id', 'text', (c) => c.notNull())
          .addColumn('agent_id', 'text', (c) => c.notNull())
          .addColumn('expires_at', 'text', (c) => c.notNull())
          .addColumn('expires_at_ms', bigint, (c) => c.notNull())
          .addColumn('redeemed_at', 'text')
          .addColumn('invalidated_at', 'text')
          .addColumn('created_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('agent_device_codes_agent').on('agent_device_codes').columns(['agent_id']).execute();
        // Agent actions (EXECUTE_QUOTE, TRANSFER_OUT, TRANSFER_IN) with their policy decision.
        await db.schema
          .createTable('agent_actions')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('platform_id', 'text', (c) => c.notNull())
          .addColumn('agent_id', 'text', (c) => c.notNull())
          .addColumn('customer_id', 'text', (c) => c.notNull())
          .addColumn('platform_customer_id', 'text', (c) => c.notNull())
          .addColumn('type', 'text', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('quote_id', 'text', (c) => c.notNull())
          .addColumn('transaction_id', 'text', (c) => c.notNull())
          .addColumn('executed', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('amount', bigint, (c) => c.notNull())
          .addColumn('currency', 'text', (c) => c.notNull())
          .addColumn('source_account_id', 'text')
          .addColumn('destination_account_id', 'text')
          .addColumn('internal_account_id', 'text')
          .addColumn('decision', 'text', (c) => c.notNull())
          .addColumn('decision_reasons', 'text', (c) => c.notNull())
          .addColumn('rejection_reason', 'text')
          .addColumn('failure_reason', 'text')
          .addColumn('decided_by', 'text')
          .addColumn('decided_at', 'text')
          .addColumn('expires_at', 'text')
          .addColumn('created_ms', bigint, (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('updated_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('agent_actions_agent').on('agent_actions').columns(['platform_id', 'agent_id', 'id']).execute();
        await db.schema.createIndex('agent_actions_status').on('agent_actions').columns(['platform_id', 'status', 'id']).execute();
        await db.schema.createIndex('agent_actions_transaction').on('agent_actions').columns(['platform_id', 'transaction_id']).execute();
        // Quotes an agent created (GET /agents/me/quotes/{id} answers only its own).
        await db.schema
          .createTable('agent_quotes')
          .addColumn('quote_id', 'text', (c) => c.primaryKey())
          .addColumn('platform_id', 'text', (c) => c.notNull())
          .addColumn('agent_id', 'text', (c) => c.notNull())
          .execute();
        // The audit trail: every policy evaluation (denials too) and every decision.
        await db.schema
          .createTable('agent_audit')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('platform_id', 'text', (c) => c.notNull())
          .addColumn('agent_id', 'text', (c) => c.notNull())
          .addColumn('action_id', 'text')
          .addColumn('operation', 'text', (c) => c.notNull())
          .addColumn('decision', 'text', (c) => c.notNull())
          .addColumn('reason', 'text', (c) => c.notNull())
          .addColumn('actor', 'text', (c) => c.notNull())
          .addColumn('transaction_id', 'text')
          .addColumn('created_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('agent_audit_agent').on('agent_audit').columns(['platform_id', 'agent_id', 'id']).execute();
      },
    },
    '0020_list_counts': {
      // Issue 15: a list's totalCount without count(*) over the platform's rows. The counts of
      // the common pages (all customers, live customers, all transactions of a platform) are
      // kept by triggers, so they include rows written around the services. On PostgreSQL the
      // triggers are deferred to commit (a counter row is locked only while its transaction
      // commits, not while it runs) and spread over 8 stripes; SQLite has one writer.
      async up(db: AnyDb) {
        await sql.raw(`create table list_counts (
          platform_id text not null,
          list text not null,
          scope text not null,
          stripe integer not null,
          n bigint not null,
          primary key (platform_id, list, scope, stripe)
        )${kind === 'sqlite' ? ' without rowid' : ''}`).execute(db);
        if (kind === 'sqlite') {
          const bump = (p: string, list: string, scope: string, d: number, when = '1') =>
            `insert into list_counts (platform_id, list, scope, stripe, n) select ${p}, '${list}', '${scope}', 0, ${d} where ${when}
             on conflict (platform_id, list, scope, stripe) do update set n = n + excluded.n;`;
          await sql.raw(`create trigger list_counts_customers_insert after insert on customers begin
            ${bump('new.platform_id', 'customers', 'all', 1)} ${bump('new.platform_id', 'customers', 'live', 1, 'new.is_deleted = 0')} end`).execute(db);
          await sql.raw(`create trigger list_counts_customers_delete after delete on customers begin
            ${bump('old.platform_id', 'customers', 'all', -1)} ${bump('old.platform_id', 'customers', 'live', -1, 'old.is_deleted = 0')} end`).execute(db);
          await sql.raw(`create trigger list_counts_customers_live after update of is_deleted on customers when old.is_deleted != new.is_deleted begin
            ${bump('new.platform_id', 'customers', 'live', 1, 'new.is_deleted = 0')} ${bump('new.platform_id', 'customers', 'live', -1, 'new.is_deleted != 0')} end`).execute(db);
          await sql.raw(`create trigger list_counts_transactions_insert after insert on transactions begin ${bump('new.platform_id', 'transactions', 'all', 1)} end`).execute(db);
          await sql.raw(`create trigger list_counts_transactions_delete after delete on transactions begin ${bump('old.platform_id', 'transactions', 'all', -1)} end`).execute(db);
        } else {
          await sql`create function list_counts_bump(p text, l text, s text, d bigint) returns void as $$
            begin
              insert into list_counts (platform_id, list, scope, stripe, n) values (p, l, s, floor(random() * 8)::int, d)
              on conflict (platform_id, list, scope, stripe) do update set n = list_counts.n + excluded.n;
            end $$ language plpgsql`.execute(db);
          await sql`create function list_counts_customers() returns trigger as $$
            begin
              if tg_op = 'INSERT' then
                perform list_counts_bump(new.platform_id, 'customers', 'all', 1);
                if new.is_deleted = 0 then perform list_counts_bump(new.platform_id, 'customers', 'live', 1); end if;
              elsif tg_op = 'DELETE' then
                perform list_counts_bump(old.platform_id, 'customers', 'all', -1);
                if old.is_deleted = 0 then perform list_counts_bump(old.platform_id, 'customers', 'live', -1); end if;
              elsif old.is_deleted <> new.is_deleted then
                perform list_counts_bump(new.platform_id, 'customers', 'live', case when new.is_deleted = 0 then 1 else -1 end);
              end if;
              return null;
            end $$ language plpgsql`.execute(db);
          await sql`create function list_counts_transactions() returns trigger as $$
            begin
              if tg_op = 'INSERT' then perform list_counts_bump(new.platform_id, 'transactions', 'all', 1);
              else perform list_counts_bump(old.platform_id, 'transactions', 'all', -1);
              end if;
              return null;
            end $$ language plpgsql`.execute(db);
          await sql`create constraint trigger list_counts_customers after insert or delete or update of is_deleted on customers
            deferrable initially deferred for each row execute function list_counts_customers()`.execute(db);
          await sql`create constraint trigger list_counts_transactions after insert or delete on transactions
            deferrable initially deferred for each row execute function list_counts_transactions()`.execute(db);
        }
        await sql`insert into list_counts (platform_id, list, scope, stripe, n) select platform_id, 'customers', 'all', 0, count(*) from customers group by platform_id`.execute(db);
        await sql`insert into list_counts (platform_id, list, scope, stripe, n)
          select platform_id, 'customers', 'live', 0, count(*) from customers where is_deleted = 0 group by platform_id`.execute(db);
        await sql`insert into list_counts (platform_id, list, scope, stripe, n) select platform_id, 'transactions', 'all', 0, count(*) from transactions group by platform_id`.execute(db);
      },
    },
    '0020_pg_daily_volumes': {
      // Issue 15, PostgreSQL: each corridor's day of counted OUTGOING volume in
      // transaction_volumes, as SQLite has had since 0009, kept by a trigger deferred to
      // commit: the counter row is locked only while its transaction commits, so a
      // platform's payments no longer queue on one row (before: the platform row, locked
      // from the volume check to the commit). The daily-volume check (limits/store.ts) reads
      // the row, and arms the trigger with the limit (a transaction-local setting,
      // payments.dvl_<sending>_<receiving> = '<limit>|<source>|<day>'): at commit, a total
      // over that limit raises SQLSTATE LV429 and the transaction rolls back; the limits area
      // answers it 429 DAILY_VOLUME_LIMIT_EXCEEDED. Exact across processes, no lock held
      // while a request runs.
      async up(db: AnyDb) {
        if (kind !== 'postgres') return;
        await sql`create table transaction_volumes (
          platform_id text not null,
          sent_currency text not null,
          received_currency text not null,
          day text not null,
          total bigint not null,
          primary key (platform_id, sent_currency, received_currency, day)
        )`.execute(db);
        const notCounted = VOLUME_STATUSES_NOT_COUNTED.map((x) => `'${x}'`).join(', ');
        const counted = (r: string) => `(${r}.type = 'OUTGOING' and ${r}.received_currency is not null and ${r}.status not in (${notCounted}))`;
        await sql.raw(`create function transaction_volumes_keep() returns trigger as $$
          declare
            c_old boolean := tg_op <> 'INSERT' and ${counted('old')};
            c_new boolean := tg_op <> 'DELETE' and ${counted('new')};
            kept bigint;
            armed text;
          begin
            if tg_op = 'UPDATE' and c_old = c_new and (not c_new or (old.sent_amount = new.sent_amount and old.platform_id = new.platform_id
                and old.sent_currency = new.sent_currency and old.received_currency = new.received_currency
                and substr(old.created_at, 1, 10) = substr(new.created_at, 1, 10))) then
              return null;
            end if;
            if c_old then
              update transaction_volumes set total = total - old.sent_amount where platform_id = old.platform_id and sent_currency = old.sent_currency
                and received_currency = old.received_currency and day = substr(old.created_at, 1, 10);
            end if;
            if c_new then
              insert into transaction_volumes (platform_id, sent_currency, received_currency, day, total)
                values (new.platform_id, new.sent_currency, new.received_currency, substr(new.created_at, 1, 10), new.sent_amount)
                on conflict (platform_id, sent_currency, received_currency, day) do update set total = transaction_volumes.total + excluded.total
                returning total into kept;
              armed := current_setting('payments.dvl_' || lower(new.sent_currency) || '_' || lower(new.received_currency), true);
              if armed is not null and armed <> '' and split_part(armed, '|', 3) = substr(new.created_at, 1, 10)
                  and kept > split_part(armed, '|', 1)::bigint then
                raise exception 'daily volume limit exceeded' using errcode = 'LV429',
                  detail = json_build_object('total', kept, 'amount', new.sent_amount, 'limit', split_part(armed, '|', 1),
                    'source', split_part(armed, '|', 2), 'day', split_part(armed, '|', 3),
                    'sendingCurrency', new.sent_currency, 'receivingCurrency', new.received_currency)::text;
              end if;
            end if;
            return null;
          end $$ language plpgsql`).execute(db);
        await sql`create constraint trigger transaction_volumes_keep
          after insert or delete or update of type, status, sent_amount, platform_id, sent_currency, received_currency, created_at on transactions
          deferrable initially deferred for each row execute function transaction_volumes_keep()`.execute(db);
        await sql.raw(`insert into transaction_volumes (platform_id, sent_currency, received_currency, day, total)
          select platform_id, sent_currency, received_currency, substr(created_at, 1, 10), sum(sent_amount) from transactions t where ${counted('t')}
          group by platform_id, sent_currency, received_currency, substr(created_at, 1, 10)`).execute(db);
      },
    },
    // Issue 15: an event's payload packed in one binary column (kernel/event-bodies.ts).
    // Older rows keep their JSON in `payload` and a NULL `body`; both are read.
    // Issue 15: start-up looks only at customers nobody has checked for internal accounts
    // (rows written before, or around the service), not at every customer: a partial index
    // holds just those. Every existing row is checked once, at the next start.
    '0027_customer_accounts_check': {
      async up(db) {
        await db.schema.alterTable('customers').addColumn('accounts_unchecked', 'integer', (c) => c.notNull().defaultTo(1)).execute();
        await sql`create index customers_accounts_unchecked on customers (id) where accounts_unchecked = 1`.execute(db);
      },
    },
    '0026_event_bodies': {
      async up(db) {
        await db.schema.alterTable('events').addColumn('body', kind === 'postgres' ? 'bytea' : 'blob').execute();
      },
    },
    // Issue 15: fewer index bytes per payment. Two list-filter indexes of 0010 hold only the
    // rows whose filtered value is set (most payments have no reconciliation reference and no
    // UMA destination): their only queries compare the column with `=` (transactions/store.ts
    // `reference`, quotes/store.ts `receivingUmaAddress`), which implies IS NOT NULL, so both
    // planners still use them (with bound parameters, and in PostgreSQL's generic plans).
    // ledger_entries_reference (0003) goes: no query reads entries by reference_id; a
    // platform's reset deletes its entries with a scan, as it already does its postings.
    '0028_partial_filter_indexes': {
      async up(db: AnyDb) {
        await sql`drop index transactions_reference`.execute(db);
        await sql`create index transactions_reference on transactions (platform_id, reconciliation_reference, id) where reconciliation_reference is not null`.execute(db);
        await sql`drop index quotes_destination_uma`.execute(db);
        await sql`create index quotes_destination_uma on quotes (platform_id, destination_uma_address, id) where destination_uma_address is not null`.execute(db);
        await sql`drop index ledger_entries_reference`.execute(db);
      },
    },
    // Issue 15: bytes per payment flow. On SQLite, ledger_postings becomes a WITHOUT ROWID
    // table keyed by its primary key (entry_id, line): the rows live in that key's b-tree, so
    // the separate index SQLite kept for the key (about 56 bytes a posting, four postings a
    // payment flow) is gone. Same columns, constraints and secondary index; nothing references
    // the table, so it is rebuilt under its name in one transaction (a crash leaves the old
    // table or the new one, never neither). PostgreSQL tables have no rowid: nothing to do.
    // Issue 15: bytes per payment flow. transactions_receiver (0010) indexed every row's
    // receiver identifier, which for a payment to an account is its destination account, also
    // indexed by transactions_destination_account. The receiver filter searches both and
    // unites them (transactions/store.ts `matching`), so the receiver index needs only the
    // rows whose receiver is not the destination account: a UMA address, or a destination
    // without an account. The query repeats the index's condition word for word, which both
    // planners (PostgreSQL's generic plans included) match to the partial index.
    '0030_receiver_index_partial': {
      async up(db: AnyDb) {
        await sql`drop index transactions_receiver`.execute(db);
        await sql.raw(`create index transactions_receiver on transactions (platform_id, receiver_identifier, id) where ${RECEIVER_NOT_DESTINATION}`).execute(db);
      },
    },
    // Issue 15: row caches across requests on PostgreSQL (kernel/db/pg-change-watch.ts). Each
    // cached table tells every listening server process, at commit, that it changed. A
    // statement trigger, so a statement notifies once whatever its number of rows, and
    // PostgreSQL folds the same notification of one transaction into one. SQLite needs none
    // (its watch reads the file's data_version).
    '0031_pg_change_notify': {
      async up(db: AnyDb) {
        if (kind !== 'postgres') return;
        await sql.raw(`create or replace function ${CHANGE_TRIGGER}() returns trigger language plpgsql as $fn$
          begin
            perform pg_notify('${CHANGE_CHANNEL}', tg_table_schema || '.' || tg_table_name);
            return null;
          end
        $fn$`).execute(db);
        for (const table of CHANGE_NOTIFIED_TABLES) {
          await sql.raw(`create trigger ${CHANGE_TRIGGER} after insert or update or delete or truncate on ${table} for each statement execute function ${CHANGE_TRIGGER}()`).execute(db);
        }
      },
    },
    // Issue 15: bytes per payment flow. A posting repeated two columns of its entry: the
    // platform id (45 characters) and the time. Nothing reads them from the posting (views
    // take the entry's, queries reach postings through entries already narrowed to the
    // platform): about 70 bytes a posting, four a payment flow. SQLite rebuilds the table in
    // place, in one transaction, as 0029 did (nothing references it); PostgreSQL drops them.
    '0032_postings_without_entry_columns': {
      async up(db: AnyDb) {
        if (kind !== 'sqlite') {
          await sql`alter table ledger_postings drop column platform_id, drop column created_at`.execute(db);
          return;
        }
        await db.transaction().execute(async (trx) => {
          await sql`create table ledger_postings_v3 (
            entry_id text not null references ledger_entries (id) on delete cascade,
            line integer not null,
            account_id text not null references ledger_balances (account_id),
            currency text not null,
            bucket text not null,
            amount bigint not null,
            constraint ledger_postings_pk primary key (entry_id, line),
            constraint ledger_postings_bucket check (bucket in ('available', 'pending', 'held')),
            constraint ledger_postings_nonzero check (amount <> 0)
          ) without rowid`.execute(trx);
          await sql`insert into ledger_postings_v3 (entry_id, line, account_id, currency, bucket, amount)
            select entry_id, line, account_id, currency, bucket, amount from ledger_postings`.execute(trx);
          await sql`drop table ledger_postings`.execute(trx);
          await sql`alter table ledger_postings_v3 rename to ledger_postings`.execute(trx);
          await sql`create index ledger_postings_account on ledger_postings (account_id, entry_id)`.execute(trx);
        });
      },
    },
    '0029_postings_without_rowid': {
      async up(db: AnyDb) {
        if (kind !== 'sqlite') return;
        await db.transaction().execute(async (trx) => {
          await sql`create table ledger_postings_v2 (
            entry_id text not null references ledger_entries (id) on delete cascade,
            line integer not null,
            platform_id text not null,
            account_id text not null references ledger_balances (account_id),
            currency text not null,
            bucket text not null,
            amount bigint not null,
            created_at text not null,
            constraint ledger_postings_pk primary key (entry_id, line),
            constraint ledger_postings_bucket check (bucket in ('available', 'pending', 'held')),
            constraint ledger_postings_nonzero check (amount <> 0)
          ) without rowid`.execute(trx);
          await sql`insert into ledger_postings_v2 (entry_id, line, platform_id, account_id, currency, bucket, amount, created_at)
            select entry_id, line, platform_id, account_id, currency, bucket, amount, created_at from ledger_postings`.execute(trx);
          await sql`drop table ledger_postings`.execute(trx);
          await sql`alter table ledger_postings_v2 rename to ledger_postings`.execute(trx);
          await sql`create index ledger_postings_account on ledger_postings (account_id, entry_id)`.execute(trx);
        });
      },
    },
  };
}

/**
 * The condition of the partial index transactions_receiver (migration 0030): a query that
 * searches it must repeat it word for word (transactions/store.ts).
 */
export const RECEIVER_NOT_DESTINATION = `receiver_identifier <> coalesce(destination_account_id, '')`;

export async function migrate(store: Store): Promise<string[]> {
  const all = migrations(store.kind);
  const provider: MigrationProvider = { getMigrations: async () => all };
  // On PostgreSQL, name the schema of Kysely's own tables: unqualified, the migrator takes
  // a kysely_migration table in any other schema of the database for its own.
  const schema =
    store.kind === 'postgres' ? (await sql<{ s: string }>`select current_schema() as s`.execute(store.db)).rows[0]?.s : undefined;
  // Unordered: areas land in parallel, so a later landing may bring a migration that sorts
  // before one a kept database already applied; it runs then instead of refusing to start.
  const migrator = new Migrator({
    db: store.db,
    provider,
    allowUnorderedMigrations: true,
    ...(schema ? { migrationTableSchema: schema } : {}),
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
