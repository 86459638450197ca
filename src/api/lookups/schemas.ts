import { Type, type Static } from 'typebox';
import { CounterpartyFieldDefinition } from '../config/schemas.js';

// Schemas the receiver lookups share (UMA address and external account), and the Currency
// object every pricing endpoint shows.

export const CurrencySchema = Type.Object(
  {
    code: Type.String({ description: 'Three-letter ISO 4217 code for fiat; a ticker (BTC, USDC …) for crypto' }),
    name: Type.String({ description: 'Full name of the currency' }),
    symbol: Type.String({ description: 'Currency symbol' }),
    decimals: Type.Integer({ minimum: 0, description: 'Number of decimal places: amounts are integers of 10^-decimals units' }),
  },
  { title: 'Currency' },
);
export type CurrencyView = Static<typeof CurrencySchema>;

export const CurrencyPreference = Type.Object(
  {
    currency: CurrencySchema,
    estimatedExchangeRate: Type.Number({
      exclusiveMinimum: 0,
      description: 'Estimated rate from the sending currency to this currency (units of this currency per unit of the sending currency). Not locked: a quote may differ',
    }),
    min: Type.Integer({ exclusiveMinimum: 0, description: 'Minimum amount receivable, in the smallest unit of this currency' }),
    max: Type.Integer({ exclusiveMinimum: 0, description: 'Maximum amount receivable, in the smallest unit of this currency' }),
    minSendingAmount: Type.Optional(
      Type.Integer({ minimum: 0, description: 'Minimum amount to send, in the smallest unit of the sending currency (estimate at the current rate, platform fees included); omitted when unresolvable' }),
    ),
    maxSendingAmount: Type.Optional(
      Type.Integer({ minimum: 0, description: 'Maximum amount to send, in the smallest unit of the sending currency (estimate at the current rate, platform fees included); omitted when unresolvable' }),
    ),
  },
  { title: 'CurrencyPreference' },
);
export type CurrencyPreference = Static<typeof CurrencyPreference>;

/** The fields of ReceiverLookupResponse, for the lookups to extend. */
export const ReceiverLookupFields = {
  /** The sender's default currency or the one named by sendingCurrency; every estimatedExchangeRate converts from it. */
  sendingCurrency: CurrencySchema,
  supportedCurrencies: Type.Array(CurrencyPreference, { description: 'Currencies the receiver supports' }),
  requiredPayerDataFields: Type.Optional(
    Type.Array(CounterpartyFieldDefinition, { description: 'Payer data the receiving institution needs before the payment can complete' }),
  ),
  lookupId: Type.String({ description: 'Lookup:<uuid>; pass it to the quote request' }),
};

export const ReceiverLookupResponse = Type.Object(ReceiverLookupFields, { title: 'ReceiverLookupResponse' });
export type ReceiverLookupResponse = Static<typeof ReceiverLookupResponse>;

/** Query parameters both lookups take; checked by the service so every problem is in one 400. */
export const LookupQueryFields = {
  senderUmaAddress: Type.Optional(Type.String({ description: 'UMA address of the sender (optional if customerId is given)' })),
  customerId: Type.Optional(Type.String({ description: 'Customer:<uuid> of the sender (optional if senderUmaAddress is given)' })),
  sendingCurrency: Type.Optional(
    Type.String({ description: 'Currency the sender sends from; one of the sender\'s currencies. Defaults to the sender\'s default (first) currency' }),
  ),
};
