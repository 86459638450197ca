import { Type, type Static } from 'typebox';
import { PAYMENT_RAILS } from '../../sandbox/corridors.js';
import { Currency } from '../internal-accounts/schemas.js';

// Quotes (createQuote, getQuoteById, executeQuote), in the reference's shapes.

export const PaymentRail = Type.Enum([...PAYMENT_RAILS], { title: 'PaymentRail' });

export const PURPOSES_OF_PAYMENT = [
  'GIFT', 'SELF', 'GOODS_OR_SERVICES', 'EDUCATION', 'HEALTH_OR_MEDICAL', 'REAL_ESTATE_PURCHASE', 'TAX_PAYMENT',
  'LOAN_PAYMENT', 'UTILITY_BILL', 'DONATION', 'TRAVEL', 'FAMILY_SUPPORT', 'SALARY_PAYMENT', 'OTHER',
] as const;
export const PurposeOfPayment = Type.Enum([...PURPOSES_OF_PAYMENT], { title: 'PurposeOfPayment', description: 'The purpose of the payment' });

export const AccountQuoteSource = Type.Object(
  {
    sourceType: Type.Literal('ACCOUNT'),
    accountId: Type.String({ description: 'Source account identifier: an internal account of the platform', examples: ['InternalAccount:e85dcbd6-dced-4ec4-b756-3c3a9ea3d965'] }),
    customerId: Type.Optional(Type.String({ description: 'Defaults to the customer owning the account' })),
  },
  { title: 'AccountQuoteSource', description: 'Source account details' },
);

export const AccountDestination = Type.Object(
  {
    destinationType: Type.Literal('ACCOUNT'),
    accountId: Type.String({ description: 'Destination account identifier: an external account', examples: ['ExternalAccount:a12dcbd6-dced-4ec4-b756-3c3a9ea3d123'] }),
    paymentRail: Type.Optional(PaymentRail),
  },
  { title: 'AccountDestination', description: 'Destination account details' },
);

export const QuoteLockSide = Type.Enum(['SENDING', 'RECEIVING'], { title: 'QuoteLockSide', description: 'Which side of the quote the amount is fixed on' });

export const QuoteRequest = Type.Object(
  {
    lookupId: Type.Optional(Type.String({ description: 'Lookup ID from a previous receiver lookup request' })),
    source: AccountQuoteSource,
    destination: AccountDestination,
    lockedCurrencySide: QuoteLockSide,
    lockedCurrencyAmount: Type.Integer({ exclusiveMinimum: 0, maximum: 9_000_000_000_000_000, description: 'The amount to send or receive in the smallest unit of the locked currency' }),
    immediatelyExecute: Type.Optional(Type.Boolean({ description: 'Execute the quote at once (default false)' })),
    description: Type.Optional(Type.String({ maxLength: 1024, description: 'Optional description/memo for the transfer' })),
    remittanceInformation: Type.Optional(Type.String({ maxLength: 80, description: 'Free-form information that travels with the payment' })),
    purposeOfPayment: Type.Optional(PurposeOfPayment),
  },
  { title: 'QuoteRequest' },
);
export type QuoteRequest = Static<typeof QuoteRequest>;

export const OutgoingRateDetails = Type.Object(
  {
    counterpartyMultiplier: Type.Number({ exclusiveMinimum: 0, description: 'Receiving currency units per sending currency unit at the sandbox customer rate (spread applied)' }),
    counterpartyFixedFee: Type.Integer({ minimum: 0, description: 'Fixed counterparty fee in the receiving currency (0 in the sandbox)' }),
    gridApiMultiplier: Type.Number({ exclusiveMinimum: 0, description: '1 minus the variable fee rate' }),
    gridApiFixedFee: Type.Integer({ minimum: 0, description: 'Fixed fee in the smallest unit of the sending currency' }),
    gridApiVariableFeeRate: Type.Number({ minimum: 0, description: 'Variable fee rate (fraction of the sending amount)' }),
    gridApiVariableFeeAmount: Type.Number({ minimum: 0, description: 'Variable fee amount in the smallest unit of the sending currency' }),
  },
  { title: 'OutgoingRateDetails' },
);
export type OutgoingRateDetails = Static<typeof OutgoingRateDetails>;

export const QuoteStatus = Type.Enum(['PENDING', 'PENDING_AUTHORIZATION', 'PROCESSING', 'COMPLETED', 'FAILED', 'EXPIRED'], { title: 'QuoteStatus' });

export const Quote = Type.Object(
  {
    id: Type.String({ description: 'Quote:<uuid>' }),
    status: QuoteStatus,
    createdAt: Type.String({ format: 'date-time' }),
    expiresAt: Type.String({ format: 'date-time', description: 'When the locked rate stops being executable (5 minutes of platform time after creation in the sandbox)' }),
    source: AccountQuoteSource,
    destination: AccountDestination,
    sendingCurrency: Currency,
    receivingCurrency: Currency,
    totalSendingAmount: Type.Integer({ exclusiveMinimum: 0 }),
    totalReceivingAmount: Type.Integer({ exclusiveMinimum: 0 }),
    exchangeRate: Type.Number({ exclusiveMinimum: 0, description: 'Number of sending currency units per receiving currency unit' }),
    feesIncluded: Type.Integer({ minimum: 0 }),
    platformFeesIncluded: Type.Integer({ minimum: 0 }),
    transactionId: Type.String({ description: 'The ID of the transaction created from this quote: assigned at creation, the transaction exists once the quote is executed' }),
    rateDetails: OutgoingRateDetails,
  },
  { title: 'Quote' },
);
export type Quote = Static<typeof Quote>;

export const QuoteParams = Type.Object({ quoteId: Type.String() });

/** The optional body of POST /quotes/{quoteId}/execute; scaFactor matters only where SCA applies (not in this sandbox yet). */
export const ExecuteQuoteRequest = Type.Object(
  { scaFactor: Type.Optional(Type.Enum(['SMS_OTP', 'PASSKEY'], { description: 'Preferred Strong Customer Authentication factor' })) },
  { title: 'ExecuteQuoteRequest' },
);
