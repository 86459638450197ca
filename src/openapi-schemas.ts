import { type TSchema, Type } from 'typebox';
import { OneOf } from './kernel/validation.js';
import * as agents from './api/agents/schemas.js';
import * as owners from './api/beneficial-owners/schemas.js';
import * as cards from './api/cards/schemas.js';
import * as config from './api/config/schemas.js';
import * as customers from './api/customers/schemas.js';
import * as bulk from './api/customers-bulk/schemas.js';
import * as invitations from './api/invitations/schemas.js';
import * as discoveries from './api/discoveries/schemas.js';
import * as documents from './api/documents/schemas.js';
import * as rates from './api/exchange-rates/schemas.js';
import { AccountInfoCreate, AccountInfoView } from './api/external-accounts/account-info.js';
import * as external from './api/external-accounts/schemas.js';
import * as internal from './api/internal-accounts/schemas.js';
import * as tokens from './api/tokens/schemas.js';
import * as transactions from './api/transactions/schemas.js';
import * as verifications from './api/verifications/schemas.js';
import * as webhooks from './api/webhooks/schemas.js';

// The names of the OpenAPI document's schemas (kernel/openapi.ts does the naming). A schema
// with a `title` is named after it without being listed here (the external accounts' kinds
// renamed to the reference's names by `nameOfTitle`); this list names the untitled ones —
// and fixes the name of the important ones — with the reference's names for the same
// concepts, and adds what only the document has: the webhook payloads, FieldError, the
// customer kinds. To name a new schema: give it a `title`, or add it here.

// ---- What only the document shows ------------------------------------------------------

const FieldConstraint = Type.Object(
  {
    format: Type.Optional(Type.String({ description: 'The format the value must have (date, email, iso4217 …)' })),
    pattern: Type.Optional(Type.String({ description: 'The regular expression the value must match' })),
    enum: Type.Optional(Type.Array(Type.String(), { description: 'The values allowed' })),
    minLength: Type.Optional(Type.Integer({ minimum: 0 })),
    maxLength: Type.Optional(Type.Integer({ minimum: 0 })),
  },
  { description: 'The constraint a field failed, when it is one of these' },
);

const FieldError = Type.Object(
  {
    field: Type.String({ description: 'Path of the field in dot notation (address.postalCode), or the header or query parameter name' }),
    constraint: Type.Optional(FieldConstraint),
    message: Type.String({ description: 'What is wrong with the value' }),
  },
  { description: 'One invalid field: a 400 INVALID_INPUT lists every invalid field of the request in details.errors' },
);

/**
 * The customer kinds, as customerView fills them: the API answers one Customer object for
 * both, with the individual fields (and kycStatus) for an INDIVIDUAL and businessInfo,
 * beneficialOwners and kybStatus for a BUSINESS.
 */
const BUSINESS_ONLY = ['businessInfo', 'beneficialOwners', 'kybStatus'];
const INDIVIDUAL_ONLY = ['fullName', 'birthDate', 'nationality', 'idType', 'countryOfIssuance', 'kycStatus', ...customers.EDD_FIELD_NAMES];
function customerOf(kind: 'INDIVIDUAL' | 'BUSINESS', description: string) {
  const props: Record<string, TSchema> = { ...(customers.Customer as unknown as { properties: Record<string, TSchema> }).properties };
  for (const k of kind === 'INDIVIDUAL' ? BUSINESS_ONLY : INDIVIDUAL_ONLY) delete props[k];
  props.customerType = Type.Literal(kind);
  return Type.Object(props, { description });
}
const IndividualCustomer = customerOf('INDIVIDUAL', 'A customer that is a person (customerType INDIVIDUAL): the Customer fields an individual has');
const BusinessCustomer = customerOf('BUSINESS', 'A customer that is a business (customerType BUSINESS): the Customer fields a business has');
const CustomerOneOf = OneOf('customerType', [IndividualCustomer, BusinessCustomer]);

/** The fields every transaction has, incoming or outgoing, with the same schema in both (TransactionOneOf tells them apart). */
function commonTransaction(): TSchema {
  const a = transactions.IncomingTransaction as unknown as { properties: Record<string, TSchema>; required?: string[] };
  const b = transactions.OutgoingTransaction as unknown as { properties: Record<string, TSchema>; required?: string[] };
  const properties: Record<string, TSchema> = {};
  for (const [k, v] of Object.entries(a.properties)) {
    if (k !== 'type' && b.properties[k] !== undefined && JSON.stringify(b.properties[k]) === JSON.stringify(v)) properties[k] = v;
  }
  properties.type = transactions.TransactionType;
  const required = ['type', ...(a.required ?? []).filter((k) => k !== 'type' && properties[k] !== undefined && (b.required ?? []).includes(k))];
  return Type.Unsafe({ type: 'object', required, properties, description: 'The fields every transaction has, INCOMING or OUTGOING; TransactionOneOf tells the two apart by type' });
}
const Transaction = commonTransaction();

