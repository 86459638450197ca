import { Type, type Static } from 'typebox';

export const CUSTOMER_INFO_FIELD_NAMES = [
  'FULL_NAME', 'BIRTH_DATE', 'NATIONALITY', 'PHONE_NUMBER', 'EMAIL', 'POSTAL_ADDRESS', 'TAX_ID', 'REGISTRATION_NUMBER',
  'USER_TYPE', 'COUNTRY_OF_RESIDENCE', 'ACCOUNT_IDENTIFIER', 'FI_LEGAL_ENTITY_NAME', 'FI_ADDRESS', 'PURPOSE_OF_PAYMENT',
  'ULTIMATE_INSTITUTION_COUNTRY', 'IDENTIFIER', 'BUSINESS_TYPE', 'COMPANY_LEGAL_NAME', 'ID_TYPE', 'ID_NUMBER',
] as const;

export const CustomerInfoFieldName = Type.Enum([...CUSTOMER_INFO_FIELD_NAMES], { description: 'A piece of customer data' });

export const CounterpartyFieldDefinition = Type.Object({
  name: CustomerInfoFieldName,
  mandatory: Type.Boolean({ description: 'Whether the field is mandatory' }),
});

export const TransactionType = Type.Enum(['INCOMING', 'OUTGOING']);

const CurrencyCode = Type.String({ format: 'iso4217', description: 'Currency code (ISO 4217, or a crypto ticker such as BTC or USDC)' });

export const PlatformCurrencyConfig = Type.Object({
  currencyCode: CurrencyCode,
  minAmount: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Minimum amount, in the smallest unit of the currency' }),
  maxAmount: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Maximum amount, in the smallest unit of the currency' }),
  requiredCounterpartyFields: Type.Array(CounterpartyFieldDefinition),
  providerRequiredCustomerFields: Type.Optional(Type.Array(CustomerInfoFieldName, { readOnly: true })),
  providerRequiredCounterpartyCustomerFields: Type.Optional(Type.Array(CustomerInfoFieldName, { readOnly: true })),
  enabledTransactionTypes: Type.Array(TransactionType),
});
export type PlatformCurrencyConfig = Static<typeof PlatformCurrencyConfig>;

export const FixedFee = Type.Object({
  amount: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Fee in the smallest unit of `currency`' }),
  currency: CurrencyCode,
});

export const FeeConfig = Type.Object({
  feeType: Type.Enum(['CROSS_CURRENCY_TRANSACTION'], { description: 'Activity the fee applies to' }),
  sourceCurrency: CurrencyCode,
  variableFeeBps: Type.Integer({ minimum: 0, maximum: 10_000, description: 'Variable fee in basis points of the source amount' }),
  fixedFee: FixedFee,
});
export type FeeConfig = Static<typeof FeeConfig>;

export const EmbeddedWalletConfig = Type.Object({
  appName: Type.Optional(Type.String({ maxLength: 255 })),
  otpLength: Type.Optional(Type.Integer({ minimum: 4, maximum: 12 })),
  alphanumeric: Type.Optional(Type.Boolean()),
  expirationSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 86_400 })),
  sendFromEmailAddress: Type.Optional(Type.String({ format: 'email', maxLength: 255 })),
  sendFromEmailSenderName: Type.Optional(Type.String({ maxLength: 255 })),
  replyToEmailAddress: Type.Optional(Type.String({ format: 'email', maxLength: 255 })),
  logoUrl: Type.Optional(Type.String({ format: 'url', maxLength: 512 })),
});
export type EmbeddedWalletConfig = Static<typeof EmbeddedWalletConfig>;

export const CardTokenization2FAConfig = Type.Object({
  displayName: Type.Optional(Type.String({ maxLength: 255 })),
  logoUrl: Type.Optional(Type.String({ format: 'url', pattern: '^https://', maxLength: 512 })),
  email: Type.Optional(
    Type.Object({
      fromAddress: Type.Optional(Type.String({ format: 'email', maxLength: 255 })),
      fromName: Type.Optional(Type.String({ maxLength: 255 })),
      replyToAddress: Type.Optional(Type.String({ format: 'email', maxLength: 255 })),
      subject: Type.Optional(Type.String({ maxLength: 255 })),
      bodyText: Type.Optional(Type.String({ maxLength: 2000 })),
    }),
  ),
  sms: Type.Optional(
    Type.Object({
      templateSid: Type.Optional(Type.String({ maxLength: 64 })),
      bodyText: Type.Optional(Type.String({ maxLength: 480 })),
    }),
  ),
});
export type CardTokenization2FAConfig = Static<typeof CardTokenization2FAConfig>;

export const PlatformConfig = Type.Object({
  id: Type.String({ description: 'PlatformConfig:<uuid>' }),
  umaDomain: Type.String(),
  proxyUmaSubdomain: Type.Optional(Type.String()),
  webhookEndpoint: Type.Optional(Type.String()),
  supportedCurrencies: Type.Array(PlatformCurrencyConfig),
  isRegulatedFinancialInstitution: Type.Boolean({ description: 'Fixed when the platform is created' }),
  embeddedWalletConfig: Type.Optional(EmbeddedWalletConfig),
  cardTokenization2faConfig: Type.Optional(CardTokenization2FAConfig),
  feeConfigs: Type.Array(FeeConfig, { description: 'Every active platform fee' }),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
});
export type PlatformConfig = Static<typeof PlatformConfig>;

export const PlatformConfigUpdateRequest = Type.Object({
  umaDomain: Type.Optional(Type.String({ format: 'hostname', maxLength: 253 })),
  webhookEndpoint: Type.Optional(Type.Union([Type.String({ format: 'url', maxLength: 2048 }), Type.Null()])),
  supportedCurrencies: Type.Optional(Type.Array(PlatformCurrencyConfig, { minItems: 1 })),
  embeddedWalletConfig: Type.Optional(EmbeddedWalletConfig),
  cardTokenization2faConfig: Type.Optional(CardTokenization2FAConfig),
  feeConfigs: Type.Optional(Type.Array(FeeConfig)),
});
export type PlatformConfigUpdateRequest = Static<typeof PlatformConfigUpdateRequest>;
