import type { ColumnType, Generated } from 'kysely';

// Column conventions, the same on SQLite and PostgreSQL:
// - timestamps shown to users: ISO 8601 UTC text of the platform's clock (`*_at`);
// - scheduling times: epoch milliseconds as bigint (`*_ms`), so SQL can compare them;
// - booleans: integer 0/1; JSON documents: text; money: bigint minor units.

export interface PlatformsTable {
  id: string;
  name: string;
  regulated: number;
  /** A partial index names it: compare it with `sql.lit(…)`, never a bound value (SQLite would compile the query again on every run; docs/decisions.md, "Writes and scale"). */
  is_default: number;
  /** JSON: sandbox options (skipVerificationPaperwork, limits …). */
  options: string;
  clock_offset_ms: number;
  created_at: string;
  updated_at: string;
  /** Webhook signing key (0007): P-256 private scalar, hex; and the public key, PEM (SPKI). */
  webhook_private_key: string | null;
  webhook_public_key: string | null;
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
  /** The claim's fence: every write of the claiming request checks it (migration 0016). */
  claim_token: string | null;
  /** Real epoch ms of the claim's last lease renewal; lapsed = its process is gone. */
  lease_ms: number | null;
  /** JSON plan of a multi-step effect, kept across a takeover (claimPlan, migration 0019). */
  progress: string | null;
}

export interface JobsTable {
  id: string;
  platform_id: string | null;
  kind: string;
  payload: string;
  /** Due time on the platform's clock (real time for jobs without a platform). */
  run_at_ms: number;
  /** 'pending' | 'failed' (a job that ran is deleted; rows written before issue 15's change may say 'done'). */
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
  /** JSON: the full webhook payload, for rows written before `body` (migration 0026); '' after. */
  payload: string;
  /** The payload packed (kernel/event-bodies.ts); null on older rows. */
  body: Uint8Array | null;
  created_at: string;
}

export interface CustomersTable {
  id: string;
  platform_id: string;
  /** 'INDIVIDUAL' | 'BUSINESS'. */
  customer_type: string;
  platform_customer_id: string;
  uma_address: string;
  region: string | null;
  email: string | null;
  phone_number: string | null;
  /** JSON array of currency codes. */
  currencies: string;
  /** kycStatus of an individual, kybStatus of a business. */
  status: string;
  /** JSON: the type's own fields (fullName … or businessInfo …); identifiers kept as last 4 only. */
  fields: string;
  end_user_terms_consent: string | null;
  /** JSON {email?, phone?}: PENDING | VERIFIED, for providers that mandate it. */
  contact_verification: string | null;
  /** A partial index names it: compare it with `sql.lit(…)`, never a bound value (SQLite would compile the query again on every run; docs/decisions.md, "Writes and scale"). */
  is_deleted: number;
  /**
   * 1 until start-up has checked that the customer holds the internal accounts it may
   * (migration 0027; `backfillAccounts`). The service writes 0: it opens them itself. A
   * partial index names it: compare it with `sql.lit(…)`, as `is_deleted`.
   */
  accounts_unchecked: ColumnType<number, number | undefined, number>;
  created_at: string;
  updated_at: string;
}

export interface VerificationsTable {
  id: string;
  platform_id: string;
  customer_id: string;
  verification_status: string;
  /** JSON array of VerificationError. */
  errors: string;
  created_at: string;
  updated_at: string;
}

export interface BeneficialOwnersTable {
  id: string;
  platform_id: string;
  customer_id: string;
  roles: string;
  ownership_percentage: number;
  personal_info: string;
  /** The full identification number, sealed (kernel/sealed.ts); null on rows from before migration 0017. */
  identifier_sealed: string | null;
  kyc_status: string;
  created_at: string;
  updated_at: string;
}

/** The store's data key when PAYMENTS_DATA_KEY is not set: one row (id 1), base64. */
export interface DataKeysTable {
  id: number;
  data_key: string;
  created_at: string;
}

