import { Type, type TSchema } from 'typebox';
import { CURRENCIES } from '../../kernel/currencies.js';
import type { WalletSignatureScheme } from '../../kernel/wallet-signatures.js';
import {
  BIC_PATTERN,
  BOLT11_PATTERN,
  BOLT12_OFFER_PATTERN,
  EVM_ADDRESS_PATTERN,
  IFSC_PATTERN,
  LIGHTNING_ADDRESS_PATTERN,
  SOLANA_ADDRESS_PATTERN,
  SPARK_ADDRESS_PATTERN,
  TRON_ADDRESS_PATTERN,
} from '../../kernel/rails.js';
import { Address } from '../customers/schemas.js';

// Every accountInfo kind of the reference (ExternalAccountCreateInfoOneOf and
// ExternalAccountInfoOneOf): its fields with the reference's constraints, its beneficiary
// shape, its currencies, the payment rails it answers with and the field that identifies
// it. The create and response schemas are built from this one table; the rail checks JSON
// schema cannot express (checksums, "one of these groups of fields") live in
// account-checks.ts.

// The 46 kinds are the sandbox corridors' (one list for accounts, corridors and discoveries).
import { EXTERNAL_ACCOUNT_TYPES, type ExternalAccountType } from '../../sandbox/rules/corridors.js';
export { EXTERNAL_ACCOUNT_TYPES, type ExternalAccountType };

export interface Beneficiary {
  beneficiaryType: 'INDIVIDUAL' | 'BUSINESS';
  fullName?: string;
  legalName?: string;
  [field: string]: unknown;
}

/** An accountInfo as stored and shown: the kind's own fields, its beneficiary and (shown) its payment rails. */
export interface AccountInfo {
  accountType: ExternalAccountType;
  beneficiary?: Beneficiary;
  paymentRails?: string[];
  [field: string]: unknown;
}

// ---------------------------------------------------------------------------------------
// Building blocks

type Fields = Record<string, { schema: TSchema; required: boolean }>;
const req = (schema: TSchema) => ({ schema, required: true });
const opt = (schema: TSchema) => ({ schema, required: false });

const Country = (description: string) => Type.String({ format: 'iso3166-1-alpha-2', description });
const accountNumber = (description = 'The account number of the bank') => Type.String({ minLength: 1, maxLength: 34, description });
const digits = (min: number, max: number, description: string) =>
  Type.String({ minLength: min, maxLength: max, pattern: min === max ? `^[0-9]{${min}}$` : `^[0-9]{${min},${max}}$`, description });
const bankName = (description = 'The name of the bank') => Type.String({ minLength: 1, maxLength: 255, description });
const swiftCode = Type.String({ minLength: 8, maxLength: 11, pattern: BIC_PATTERN, description: 'The SWIFT/BIC code of the bank' });
const phone = (pattern = '^\\+[0-9]{6,14}$', description = 'The phone number in international format') =>
  Type.String({ minLength: 7, maxLength: 15, pattern, description });
const provider = Type.String({ minLength: 1, maxLength: 255, description: 'The mobile money provider name' });
const bankAccountType = (description = 'The bank account type') => Type.Enum(['CHECKING', 'SAVINGS'], { description });
const iban = (length: number, country: string, description: string) =>
  Type.String({ minLength: length, maxLength: length, pattern: `^${country}[0-9]{${length - 2}}$`, description });
const anyIban = Type.String({ minLength: 15, maxLength: 34, pattern: '^[A-Z]{2}[0-9]{2}[A-Za-z0-9]{11,30}$', description: 'The IBAN of the bank account' });
const walletAddress = (pattern: string, description: string) => Type.String({ minLength: 1, pattern, description });

// Beneficiaries: the individual shape differs per kind (which fields it requires); the
// business shape is shared (BusinessBeneficiary).

const individualBase: Record<string, TSchema> = {
  fullName: Type.String({ minLength: 1, maxLength: 255, description: 'The full name of the beneficiary' }),
  birthDate: Type.String({ format: 'date', description: 'The birth date of the beneficiary (YYYY-MM-DD)' }),
  nationality: Country('The nationality of the beneficiary (ISO 3166-1 alpha-2)'),
  email: Type.String({ format: 'email', maxLength: 254, description: 'The email of the beneficiary' }),
  phoneNumber: Type.String({ format: 'e.164', description: 'The phone number of the beneficiary (E.164)' }),
  countryOfResidence: Country('The country of residence of the beneficiary (ISO 3166-1 alpha-2)'),
  address: Address,
};

