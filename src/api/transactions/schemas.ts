import { Type, type Static } from 'typebox';
import { ListOf, PageQuery, SortOrderQuery, TimeRangeQuery } from '../../kernel/pagination.js';
import { OneOf } from '../../kernel/validation.js';
import { CounterpartyFieldDefinition } from '../config/schemas.js';
import { CurrencyAmount, PaymentInstructions } from '../internal-accounts/schemas.js';
import { OutgoingRateDetails, PaymentRail } from '../quotes/schemas.js';
import { CardTransaction } from '../cards/schemas.js';

// Transactions, in the reference's shapes: an OUTGOING payment (a quote's execution, a
// transfer-out), an INCOMING one (a pull into an internal account, a transfer-in, an
// incoming UMA payment). GET /transactions answers TransactionOneOf, told apart by `type`.

export const TRANSACTION_STATUSES = ['CREATED', 'PENDING', 'PENDING_AUTHORIZATION', 'PROCESSING', 'COMPLETED', 'REJECTED', 'FAILED', 'REFUNDED', 'EXPIRED'] as const;
export const TransactionStatus = Type.Enum([...TRANSACTION_STATUSES], { title: 'TransactionStatus' });
export const OutgoingTransactionStatus = Type.Enum(['PENDING', 'PENDING_AUTHORIZATION', 'EXPIRED', 'PROCESSING', 'COMPLETED', 'FAILED'], { title: 'OutgoingTransactionStatus' });
export const TransactionType = Type.Enum(['INCOMING', 'OUTGOING', 'CARD'], { title: 'TransactionType' });

export const TRANSACTION_PENDING_REASONS = ['COUNTERPARTY_DECLARATION_REQUIRED', 'WALLET_VERIFICATION_REQUIRED', 'COUNTERPARTY_INFORMATION_REQUIRED', 'COMPLIANCE_REVIEW'] as const;
export const TransactionPendingReason = Type.Enum([...TRANSACTION_PENDING_REASONS], {
  title: 'TransactionPendingReason',
  description: 'Why a transaction is pending: held for compliance review, or waiting on the customer',
});

/** The current outgoing failure reasons; the removed ones (EXECUTION_FAILED_POST_DEBIT, SETTLEMENT_FAILED, TIMEOUT, MANUAL_REFUND) never appear. */
export const OUTGOING_FAILURE_REASONS = [
  'QUOTE_EXPIRED', 'QUOTE_RATE_UNAVAILABLE', 'QUOTE_EXECUTION_FAILED', 'FUNDING_AMOUNT_MISMATCH', 'SCA_NOT_COMPLETED', 'PAYOUT_RETURNED',
  'LIMIT_EXCEEDED', 'ACCOUNT_CANNOT_RECEIVE', 'ACCOUNT_INVALID', 'COMPLIANCE_REJECTED', 'LIGHTNING_PAYMENT_FAILED', 'COUNTERPARTY_POST_TX_FAILED',
] as const;
export type OutgoingFailureReason = (typeof OUTGOING_FAILURE_REASONS)[number];
export const OutgoingTransactionFailureReason = Type.Enum([...OUTGOING_FAILURE_REASONS], { title: 'OutgoingTransactionFailureReason' });

export const INCOMING_FAILURE_REASONS = [
  'LNURLP_FAILED', 'PAY_REQUEST_FAILED', 'PAYMENT_APPROVAL_WEBHOOK_ERROR', 'PAYMENT_APPROVAL_TIMED_OUT', 'OFFRAMP_FAILED',
  'MISSING_MANDATORY_PAYEE_DATA', 'QUOTE_EXPIRED', 'QUOTE_EXECUTION_FAILED', 'COMPLIANCE_REJECTED', 'COLLECTION_FAILED',
] as const;
export type IncomingFailureReason = (typeof INCOMING_FAILURE_REASONS)[number];
export const IncomingTransactionFailureReason = Type.Enum([...INCOMING_FAILURE_REASONS], { title: 'IncomingTransactionFailureReason' });

export const CRYPTO_NETWORKS = ['BITCOIN', 'ETHEREUM', 'SOLANA', 'BASE', 'POLYGON', 'TRON', 'PLASMA', 'SPARK'] as const;
export const OnChainTransaction = Type.Object(
  {
    transactionHash: Type.String({ description: 'On-chain hash of this leg’s crypto transfer' }),
    network: Type.Enum([...CRYPTO_NETWORKS], { title: 'CryptoNetwork', description: 'Network it settled on (test networks in the sandbox)' }),
  },
  { title: 'OnChainTransaction' },
);
export type OnChainTransaction = Static<typeof OnChainTransaction>;