// ---- Webhooks --------------------------------------------------------------------------

/** The events the service sends, by payload (the `type` values of src/: emitEvent calls and the test webhook). */
const PAYMENT_EVENTS = ['PENDING', 'PROCESSING', 'COMPLETED', 'FAILED', 'EXPIRED', 'REFUND_PENDING', 'REFUND_COMPLETED', 'REFUND_FAILED'] as const;
const INCOMING_EVENTS = ['PENDING', 'COMPLETED', 'FAILED', 'REFUND_PENDING', 'REFUND_COMPLETED', 'REFUND_FAILED'] as const;
const CUSTOMER_EVENTS = ['KYC_APPROVED', 'KYC_REJECTED', 'KYC_PENDING', 'KYB_APPROVED', 'KYB_REJECTED', 'KYB_PENDING'] as const;
const verificationStatuses = (verifications.VerificationStatus as unknown as { enum: string[] }).enum;

export const WEBHOOK_EVENTS: Readonly<Record<string, readonly string[]>> = {
  OutgoingPaymentWebhook: [...PAYMENT_EVENTS.map((e) => `OUTGOING_PAYMENT.${e}`), 'OUTGOING_PAYMENT.PENDING_AUTHORIZATION'],
  IncomingPaymentWebhook: INCOMING_EVENTS.map((e) => `INCOMING_PAYMENT.${e}`),
  CustomerWebhook: CUSTOMER_EVENTS.map((e) => `CUSTOMER.${e}`),
  VerificationWebhook: verificationStatuses.map((s) => `VERIFICATION.${s}`),
  InternalAccountStatusWebhook: ['INTERNAL_ACCOUNT.BALANCE_UPDATED'],
  ExternalAccountStatusWebhook: ['EXTERNAL_ACCOUNT.STATUS_UPDATED'],
  TestWebhookRequest: ['TEST'],
  CardStateChangeWebhook: ['CARD.STATE_CHANGE'],
  CardFundingSourceChangeWebhook: ['CARD.FUNDING_SOURCE_CHANGE'],
  CardTransactionWebhook: ['AUTHORIZED', 'PARTIALLY_SETTLED', 'SETTLED', 'REFUNDED', 'EXCEPTION'].map((s) => `CARD_TRANSACTION.${s}`),
  BulkUploadWebhook: ['BULK_UPLOAD.COMPLETED', 'BULK_UPLOAD.FAILED'],
  InvitationClaimedWebhook: ['INVITATION.CLAIMED'],
  InvitationExpiredWebhook: ['INVITATION.EXPIRED'],
  AgentActionWebhook: ['AGENT_ACTION.PENDING_APPROVAL', 'AGENT_ACTION.APPROVED', 'AGENT_ACTION.REJECTED', 'AGENT_ACTION.FAILED'],
};

const WebhookType = Type.Enum(Object.values(WEBHOOK_EVENTS).flat(), {
  description: 'The event, OBJECT.EVENT: the part before the dot names the resource in data, the part after what happened to it',
});

const webhookProps = {
  id: Type.String({ description: 'Webhook:<uuid>: the same on every delivery of the event (delivery is at least once: drop duplicates by id)' }),
  timestamp: Type.String({ format: 'date-time', description: 'When the event happened, on the platform’s sandbox clock' }),
};

const BaseWebhook = Type.Object({ ...webhookProps, type: WebhookType }, { description: 'What every webhook carries' });

function payload(name: string, data: TSchema, description: string) {
  return Type.Object(
    { ...webhookProps, type: Type.Enum([...WEBHOOK_EVENTS[name]!], { description: 'The event' }), data },
    { description },
  );
}