function objectOf(props: Record<string, TSchema>, required: readonly string[], title: string) {
  const shaped: Record<string, TSchema> = {};
  for (const [k, s] of Object.entries(props)) shaped[k] = required.includes(k) ? s : Type.Optional(s);
  return Type.Object(shaped, { title });
}

function individual(title: string, required: readonly string[] = [], extra: Record<string, TSchema> = {}) {
  return objectOf({ beneficiaryType: Type.Literal('INDIVIDUAL'), ...individualBase, ...extra }, ['beneficiaryType', 'fullName', ...required], title);
}

export const BusinessBeneficiary = objectOf(
  {
    beneficiaryType: Type.Literal('BUSINESS'),
    legalName: Type.String({ minLength: 1, maxLength: 255, description: 'The legal name of the business' }),
    registrationNumber: Type.String({ minLength: 1, maxLength: 64, description: 'The registration number of the business' }),
    taxId: Type.String({ minLength: 1, maxLength: 64, description: 'The tax identification number of the business' }),
    email: individualBase.email!,
    phoneNumber: individualBase.phoneNumber!,
    countryOfResidence: individualBase.countryOfResidence!,
    address: Address,
  },
  ['beneficiaryType', 'legalName'],
  'BusinessBeneficiary',
);

export const WalletIndividualBeneficiary = objectOf(
  { beneficiaryType: Type.Literal('INDIVIDUAL'), fullName: individualBase.fullName!, countryOfResidence: individualBase.countryOfResidence! },
  ['beneficiaryType', 'fullName', 'countryOfResidence'],
  'WalletIndividualBeneficiary',
);

/** A oneOf discriminated by `tag` (Ajv validates only the branch the tag names). */
export function discriminated(tag: string, branches: TSchema[], description?: string): TSchema {
  return Type.Unsafe<unknown>({ type: 'object', required: [tag], discriminator: { propertyName: tag }, oneOf: branches, ...(description ? { description } : {}) });
}

function beneficiaryOf(individualShape: TSchema, description = 'The account holder') {
  return discriminated('beneficiaryType', [individualShape, BusinessBeneficiary], description);
}

const WalletBeneficiary = beneficiaryOf(
  WalletIndividualBeneficiary,
  "The wallet's owner. Optional for FIRST_PARTY accounts (the customer's identity is used); required for THIRD_PARTY wallets on regulated platforms",
);
const vaspName = Type.String({
  minLength: 1,
  maxLength: 255,
  description: 'Name of the VASP that custodies this account. Present when the wallet is held at an exchange or other custodial platform; omit it for self-custody wallets (ownership verification applies only to those)',
});

// ---------------------------------------------------------------------------------------
// The kinds

export interface KindSpec {
  type: ExternalAccountType;
  title: string;
  /** Currencies an account of this kind can hold; the request's `currency` must be one. */
  currencies: readonly string[];
  fields: Fields;
  /** Beneficiary: a per-kind individual shape (required), a wallet owner (optional), or none. */
  beneficiary: { kind: 'bank'; individual: TSchema } | { kind: 'wallet' } | { kind: 'none' };
  /** The paymentRails enum of the response shape (absent for wallets and Lightning). */
  rails?: readonly string[];
  /** Kinds whose fields depend on the rail: the groups of which at least one must be complete. */
  railGroups?: ReadonlyArray<{ rail: string; fields: readonly string[] }>;
  /** Self-custody wallets: the message-signature scheme that proves ownership. */
  signatureScheme?: WalletSignatureScheme;
}

const FIAT = [...CURRENCIES.values()].filter((c) => c.kind === 'FIAT').map((c) => c.code);

