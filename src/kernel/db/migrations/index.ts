import type { Migration } from 'kysely';
import * as m0001_foundation from './0001_foundation.js';
import * as m0002_customers from './0002_customers.js';
import * as m0003_accounts_ledger from './0003_accounts_ledger.js';
import * as m0004_external_accounts from './0004_external_accounts.js';
import * as m0005_lookups from './0005_lookups.js';
import * as m0006_quotes_transactions from './0006_quotes_transactions.js';
import * as m0007_webhooks from './0007_webhooks.js';
import * as m0008_payment_flows from './0008_payment_flows.js';
import * as m0009_transaction_volumes from './0009_transaction_volumes.js';
import * as m0010_list_filters from './0010_list_filters.js';
import * as m0011_webhook_retries from './0011_webhook_retries.js';
import * as m0012_fees_settlement from './0012_fees_settlement.js';
import * as m0013_onboarding from './0013_onboarding.js';
import * as m0014_deposit_routing from './0014_deposit_routing.js';
import * as m0015_sealed_identifiers from './0015_sealed_identifiers.js';
import * as m0016_auth_documents from './0016_auth_documents.js';
import * as m0017_idempotency_effects from './0017_idempotency_effects.js';
import * as m0018_delivery_lanes from './0018_delivery_lanes.js';
import * as m0019_idempotency_progress from './0019_idempotency_progress.js';
import * as m0020_list_counts from './0020_list_counts.js';
import * as m0020_pg_daily_volumes from './0020_pg_daily_volumes.js';
import * as m0021_embedded_wallets from './0021_embedded_wallets.js';
import * as m0022_agents from './0022_agents.js';
import * as m0023_sca from './0023_sca.js';
import * as m0024_cards from './0024_cards.js';
import * as m0025_customers_bulk from './0025_customers_bulk.js';
import * as m0025_invitations from './0025_invitations.js';
import * as m0025_stablecoins from './0025_stablecoins.js';
import * as m0026_event_bodies from './0026_event_bodies.js';
import * as m0027_customer_accounts_check from './0027_customer_accounts_check.js';
import * as m0028_partial_filter_indexes from './0028_partial_filter_indexes.js';
import * as m0029_postings_without_rowid from './0029_postings_without_rowid.js';
import * as m0030_receiver_index_partial from './0030_receiver_index_partial.js';
import * as m0031_pg_change_notify from './0031_pg_change_notify.js';
import * as m0032_postings_without_entry_columns from './0032_postings_without_entry_columns.js';
import * as m0033_sandbox_snapshots from './0033_sandbox_snapshots.js';
import * as m0034_sandbox_faults from './0034_sandbox_faults.js';
import * as m0035_delivery_lane_heads from './0035_delivery_lane_heads.js';
import * as m0036_narrower_indexes from './0036_narrower_indexes.js';
import * as m0040_lookup_answers from './0040_lookup_answers.js';
import * as m0041_pg_late_move_check from './0041_pg_late_move_check.js';
import * as m0042_pg_check_refused from './0042_pg_check_refused.js';

// Every migration, one file each in this folder, named `NNNN_purpose.ts` as Kysely's
// FileMigrationProvider expects (the name without `.ts` is the one `kysely_migration`
// records). The list is static, not a readdir at run time: the server is one bundle
// (scripts/bundle.mjs) and starts without reading the folder. A new migration is one new file
// and one import and one line here, in name order (test/kernel/migrations.test.ts checks the
// list is exactly the folder's files, in order). A file that has landed is never edited.

export const MIGRATIONS: Readonly<Record<string, Migration>> = {
  '0001_foundation': m0001_foundation,
  '0002_customers': m0002_customers,
  '0003_accounts_ledger': m0003_accounts_ledger,
  '0004_external_accounts': m0004_external_accounts,
  '0005_lookups': m0005_lookups,
  '0006_quotes_transactions': m0006_quotes_transactions,
  '0007_webhooks': m0007_webhooks,
  '0008_payment_flows': m0008_payment_flows,
  '0009_transaction_volumes': m0009_transaction_volumes,
  '0010_list_filters': m0010_list_filters,
  '0011_webhook_retries': m0011_webhook_retries,
  '0012_fees_settlement': m0012_fees_settlement,
  '0013_onboarding': m0013_onboarding,
  '0014_deposit_routing': m0014_deposit_routing,
  '0015_sealed_identifiers': m0015_sealed_identifiers,
  '0016_auth_documents': m0016_auth_documents,
  '0017_idempotency_effects': m0017_idempotency_effects,
  '0018_delivery_lanes': m0018_delivery_lanes,
  '0019_idempotency_progress': m0019_idempotency_progress,
  '0020_list_counts': m0020_list_counts,
  '0020_pg_daily_volumes': m0020_pg_daily_volumes,
  '0021_embedded_wallets': m0021_embedded_wallets,
  '0022_agents': m0022_agents,
  '0023_sca': m0023_sca,
  '0024_cards': m0024_cards,
  '0025_customers_bulk': m0025_customers_bulk,
  '0025_invitations': m0025_invitations,
  '0025_stablecoins': m0025_stablecoins,
  '0026_event_bodies': m0026_event_bodies,
  '0027_customer_accounts_check': m0027_customer_accounts_check,
  '0028_partial_filter_indexes': m0028_partial_filter_indexes,
  '0029_postings_without_rowid': m0029_postings_without_rowid,
  '0030_receiver_index_partial': m0030_receiver_index_partial,
  '0031_pg_change_notify': m0031_pg_change_notify,
  '0032_postings_without_entry_columns': m0032_postings_without_entry_columns,
  '0033_sandbox_snapshots': m0033_sandbox_snapshots,
  '0034_sandbox_faults': m0034_sandbox_faults,
  '0035_delivery_lane_heads': m0035_delivery_lane_heads,
  '0036_narrower_indexes': m0036_narrower_indexes,
  '0040_lookup_answers': m0040_lookup_answers,
  '0041_pg_late_move_check': m0041_pg_late_move_check,
  '0042_pg_check_refused': m0042_pg_check_refused,
};