/** A document's bytes, in order (0016): at most DOCUMENT_CHUNK_BYTES each. */
export interface DocumentChunksTable {
  document_id: string;
  seq: number;
  platform_id: string;
  bytes: Buffer;
}

export interface DocumentsTable {
  id: string;
  platform_id: string;
  /** The customer or beneficial owner the document belongs to. */
  document_holder: string;
  document_type: string;
  side: string | null;
  country: string;
  document_number: string | null;
  issuing_authority: string | null;
  file_name: string;
  /** Sniffed from the bytes: image/jpeg, image/png or application/pdf. */
  content_type: string;
  size_bytes: number;
  sha256: string;
  /** Empty since 0016: the bytes are in document_chunks. */
  content: Buffer;
  /** 1 once a verification used it (it can no longer be deleted). */
  submitted: number;
  created_at: string;
  updated_at: string;
}

export interface KycLinksTable {
  token: string;
  platform_id: string;
  customer_id: string;
  redirect_uri: string | null;
  expires_at_ms: number;
  used_at: string | null;
  created_at: string;
}

export interface InternalAccountsTable {
  /** `InternalAccount:<uuid>`. */
  id: string;
  platform_id: string;
  /** NULL for the platform's own accounts. */
  customer_id: string | null;
  currency: string;
  /** 'INTERNAL_FIAT' | 'INTERNAL_CRYPTO' | 'EMBEDDED_WALLET'. */
  type: string;
  /** 'PENDING' | 'ACTIVE' | 'CLOSED' | 'FROZEN' | 'FAILED'. */
  status: string;
  /** The reference a payer quotes on a deposit (sandbox funding instructions); unique. */
  funding_reference: string;
  /** EMBEDDED_WALLET only: wallet privacy (0/1); NULL for holding accounts (migration 0021). */
  private_enabled: number | null;
  created_at: string;
  updated_at: string;
}

/** One row per ledger account: its balance per bucket (see docs/ledger.md). */
export interface LedgerBalancesTable {
  /** The internal account's id, or `LedgerAccount:<uuid>` for a counter-account. */
  account_id: string;
  platform_id: string;
  /** 'INTERNAL' | 'WORLD'. */
  kind: string;
  currency: string;
  /** 1 for counter-accounts that may go below zero (WORLD); 0 for internal accounts. */
  allow_negative: number;
  available: number;
  pending: number;
  held: number;
  /** Incremented on every change (a guard on top of the row lock). */
  version: number;
  created_at: string;
  updated_at: string;
}

/** A journal entry: postings that sum to zero per currency. */
export interface LedgerEntriesTable {
  /** `LedgerEntry:<uuid>`. */
  id: string;
  platform_id: string;
  /** FUNDING, HOLD, RELEASE, CAPTURE, … */
  kind: string;
  reference_id: string | null;
  related_entry_id: string | null;
  idempotency_key: string | null;
  memo: string | null;
  created_at: string;
}

/** A line of a ledger entry; its platform and time are the entry's (migration 0032). */
export interface LedgerPostingsTable {
  entry_id: string;
  line: number;
  account_id: string;
  currency: string;
  /** 'available' | 'pending' | 'held'. */
  bucket: string;
  /** Signed minor units. */
  amount: number;
}