const bank = (title: string, required: readonly string[] = [], extra: Record<string, TSchema> = {}) => ({ kind: 'bank' as const, individual: individual(title, required, extra) });
const BANK_OR_MOBILE = (bankFields: readonly string[]) => [
  { rail: 'BANK_TRANSFER', fields: bankFields },
  { rail: 'MOBILE_MONEY', fields: ['phoneNumber'] },
];
const mobileMoney = (currency: string, phonePattern?: string, phoneDescription?: string): Omit<KindSpec, 'type' | 'title' | 'beneficiary'> => ({
  currencies: [currency],
  fields: { phoneNumber: req(phone(phonePattern, phoneDescription)), provider: req(provider) },
  rails: ['MOBILE_MONEY'],
});
const asianBank = (currency: string, label: string): Omit<KindSpec, 'type' | 'title' | 'beneficiary'> => ({
  currencies: [currency],
  fields: { bankName: req(bankName()), accountNumber: req(accountNumber(`${label} bank account number`)), swiftCode: req(swiftCode) },
  rails: ['BANK_TRANSFER'],
});
const wallet = (
  type: ExternalAccountType,
  title: string,
  currencies: readonly string[],
  address: TSchema,
  signatureScheme: WalletSignatureScheme,
): KindSpec => ({
  type,
  title,
  currencies,
  fields: { address: req(address), vaspName: opt(vaspName) },
  beneficiary: { kind: 'wallet' },
  signatureScheme,
});

const evm = (label: string) => walletAddress(EVM_ADDRESS_PATTERN, `${label} wallet address: 0x and 40 hex digits, in one case or EIP-55 checksummed`);