export const Refund = Type.Object(
  {
    reference: Type.String({ description: 'The refund’s unique reference' }),
    initiatedAt: Type.String({ format: 'date-time' }),
    settledAt: Type.Optional(Type.String({ format: 'date-time' })),
    status: Type.Enum(['PENDING', 'COMPLETED', 'FAILED']),
    reason: Type.Optional(Type.Enum(['TRANSACTION_FAILED', 'USER_CANCELLATION', 'TIMEOUT'])),
  },
  { title: 'Refund' },
);
export type Refund = Static<typeof Refund>;

export const ReconciliationInstructions = Type.Object(
  {
    reference: Type.Optional(Type.String({ description: 'Reference to quote with the payment' })),
    transactionHash: Type.Optional(
      Type.String({ deprecated: true, description: 'Hash of the settlement transfer: still reported for the inter-VASP settlement leg of a UMA payment; for a wallet of the customer use onChainTransaction' }),
    ),
  },
  { title: 'ReconciliationInstructions', minProperties: 1 },
);

// ---- Sources and destinations --------------------------------------------------------

export const AccountTransactionSource = Type.Object(
  {
    sourceType: Type.Literal('ACCOUNT'),
    accountId: Type.String({ description: 'Source account identifier (internal or external)' }),
    currency: Type.Optional(Type.String({ description: 'Currency code for the source' })),
    onChainTransaction: Type.Optional(OnChainTransaction),
  },
  { title: 'AccountTransactionSource' },
);
export const UmaAddressTransactionSource = Type.Object(
  {
    sourceType: Type.Literal('UMA_ADDRESS'),
    umaAddress: Type.String({ description: 'UMA address of the sender' }),
    currency: Type.Optional(Type.String()),
  },
  { title: 'UmaAddressTransactionSource' },
);
export const RealtimeFundingTransactionSource = Type.Object(
  {
    sourceType: Type.Literal('REALTIME_FUNDING'),
    currency: Type.String({ description: 'Currency code for the funding source' }),
    customerId: Type.Optional(Type.String()),
    accountHolderName: Type.Optional(Type.String()),
    accountIdentifier: Type.Optional(Type.String()),
    bankName: Type.Optional(Type.String()),
    bankIdentifier: Type.Optional(Type.String()),
    paymentRail: Type.Optional(PaymentRail),
    remittanceInformation: Type.Optional(Type.String()),
    endToEndId: Type.Optional(Type.String()),
    traceNumber: Type.Optional(Type.String()),
    onChainTransaction: Type.Optional(OnChainTransaction),
  },
  { title: 'RealtimeFundingTransactionSource' },
);
export const TransactionSource = OneOf('sourceType', [AccountTransactionSource, UmaAddressTransactionSource, RealtimeFundingTransactionSource], { title: 'TransactionSourceOneOf' });

export const AccountTransactionDestination = Type.Object(
  {
    destinationType: Type.Literal('ACCOUNT'),
    accountId: Type.String({ description: 'Destination account identifier (internal or external)' }),
    currency: Type.Optional(Type.String({ description: 'Currency code for the destination' })),
    onChainTransaction: Type.Optional(OnChainTransaction),
  },
  { title: 'AccountTransactionDestination' },
);
export const UmaAddressTransactionDestination = Type.Object(
  {
    destinationType: Type.Literal('UMA_ADDRESS'),
    umaAddress: Type.String({ description: 'UMA address of the recipient' }),
    currency: Type.Optional(Type.String()),
  },
  { title: 'UmaAddressTransactionDestination' },
);
export const TransactionDestination = OneOf('destinationType', [AccountTransactionDestination, UmaAddressTransactionDestination], { title: 'TransactionDestinationOneOf' });

// ---- Transactions ----------------------------------------------------------------------

const common = {
  id: Type.String({ description: 'Transaction:<uuid>' }),
  direction: Type.Enum(['CREDIT', 'DEBIT'], { description: 'Whether the transaction credits (funds in) or debits (funds out) the customer’s account' }),
  pendingReason: Type.Optional(TransactionPendingReason),
  source: TransactionSource,
  destination: TransactionDestination,
  customerId: Type.String({ description: 'The customer the transaction belongs to (the platform id for the platform’s own)' }),
  platformCustomerId: Type.String(),
  sentAmount: Type.Optional(CurrencyAmount),
  receivedAmount: Type.Optional(CurrencyAmount),
  exchangeRate: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: 'Number of sending currency units per receiving currency unit' })),
  quoteId: Type.Optional(Type.String()),
  description: Type.Optional(Type.String()),
  refund: Type.Optional(Refund),
  counterpartyInformation: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { title: 'CounterpartyInformation' })),
  reconciliationInstructions: Type.Optional(ReconciliationInstructions),
  receiptDeliveryConfirmedAt: Type.Optional(Type.String({ format: 'date-time' })),
  agentId: Type.Optional(Type.String()),
  settledAt: Type.Optional(Type.String({ format: 'date-time' })),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
};