export interface ExternalAccountsTable {
  /** `ExternalAccount:<uuid>`. */
  id: string;
  platform_id: string;
  /** NULL for the platform's own external accounts. */
  customer_id: string | null;
  platform_account_id: string | null;
  currency: string;
  /** ExternalAccountType (USD_ACCOUNT, ETHEREUM_WALLET, …). */
  account_type: string;
  /** JSON: the accountInfo as shown, paymentRails included. */
  account_info: string;
  /** owner|accountType|primary identifier: the same account is registered once per owner (while not deleted). */
  identifier_key: string;
  /** 'ACTIVE' | 'PENDING_OWNERSHIP_VERIFICATION' | 'UNVERIFIED' (and the reference's PENDING, UNDER_REVIEW, INACTIVE). */
  status: string;
  /** 'FIRST_PARTY' | 'THIRD_PARTY'. */
  ownership_type: string | null;
  default_uma_deposit_account: number;
  beneficiary_verification_status: string | null;
  /** JSON BeneficiaryVerifiedData ({fullName}). */
  beneficiary_verified_data: string | null;
  /** The outstanding ownership challenge: 'WALLET_SIGNATURE' | 'LIVENESS', or NULL. */
  challenge_method: string | null;
  challenge_nonce: string | null;
  /** WALLET_SIGNATURE: the exact message to sign. */
  challenge_message: string | null;
  /** LIVENESS: the token of the hosted page. */
  challenge_token: string | null;
  /** Expiry of the challenge, on the platform's clock. */
  challenge_expires_at_ms: number | null;
  /** A partial index names it: compare it with `sql.lit(…)`, never a bound value (SQLite would compile the query again on every run; docs/decisions.md, "Writes and scale"). */
  is_deleted: number;
  created_at: string;
  updated_at: string;
}

/** Receiver lookups (UMA address or external account), for the quote that names the lookupId. */
export interface LookupsTable {
  /** `Lookup:<uuid>`. */
  id: string;
  platform_id: string;
  /** 'UMA' | 'EXTERNAL_ACCOUNT'. */
  kind: string;
  /** The receiver looked up: the UMA address as given, or the external account id. */
  target: string;
  /** The sender: a customer of the platform. */
  customer_id: string;
  sending_currency: string;
  /** JSON array of CurrencyPreference: the supportedCurrencies answered. */
  quoted: string;
  /** JSON array of CounterpartyFieldDefinition, or null when none was asked for. */
  required_payer_data_fields: string | null;
  /** JSON LookupReceiver (src/api/lookups/service.ts): who receives, or null. */
  receiver: string | null;
  created_at: string;
}

/**
 * One answer of receiver lookups (issue 35, migration 0040): identical lookups share it; a
 * lookup id (`Lookup:<uuid>`, src/api/lookups/ids.ts) carries the lookup's time and this key.
 */
export interface LookupAnswersTable {
  /** 10 lowercase hex digits (40 bits): the last 10 of the lookup ids that use this answer. */
  key: string;
  platform_id: string;
  /** 'UMA' | 'EXTERNAL_ACCOUNT'. */
  kind: string;
  /** The receiver looked up: the UMA address as given, or the external account id. */
  target: string;
  /** The sender: a customer of the platform. */
  customer_id: string;
  sending_currency: string;
  /** JSON array of CurrencyPreference: the supportedCurrencies answered. */
  quoted: string;
  /** JSON array of CounterpartyFieldDefinition, or null when none was asked for. */
  required_payer_data_fields: string | null;
  /** JSON LookupReceiver (src/api/lookups/service.ts): who receives, or null. */
  receiver: string | null;
  /** When the answer was first stored, on the platform's clock. */
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
  customers: CustomersTable;
  verifications: VerificationsTable;
  beneficial_owners: BeneficialOwnersTable;
  data_keys: DataKeysTable;
  documents: DocumentsTable;
  document_chunks: DocumentChunksTable;
  kyc_links: KycLinksTable;
  internal_accounts: InternalAccountsTable;
  ledger_balances: LedgerBalancesTable;
  ledger_entries: LedgerEntriesTable;
  ledger_postings: LedgerPostingsTable;
  external_accounts: ExternalAccountsTable;
  lookups: LookupsTable;
  lookup_answers: LookupAnswersTable;
  quotes: QuotesTable;
  transactions: TransactionsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  transaction_volumes: TransactionVolumesTable;
  cards: CardsTable;
  card_transactions: CardTransactionsTable;
  card_reveals: CardRevealsTable;
  embedded_wallets: import('./wallet-tables.js').EmbeddedWalletsTable;
  wallet_credentials: import('./wallet-tables.js').WalletCredentialsTable;
  wallet_sessions: import('./wallet-tables.js').WalletSessionsTable;
  wallet_requests: import('./wallet-tables.js').WalletRequestsTable;
  delegated_keys: import('./wallet-tables.js').DelegatedKeysTable;
  wallet_settings: import('./wallet-tables.js').WalletSettingsTable;
  list_counts: ListCountsTable;
}