export const KINDS: readonly KindSpec[] = [
  {
    type: 'AED_ACCOUNT', title: 'AED Account', currencies: ['AED'],
    fields: { iban: req(iban(23, 'AE', 'UAE IBAN (23 characters, starting with AE)')), swiftCode: opt(swiftCode) },
    beneficiary: bank('AedBeneficiary', ['address']), rails: ['BANK_TRANSFER'],
  },
  {
    type: 'BDT_ACCOUNT', title: 'BDT Account', currencies: ['BDT'],
    fields: {
      accountNumber: opt(accountNumber()), bankName: req(bankName()), branchCode: opt(digits(5, 5, 'The branch code')),
      swiftCode: opt(swiftCode), phoneNumber: opt(phone()),
    },
    beneficiary: bank('BdtBeneficiary'), rails: ['BANK_TRANSFER', 'MOBILE_MONEY'],
    railGroups: BANK_OR_MOBILE(['accountNumber']),
  },
  {
    type: 'BRL_ACCOUNT', title: 'BRL Account', currencies: ['BRL'],
    fields: {
      pixKey: req(Type.String({ minLength: 1, maxLength: 77, description: 'The PIX key (email, phone, CPF, CNPJ, or random)' })),
      pixKeyType: req(Type.Enum(['CPF', 'CNPJ', 'EMAIL', 'PHONE', 'RANDOM'], { description: 'The type of PIX key' })),
      taxId: req(Type.String({ minLength: 11, maxLength: 14, pattern: '^[0-9]{11,14}$', description: 'The tax ID (CPF or CNPJ)' })),
    },
    beneficiary: bank('BrlBeneficiary'), rails: ['PIX'],
  },
  { type: 'BWP_ACCOUNT', title: 'BWP Account', beneficiary: bank('BwpBeneficiary'), ...mobileMoney('BWP') },
  {
    type: 'CAD_ACCOUNT', title: 'CAD Account', currencies: ['CAD'],
    fields: {
      bankCode: req(digits(3, 3, 'Canadian financial institution number (3 digits)')),
      branchCode: req(digits(5, 5, 'Transit number identifying the branch (5 digits)')),
      accountNumber: req(digits(7, 12, 'Bank account number (7-12 digits)')),
    },
    beneficiary: bank('CadBeneficiary', [], { registrationNumber: Type.String({ minLength: 1, maxLength: 64, description: 'The registration number of the beneficiary' }) }),
    rails: ['BANK_TRANSFER'],
  },
  {
    type: 'COP_ACCOUNT', title: 'COP Account', currencies: ['COP'],
    fields: { accountNumber: opt(accountNumber()), bankAccountType: opt(bankAccountType()), bankName: req(bankName()), phoneNumber: opt(phone()) },
    beneficiary: bank('CopBeneficiary', [], {
      documentType: Type.Enum(['CC', 'CE', 'TI', 'NIT', 'PP'], { description: 'Type of identity document of the beneficiary' }),
      documentNumber: Type.String({ minLength: 1, maxLength: 50, description: 'Number of the identity document' }),
    }),
    rails: ['BANK_TRANSFER', 'MOBILE_MONEY'],
    railGroups: BANK_OR_MOBILE(['accountNumber', 'bankAccountType']),
  },
  {
    type: 'DKK_ACCOUNT', title: 'DKK Account', currencies: ['DKK'],
    fields: { iban: req(iban(18, 'DK', 'Danish IBAN (18 characters, starting with DK)')), swiftCode: opt(swiftCode) },
    beneficiary: bank('DkkBeneficiary'), rails: ['SEPA', 'SEPA_INSTANT'],
  },
  {
    type: 'EGP_ACCOUNT', title: 'EGP Account', currencies: ['EGP'],
    fields: { iban: opt(iban(29, 'EG', 'Egyptian IBAN (29 characters, starting with EG)')), bankName: req(bankName()), phoneNumber: opt(phone()) },
    beneficiary: bank('EgpBeneficiary'), rails: ['BANK_TRANSFER', 'MOBILE_MONEY'],
    railGroups: BANK_OR_MOBILE(['iban']),
  },
  {
    type: 'EUR_ACCOUNT', title: 'EUR Account', currencies: ['EUR'],
    fields: { iban: req(anyIban), swiftCode: opt(swiftCode) },
    beneficiary: bank('EurBeneficiary', ['countryOfResidence']), rails: ['SEPA', 'SEPA_INSTANT'],
  },
  {
    type: 'GBP_ACCOUNT', title: 'GBP Account', currencies: ['GBP'],
    fields: { sortCode: req(digits(6, 6, 'The UK sort code')), accountNumber: req(digits(8, 8, 'UK bank account number (8 digits)')) },
    beneficiary: bank('GbpBeneficiary'), rails: ['FASTER_PAYMENTS'],
  },
  {
    type: 'GHS_ACCOUNT', title: 'GHS Account', currencies: ['GHS'],
    fields: { accountNumber: opt(accountNumber()), bankName: req(bankName()), phoneNumber: opt(phone()) },
    beneficiary: bank('GhsBeneficiary'), rails: ['BANK_TRANSFER', 'MOBILE_MONEY'],
    railGroups: BANK_OR_MOBILE(['accountNumber']),
  },
  {
    type: 'GTQ_ACCOUNT', title: 'GTQ Account', currencies: ['GTQ'],
    fields: { accountNumber: req(accountNumber()), bankAccountType: req(bankAccountType()), bankName: req(bankName("The name of the beneficiary's bank")) },
    beneficiary: bank('GtqBeneficiary', ['countryOfResidence', 'phoneNumber']), rails: ['BANK_TRANSFER'],
  },
  { type: 'HKD_ACCOUNT', title: 'HKD Account', beneficiary: bank('HkdBeneficiary'), ...asianBank('HKD', 'Hong Kong') },
  {
    type: 'HTG_ACCOUNT', title: 'HTG Account', currencies: ['HTG'],
    fields: { phoneNumber: req(phone()) },
    beneficiary: bank('HtgBeneficiary'), rails: ['MOBILE_MONEY'],
  },
  {
    type: 'IDR_ACCOUNT', title: 'IDR Account', currencies: ['IDR'],
    fields: {
      bankName: req(bankName()), accountNumber: req(accountNumber('Indonesian bank account number')), swiftCode: req(swiftCode),
      phoneNumber: req(phone('^\\+62[0-9]{9,12}$', 'Indonesian phone number for e-wallet payments')),
    },
    beneficiary: bank('IdrBeneficiary'), rails: ['BANK_TRANSFER'],
  },
  {
    type: 'INR_ACCOUNT', title: 'INR Account', currencies: ['INR'],
    fields: {
      vpa: opt(Type.String({ minLength: 3, maxLength: 255, pattern: '^[a-zA-Z0-9.\\-_]+@[a-zA-Z0-9]+$', description: 'The UPI Virtual Payment Address (UPI)' })),
      accountNumber: opt(digits(9, 18, 'Indian bank account number (9–18 digits; NEFT/RTGS)')),
      ifsc: opt(Type.String({ minLength: 11, maxLength: 11, pattern: IFSC_PATTERN, description: "The IFSC of the beneficiary's bank branch (NEFT/RTGS)" })),
      rail: opt(Type.String({ minLength: 1, maxLength: 32, description: 'The rail for a bank account: NEFT or RTGS' })),
      bankName: opt(bankName()),
    },
    beneficiary: bank('InrBeneficiary'), rails: ['UPI', 'NEFT', 'RTGS'],
    railGroups: [
      { rail: 'UPI', fields: ['vpa'] },
      { rail: 'NEFT/RTGS', fields: ['accountNumber', 'ifsc', 'rail'] },
    ],
  },
  {
    type: 'JMD_ACCOUNT', title: 'JMD Account', currencies: ['JMD'],
    fields: { accountNumber: req(accountNumber()), branchCode: req(digits(5, 5, 'The branch code')), bankAccountType: req(bankAccountType()), bankName: req(bankName()) },
    beneficiary: bank('JmdBeneficiary', ['address', 'phoneNumber']), rails: ['BANK_TRANSFER'],
  },
  { type: 'KES_ACCOUNT', title: 'KES Account', beneficiary: bank('KesBeneficiary'), ...mobileMoney('KES', '^\\+254[0-9]{9}$', 'Kenyan mobile money phone number') },
  { type: 'MWK_ACCOUNT', title: 'MWK Account', beneficiary: bank('MwkBeneficiary'), ...mobileMoney('MWK') },
  {
    type: 'MXN_ACCOUNT', title: 'MXN Account', currencies: ['MXN'],
    fields: { clabeNumber: req(digits(18, 18, 'The CLABE number of the bank (18 digits; the check digit is not verified)')) },
    beneficiary: bank('MxnBeneficiary'), rails: ['SPEI'],
  },
  { type: 'MYR_ACCOUNT', title: 'MYR Account', beneficiary: bank('MyrBeneficiary'), ...asianBank('MYR', 'Malaysian') },
  {
    type: 'NGN_ACCOUNT', title: 'NGN Account', currencies: ['NGN'],
    fields: { accountNumber: req(digits(10, 10, 'Nigerian bank account number (NUBAN, 10 digits)')), bankName: req(bankName()) },
    beneficiary: bank('NgnBeneficiary'), rails: ['BANK_TRANSFER'],
  },
  {
    type: 'PHP_ACCOUNT', title: 'PHP Account', currencies: ['PHP'],
    fields: { bankName: req(bankName("Name of the beneficiary's bank")), accountNumber: req(digits(8, 16, 'Bank account number')) },
    beneficiary: bank('PhpBeneficiary'), rails: ['BANK_TRANSFER'],
  },
  {
    type: 'PKR_ACCOUNT', title: 'PKR Account', currencies: ['PKR'],
    fields: {
      bankName: req(bankName()), accountNumber: opt(accountNumber()),
      iban: opt(Type.String({ minLength: 24, maxLength: 24, pattern: '^PK[0-9]{2}[A-Z]{4}[0-9]{16}$', description: 'Pakistani IBAN (24 characters, starting with PK)' })),
      phoneNumber: opt(phone()),
    },
    beneficiary: bank('PkrBeneficiary'), rails: ['BANK_TRANSFER', 'MOBILE_MONEY'],
    railGroups: [
      { rail: 'BANK_TRANSFER', fields: ['accountNumber'] },
      { rail: 'BANK_TRANSFER', fields: ['iban'] },
      { rail: 'MOBILE_MONEY', fields: ['phoneNumber'] },
    ],
  },
  { type: 'RWF_ACCOUNT', title: 'RWF Account', beneficiary: bank('RwfBeneficiary'), ...mobileMoney('RWF', '^\\+250[0-9]{9}$', 'Rwandan mobile money phone number') },
  {
    type: 'SGD_ACCOUNT', title: 'SGD Account', currencies: ['SGD'],
    fields: {
      bankName: opt(bankName("Name of the beneficiary's bank. When omitted, resolved from swiftCode")),
      accountNumber: req(accountNumber('Bank account number')), swiftCode: req(swiftCode),
    },
    beneficiary: bank('SgdBeneficiary'), rails: ['PAYNOW', 'FAST', 'BANK_TRANSFER'],
  },
  {
    type: 'SLV_ACCOUNT', title: 'SLV Account', currencies: ['USD'],
    fields: {
      bankName: opt(bankName('The name of the bank (BANK_TRANSFER only)')), accountNumber: opt(accountNumber('The account number of the bank (BANK_TRANSFER only)')),
      bankAccountType: opt(bankAccountType('The bank account type (BANK_TRANSFER only)')),
      phoneNumber: opt(phone(undefined, 'The phone number in international format (MOBILE_MONEY only, e.g. Tigo Money)')),
    },
    beneficiary: bank('SlvBeneficiary'), rails: ['BANK_TRANSFER', 'MOBILE_MONEY'],
    railGroups: BANK_OR_MOBILE(['accountNumber', 'bankAccountType']),
  },
  { type: 'THB_ACCOUNT', title: 'THB Account', beneficiary: bank('ThbBeneficiary'), ...asianBank('THB', 'Thai') },
  { type: 'TZS_ACCOUNT', title: 'TZS Account', beneficiary: bank('TzsBeneficiary'), ...mobileMoney('TZS', '^\\+255[0-9]{9}$', 'Tanzanian mobile money phone number') },
  { type: 'UGX_ACCOUNT', title: 'UGX Account', beneficiary: bank('UgxBeneficiary'), ...mobileMoney('UGX') },
  {
    type: 'USD_ACCOUNT', title: 'USD Account', currencies: ['USD'],
    fields: {
      accountNumber: req(accountNumber()),
      routingNumber: req(digits(9, 9, 'The ABA routing number (checksum verified)')),
      bankName: opt(Type.String({ minLength: 1, maxLength: 140, description: 'The name of the financial institution holding the account; recommended for wires' })),
      bankAccountType: opt(bankAccountType('Checking or savings; treated as checking when omitted')),
      intermediaryBankName: opt(Type.String({ minLength: 1, maxLength: 140, description: 'The intermediary (correspondent) bank, for WIRE; given together with intermediaryRoutingNumber' })),
      intermediaryRoutingNumber: opt(digits(9, 9, 'The ABA routing number of the intermediary bank, for WIRE; given together with intermediaryBankName')),
      fiToFiInformation: opt(Type.String({ maxLength: 210, description: 'Bank-to-bank instructions carried with a WIRE' })),
    },
    beneficiary: bank('UsdBeneficiary'), rails: ['ACH', 'WIRE', 'RTP', 'FEDNOW'],
  },
  { type: 'VND_ACCOUNT', title: 'VND Account', beneficiary: bank('VndBeneficiary'), ...asianBank('VND', 'Vietnamese') },
  {
    type: 'XAF_ACCOUNT', title: 'XAF Account', currencies: ['XAF'],
    fields: {
      phoneNumber: req(phone()), provider: req(provider),
      region: req(Type.Enum(['CM', 'CG'], { description: 'Country code within the Central African CFA franc zone' })),
    },
    beneficiary: bank('XafBeneficiary'), rails: ['MOBILE_MONEY'],
  },
  {
    type: 'XOF_ACCOUNT', title: 'XOF Account', currencies: ['XOF'],
    fields: {
      phoneNumber: req(phone()), provider: req(provider),
      region: req(Type.Enum(['BJ', 'CI', 'SN', 'TG'], { description: 'Country code within the West African CFA franc zone' })),
    },
    beneficiary: bank('XofBeneficiary'), rails: ['MOBILE_MONEY'],
  },
  {
    type: 'ZAR_ACCOUNT', title: 'ZAR Account', currencies: ['ZAR'],
    fields: { accountNumber: req(digits(9, 13, 'South African bank account number')), bankName: req(bankName()) },
    beneficiary: bank('ZarBeneficiary'), rails: ['BANK_TRANSFER'],
  },
  { type: 'ZMW_ACCOUNT', title: 'ZMW Account', beneficiary: bank('ZmwBeneficiary'), ...mobileMoney('ZMW', '^\\+260[0-9]{9}$', 'Zambian mobile money phone number') },
  {
    type: 'SWIFT_ACCOUNT', title: 'SWIFT Account', currencies: FIAT,
    fields: {
      country: req(Type.String({ minLength: 2, maxLength: 2, pattern: '^[A-Z]{2}$', description: 'The ISO 3166-1 alpha-2 country code of the bank account' })),
      swiftCode: req(swiftCode), bankName: req(bankName()),
      accountNumber: opt(accountNumber('The bank account number; required for most corridors')),
      iban: opt({ ...anyIban, description: 'The IBAN; required for IBAN-only corridors (e.g. BR, GB)' }),
    },
    beneficiary: bank('SwiftBeneficiary'), rails: ['SWIFT'],
    railGroups: [
      { rail: 'SWIFT', fields: ['accountNumber'] },
      { rail: 'SWIFT', fields: ['iban'] },
    ],
  },
  wallet('BASE_WALLET', 'Base Wallet', ['USDC'], evm('Base'), 'EIP191'),
  wallet('ETHEREUM_WALLET', 'Ethereum L1 Wallet', ['USDC', 'USDT'], evm('Ethereum L1'), 'EIP191'),
  {
    type: 'LIGHTNING', title: 'Lightning', currencies: ['BTC'],
    fields: {
      invoice: opt(Type.String({ minLength: 1, pattern: BOLT11_PATTERN, description: 'A single-use BOLT 11 invoice' })),
      bolt12: opt(Type.String({ minLength: 1, pattern: BOLT12_OFFER_PATTERN, description: 'A reusable BOLT 12 offer (lno1…)' })),
      lightningAddress: opt(Type.String({ minLength: 1, maxLength: 320, pattern: LIGHTNING_ADDRESS_PATTERN, description: 'A Lightning address (user@domain)' })),
    },
    beneficiary: { kind: 'none' },
  },
  wallet('PLASMA_WALLET', 'Plasma Wallet', ['USDT'], evm('Plasma'), 'EIP191'),
  wallet('POLYGON_WALLET', 'Polygon Wallet', ['USDC'], evm('Polygon'), 'EIP191'),
  wallet('SOLANA_WALLET', 'Solana Wallet', ['USDC', 'USDT'], walletAddress(SOLANA_ADDRESS_PATTERN, 'Solana wallet address: base58 of a 32-byte public key'), 'ED25519'),
  wallet('SPARK_WALLET', 'Spark Wallet', ['BTC'], walletAddress(SPARK_ADDRESS_PATTERN, 'Spark wallet address (spark1…; bech32m of the identity key)'), 'BITCOIN'),
  wallet('TRON_WALLET', 'Tron Wallet', ['USDT'], walletAddress(TRON_ADDRESS_PATTERN, "Tron wallet address: base58check, 'T' and 33 characters"), 'TIP191'),
  {
    type: 'CNY_ACCOUNT', title: 'CNY Account', currencies: ['CNY'],
    fields: { accountNumber: opt(accountNumber()), bankName: req(bankName('The name of the bank, or for MOBILE_MONEY the wallet (AliPay or WeChat Pay)')), phoneNumber: opt(phone()) },
    beneficiary: bank('CnyBeneficiary'), rails: ['BANK_TRANSFER', 'MOBILE_MONEY'],
    railGroups: BANK_OR_MOBILE(['accountNumber']),
  },
];

