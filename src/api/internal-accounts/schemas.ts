import { Type, type Static, type TSchema } from 'typebox';
import { ListOf, PageQuery } from '../../kernel/pagination.js';

// Internal accounts: the holding accounts the platform and its customers keep with the
// service, one per currency, with balances from the ledger and sandbox funding instructions.

export const Currency = Type.Object(
  {
    code: Type.String({ description: 'Three-letter ISO 4217 code for fiat; some cryptocurrencies use their own ticker', examples: ['USD'] }),
    name: Type.String({ description: 'Full name of the currency', examples: ['United States Dollar'] }),
    symbol: Type.String({ description: 'Currency symbol', examples: ['$'] }),
    decimals: Type.Integer({ minimum: 0, description: 'Number of decimal places', examples: [2] }),
  },
  { title: 'Currency' },
);

export const CurrencyAmount = Type.Object(
  {
    amount: Type.Integer({ description: 'Amount in the smallest unit of the currency (cents for USD, satoshis for BTC)', examples: [12550] }),
    currency: Currency,
  },
  { title: 'CurrencyAmount' },
);

export const INTERNAL_ACCOUNT_TYPES = ['INTERNAL_FIAT', 'INTERNAL_CRYPTO', 'EMBEDDED_WALLET'] as const;
export const InternalAccountType = Type.Enum([...INTERNAL_ACCOUNT_TYPES], {
  title: 'InternalAccountType',
  description: 'INTERNAL_FIAT: a managed fiat holding account; INTERNAL_CRYPTO: a managed crypto holding account; EMBEDDED_WALLET: a self-custodial wallet',
});
export const InternalAccountStatus = Type.Enum(['PENDING', 'ACTIVE', 'CLOSED', 'FROZEN', 'FAILED'], {
  title: 'InternalAccountStatus',
  description: 'Whether the account can send and receive payments (ACTIVE) or not',
});

const reference = Type.String({ description: 'Unique reference code the payer must include with the payment so it is credited to this account', examples: ['UMA-7Q2K9D4M1X'] });
const Rails = (rails: string[]) => Type.Array(Type.Enum(rails), { description: 'Payment rails that reach these coordinates' });
const Bic = Type.String({ pattern: '^[A-Z]{4}[A-Z]{2}[A-Z0-9]{2}([A-Z0-9]{3})?$', description: 'SWIFT/BIC code of the bank' });

function Variant(title: string, accountType: string, props: Record<string, TSchema>) {
  return Type.Object({ accountType: Type.Literal(accountType), ...props, reference }, { title });
}

const Wallet = (title: string, accountType: string, assets?: string[]) =>
  Variant(title, accountType, {
    address: Type.String({ description: 'Deposit address of this account on the network' }),
    ...(assets ? { assetType: Type.Optional(Type.Enum(assets, { description: 'Asset to send to the address' })) } : {}),
  });

