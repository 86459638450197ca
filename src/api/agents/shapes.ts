// The shapes of other areas this area's routes answer with: declared once, in their own
// area, and re-exported here so that the routes import only their own area (scripts/check-imports.mjs).
export { SignedHeaders, SignedRequestChallenge } from '../embedded-wallets/schemas.js';
export { ExternalAccount, ExternalAccountCreateRequest, ExternalAccountIdParams, ExternalAccountListResponse } from '../external-accounts/schemas.js';
export { InternalAccountListResponse, InternalAccountType } from '../internal-accounts/schemas.js';
export { Quote, QuoteRequest, TransferInRequest, TransferOutRequest } from '../quotes/schemas.js';
export { TransactionListResponse, TransactionOneOf, TransactionParams, TransactionStatus, TransactionType } from '../transactions/schemas.js';
