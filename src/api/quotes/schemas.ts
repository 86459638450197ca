import { ScaChallenge } from '../sca/schemas.js';
import { Type, type Static } from 'typebox';
import { ListOf, PageQuery } from '../../kernel/pagination.js';
import { OneOf } from '../../kernel/validation.js';
import { PAYMENT_RAILS } from '../../sandbox/rules/corridors.js';
import { Currency, PaymentInstructions } from '../internal-accounts/schemas.js';

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
    accountId: Type.String({
      description: 'Source account identifier: an internal account, or an external account with pull functionality (the pull path; use immediatelyExecute)',
      examples: ['InternalAccount:e85dcbd6-dced-4ec4-b756-3c3a9ea3d965'],
    }),
    customerId: Type.Optional(Type.String({ description: 'Defaults to the customer owning the account' })),
  },
  { title: 'AccountQuoteSource', description: 'Source account details' },
);

export const RealtimeFundingQuoteSource = Type.Object(
  {
    sourceType: Type.Literal('REALTIME_FUNDING'),
    currency: Type.String({ description: 'Currency the funds will arrive in', examples: ['USD'] }),
    customerId: Type.Optional(Type.String({ description: 'The customer on whose behalf the quote is made; absent: the platform itself' })),
    cryptoNetwork: Type.Optional(
      Type.String({
        description:
          'Network of a crypto deposit, required for a stablecoin (USDC: SOLANA, ETHEREUM, BASE, POLYGON; USDT: SOLANA, ETHEREUM, TRON, PLASMA; BTC: BITCOIN, SPARK, LIGHTNING). ' +
          'The sandbox also takes the test-network names (SOLANA_DEVNET, ETHEREUM_TESTNET, BASE_TESTNET, POLYGON_TESTNET, TRON_TESTNET, PLASMA_TESTNET, …) and echoes the name sent',
      }),
    ),
  },
  {
    title: 'RealtimeFundingQuoteSource',
    description: 'Fund the quote just in time with the paymentInstructions of the response (sandbox: POST /sandbox/send)',
  },
);

export const QuoteSource = OneOf('sourceType', [AccountQuoteSource, RealtimeFundingQuoteSource], { title: 'QuoteSourceOneOf' });

export const AccountDestination = Type.Object(
  {
    destinationType: Type.Literal('ACCOUNT'),
    accountId: Type.String({ description: 'Destination account identifier: an external account', examples: ['ExternalAccount:a12dcbd6-dced-4ec4-b756-3c3a9ea3d123'] }),
    paymentRail: Type.Optional(PaymentRail),
  },
  { title: 'AccountDestination', description: 'Destination account details' },
);

export const UmaAddressDestination = Type.Object(
  {
    destinationType: Type.Literal('UMA_ADDRESS'),
    umaAddress: Type.String({ description: 'UMA address of the recipient', examples: ['$success.eur@sandbox.uma.money'] }),
    currency: Type.Optional(Type.String({ description: 'Receiving currency; default: the receiver’s default currency from the lookup' })),
  },
  { title: 'UmaAddressDestination', description: 'UMA address destination details (needs lookupId)' },
);

export const QuoteDestination = OneOf('destinationType', [AccountDestination, UmaAddressDestination], { title: 'QuoteDestinationOneOf' });

export const PlatformFeeOverride = Type.Object(
  {
    platformFixedFee: Type.Object(
      {
        amount: Type.Integer({ minimum: 0, maximum: 9_000_000_000_000_000, description: 'Smallest unit of the source currency' }),
        currency: Type.String({ description: 'The quote’s source currency (USD today)' }),
      },
      { title: 'FixedFee' },
    ),
    platformVariableFeeBps: Type.Integer({ minimum: 0, maximum: 10_000, description: 'Variable fee in basis points of the sending amount' }),
  },
  { title: 'PlatformFeeOverride', description: 'Replaces the platform’s configured fee for this quote; USD source only today' },
);
export type PlatformFeeOverride = Static<typeof PlatformFeeOverride>;

export const QuoteLockSide = Type.Enum(['SENDING', 'RECEIVING'], { title: 'QuoteLockSide', description: 'Which side of the quote the amount is fixed on' });

