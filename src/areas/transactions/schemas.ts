import { Type, type Static } from 'typebox';
import { ListOf, PageQuery, TimeRangeQuery } from '../../kernel/pagination.js';
import { CurrencyAmount } from '../internal-accounts/schemas.js';
import { OutgoingRateDetails, PaymentRail } from '../quotes/schemas.js';

// Transactions (listTransactions, getTransactionById): today the OUTGOING transactions
// quotes create; INCOMING ones (deposits, transfer-in) come with their flows.

export const TRANSACTION_STATUSES = ['CREATED', 'PENDING', 'PENDING_AUTHORIZATION', 'PROCESSING', 'COMPLETED', 'REJECTED', 'FAILED', 'REFUNDED', 'EXPIRED'] as const;
export const TransactionStatus = Type.Enum([...TRANSACTION_STATUSES], { title: 'TransactionStatus' });
export const OutgoingTransactionStatus = Type.Enum(['PENDING', 'PENDING_AUTHORIZATION', 'EXPIRED', 'PROCESSING', 'COMPLETED', 'FAILED'], { title: 'OutgoingTransactionStatus' });
export const TransactionType = Type.Enum(['INCOMING', 'OUTGOING'], { title: 'TransactionType' });

export const AccountTransactionSource = Type.Object(
  {
    sourceType: Type.Literal('ACCOUNT'),
    accountId: Type.String({ description: 'Source account identifier' }),
    currency: Type.Optional(Type.String({ description: 'Currency code for the source' })),
  },
  { title: 'AccountTransactionSource' },
);

export const AccountTransactionDestination = Type.Object(
  {
    destinationType: Type.Literal('ACCOUNT'),
    accountId: Type.String({ description: 'Destination account identifier' }),
    currency: Type.Optional(Type.String({ description: 'Currency code for the destination' })),
  },
  { title: 'AccountTransactionDestination' },
);

export const OutgoingTransaction = Type.Object(
  {
    id: Type.String({ description: 'Transaction:<uuid>' }),
    status: OutgoingTransactionStatus,
    type: Type.Literal('OUTGOING'),
    direction: Type.Enum(['CREDIT', 'DEBIT']),
    source: AccountTransactionSource,
    destination: AccountTransactionDestination,
    customerId: Type.String({ description: 'The customer the transaction belongs to (the platform id for the platform’s own)' }),
    platformCustomerId: Type.String(),
    sentAmount: CurrencyAmount,
    receivedAmount: Type.Optional(CurrencyAmount),
    exchangeRate: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: 'Number of sending currency units per receiving currency unit' })),
    fees: Type.Integer({ minimum: 0 }),
    platformFees: Type.Integer({ minimum: 0 }),
    rateDetails: Type.Optional(OutgoingRateDetails),
    paymentRail: Type.Union([PaymentRail, Type.Null()]),
    quoteId: Type.Optional(Type.String()),
    description: Type.Optional(Type.String()),
    failureReason: Type.Optional(Type.String()),
    settledAt: Type.Optional(Type.String({ format: 'date-time' })),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { title: 'OutgoingTransaction' },
);
export type OutgoingTransaction = Static<typeof OutgoingTransaction>;

export const TransactionListQuery = Type.Object({
  customerId: Type.Optional(Type.String({ description: 'Only this customer’s transactions (the platform id: the platform’s own)' })),
  platformCustomerId: Type.Optional(Type.String()),
  status: Type.Optional(TransactionStatus),
  type: Type.Optional(TransactionType),
  createdAfter: TimeRangeQuery.createdAfter,
  createdBefore: TimeRangeQuery.createdBefore,
  startDate: Type.Optional(Type.String({ format: 'date-time', description: 'Same as createdAfter (inclusive)' })),
  endDate: Type.Optional(Type.String({ format: 'date-time', description: 'Same as createdBefore (inclusive)' })),
  ...PageQuery,
});
export type TransactionListQuery = Static<typeof TransactionListQuery>;

export const TransactionListResponse = ListOf(OutgoingTransaction, 'transactions');

export const TransactionParams = Type.Object({ transactionId: Type.String() });