/** A card (migration 0024, src/api/cards). */
export interface CardsTable {
  /** `Card:<uuid v7>`. */
  id: string;
  platform_id: string;
  /** The cardholder. */
  customer_id: string;
  platform_card_id: string;
  /** PENDING_KYC | PROCESSING | ACTIVE | FROZEN | CLOSED. */
  state: string;
  /** ISSUER_REJECTED | CLOSED_BY_PLATFORM | CLOSED_BY_GRID, or NULL. */
  state_reason: string | null;
  brand: string;
  form: string;
  currency: string;
  /** JSON array of internal account ids, in priority order ([] once closed). */
  funding_sources: string;
  max_spend_per_transaction: number | null;
  last4: string | null;
  exp_month: number | null;
  exp_year: number | null;
  /** The sandbox PAN and CVV, sealed (kernel/sealed.ts); NULL until provisioned. */
  pan_sealed: string | null;
  cvv_sealed: string | null;
  /** The last 3 characters that decided the sandbox issuance. */
  issuance_suffix: string;
  processor_ref: string;
  issuer_ref: string;
  created_at: string;
  updated_at: string;
}

/** A card transaction: one authorization and what reconciled against it (migration 0024). */
export interface CardTransactionsTable {
  /** `CardTransaction:<uuid v7>`. */
  id: string;
  platform_id: string;
  card_id: string;
  customer_id: string;
  platform_customer_id: string;
  /** The funding internal account. */
  account_id: string;
  /** AUTHORIZATION | FINANCIAL_AUTHORIZATION | CREDIT_AUTHORIZATION | CREDIT_AUTHORIZATION_ADVICE | FINANCIAL_CREDIT_AUTHORIZATION. */
  kind: string;
  /** DEBIT | CREDIT. */
  direction: string;
  /** AUTHORIZED | PARTIALLY_SETTLED | SETTLED | REFUNDED | EXCEPTION. */
  status: string;
  /** The merchant-descriptor outcome: APPROVED | DELAYED_PULL | CONFIRMATION_FAILS. */
  outcome: string;
  /** JSON CardMerchant. */
  merchant: string;
  currency: string;
  authorized_amount: number;
  /** Authorized and not cleared nor released: held (debit) or pending (credit) on the account. */
  open_amount: number;
  settled_amount: number;
  refunded_amount: number;
  released_amount: number;
  pull_count: number;
  pull_total: number;
  pull_pending: number;
  settlement_count: number;
  refund_count: number;
  /** Ledger entries and jobs of this transaction so far (makes their idempotency keys unique). */
  event_count: number;
  issuer_transaction_token: string;
  authorized_at: string;
  last_event_at: string | null;
  created_at: string;
  updated_at: string;
}

/** The audit trail of PAN reveals (migration 0024): who asked and when, never the URL. */
export interface CardRevealsTable {
  id: string;
  platform_id: string;
  card_id: string;
  /** The API token that asked. */
  actor: string;
  expires_at: string;
  created_at: string;
}

/**
 * SQLite only (migration 0009): the counted OUTGOING volume of a corridor on one UTC day of
 * the platform clock, kept by triggers on transactions.
 */
export interface TransactionVolumesTable {
  platform_id: string;
  sent_currency: string;
  received_currency: string;
  /** `YYYY-MM-DD`: the first 10 characters of the transactions' created_at. */
  day: string;
  /** Sum of sent_amount, smallest unit of the sending currency. */
  total: number;
}