export const QuoteRequest = Type.Object(
  {
    lookupId: Type.Optional(Type.String({ description: 'Lookup ID from a previous receiver lookup request; required for UMA destinations' })),
    source: QuoteSource,
    destination: QuoteDestination,
    lockedCurrencySide: QuoteLockSide,
    lockedCurrencyAmount: Type.Integer({ exclusiveMinimum: 0, maximum: 9_000_000_000_000_000, description: 'The amount to send or receive in the smallest unit of the locked currency' }),
    immediatelyExecute: Type.Optional(Type.Boolean({ description: 'Execute the quote at once (default false)' })),
    description: Type.Optional(Type.String({ maxLength: 1024, description: 'Optional description/memo for the transfer' })),
    remittanceInformation: Type.Optional(Type.String({ maxLength: 80, description: 'Free-form information that travels with the payment' })),
    purposeOfPayment: Type.Optional(PurposeOfPayment),
    platformFeeOverride: Type.Optional(PlatformFeeOverride),
    senderCustomerInfo: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'Sender information the receiver asked for (requiredPayerDataFields)' })),
    scaFactor: Type.Optional(Type.Enum(['SMS_OTP', 'PASSKEY'], { description: 'Preferred Strong Customer Authentication factor (ignored outside SCA regions)' })),
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
    gridApiVariableFeeAmount: Type.Number({ minimum: 0, description: 'Variable fee amount in the smallest unit of the sending currency: (sending amount − fixed fee) × gridApiVariableFeeRate, rounded half to even' }),
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
    source: QuoteSource,
    destination: QuoteDestination,
    sendingCurrency: Currency,
    receivingCurrency: Currency,
    totalSendingAmount: Type.Integer({ exclusiveMinimum: 0 }),
    totalReceivingAmount: Type.Integer({ exclusiveMinimum: 0 }),
    exchangeRate: Type.Number({ exclusiveMinimum: 0, description: 'Number of sending currency units per receiving currency unit, net of fees: (totalSendingAmount − feesIncluded) / totalReceivingAmount in major units' }),
    feesIncluded: Type.Integer({ minimum: 0, description: 'Fees within totalSendingAmount, in its smallest unit: the platform fee (fixed + variable); the sandbox charges no other' }),
    platformFeesIncluded: Type.Integer({ minimum: 0, description: 'The platform fee within totalSendingAmount: fixed + round_half_even((totalSendingAmount − fixed) × variable rate)' }),
    paymentInstructions: Type.Optional(Type.Array(PaymentInstructions, { description: 'How to fund a REALTIME_FUNDING quote' })),
    transactionId: Type.String({ description: 'The ID of the transaction created from this quote: it exists from the quote’s creation (PENDING until executed or funded)' }),
    description: Type.Optional(Type.String({ description: 'The description the quote was created with, as given (also on its transaction)' })),
    counterpartyInformation: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    rateDetails: OutgoingRateDetails,
    scaChallenge: Type.Optional(ScaChallenge),
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

// ---- Same-currency transfers (deprecated) and real-time funding ------------------------

export const TransferInRequest = Type.Object(
  {
    source: Type.Object({ accountId: Type.String({ description: 'The external account to pull from (ExternalAccount:…)' }) }),
    destination: Type.Object({ accountId: Type.String({ description: 'The internal account credited (InternalAccount:…)' }) }),
    amount: Type.Optional(
      Type.Integer({
        exclusiveMinimum: 0,
        maximum: 9_000_000_000_000_000,
        description: 'Smallest unit of the currency (cents for USD). Required when the source is an external account (its balance cannot be known); with an internal-account source, absent moves its whole available balance',
      }),
    ),
  },
  { title: 'TransferInRequest' },
);
export type TransferInRequest = Static<typeof TransferInRequest>;

export const TransferOutRequest = Type.Object(
  {
    source: Type.Object({ accountId: Type.String({ description: 'The internal account debited (InternalAccount:…)' }) }),
    destination: Type.Object({
      accountId: Type.String({ description: 'The external account paid (ExternalAccount:…)' }),
      paymentRail: Type.Optional(PaymentRail),
    }),
    amount: Type.Optional(
      Type.Integer({ exclusiveMinimum: 0, maximum: 9_000_000_000_000_000, description: 'Smallest unit of the currency (cents for USD); absent: the whole available balance of the source account' }),
    ),
    remittanceInformation: Type.Optional(Type.String({ maxLength: 80 })),
    purposeOfPayment: Type.Optional(PurposeOfPayment),
  },
  { title: 'TransferOutRequest' },
);
export type TransferOutRequest = Static<typeof TransferOutRequest>;

export const SandboxSendRequest = Type.Object(
  {
    quoteId: Type.String({ description: 'The REALTIME_FUNDING quote being funded' }),
    currencyCode: Type.String({ description: 'Currency of the funds sent (the quote’s sending currency)' }),
    currencyAmount: Type.Optional(
      Type.Integer({ exclusiveMinimum: 0, maximum: 9_000_000_000_000_000, description: 'Amount sent (smallest unit); default the quote’s totalSendingAmount. Another amount fails the payment with FUNDING_AMOUNT_MISMATCH' }),
    ),
  },
  { title: 'SandboxSendRequest' },
);
export type SandboxSendRequest = Static<typeof SandboxSendRequest>;

/**
 * GET /quotes (newer than the 2025-10-13 reference; the official SDK's QuoteListParams):
 * the filters, each optional, all applying together.
 */
export const QuoteListQuery = Type.Object({
  status: Type.Optional(QuoteStatus),
  customerId: Type.Optional(Type.String({ description: 'Only quotes sent by this customer (the platform id: the platform’s own quotes)' })),
  sendingAccountId: Type.Optional(Type.String({ description: 'Only quotes paid from this account (the source’s accountId)' })),
  receivingAccountId: Type.Optional(Type.String({ description: 'Only quotes paying this account (the destination’s accountId)' })),
  sendingUmaAddress: Type.Optional(Type.String({ description: 'Only quotes sent from this UMA address (the source’s umaAddress)' })),
  receivingUmaAddress: Type.Optional(Type.String({ description: 'Only quotes paying this UMA address (the destination’s umaAddress)' })),
  createdAfter: Type.Optional(Type.String({ format: 'date-time', description: 'Created at or after (inclusive)' })),
  createdBefore: Type.Optional(Type.String({ format: 'date-time', description: 'Created at or before (inclusive)' })),
  ...PageQuery,
});
export type QuoteListQuery = Static<typeof QuoteListQuery>;

export const QuoteListResponse = ListOf(Quote, 'quotes');
