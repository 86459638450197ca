import { Type, type Static } from 'typebox';
import { PAYMENT_RAILS } from '../../sandbox/rules/corridors.js';
import { CurrencySchema } from '../lookups/schemas.js';

export const PaymentRail = Type.Enum([...PAYMENT_RAILS], { description: 'The payment network that moves the funds' });

const CurrencyCode = Type.String({ format: 'iso4217', description: 'Currency code (ISO 4217, or a crypto ticker such as BTC or USDC)' });

export const ExchangeRateQuery = Type.Object({
  sourceCurrency: Type.Optional(Type.String({ format: 'iso4217', description: 'Only rates from this currency. Default: the platform\'s supported currencies' })),
  destinationCurrency: Type.Optional(
    Type.Array(CurrencyCode, { description: 'Only rates to these currencies: repeat the parameter or join the codes with commas (EUR,MXN). Default: every corridor with a payment rail' }),
  ),
  sendingAmount: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      default: 10_000,
      description: 'Sending amount in the smallest unit of the source currency (default 10000)',
    }),
  ),
});
export type ExchangeRateQuery = Static<typeof ExchangeRateQuery>;

export const ExchangeRateFees = Type.Object(
  {
    fixed: Type.Integer({ minimum: 0, description: 'Fixed platform fee, in the smallest unit of the source currency' }),
    total: Type.Integer({ minimum: 0, description: 'Total platform fee for sendingAmount (fixed + variable), in the smallest unit of the source currency' }),
  },
  { title: 'ExchangeRateFees' },
);

export const ExchangeRate = Type.Object(
  {
    sourceCurrency: CurrencySchema,
    sendingAmount: Type.Integer({ minimum: 0, description: 'Sending amount in the smallest unit of the source currency (echoed, or the default 10000)' }),
    minSendingAmount: Type.Integer({ minimum: 0, description: 'Smallest sending amount whose quote delivers at least the corridor\'s minimum' }),
    maxSendingAmount: Type.Integer({ minimum: 0, description: 'Largest sending amount whose quote delivers at most the corridor\'s maximum' }),
    destinationCurrency: CurrencySchema,
    destinationPaymentRail: PaymentRail,
    receivingAmount: Type.Integer({ minimum: 0, description: 'What a quote locked on sendingAmount delivers: (sendingAmount − fixed fee) × (1 − variable rate) converted, rounded half to even, in the smallest unit of the destination currency' }),
    exchangeRate: Type.Number({ exclusiveMinimum: 0, description: 'Number of sending currency units per receiving currency unit, net of fees: (sendingAmount − fees.total) / receivingAmount in major units' }),
    fees: ExchangeRateFees,
    updatedAt: Type.String({ format: 'date-time', description: 'When this rate was last refreshed (cached about 5 minutes)' }),
  },
  { title: 'ExchangeRate' },
);
export type ExchangeRate = Static<typeof ExchangeRate>;

export const ExchangeRateListResponse = Type.Object({ data: Type.Array(ExchangeRate, { description: 'Exchange rates matching the filters' }) });