export interface QuotesTable {
  /** `Quote:<uuid v7>`. */
  id: string;
  platform_id: string;
  /** The sending customer, or NULL when the platform sends from its own account. */
  customer_id: string | null;
  /** The internal or external account paying; NULL for a REALTIME_FUNDING source. */
  source_account_id: string | null;
  /** JSON: the quote's source as the API shows it. */
  source: string;
  /** The internal or external account paid; NULL for a UMA_ADDRESS destination. */
  destination_account_id: string | null;
  /** JSON: the quote's destination as the API shows it. */
  destination: string;
  lookup_id: string | null;
  /** ACCOUNT | REALTIME_FUNDING. */
  source_type: string;
  /** ACCOUNT | UMA_ADDRESS. */
  destination_type: string;
  /** JSON PaymentInstructions[] of a REALTIME_FUNDING quote. */
  payment_instructions: string | null;
  /** JSON senderCustomerInfo as sent. */
  sender_customer_info: string | null;
  /** JSON platformFeeOverride as sent. */
  fee_override: string | null;
  /** JSON: the receiver of a UMA destination, from the lookup (LookupReceiver). */
  receiver: string | null;
  sending_currency: string;
  receiving_currency: string;
  locked_side: string;
  locked_amount: number;
  total_sending: number;
  total_receiving: number;
  /** feesIncluded, sending currency minor units. */
  fees: number;
  platform_fees: number;
  /** Sending units per receiving unit (JSON number as text). */
  exchange_rate: string;
  /** OutgoingRateDetails: its six numbers as a JSON array (quotes/rate-details.ts), or the object (rows before issue 15). */
  rate_details: string;
  payment_rail: string | null;
  description: string | null;
  remittance_information: string | null;
  purpose_of_payment: string | null;
  /** PENDING until executed; PROCESSING, COMPLETED, FAILED after. EXPIRED is derived from expires_at_ms. */
  status: string;
  transaction_id: string | null;
  expires_at_ms: number;
  expires_at: string;
  created_at: string;
  updated_at: string;
  /** JSON: the SCA challenge a PENDING_AUTHORIZATION quote shows (migration 0023_sca); absent before. */
  sca_challenge?: string | null;
}

export interface TransactionsTable {
  /** `Transaction:<uuid v7>`. */
  id: string;
  platform_id: string;
  /** The customer, or the platform id for the platform's own transactions (the reference's convention). */
  customer_id: string;
  platform_customer_id: string;
  /** INCOMING | OUTGOING. */
  type: string;
  /** CREDIT | DEBIT. */
  direction: string;
  status: string;
  quote_id: string | null;
  /** JSON: TransactionSource as the API shows it. */
  source: string;
  source_account_id: string | null;
  /** JSON: TransactionDestination as the API shows it. */
  destination: string;
  destination_account_id: string | null;
  sent_amount: number;
  sent_currency: string;
  received_amount: number | null;
  received_currency: string | null;
  fees: number;
  platform_fees: number;
  exchange_rate: string | null;
  rate_details: string | null;
  payment_rail: string | null;
  description: string | null;
  /** The ledger entry that holds the money while the payment is in flight. */
  hold_entry_id: string | null;
  failure_reason: string | null;
  settled_at: string | null;
  created_at: string;
  updated_at: string;
  /** TransactionPendingReason while held for compliance or waiting on the customer. */
  pending_reason: string | null;
  /** JSON Refund: when money goes back. */
  refund: string | null;
  /** JSON CounterpartyInformation. */
  counterparty_information: string | null;
  /** JSON ReconciliationInstructions (reference, transactionHash). */
  reconciliation: string | null;
  receipt_delivery_confirmed_at: string | null;
  /** AUTO | MANUAL. */
  rail_selection_mode: string | null;
  /** JSON PaymentInstructions[]. */
  payment_instructions: string | null;
  /** The sandbox outcome decided when the payment started (src/sandbox/rules/payment-outcomes.ts). */
  outcome: string | null;
  /** JSON CounterpartyFieldDefinition[] asked of the receiving platform (incoming UMA). */
  requested_receiver_fields: string | null;
  /** JSON receiverCustomerInfo the platform answered with. */
  receiver_customer_info: string | null;
  agent_id: string | null;
  /** The ledger account whose held bucket carries the money in flight (an internal account or the platform's clearing account). */
  hold_account_id: string | null;
  /** Which flow drives the transaction: QUOTE_PAYOUT, UMA_PAYOUT, INTERNAL_TRANSFER, PULL, TRANSFER_OUT, UMA_INCOMING … */
  flow: string | null;
  /** While an incoming payment waits for the platform's approval: the deadline (platform clock, ms). */
  approval_deadline_ms: number | null;
  /** A quote's transaction not started yet: when it expires with its quote (platform clock, ms). */
  expires_at_ms: number | null;
  /** Outgoing, once started: when it is expected to settle (ISO, platform clock); null on an instant rail settling at once, or not known yet. */
  expected_settlement_at: string | null;
  /** Outgoing, once started: seconds from the quote's creation to the expected settlement; null while not known. */
  settlement_timeline_seconds: number | null;
}