/** The Payment*AccountInfo variants this service issues as funding coordinates (discriminated by accountType). */
export const PaymentAccountOrWalletInfo = Type.Union(
  [
    Variant('PaymentUsdAccountInfo', 'USD_ACCOUNT', {
      accountNumber: Type.String({ minLength: 1, maxLength: 34, description: 'Account number' }),
      routingNumber: Type.String({ pattern: '^[0-9]{9}$', description: 'ABA routing number' }),
      bankName: Type.Optional(Type.String({ description: 'Name of the bank holding the account' })),
      bankAccountType: Type.Optional(Type.Enum(['CHECKING', 'SAVINGS'])),
      bankAddress: Type.Optional(Type.String({ description: 'Postal address of the bank, on one line' })),
      paymentRails: Rails(['ACH', 'WIRE', 'RTP', 'FEDNOW']),
    }),
    Variant('PaymentEurAccountInfo', 'EUR_ACCOUNT', {
      iban: Type.String({ pattern: '^[A-Z]{2}[0-9]{2}[A-Za-z0-9]{11,30}$', description: 'IBAN' }),
      swiftCode: Type.Optional(Bic),
      paymentRails: Rails(['SEPA', 'SEPA_INSTANT']),
    }),
    Variant('PaymentDkkAccountInfo', 'DKK_ACCOUNT', {
      iban: Type.String({ pattern: '^DK[0-9]{16}$', description: 'Danish IBAN' }),
      swiftCode: Type.Optional(Bic),
      paymentRails: Rails(['SEPA', 'SEPA_INSTANT']),
    }),
    Variant('PaymentGbpAccountInfo', 'GBP_ACCOUNT', {
      sortCode: Type.String({ pattern: '^[0-9]{6}$', description: 'UK sort code' }),
      accountNumber: Type.String({ pattern: '^[0-9]{8}$', description: 'UK account number' }),
      paymentRails: Rails(['FASTER_PAYMENTS']),
    }),
    Variant('PaymentMxnAccountInfo', 'MXN_ACCOUNT', {
      clabeNumber: Type.String({ pattern: '^[0-9]{18}$', description: 'CLABE' }),
      paymentRails: Rails(['SPEI']),
    }),
    Variant('PaymentBrlAccountInfo', 'BRL_ACCOUNT', {
      qrCode: Type.String({ minLength: 1, description: 'PIX QR code payload (BR Code, copy and paste)' }),
      pixKey: Type.Optional(Type.String({ description: 'PIX key of the account' })),
      pixKeyType: Type.Optional(Type.Enum(['CPF', 'CNPJ', 'EMAIL', 'PHONE', 'RANDOM'])),
    }),
    Variant('PaymentInrAccountInfo', 'INR_ACCOUNT', {
      vpa: Type.Optional(Type.String({ description: 'UPI virtual payment address' })),
      accountNumber: Type.Optional(Type.String({ pattern: '^[0-9]{9,18}$' })),
      ifsc: Type.Optional(Type.String({ pattern: '^[A-Z]{4}0[A-Z0-9]{6}$' })),
      bankName: Type.Optional(Type.String()),
      paymentRails: Rails(['UPI', 'NEFT', 'RTGS']),
    }),
    Variant('PaymentCadAccountInfo', 'CAD_ACCOUNT', {
      bankCode: Type.String({ pattern: '^[0-9]{3}$', description: 'Institution number' }),
      branchCode: Type.String({ pattern: '^[0-9]{5}$', description: 'Transit number' }),
      accountNumber: Type.String({ pattern: '^[0-9]{7,12}$' }),
      paymentRails: Rails(['BANK_TRANSFER']),
    }),
    Variant('PaymentNgnAccountInfo', 'NGN_ACCOUNT', {
      accountNumber: Type.String({ pattern: '^[0-9]{10}$' }),
      bankName: Type.String(),
      paymentRails: Rails(['BANK_TRANSFER']),
    }),
    Variant('PaymentSwiftAccountInfo', 'SWIFT_ACCOUNT', {
      country: Type.String({ pattern: '^[A-Z]{2}$', description: 'Country of the bank (ISO 3166-1 alpha-2)' }),
      swiftCode: Bic,
      bankName: Type.String(),
      accountNumber: Type.Optional(Type.String()),
      iban: Type.Optional(Type.String()),
      accountHolderName: Type.String({ description: 'Beneficiary name to copy exactly onto the wire' }),
    }),
    Wallet('PaymentSolanaWalletInfo', 'SOLANA_WALLET', ['USDC', 'USDT']),
    Wallet('PaymentEthereumWalletInfo', 'ETHEREUM_WALLET', ['USDC', 'USDT']),
    Wallet('PaymentTronWalletInfo', 'TRON_WALLET', ['USDT']),
    Wallet('PaymentPlasmaWalletInfo', 'PLASMA_WALLET', ['USDT']),
    Wallet('PaymentPolygonWalletInfo', 'POLYGON_WALLET', ['USDC']),
    Wallet('PaymentBaseWalletInfo', 'BASE_WALLET', ['USDC']),
    Variant('PaymentBitcoinDepositAddressInfo', 'BITCOIN_L1', {
      address: Type.String({ description: 'On-chain Bitcoin (L1) deposit address' }),
      network: Type.Optional(Type.Enum(['BITCOIN'])),
    }),
    Type.Object(
      {
        accountType: Type.Literal('EMBEDDED_WALLET'),
        payloadToSign: Type.String({ description: 'The transaction payload to stamp byte for byte with a session key of the source wallet; the stamp goes in Service-Wallet-Signature on POST /quotes/{quoteId}/execute' }),
      },
      { title: 'PaymentEmbeddedWalletInfo' },
    ),
  ],
  { description: 'Bank coordinates or wallet address, by accountType' },
);

export const PaymentInstructions = Type.Object(
  {
    instructionsNotes: Type.Optional(Type.String({ description: 'Human-readable instructions for making the payment' })),
    isPlatformAccount: Type.Optional(Type.Boolean({ description: 'Whether the account is a platform account rather than a customer account' })),
    accountOrWalletInfo: PaymentAccountOrWalletInfo,
  },
  { title: 'PaymentInstructions' },
);

export const InternalAccount = Type.Object(
  {
    id: Type.String({ description: 'InternalAccount:<uuid>' }),
    customerId: Type.Optional(Type.String({ description: 'The customer the account belongs to; absent for the platform’s own accounts' })),
    type: InternalAccountType,
    status: InternalAccountStatus,
    balance: { ...CurrencyAmount, description: 'Balance available to spend, excluding pending and held funds' },
    totalBalance: { ...CurrencyAmount, description: 'Total balance, including pending and held funds' },
    fundingPaymentInstructions: Type.Array(PaymentInstructions, { description: 'Payment instructions for funding the account' }),
    privateEnabled: Type.Optional(Type.Boolean({ description: 'Whether wallet privacy is enabled; only on EMBEDDED_WALLET accounts' })),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { title: 'InternalAccount' },
);
export type InternalAccount = Static<typeof InternalAccount>;

export const CustomerInternalAccountQuery = Type.Object({
  customerId: Type.Optional(Type.String({ description: 'Only the accounts of this customer (an unknown customer has none)' })),
  currency: Type.Optional(Type.String({ description: 'Only accounts in this currency code' })),
  type: Type.Optional(InternalAccountType),
  ...PageQuery,
});

export const PlatformInternalAccountQuery = Type.Object({
  currency: Type.Optional(Type.String({ description: 'Only accounts in this currency code' })),
  type: Type.Optional(InternalAccountType),
});

export const InternalAccountListResponse = ListOf(InternalAccount, 'internal accounts');

export const PlatformInternalAccountListResponse = Type.Object({
  data: Type.Array(InternalAccount, { description: 'The platform’s internal accounts matching the filters' }),
});