export const OutgoingTransaction = Type.Object(
  {
    ...common,
    status: OutgoingTransactionStatus,
    type: Type.Literal('OUTGOING'),
    sentAmount: CurrencyAmount,
    fees: Type.Integer({ minimum: 0, description: 'Fees in the smallest unit of the sending currency' }),
    platformFees: Type.Integer({ minimum: 0, description: 'The platform’s part of `fees`' }),
    rateDetails: Type.Optional(OutgoingRateDetails),
    paymentInstructions: Type.Optional(Type.Array(PaymentInstructions)),
    failureReason: Type.Optional(OutgoingTransactionFailureReason),
    paymentRail: Type.Union([PaymentRail, Type.Null()]),
    railSelectionMode: Type.Optional(Type.Union([Type.Enum(['AUTO', 'MANUAL']), Type.Null()])),
    expectedSettlementAt: Type.Optional(
      Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
        description: 'When the payment is expected to settle at the beneficiary; null on an instant rail (settlement is immediate) and before the payment starts',
      }),
    ),
    settlementTimelineSeconds: Type.Optional(
      Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: 'Expected seconds from the quote’s creation to settlement; null while not known' }),
    ),
  },
  { title: 'OutgoingTransaction' },
);
export type OutgoingTransaction = Static<typeof OutgoingTransaction>;

export const IncomingTransaction = Type.Object(
  {
    ...common,
    status: TransactionStatus,
    type: Type.Literal('INCOMING'),
    receivedAmount: CurrencyAmount,
    fees: Type.Optional(Type.Integer({ minimum: 0 })),
    failureReason: Type.Optional(IncomingTransactionFailureReason),
    requestedReceiverCustomerInfoFields: Type.Optional(Type.Array(CounterpartyFieldDefinition)),
  },
  { title: 'IncomingTransaction' },
);
export type IncomingTransaction = Static<typeof IncomingTransaction>;

export const TransactionOneOf = OneOf('type', [IncomingTransaction, OutgoingTransaction, CardTransaction], { title: 'TransactionOneOf' });
export type AnyTransaction = IncomingTransaction | OutgoingTransaction;
/** What GET /transactions and GET /transactions/{id} answer: a payment or a card transaction (type CARD). */
export type ListedTransaction = AnyTransaction | CardTransaction;

export const TransactionListQuery = Type.Object({
  customerId: Type.Optional(Type.String({ description: 'Only this customer’s transactions (the platform id: the platform’s own)' })),
  platformCustomerId: Type.Optional(Type.String()),
  accountIdentifier: Type.Optional(
    Type.String({ description: 'Only transactions this account sent or received: matches senderAccountIdentifier or receiverAccountIdentifier' }),
  ),
  senderAccountIdentifier: Type.Optional(
    Type.String({
      description:
        'Only transactions sent from this identifier: the source’s accountId (an internal or external account), its umaAddress (a UMA sender), or the originator’s accountIdentifier of a real-time funding',
    }),
  ),
  receiverAccountIdentifier: Type.Optional(
    Type.String({
      description:
        'Only transactions received by this identifier: the destination’s accountId or umaAddress, or the internal account an incoming UMA payment is credited to',
    }),
  ),
  status: Type.Optional(TransactionStatus),
  type: Type.Optional(TransactionType),
  reference: Type.Optional(
    Type.String({ description: 'Only the transaction with this reference: reconciliationInstructions.reference, or the reference its paymentInstructions ask the payer to quote' }),
  ),
  createdAfter: TimeRangeQuery.createdAfter,
  createdBefore: TimeRangeQuery.createdBefore,
  startDate: Type.Optional(Type.String({ format: 'date-time', description: 'Same as createdAfter (inclusive)' })),
  endDate: Type.Optional(Type.String({ format: 'date-time', description: 'Same as createdBefore (inclusive)' })),
  ...PageQuery,
  sortOrder: SortOrderQuery,
});
export type TransactionListQuery = Static<typeof TransactionListQuery>;

export const TransactionListResponse = ListOf(TransactionOneOf, 'transactions');

export const TransactionParams = Type.Object({ transactionId: Type.String() });

export const ConfirmReceiptDeliveryRequest = Type.Object(
  { receiptDeliveryConfirmedAt: Type.Optional(Type.String({ format: 'date-time', description: 'When the receipt reached the customer; default now' })) },
  { title: 'ConfirmReceiptDeliveryRequest' },
);
export const CancelTransactionRequest = Type.Object({ reason: Type.Optional(Type.String({ maxLength: 256 })) }, { title: 'CancelTransactionRequest' });
export const ApprovePaymentRequest = Type.Object(
  { receiverCustomerInfo: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'Receiver information the webhook asked for' })) },
  { title: 'ApprovePaymentRequest' },
);
export const RejectPaymentRequest = Type.Object({ reason: Type.Optional(Type.String({ maxLength: 256 })) }, { title: 'RejectPaymentRequest' });