export const KIND_BY_TYPE: ReadonlyMap<string, KindSpec> = new Map(KINDS.map((k) => [k.type, k]));

export function kindOf(type: string): KindSpec | undefined {
  return KIND_BY_TYPE.get(type);
}

// ---------------------------------------------------------------------------------------
// Schemas

function variant(k: KindSpec, response: boolean) {
  const props: Record<string, TSchema> = { accountType: Type.Literal(k.type) };
  const required = ['accountType'];
  for (const [name, f] of Object.entries(k.fields)) {
    props[name] = f.schema;
    if (f.required) required.push(name);
  }
  if (k.beneficiary.kind === 'bank') {
    props.beneficiary = beneficiaryOf(k.beneficiary.individual);
    required.push('beneficiary');
  } else if (k.beneficiary.kind === 'wallet') {
    props.beneficiary = WalletBeneficiary;
  }
  if (response && k.rails) {
    props.paymentRails = Type.Array(Type.Enum([...k.rails]), { description: 'The rails this account can be paid on' });
    required.push('paymentRails');
  }
  const suffix = response ? 'ExternalAccountInfo' : 'ExternalAccountCreateInfo';
  return objectOf(props, required, `${k.title.replace(/[^A-Za-z0-9]/g, '')}${suffix}`);
}

const createVariants = KINDS.map((k) => variant(k, false));

/** accountInfo of a create request: one shape per accountType. */
export const AccountInfoCreate = Type.Unsafe<AccountInfo>({
  type: 'object',
  required: ['accountType'],
  discriminator: { propertyName: 'accountType' },
  oneOf: createVariants,
  description: 'The account or wallet; its shape is chosen by accountType',
});

/** accountInfo of an ExternalAccount: the create shape plus the paymentRails of bank kinds. */
export const AccountInfoView = Type.Unsafe<AccountInfo>({
  type: 'object',
  required: ['accountType'],
  discriminator: { propertyName: 'accountType' },
  oneOf: KINDS.map((k) => variant(k, true)),
});

/** The create-shape schema of one kind (for keeping only its declared fields). */
export const CREATE_VARIANTS: ReadonlyMap<string, TSchema> = new Map(KINDS.map((k, i) => [k.type, createVariants[i]!]));
