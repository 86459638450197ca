import type { Kysely, Transaction } from 'kysely';
import type { DB } from '../../kernel/db/schema.js';

// The stablecoin tables (migration 0025_stablecoins), typed beside their only user.

export interface ProviderAccountsTable {
  id: string;
  platform_id: string;
  provider: string;
  provider_account_id: string;
  provider_environment: string;
  status: string;
  api_client_id: string;
  /** scrypt hash of the provider secret (never shown). */
  secret_hash: string;
  last_verified_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface StablecoinsTable {
  id: string;
  platform_id: string;
  provider_account_id: string;
  provider: string;
  provider_environment: string;
  provider_token_identifier: string;
  network_token_identifier: string;
  network: string;
  name: string;
  symbol: string;
  decimals: number;
  base_currency: string;
  issuance_status: string;
  operations_status: string;
  /** Ledger accounts (base currency): the reserve of the supply outstanding, and what was redeemed. */
  minted_account_id: string;
  burned_account_id: string;
  /** Token units, as text (may exceed 2^53). */
  outstanding: string;
  created_at: string;
  updated_at: string;
}

export interface OperationsTable {
  id: string;
  platform_id: string;
  stablecoin_id: string;
  operation_type: string;
  status: string;
  /** Token units, as text. */
  amount: string;
  /** The amount in base-currency minor units (what the ledger moves). */
  fiat_minor: number;
  provider_account_id: string;
  source: string;
  destination: string;
  funding_account_id: string | null;
  hold_entry_id: string | null;
  failure_reason: string | null;
  description: string | null;
  created_at: string;
  updated_at: string;
}

export type StablecoinTables = { stablecoin_provider_accounts: ProviderAccountsTable; stablecoins: StablecoinsTable; stablecoin_operations: OperationsTable };
type Db = Kysely<DB> | Transaction<DB>;
export const st = (db: Db) => db.withTables<StablecoinTables>();