const WEBHOOK_PAYLOADS: Record<string, TSchema> = {
  OutgoingPaymentWebhook: payload('OutgoingPaymentWebhook', transactions.OutgoingTransaction, 'An outgoing payment changed status; data is the transaction as GET /transactions/{transactionId} shows it'),
  IncomingPaymentWebhook: payload('IncomingPaymentWebhook', transactions.IncomingTransaction, 'An incoming payment changed status; INCOMING_PAYMENT.PENDING of a payment pending approval asks the platform to decide'),
  CustomerWebhook: payload('CustomerWebhook', CustomerOneOf, 'A customer’s KYC (individual) or KYB (business) status changed'),
  VerificationWebhook: payload('VerificationWebhook', verifications.Verification, 'A verification of a customer was evaluated'),
  InternalAccountStatusWebhook: payload('InternalAccountStatusWebhook', internal.InternalAccount, 'An internal account’s balance changed'),
  ExternalAccountStatusWebhook: payload('ExternalAccountStatusWebhook', external.ExternalAccount, 'An external account changed status (ownership verification)'),
  TestWebhookRequest: payload('TestWebhookRequest', Type.Object({}, { description: 'Empty' }), 'Sent by POST /sandbox/webhooks/test, to check the endpoint and its signature check'),
  CardStateChangeWebhook: payload('CardStateChangeWebhook', cards.Card, 'A card changed state (activated, rejected by the issuer, frozen, unfrozen, closed); data is the card after the change'),
  CardFundingSourceChangeWebhook: payload('CardFundingSourceChangeWebhook', cards.Card, 'A card’s funding sources were replaced (PATCH /cards/{id}); data is the card after the change'),
  CardTransactionWebhook: payload('CardTransactionWebhook', cards.CardTransaction, 'A card transaction changed (authorized, partially settled, settled, refunded, exception); data is the full card transaction'),
  BulkUploadWebhook: payload('BulkUploadWebhook', bulk.BulkCustomerImportJob, 'A bulk customer import processed its last row; data is the job as GET /customers/bulk/jobs/{jobId} shows it'),
  InvitationClaimedWebhook: payload('InvitationClaimedWebhook', invitations.UmaInvitation, 'An invitation of the platform was claimed (by this or another platform); data is the invitation'),
  InvitationExpiredWebhook: payload('InvitationExpiredWebhook', invitations.UmaInvitation, 'An invitation of the platform reached its expiresAt unclaimed; data is the invitation'),
  AgentActionWebhook: payload('AgentActionWebhook', agents.AgentAction, 'An agent action waits for the platform’s approval (PENDING_APPROVAL), or was decided: APPROVED, REJECTED, FAILED'),
};

// ---- The registry ----------------------------------------------------------------------

/** Named schemas: component name → schema (also the ones inside them, by their own entries or titles). */
export const NAMED_SCHEMAS: Readonly<Record<string, TSchema>> = {
  // Errors
  FieldError,
  FieldConstraint,
  // Customers
  Customer: customers.Customer,
  IndividualCustomer,
  BusinessCustomer,
  CustomerOneOf,
  CustomerListResponse: customers.CustomerListResponse,
  CustomerCreateRequestOneOf: customers.CustomerCreateRequest,
  CustomerUpdateRequestOneOf: customers.CustomerUpdateRequest,
  CustomerType: customers.CustomerType,
  KycStatus: customers.KycStatus,
  IdentificationType: customers.IdentificationType,
  Address: customers.Address,
  BusinessInfo: customers.BusinessInfo,
  BusinessInfoUpdate: customers.BusinessInfoUpdate,
  EndUserTermsConsent: customers.EndUserTermsConsent,
  EndUserTerms: customers.EndUserTerms,
  ContactVerification: customers.ContactVerification,
  BeneficialOwner: customers.BeneficialOwner,
  BeneficialOwnerRole: customers.BeneficialOwnerRole,
  BeneficialOwnerListResponse: owners.BeneficialOwnerListResponse,
  // Platform configuration and tokens
  PlatformConfig: config.PlatformConfig,
  PlatformConfigUpdateRequest: config.PlatformConfigUpdateRequest,
  PlatformCurrencyConfig: config.PlatformCurrencyConfig,
  CounterpartyFieldDefinition: config.CounterpartyFieldDefinition,
  CustomerInfoFieldName: config.CustomerInfoFieldName,
  FeeConfig: config.FeeConfig,
  EmbeddedWalletConfig: config.EmbeddedWalletConfig,
  ApiToken: tokens.ApiToken,
  ApiTokenCreateRequest: tokens.ApiTokenCreateRequest,
  Permission: tokens.Permission,
  TokenListResponse: tokens.TokenListResponse,
  // Accounts
  Currency: internal.Currency,
  CurrencyAmount: internal.CurrencyAmount,
  InternalAccount: internal.InternalAccount,
  InternalAccountListResponse: internal.InternalAccountListResponse,
  PlatformInternalAccountListResponse: internal.PlatformInternalAccountListResponse,
  PaymentInstructions: internal.PaymentInstructions,
  ExternalAccount: external.ExternalAccount,
  ExternalAccountListResponse: external.ExternalAccountListResponse,
  ExternalAccountCreateRequest: external.ExternalAccountCreateRequest,
  ExternalAccountInfoOneOf: AccountInfoView,
  ExternalAccountCreateInfoOneOf: AccountInfoCreate,
  ExternalAccountType: external.ExternalAccountType,
  ExternalAccountStatus: external.ExternalAccountStatus,
  OwnershipType: external.OwnershipType,
  OwnershipVerificationMethod: external.OwnershipVerificationMethod,
  BeneficiaryVerificationStatus: external.BeneficiaryVerificationStatus,
  BeneficiaryVerifiedData: external.BeneficiaryVerifiedData,
  // Payments
  Transaction,
  TransactionListResponse: transactions.TransactionListResponse,
  // Other lists and objects
  DocumentType: documents.DocumentType,
  Document: documents.Document,
  DocumentListResponse: documents.DocumentListResponse,
  ExchangeRateListResponse: rates.ExchangeRateListResponse,
  DiscoveryListResponse: discoveries.DiscoveryListResponse,
  UmaProviderListResponse: discoveries.UmaProviderListResponse,
  VaspListResponse: discoveries.VaspListResponse,
  VerificationStatus: verifications.VerificationStatus,
  VerificationListResponse: verifications.VerificationListResponse,
  TestWebhookResponse: webhooks.TestWebhookResponse,
  // Cards
  Card: cards.Card,
  CardListResponse: cards.CardListResponse,
  CardTransaction: cards.CardTransaction,
  CardTransactionListResponse: cards.CardTransactionListResponse,
  // Agents
  Agent: agents.Agent,
  AgentListResponse: agents.AgentListResponse,
  AgentAction: agents.AgentAction,
  AgentActionListResponse: agents.AgentActionListResponse,
  AgentPolicy: agents.AgentPolicy,
  // Webhooks
  WebhookType,
  BaseWebhook,
  ...WEBHOOK_PAYLOADS,
};

