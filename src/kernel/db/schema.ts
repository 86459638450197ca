import type { Generated } from 'kysely';

// Column conventions, the same on SQLite and PostgreSQL:
// - timestamps shown to users: ISO 8601 UTC text of the platform's clock (`*_at`);
// - scheduling times: epoch milliseconds as bigint (`*_ms`), so SQL can compare them;
// - booleans: integer 0/1; JSON documents: text; money: bigint minor units.

export interface PlatformsTable {
  id: string;
  name: string;
  regulated: number;
  is_default: number;
  /** JSON: sandbox options (skipVerificationPaperwork, limits …). */
  options: string;
  clock_offset_ms: number;
  created_at: string;
  updated_at: string;
}

export interface PlatformConfigsTable {
  platform_id: string;
  id: string;
  uma_domain: string;
  proxy_uma_subdomain: string | null;
  webhook_endpoint: string | null;
  /** JSON array of PlatformCurrencyConfig. */
  supported_currencies: string;
  embedded_wallet_config: string | null;
  card_tokenization_2fa_config: string | null;
  created_at: string;
  updated_at: string;
}

export interface FeeConfigsTable {
  platform_id: string;
  fee_type: string;
  source_currency: string;
  variable_fee_bps: number;
  fixed_fee_amount: number;
  fixed_fee_currency: string;
  active: number;
  created_at: string;
  updated_at: string;
}

export interface ApiTokensTable {
  id: string;
  platform_id: string;
  name: string;
  /** JSON array of VIEW / TRANSACT / MANAGE. */
  permissions: string;
  client_id: string;
  secret_hash: string;
  /** 1 for the token that PAYMENTS_API_TOKEN_ID / PAYMENTS_API_CLIENT_SECRET (or the first start) created. */
  is_bootstrap: number;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

export interface IdempotencyKeysTable {
  platform_id: string;
  key: string;
  request_hash: string;
  /** 'in_progress' while the first request runs, then 'done'. */
  state: string;
  response_status: number | null;
  response_body: string | null;
  response_content_type: string | null;
  created_ms: number;
}

export interface JobsTable {
  id: string;
  platform_id: string | null;
  kind: string;
  payload: string;
  /** Due time on the platform's clock (real time for jobs without a platform). */
  run_at_ms: number;
  /** 'pending' | 'done' | 'failed'. */
  status: string;
  attempts: number;
  max_attempts: number;
  last_error: string | null;
  created_at: string;
  updated_at: string;
}

export interface EventsTable {
  /** Global order of events; deliveries of one resource follow it. */
  seq: Generated<number>;
  id: string;
  platform_id: string;
  type: string;
  resource_id: string;
  /** JSON: the full webhook payload. */
  payload: string;
  created_at: string;
}

export interface DB {
  platforms: PlatformsTable;
  platform_configs: PlatformConfigsTable;
  fee_configs: FeeConfigsTable;
  api_tokens: ApiTokensTable;
  idempotency_keys: IdempotencyKeysTable;
  jobs: JobsTable;
  events: EventsTable;
}