/**
 * Generated columns of transactions (migration 0010): computed by the database from the
 * row's JSON for the list filters, never written. They stay out of TransactionsTable so no
 * writer can set them; list queries see them through `ListDB`.
 */
export interface TransactionFilterColumns {
  /** The source's accountId, else its umaAddress, else a real-time funding's accountIdentifier. */
  sender_identifier: string | null;
  /** The destination's accountId, else its umaAddress. */
  receiver_identifier: string | null;
  /** reconciliationInstructions.reference, else the reference of the first payment instruction. */
  reconciliation_reference: string | null;
}

/** Generated columns of quotes (migration 0010), as TransactionFilterColumns. */
export interface QuoteFilterColumns {
  /** The source's umaAddress (none of today's quote sources has one). */
  source_uma_address: string | null;
  /** The destination's umaAddress (a UMA_ADDRESS destination). */
  destination_uma_address: string | null;
}

/** The tables as the list queries see them: with their generated filter columns. */
export type ListTables = {
  transactions: TransactionFilterColumns;
  quotes: QuoteFilterColumns;
};

export interface WebhookDeliveriesTable {
  /** `WebhookDelivery:<uuid>`. */
  id: string;
  platform_id: string;
  event_id: string;
  /** The event's global seq: deliveries of one resource go out in this order. */
  event_seq: number;
  type: string;
  resource_id: string;
  /** 'PENDING' | 'SENDING' | 'DELIVERED' | 'FAILED' | 'NO_ENDPOINT'. */
  status: string;
  attempts: number;
  /** Due time of the next attempt on the platform's clock. */
  next_attempt_ms: number | null;
  /** While SENDING: real time after which another worker may take it over. */
  lease_until_ms: number | null;
  /**
   * Whether it heads its lane (migration 0035): 1 the earliest open delivery of its
   * resource, 0 not, null not looked at yet (a new delivery). Written only by the deliverer.
   */
  lane_head: ColumnType<number | null, number | null | undefined, number | null>;
  last_status_code: number | null;
  last_error: string | null;
  delivered_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface WebhookAttemptsTable {
  id: string;
  platform_id: string;
  delivery_id: string;
  attempt: number;
  url: string;
  started_at: string;
  status_code: number | null;
  error: string | null;
  latency_ms: number;
  response_body: string | null;
}

/**
 * Migration 0020_list_counts: the row counts of the lists' common pages, kept by triggers
 * (kernel/db/list-counts.ts). A count is the sum of its stripes' `n` (PostgreSQL spreads
 * concurrent commits over 8 stripes; SQLite uses stripe 0 only).
 */
export interface ListCountsTable {
  platform_id: string;
  /** The list: `customers`, `transactions`. */
  list: string;
  /** Which rows of it: `all`, `live` (customers not deleted). */
  scope: string;
  stripe: number;
  n: number;
}