/** The component name of a titled schema: its title, but the reference's names for the external accounts' kinds. */
export function nameOfTitle(title: string): string | undefined {
  // AEDAccountExternalAccountInfo → AedExternalAccountInfo, SWIFTAccount… → Swift…, EthereumL1Wallet… → EthereumWallet…
  const bank = /^([A-Z]+)Account(ExternalAccount(?:Create)?Info)$/.exec(title);
  if (bank) return `${bank[1]![0]}${bank[1]!.slice(1).toLowerCase()}${bank[2]}`;
  if (title.startsWith('EthereumL1Wallet')) return title.replace('EthereumL1Wallet', 'EthereumWallet');
  return title;
}

// ---- The webhooks section --------------------------------------------------------------

const signed =
  'Signed: `X-Service-Signature` is base64 of the DER ECDSA P-256 signature over the SHA-256 of the body, by the platform’s webhook key ' +
  '(GET /sandbox/webhooks/public-key); `X-Grid-Signature` (the vendor’s name of the header) carries the identical value. Answer any 2xx to acknowledge; anything else (or no answer within 10 s) is retried with backoff.';

const WEBHOOK_OPERATIONS: Array<{ key: string; payload: keyof typeof WEBHOOK_PAYLOADS; operationId: string; summary: string; description: string; responses?: Record<string, string> }> = [
  {
    key: 'outgoing-payment',
    payload: 'OutgoingPaymentWebhook',
    operationId: 'outgoingPaymentWebhook',
    summary: 'Outgoing payment status',
    description: 'Sent when an outgoing payment changes status (and for its refund).',
  },
  {
    key: 'incoming-payment',
    payload: 'IncomingPaymentWebhook',
    operationId: 'incomingPaymentWebhook',
    summary: 'Incoming payment status and approval',
    description:
      'Sent when an incoming payment changes status. For a payment pending platform approval, the answer to INCOMING_PAYMENT.PENDING is the decision: ' +
      '2xx approves (body `{"receiverCustomerInfo": {…}}` optional), 202 defers to POST /transactions/{transactionId}/approve or /reject, ' +
      '403 rejects, 422 `{"requiredFields": […]}` asks the sender for more information. Approval requests are not retried.',
    responses: {
      '200': 'Approved (or, for an informational event, acknowledged)',
      '202': 'Decision deferred: approve or reject through the API within the approval window',
      '403': 'Rejected (body `{"reason": "…"}` optional)',
      '409': 'Already processed',
      '422': 'More information needed (body `{"requiredFields": […]}`)',
    },
  },
  {
    key: 'customer-update',
    payload: 'CustomerWebhook',
    operationId: 'customerStatusWebhook',
    summary: 'Customer KYC/KYB status',
    description: 'Sent when a customer’s KYC or KYB status becomes APPROVED, REJECTED or PENDING.',
  },
  {
    key: 'verification-update',
    payload: 'VerificationWebhook',
    operationId: 'verificationStatusWebhook',
    summary: 'Verification result',
    description: 'Sent when a verification of a customer is evaluated.',
  },
  {
    key: 'internal-account-status',
    payload: 'InternalAccountStatusWebhook',
    operationId: 'internalAccountStatusWebhook',
    summary: 'Internal account balance',
    description: 'Sent when an internal account’s balance changes.',
  },
  {
    key: 'external-account-status',
    payload: 'ExternalAccountStatusWebhook',
    operationId: 'externalAccountStatusWebhook',
    summary: 'External account status',
    description: 'Sent when an external account changes status (ownership verification of a self-custody wallet).',
  },
  {
    key: 'agent-action',
    payload: 'AgentActionWebhook',
    operationId: 'agentActionWebhook',
    summary: 'Agent action',
    description:
      'AGENT_ACTION.PENDING_APPROVAL: an agent’s action waits for the platform (approve or reject it before its expiresAt); ' +
      'AGENT_ACTION.APPROVED / REJECTED / FAILED: the decision, or the approval window ended (FAILED, APPROVAL_EXPIRED).',
  },
  {
    key: 'test-webhook',
    payload: 'TestWebhookRequest',
    operationId: 'testWebhook',
    summary: 'Test webhook',
    description: 'Sent at once by POST /sandbox/webhooks/test; it is not an event and is not retried.',
  },
  {
    key: 'card-state-change',
    payload: 'CardStateChangeWebhook',
    operationId: 'cardStateChangeWebhook',
    summary: 'Card state change',
    description: 'Sent when a card is activated or rejected by the issuer, frozen, unfrozen or closed.',
  },
  {
    key: 'card-funding-source-change',
    payload: 'CardFundingSourceChangeWebhook',
    operationId: 'cardFundingSourceChangeWebhook',
    summary: 'Card funding source change',
    description: 'Sent when PATCH /cards/{id} replaces a card’s funding sources.',
  },
  {
    key: 'card-transaction',
    payload: 'CardTransactionWebhook',
    operationId: 'cardTransactionWebhook',
    summary: 'Card transaction',
    description: 'Sent on every change of a card transaction, typed by its status after the change (CARD_TRANSACTION.AUTHORIZED, .PARTIALLY_SETTLED, .SETTLED, .REFUNDED, .EXCEPTION).',
  },
  {
    key: 'bulk-upload',
    payload: 'BulkUploadWebhook',
    operationId: 'bulkUploadWebhook',
    summary: 'Bulk customer import finished',
    description: 'Sent when a bulk customer import has processed its last row: BULK_UPLOAD.COMPLETED when it created at least one customer, BULK_UPLOAD.FAILED when it created none.',
  },
  {
    key: 'invitation-claimed',
    payload: 'InvitationClaimedWebhook',
    operationId: 'invitationClaimedWebhook',
    summary: 'Invitation claimed',
    description: 'Sent to the inviter’s platform when one of its invitations is claimed; send the amountToSend, if any, then.',
  },
  {
    key: 'invitation-expired',
    payload: 'InvitationExpiredWebhook',
    operationId: 'invitationExpiredWebhook',
    summary: 'Invitation expired',
    description: 'Sent to the inviter’s platform when one of its invitations reaches its expiresAt unclaimed (an extension: the reference names only INVITATION.CLAIMED).',
  },
];

/** The document's `webhooks` (OpenAPI 3.1): one operation per payload, its body a `$ref` to the payload's schema. */
export function webhooksSection(): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const w of WEBHOOK_OPERATIONS) {
    const responses: Record<string, { description: string }> = {};
    for (const [status, description] of Object.entries(w.responses ?? { '200': 'Acknowledged (any 2xx)' })) responses[status] = { description };
    out[w.key] = {
      post: {
        operationId: w.operationId,
        summary: w.summary,
        description: `${w.description}\n\n${signed}`,
        tags: ['Webhooks'],
        security: [{ WebhookSignature: [] }],
        requestBody: { required: true, content: { 'application/json': { schema: { $ref: `#/components/schemas/${w.payload}` } } } },
        responses,
      },
    };
  }
  return out;
}

export const WEBHOOK_SIGNATURE_SCHEME = {
  type: 'apiKey',
  in: 'header',
  name: 'X-Service-Signature',
  description: 'Signature of a webhook the service sends: base64 of the DER ECDSA P-256 signature over the SHA-256 of the body. Every delivery also carries the identical value in X-Grid-Signature, the vendor’s name of the header',
} as const;
