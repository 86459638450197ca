import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, basic, envelope, makeApp, STORE, type TestApp } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import { fund, newCustomer as newPayer, type QuoteBody } from '../money-helpers.js';
import { checkSchema } from '../../src/kernel/validation.js';
import { ExternalAccount as ExternalAccountSchema } from '../../src/api/external-accounts/schemas.js';

// External accounts, black box: every accountInfo kind of the reference (a valid and an
// invalid example each, every invalid field in one 400), the rail checks (ABA, IBAN,
// CLABE, EIP-55, Solana, Tron…), currency and kind, the sandbox's beneficiary name
// verification by identifier suffix (102–107), the platform twins, tenancy and delete.

type Json = Record<string, unknown>;
interface FieldError {
  field: string;
  message: string;
  constraint?: { format?: string; pattern?: string; enum?: string[]; minLength?: number; maxLength?: number };
}
interface Account {
  id: string;
  customerId?: string;
  status: string;
  currency: string;
  platformAccountId?: string;
  ownershipType?: string;
  defaultUmaDepositAccount?: boolean;
  beneficiaryVerificationStatus?: string;
  beneficiaryVerifiedData?: { fullName?: string };
  accountInfo: Json & { accountType: string; paymentRails?: string[]; beneficiary?: Json };
}
interface List {
  data: Account[];
  hasMore: boolean;
  nextCursor?: string;
  totalCount: number;
}

const ADMIN = { authorization: `Bearer ${ADMIN_KEY}` };
const ADDRESS = { line1: '1 Market Street', city: 'Springfield', postalCode: '12345', country: 'US' };
/** An individual beneficiary that satisfies every kind's individual shape. */
const PERSON = { beneficiaryType: 'INDIVIDUAL', fullName: 'Maria Garcia Lopez', countryOfResidence: 'US', phoneNumber: '+14155550123', address: ADDRESS };
const COMPANY = { beneficiaryType: 'BUSINESS', legalName: 'Acme Trading Ltd', registrationNumber: 'RC-2291', countryOfResidence: 'GB' };

const CHECKSUMMED_EVM = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';
const SOLANA = '4Nd1m6Qkq7RfKuE5vQ9qP9Tn6H94Ueqb4xXHzsAbd8Wg';
const TRON = 'TNPeeaaFB7K9cmo4uQpcU32zGK8G1NYqeL';
const SPARK = 'spark1pgssyuuuhnrrdjswal5c3s3rafw9w3y5dd4cjy3duxlf7hjzkp0rqx6dj6mrhu';
const INVOICE =
  'lnbc15u1p3xnhl2pp5jptserfk3zk4qy42tlucycrfwxhydvlemu9pqr93tuzlv9cc7g3sdqsvfhkcap3xyhx7un8cqzpgxqzjcsp5f8c52y2stc300gl6s4xswtjpc37hrnnr3c9wvtgjfuvqmpm35evq9qyyssqy4lgd8tj637qcjp05rdpxxykjenthxftej7a2zzmwrmrl70fyj9hvj0rewhzj7jfyuwkwcg9g2jpwtk3wkjtwnkdks84hsnu8xps5vsq4gj5hs';

interface Example {
  currency: string;
  info: Json;
  /** paymentRails the created account shows (banks). */
  rails?: string[];
}
interface BadExample {
  currency?: string;
  info: Json;
  /** Every field the 400 must name (with its constraint, where one applies). */
  errors: Array<{ field: string; constraint?: FieldError['constraint'] }>;
}

const bankB = (info: Json): Json => ({ beneficiary: PERSON, ...info });

/** A valid example of every kind. */
const VALID: Record<string, Example> = {
  AED_ACCOUNT: { currency: 'AED', info: bankB({ iban: 'AE070331234567890123456', swiftCode: 'EBILAEAD' }), rails: ['BANK_TRANSFER'] },
  BDT_ACCOUNT: { currency: 'BDT', info: bankB({ bankName: 'BRAC Bank', accountNumber: '1501201234567', branchCode: '12345' }), rails: ['BANK_TRANSFER'] },
  BRL_ACCOUNT: { currency: 'BRL', info: bankB({ pixKey: '52998224725', pixKeyType: 'CPF', taxId: '52998224725' }), rails: ['PIX'] },
  BWP_ACCOUNT: { currency: 'BWP', info: bankB({ phoneNumber: '+26771234567', provider: 'Orange Money' }), rails: ['MOBILE_MONEY'] },
  CAD_ACCOUNT: { currency: 'CAD', info: bankB({ bankCode: '001', branchCode: '00011', accountNumber: '1234567' }), rails: ['BANK_TRANSFER'] },
  CNY_ACCOUNT: { currency: 'CNY', info: bankB({ bankName: 'AliPay', phoneNumber: '+8613800138000' }), rails: ['MOBILE_MONEY'] },
  COP_ACCOUNT: {
    currency: 'COP',
    info: { beneficiary: { ...PERSON, documentType: 'CC', documentNumber: '1020304050' }, bankName: 'Bancolombia', accountNumber: '12345678912', bankAccountType: 'SAVINGS' },
    rails: ['BANK_TRANSFER'],
  },
  DKK_ACCOUNT: { currency: 'DKK', info: bankB({ iban: 'DK5000400440116243' }), rails: ['SEPA', 'SEPA_INSTANT'] },
  EGP_ACCOUNT: { currency: 'EGP', info: bankB({ iban: 'EG380019000500000000263180002', bankName: 'CIB' }), rails: ['BANK_TRANSFER'] },
  EUR_ACCOUNT: { currency: 'EUR', info: bankB({ iban: 'DE89370400440532013000', swiftCode: 'COBADEFF' }), rails: ['SEPA', 'SEPA_INSTANT'] },
  GBP_ACCOUNT: { currency: 'GBP', info: bankB({ sortCode: '200000', accountNumber: '55779911' }), rails: ['FASTER_PAYMENTS'] },
  GHS_ACCOUNT: { currency: 'GHS', info: bankB({ bankName: 'MTN Mobile Money', phoneNumber: '+233241234567' }), rails: ['MOBILE_MONEY'] },
  GTQ_ACCOUNT: { currency: 'GTQ', info: bankB({ accountNumber: '3021234567', bankAccountType: 'CHECKING', bankName: 'Banco Industrial' }), rails: ['BANK_TRANSFER'] },
  HKD_ACCOUNT: { currency: 'HKD', info: bankB({ bankName: 'HSBC', accountNumber: '004123456789', swiftCode: 'HSBCHKHH' }), rails: ['BANK_TRANSFER'] },
  HTG_ACCOUNT: { currency: 'HTG', info: bankB({ phoneNumber: '+50937123456' }), rails: ['MOBILE_MONEY'] },
  IDR_ACCOUNT: { currency: 'IDR', info: bankB({ bankName: 'BCA', accountNumber: '1234567890', swiftCode: 'CENAIDJA', phoneNumber: '+6281234567890' }), rails: ['BANK_TRANSFER'] },
  INR_ACCOUNT: { currency: 'INR', info: bankB({ vpa: 'maria.garcia@okaxis' }), rails: ['UPI'] },
  JMD_ACCOUNT: { currency: 'JMD', info: bankB({ accountNumber: '123456789', branchCode: '12345', bankAccountType: 'SAVINGS', bankName: 'NCB' }), rails: ['BANK_TRANSFER'] },
  KES_ACCOUNT: { currency: 'KES', info: bankB({ phoneNumber: '+254712345678', provider: 'M-PESA' }), rails: ['MOBILE_MONEY'] },
  MWK_ACCOUNT: { currency: 'MWK', info: bankB({ phoneNumber: '+265991234567', provider: 'Airtel Money' }), rails: ['MOBILE_MONEY'] },
  MXN_ACCOUNT: { currency: 'MXN', info: bankB({ clabeNumber: '002010077777777771' }), rails: ['SPEI'] },
  MYR_ACCOUNT: { currency: 'MYR', info: bankB({ bankName: 'Maybank', accountNumber: '114012345678', swiftCode: 'MBBEMYKL' }), rails: ['BANK_TRANSFER'] },
  NGN_ACCOUNT: { currency: 'NGN', info: bankB({ accountNumber: '0123456789', bankName: 'GTBank' }), rails: ['BANK_TRANSFER'] },
  PHP_ACCOUNT: { currency: 'PHP', info: bankB({ bankName: 'BDO', accountNumber: '12345678' }), rails: ['BANK_TRANSFER'] },
  PKR_ACCOUNT: { currency: 'PKR', info: bankB({ bankName: 'Standard Chartered', iban: 'PK36SCBL0000001123456702' }), rails: ['BANK_TRANSFER'] },
  RWF_ACCOUNT: { currency: 'RWF', info: bankB({ phoneNumber: '+250781234567', provider: 'MTN MoMo' }), rails: ['MOBILE_MONEY'] },
  SGD_ACCOUNT: { currency: 'SGD', info: bankB({ accountNumber: '0123456789', swiftCode: 'DBSSSGSG' }), rails: ['FAST', 'BANK_TRANSFER'] },
  SLV_ACCOUNT: { currency: 'USD', info: bankB({ accountNumber: '200123456', bankAccountType: 'CHECKING', bankName: 'Banco Agricola' }), rails: ['BANK_TRANSFER'] },
  THB_ACCOUNT: { currency: 'THB', info: bankB({ bankName: 'Bangkok Bank', accountNumber: '1234567890', swiftCode: 'BKKBTHBK' }), rails: ['BANK_TRANSFER'] },
  TZS_ACCOUNT: { currency: 'TZS', info: bankB({ phoneNumber: '+255712345678', provider: 'Vodacom M-Pesa' }), rails: ['MOBILE_MONEY'] },
  UGX_ACCOUNT: { currency: 'UGX', info: bankB({ phoneNumber: '+256712345678', provider: 'MTN MoMo' }), rails: ['MOBILE_MONEY'] },
  USD_ACCOUNT: {
    currency: 'USD',
    info: bankB({
      accountNumber: '12345678901',
      routingNumber: '021000021',
      bankName: 'Chase Bank',
      bankAccountType: 'SAVINGS',
      intermediaryBankName: 'Bank of America',
      intermediaryRoutingNumber: '026009593',
      fiToFiInformation: '/BNF/Invoice 4471',
    }),
    rails: ['ACH', 'WIRE', 'RTP', 'FEDNOW'],
  },
  VND_ACCOUNT: { currency: 'VND', info: bankB({ bankName: 'Vietcombank', accountNumber: '0011001234567', swiftCode: 'BFTVVNVX' }), rails: ['BANK_TRANSFER'] },
  XAF_ACCOUNT: { currency: 'XAF', info: bankB({ phoneNumber: '+237612345678', provider: 'MTN', region: 'CM' }), rails: ['MOBILE_MONEY'] },
  XOF_ACCOUNT: { currency: 'XOF', info: bankB({ phoneNumber: '+221771234567', provider: 'Orange Money', region: 'SN' }), rails: ['MOBILE_MONEY'] },
  ZAR_ACCOUNT: { currency: 'ZAR', info: bankB({ accountNumber: '62123456789', bankName: 'FNB' }), rails: ['BANK_TRANSFER'] },
  ZMW_ACCOUNT: { currency: 'ZMW', info: bankB({ phoneNumber: '+260971234567', provider: 'Airtel Money' }), rails: ['MOBILE_MONEY'] },
  SWIFT_ACCOUNT: { currency: 'JPY', info: { beneficiary: COMPANY, country: 'JP', swiftCode: 'MHCBJPJT', bankName: 'Mizuho Bank', accountNumber: '1234567' }, rails: ['SWIFT'] },
  BASE_WALLET: { currency: 'USDC', info: { address: CHECKSUMMED_EVM } },
  ETHEREUM_WALLET: { currency: 'USDT', info: { address: CHECKSUMMED_EVM.toLowerCase(), beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Maria Garcia', countryOfResidence: 'ES' } } },
  LIGHTNING: { currency: 'BTC', info: { invoice: INVOICE } },
  PLASMA_WALLET: { currency: 'USDT', info: { address: CHECKSUMMED_EVM.toUpperCase().replace('0X', '0x') } },
  POLYGON_WALLET: { currency: 'USDC', info: { address: CHECKSUMMED_EVM, vaspName: 'Kraken' } },
  SOLANA_WALLET: { currency: 'USDC', info: { address: SOLANA } },
  SPARK_WALLET: { currency: 'BTC', info: { address: SPARK } },
  TRON_WALLET: { currency: 'USDT', info: { address: TRON, beneficiary: COMPANY } },
};

const bic = { pattern: '^[A-Z]{4}[A-Z]{2}[A-Z0-9]{2}([A-Z0-9]{3})?$' };

/** An invalid example of every kind: several problems at once, all in one 400. */
const INVALID: Record<string, BadExample> = {
  AED_ACCOUNT: {
    info: { iban: 'AE070331234567890123457', beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Ali' } },
    errors: [{ field: 'accountInfo.iban', constraint: { format: 'iban' } }, { field: 'accountInfo.beneficiary.address' }],
  },
  BDT_ACCOUNT: {
    info: bankB({ branchCode: '123' }),
    errors: [{ field: 'accountInfo.bankName' }, { field: 'accountInfo.branchCode', constraint: { minLength: 5 } }, { field: 'accountInfo.accountNumber' }],
  },
  BRL_ACCOUNT: {
    info: bankB({ pixKey: '5299822472X', pixKeyType: 'CPF', taxId: '529982247251' }),
    errors: [{ field: 'accountInfo.pixKey', constraint: { pattern: '^[0-9]{11}$' } }, { field: 'accountInfo.taxId', constraint: { format: 'cpf-or-cnpj' } }],
  },
  BWP_ACCOUNT: { info: bankB({ phoneNumber: '26771234567' }), errors: [{ field: 'accountInfo.phoneNumber', constraint: { pattern: '^\\+[0-9]{6,14}$' } }, { field: 'accountInfo.provider' }] },
  CAD_ACCOUNT: {
    info: bankB({ bankCode: '1', branchCode: '00011', accountNumber: '12345' }),
    errors: [{ field: 'accountInfo.bankCode', constraint: { minLength: 3 } }, { field: 'accountInfo.accountNumber', constraint: { minLength: 7 } }],
  },
  CNY_ACCOUNT: {
    info: bankB({ bankName: 'Bank of China', accountNumber: '6217000010001234567' }),
    errors: [{ field: 'accountInfo.beneficiary.beneficiaryType', constraint: { enum: ['BUSINESS'] } }],
  },
  COP_ACCOUNT: {
    info: { beneficiary: { ...PERSON, documentType: 'XX' }, bankName: 'Bancolombia', accountNumber: '12345678912' },
    errors: [{ field: 'accountInfo.beneficiary.documentType', constraint: { enum: ['CC', 'CE', 'TI', 'NIT', 'PP'] } }, { field: 'accountInfo.bankAccountType' }],
  },
  DKK_ACCOUNT: { info: bankB({ iban: 'DE89370400440532013000' }), errors: [{ field: 'accountInfo.iban', constraint: { maxLength: 18 } }] },
  EGP_ACCOUNT: { info: bankB({ bankName: 'CIB' }), errors: [{ field: 'accountInfo.iban' }] },
  EUR_ACCOUNT: {
    info: { iban: 'DE89370400440532013001', swiftCode: 'COBAXXFF', beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Hans Muller' } },
    errors: [{ field: 'accountInfo.iban', constraint: { format: 'iban' } }, { field: 'accountInfo.swiftCode', constraint: { format: 'bic' } }, { field: 'accountInfo.beneficiary.countryOfResidence' }],
  },
  GBP_ACCOUNT: {
    info: bankB({ sortCode: '20-00-00', accountNumber: '5577991' }),
    errors: [{ field: 'accountInfo.sortCode', constraint: { maxLength: 6 } }, { field: 'accountInfo.accountNumber', constraint: { minLength: 8 } }],
  },
  GHS_ACCOUNT: { info: bankB({ bankName: 'Ecobank', phoneNumber: '+0241234567' }), errors: [{ field: 'accountInfo.phoneNumber', constraint: { format: 'e.164' } }] },
  GTQ_ACCOUNT: {
    info: { accountNumber: '3021234567', bankAccountType: 'CURRENT', bankName: 'BI', beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Ana' } },
    errors: [{ field: 'accountInfo.bankAccountType', constraint: { enum: ['CHECKING', 'SAVINGS'] } }, { field: 'accountInfo.beneficiary.countryOfResidence' }, { field: 'accountInfo.beneficiary.phoneNumber' }],
  },
  HKD_ACCOUNT: { info: bankB({ bankName: 'HSBC', accountNumber: '004123456789', swiftCode: 'hsbchkhh' }), errors: [{ field: 'accountInfo.swiftCode', constraint: bic }] },
  HTG_ACCOUNT: { info: { phoneNumber: '+50937123456' }, errors: [{ field: 'accountInfo.beneficiary' }] },
  IDR_ACCOUNT: {
    info: bankB({ bankName: 'BCA', accountNumber: '1234567890', swiftCode: 'CENAIDJA', phoneNumber: '+6591234567' }),
    errors: [{ field: 'accountInfo.phoneNumber', constraint: { pattern: '^\\+62[0-9]{9,12}$' } }],
  },
  INR_ACCOUNT: {
    info: bankB({ accountNumber: '123456789012', rail: 'IMPS' }),
    errors: [{ field: 'accountInfo.ifsc' }, { field: 'accountInfo.rail', constraint: { enum: ['NEFT', 'RTGS'] } }],
  },
  JMD_ACCOUNT: {
    info: { accountNumber: '123456789', branchCode: '12345', bankAccountType: 'SAVINGS', bankName: 'NCB', beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Ann' } },
    errors: [{ field: 'accountInfo.beneficiary.address' }, { field: 'accountInfo.beneficiary.phoneNumber' }],
  },
  KES_ACCOUNT: { info: bankB({ phoneNumber: '+255712345678', provider: 'M-PESA' }), errors: [{ field: 'accountInfo.phoneNumber', constraint: { pattern: '^\\+254[0-9]{9}$' } }] },
  MWK_ACCOUNT: { info: bankB({ provider: 'Airtel' }), errors: [{ field: 'accountInfo.phoneNumber' }] },
  MXN_ACCOUNT: { info: bankB({ clabeNumber: '00201007777777777A' }), errors: [{ field: 'accountInfo.clabeNumber', constraint: { pattern: '^[0-9]{18}$' } }] },
  MYR_ACCOUNT: { info: bankB({ bankName: 'Maybank', accountNumber: '114012345678' }), errors: [{ field: 'accountInfo.swiftCode' }] },
  NGN_ACCOUNT: { info: bankB({ accountNumber: '12345', bankName: 'GTBank' }), errors: [{ field: 'accountInfo.accountNumber', constraint: { minLength: 10 } }] },
  PHP_ACCOUNT: { info: bankB({ accountNumber: '12345678' }), errors: [{ field: 'accountInfo.bankName' }] },
  PKR_ACCOUNT: {
    info: bankB({ bankName: 'SCB', iban: 'PK36SCBL0000001123456703' }),
    errors: [{ field: 'accountInfo.iban', constraint: { format: 'iban' } }],
  },
  RWF_ACCOUNT: { info: bankB({ phoneNumber: '+250781234567' }), errors: [{ field: 'accountInfo.provider' }] },
  SGD_ACCOUNT: { info: bankB({ accountNumber: '', swiftCode: 'DBSSSGSG' }), errors: [{ field: 'accountInfo.accountNumber', constraint: { minLength: 1 } }] },
  SLV_ACCOUNT: { info: bankB({ bankName: 'Banco Agricola' }), errors: [{ field: 'accountInfo.accountNumber' }, { field: 'accountInfo.bankAccountType' }] },
  THB_ACCOUNT: { info: bankB({ bankName: 'Bangkok Bank', accountNumber: '1234567890', swiftCode: 'BKKBZZBK' }), errors: [{ field: 'accountInfo.swiftCode', constraint: { format: 'bic' } }] },
  TZS_ACCOUNT: { info: bankB({ phoneNumber: '+25571234567', provider: 'Vodacom' }), errors: [{ field: 'accountInfo.phoneNumber', constraint: { pattern: '^\\+255[0-9]{9}$' } }] },
  UGX_ACCOUNT: { info: bankB({ phoneNumber: 'abc', provider: 'MTN' }), errors: [{ field: 'accountInfo.phoneNumber', constraint: { minLength: 7 } }] },
  USD_ACCOUNT: {
    info: bankB({ accountNumber: '12345678901', routingNumber: '123456789', bankAccountType: 'BROKERAGE', intermediaryRoutingNumber: '026009593', fiToFiInformation: 'x'.repeat(211) }),
    errors: [
      { field: 'accountInfo.routingNumber', constraint: { format: 'aba-routing-number' } },
      { field: 'accountInfo.bankAccountType', constraint: { enum: ['CHECKING', 'SAVINGS'] } },
      { field: 'accountInfo.intermediaryBankName' },
      { field: 'accountInfo.fiToFiInformation', constraint: { maxLength: 210 } },
    ],
  },
  VND_ACCOUNT: { info: bankB({ bankName: 'VCB', swiftCode: 'BFTVVNVX' }), errors: [{ field: 'accountInfo.accountNumber' }] },
  XAF_ACCOUNT: { info: bankB({ phoneNumber: '+237612345678', provider: 'MTN', region: 'SN' }), errors: [{ field: 'accountInfo.region', constraint: { enum: ['CM', 'CG'] } }] },
  XOF_ACCOUNT: { info: bankB({ phoneNumber: '+221771234567', provider: 'Orange' }), errors: [{ field: 'accountInfo.region' }] },
  ZAR_ACCOUNT: { info: bankB({ accountNumber: '62-1234', bankName: 'FNB' }), errors: [{ field: 'accountInfo.accountNumber', constraint: { pattern: '^[0-9]{9,13}$' } }] },
  ZMW_ACCOUNT: { info: bankB({ phoneNumber: '+260971234567', provider: '' }), errors: [{ field: 'accountInfo.provider', constraint: { minLength: 1 } }] },
  SWIFT_ACCOUNT: {
    info: { beneficiary: COMPANY, country: 'ZZ', swiftCode: 'MHCBJPJT', bankName: 'Mizuho' },
    errors: [{ field: 'accountInfo.country', constraint: { format: 'iso3166-1-alpha-2' } }, { field: 'accountInfo.accountNumber' }],
  },
  BASE_WALLET: { info: { address: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD' }, errors: [{ field: 'accountInfo.address', constraint: { format: 'eip55-address' } }] },
  ETHEREUM_WALLET: {
    info: { address: '0x5aaeb6053f3e94c9b9a09f33669435e7ef1bea', beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Maria' } },
    errors: [{ field: 'accountInfo.address', constraint: { pattern: '^0x[0-9a-fA-F]{40}$' } }, { field: 'accountInfo.beneficiary.countryOfResidence' }],
  },
  LIGHTNING: { info: { invoice: INVOICE, lightningAddress: 'sat@wallet.example' }, errors: [{ field: 'accountInfo.lightningAddress' }] },
  PLASMA_WALLET: { info: { address: 'TNPeeaaFB7K9cmo4uQpcU32zGK8G1NYqeL' }, errors: [{ field: 'accountInfo.address', constraint: { pattern: '^0x[0-9a-fA-F]{40}$' } }] },
  POLYGON_WALLET: { currency: 'USDT', info: { address: CHECKSUMMED_EVM }, errors: [{ field: 'currency', constraint: { enum: ['USDC'] } }] },
  SOLANA_WALLET: { info: { address: '1111111111111111111111111111111111' }, errors: [{ field: 'accountInfo.address', constraint: { format: 'solana-address' } }] },
  SPARK_WALLET: { info: { address: 'spark1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq' }, errors: [{ field: 'accountInfo.address', constraint: { format: 'spark-address' } }] },
  TRON_WALLET: { info: { address: 'TNPeeaaFB7K9cmo4uQpcU32zGK8G1NYqeM' }, errors: [{ field: 'accountInfo.address', constraint: { format: 'tron-address' } }] },
};

const ALL_KINDS = [
  'AED_ACCOUNT', 'BDT_ACCOUNT', 'BRL_ACCOUNT', 'BWP_ACCOUNT', 'CAD_ACCOUNT', 'COP_ACCOUNT', 'DKK_ACCOUNT', 'EGP_ACCOUNT', 'EUR_ACCOUNT', 'GBP_ACCOUNT',
  'GHS_ACCOUNT', 'GTQ_ACCOUNT', 'HKD_ACCOUNT', 'HTG_ACCOUNT', 'IDR_ACCOUNT', 'INR_ACCOUNT', 'JMD_ACCOUNT', 'KES_ACCOUNT', 'MWK_ACCOUNT', 'MXN_ACCOUNT',
  'MYR_ACCOUNT', 'NGN_ACCOUNT', 'PHP_ACCOUNT', 'PKR_ACCOUNT', 'RWF_ACCOUNT', 'SGD_ACCOUNT', 'SLV_ACCOUNT', 'THB_ACCOUNT', 'TZS_ACCOUNT', 'UGX_ACCOUNT',
  'USD_ACCOUNT', 'VND_ACCOUNT', 'XAF_ACCOUNT', 'XOF_ACCOUNT', 'ZAR_ACCOUNT', 'ZMW_ACCOUNT', 'SWIFT_ACCOUNT', 'BASE_WALLET', 'ETHEREUM_WALLET', 'LIGHTNING',
  'PLASMA_WALLET', 'POLYGON_WALLET', 'SOLANA_WALLET', 'SPARK_WALLET', 'TRON_WALLET', 'CNY_ACCOUNT',
];

async function newCustomer(t: TestApp, headers?: Record<string, string>): Promise<string> {
  const res = await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Maria Garcia Lopez' }, headers);
  expect(res.statusCode, res.body).toBe(201);
  return (res.json() as { id: string }).id;
}

async function newPlatform(t: TestApp, body: Json): Promise<{ id: string; auth: { authorization: string } }> {
  const res = await t.call('POST', '/admin/platforms', body, ADMIN);
  expect(res.statusCode, res.body).toBe(201);
  const created = res.json() as { platform: { id: string }; credentials: { clientId: string; clientSecret: string } };
  return { id: created.platform.id, auth: { authorization: basic(created.credentials.clientId, created.credentials.clientSecret) } };
}

function fieldErrors(res: { json(): unknown; statusCode: number; body: string }): FieldError[] {
  const env = envelope(res as never, 400, 'INVALID_INPUT');
  return (env.details as { errors: FieldError[] }).errors;
}

function usd(accountNumber: string, beneficiary: Json = PERSON): Json {
  return { accountType: 'USD_ACCOUNT', accountNumber, routingNumber: '021000021', beneficiary };
}

describe(`every accountInfo kind (${STORE})`, () => {
  let t: TestApp;
  let customerId: string;
  beforeAll(async () => {
    t = await makeApp();
    customerId = await newCustomer(t);
  });
  afterAll(async () => t.close());

  it('has a valid and an invalid example for each of the 46 kinds', () => {
    expect(ALL_KINDS).toHaveLength(46);
    expect(Object.keys(VALID).sort()).toEqual([...ALL_KINDS].sort());
    expect(Object.keys(INVALID).sort()).toEqual([...ALL_KINDS].sort());
  });

  for (const kind of ALL_KINDS) {
    it(`${kind}: a valid account is created and read back`, async () => {
      const ex = VALID[kind]!;
      const res = await t.call('POST', '/customers/external-accounts', { customerId, currency: ex.currency, accountInfo: { accountType: kind, ...ex.info } });
      expect(res.statusCode, res.body).toBe(201);
      const a = res.json() as Account;
      expect(a.id).toMatch(/^ExternalAccount:[0-9a-f-]{36}$/);
      expect(a).toMatchObject({ customerId, currency: ex.currency, status: 'ACTIVE', defaultUmaDepositAccount: false });
      expect(a.accountInfo).toMatchObject({ accountType: kind, ...ex.info });
      if (ex.rails) expect(a.accountInfo.paymentRails).toEqual(ex.rails);
      else expect(a.accountInfo.paymentRails).toBeUndefined();
      const name = (ex.info.beneficiary as Json | undefined)?.fullName ?? (ex.info.beneficiary as Json | undefined)?.legalName;
      if (name) expect(a).toMatchObject({ beneficiaryVerificationStatus: 'MATCHED', beneficiaryVerifiedData: { fullName: name } });
      else expect(a.beneficiaryVerificationStatus).toBeUndefined();
      const got = await t.call('GET', `/customers/external-accounts/${a.id}`);
      expect(got.statusCode).toBe(200);
      expect(got.json()).toEqual(a);
      // Sent without the schema serializer: the answer must still be what the served
      // OpenAPI document declares.
      expect(checkSchema(ExternalAccountSchema, a)).toEqual([]);
    });

    it(`${kind}: an invalid account lists every problem in one 400 and stores nothing`, async () => {
      const ex = INVALID[kind]!;
      const before = (await t.call('GET', `/customers/external-accounts?customerId=${customerId}`)).json() as List;
      const res = await t.call('POST', '/customers/external-accounts', {
        customerId,
        currency: ex.currency ?? VALID[kind]!.currency,
        accountInfo: { accountType: kind, ...ex.info },
      });
      const errors = fieldErrors(res);
      for (const want of ex.errors) {
        const got = errors.filter((e) => e.field === want.field);
        expect(got.length, `${want.field} in ${res.body}`).toBeGreaterThan(0);
        if (want.constraint) expect(got.map((e) => e.constraint), want.field).toContainEqual(expect.objectContaining(want.constraint));
      }
      expect(new Set(errors.map((e) => e.field)).size).toBe(ex.errors.length);
      const after = (await t.call('GET', `/customers/external-accounts?customerId=${customerId}`)).json() as List;
      expect(after.totalCount).toBe(before.totalCount);
    });
  }
});

describe(`rail checks and request validation (${STORE})`, () => {
  let t: TestApp;
  let customerId: string;
  beforeAll(async () => {
    t = await makeApp();
    customerId = await newCustomer(t);
  });
  afterAll(async () => t.close());

  const create = (body: Json) => t.call('POST', '/customers/external-accounts', body);

  it('schema errors and rail checks of every part come back together', async () => {
    const res = await create({
      customerId: 'Customer:01950000-0000-7000-8000-000000000000',
      currency: 'EUR',
      accountInfo: { accountType: 'USD_ACCOUNT', accountNumber: '', routingNumber: '123456789', beneficiary: { beneficiaryType: 'INDIVIDUAL', email: 'nope' } },
    });
    const errors = fieldErrors(res);
    expect(errors.map((e) => e.field).sort()).toEqual(
      ['accountInfo.accountNumber', 'accountInfo.beneficiary.email', 'accountInfo.beneficiary.fullName', 'accountInfo.routingNumber', 'currency', 'customerId'].sort(),
    );
    expect(errors.find((e) => e.field === 'currency')!.constraint).toEqual({ enum: ['USD'] });
    expect(errors.find((e) => e.field === 'accountInfo.beneficiary.email')!.constraint).toEqual({ format: 'email' });
  });

  it('ABA routing numbers: checksum verified, both routing numbers', async () => {
    const ok = await create({ customerId, currency: 'USD', accountInfo: { ...usd('5550001'), routingNumber: '011000015' } });
    expect(ok.statusCode, ok.body).toBe(201);
    const bad = await create({ customerId, currency: 'USD', accountInfo: { ...usd('5550002'), routingNumber: '011000016', intermediaryBankName: 'X', intermediaryRoutingNumber: '999999999' } });
    const errors = fieldErrors(bad);
    expect(errors.map((e) => e.field).sort()).toEqual(['accountInfo.intermediaryRoutingNumber', 'accountInfo.routingNumber']);
    expect(errors.every((e) => e.constraint?.format === 'aba-routing-number')).toBe(true);
  });

  it('IBAN: mod 97, the length of its country, a country that issues IBANs', async () => {
    const info = (iban: string) => ({ accountType: 'EUR_ACCOUNT', iban, beneficiary: PERSON });
    expect((await create({ customerId, currency: 'EUR', accountInfo: info('FR1420041010050500013M02606') })).statusCode).toBe(201);
    for (const [iban, words] of [
      ['DE89370400440532013001', 'check digits'],
      ['DE8937040044053201300', 'different length'],
      ['US64SVBKUS6S3300958879', 'does not issue IBANs'],
    ] as const) {
      const [e] = fieldErrors(await create({ customerId, currency: 'EUR', accountInfo: info(iban) }));
      expect(e).toMatchObject({ field: 'accountInfo.iban', constraint: { format: 'iban' } });
      expect(e!.message).toContain(words);
    }
  });

  it('CLABE: 18 digits; a check digit that does not verify is accepted (the reference\'s and the sample app\'s CLABEs)', async () => {
    const mxn = (clabeNumber: string) => create({ customerId, currency: 'MXN', accountInfo: { accountType: 'MXN_ACCOUNT', clabeNumber, beneficiary: PERSON } });
    for (const clabe of ['032180000118359719', '014027000005555601', '123456789012345678', '032180000118359718']) {
      const res = await mxn(clabe);
      expect(res.statusCode, res.body).toBe(201);
      expect((res.json() as Account).accountInfo.clabeNumber).toBe(clabe);
    }
    for (const [clabe, constraint] of [
      ['01402700000555560', { minLength: 18 }],
      ['0140270000055556011', { maxLength: 18 }],
      ['01402700000555560A', { pattern: '^[0-9]{18}$' }],
      ['014027 00000555560', { pattern: '^[0-9]{18}$' }],
    ] as const) {
      const errors = fieldErrors(await mxn(clabe));
      expect(errors.map((e) => e.field)).toEqual(expect.arrayContaining(['accountInfo.clabeNumber']));
      expect(errors.map((e) => e.constraint)).toContainEqual(expect.objectContaining(constraint));
    }
  });

  it('CPF and CNPJ (PIX keys and taxId): 11 or 14 digits; check digits that do not verify are accepted', async () => {
    const brl = (pixKeyType: string, pixKey: string, taxId: string) =>
      create({ customerId, currency: 'BRL', accountInfo: { accountType: 'BRL_ACCOUNT', pixKeyType, pixKey, taxId, beneficiary: PERSON } });
    for (const [type, key, taxId] of [
      ['CPF', '12345678901', '12345678901'], // the vendor's sample app
      ['CPF', '52998224725', '52998224725'],
      ['CNPJ', '11222333000182', '11222333000182'],
      ['CNPJ', '12345678000100', '12345678901'],
    ] as const) {
      const res = await brl(type, key, taxId);
      expect(res.statusCode, res.body).toBe(201);
      expect((res.json() as Account).accountInfo).toMatchObject({ pixKey: key, taxId });
    }
    const errors = fieldErrors(await brl('CPF', '1234567890', '123456789012'));
    expect(errors.map((e) => e.field).sort()).toEqual(['accountInfo.pixKey', 'accountInfo.taxId']);
    expect(errors.find((e) => e.field === 'accountInfo.taxId')!.constraint).toEqual({ format: 'cpf-or-cnpj' });
    const cnpj = fieldErrors(await brl('CNPJ', '1122233300018X', '1122233300018X'));
    expect(cnpj.map((e) => e.field).sort()).toEqual(['accountInfo.pixKey', 'accountInfo.taxId']);
    expect([...new Set(fieldErrors(await brl('CPF', '12345678901', '1234567890')).map((e) => e.field))]).toEqual(['accountInfo.taxId']);
  });

  it('SPARK_WALLET holds BTC only, as the reference: USDC is 400 with enum [BTC]', async () => {
    const owner = await newCustomer(t);
    const spark = (currency: string) => create({ customerId: owner, currency, accountInfo: { accountType: 'SPARK_WALLET', address: SPARK } });
    const ok = await spark('BTC');
    expect(ok.statusCode, ok.body).toBe(201);
    expect((ok.json() as Account).currency).toBe('BTC');
    for (const currency of ['USDC', 'USDT']) {
      expect(fieldErrors(await spark(currency))).toEqual([{ field: 'currency', message: expect.stringContaining('BTC'), constraint: { enum: ['BTC'] } }]);
    }
  });

  it('the industry checks stay: IBAN, ABA and EIP-55 typos are still 400', async () => {
    const iban = fieldErrors(await create({ customerId, currency: 'EUR', accountInfo: { accountType: 'EUR_ACCOUNT', iban: 'DE89370400440532013001', beneficiary: PERSON } }));
    expect(iban).toEqual([expect.objectContaining({ field: 'accountInfo.iban', constraint: { format: 'iban' } })]);
    const aba = fieldErrors(await create({ customerId, currency: 'USD', accountInfo: { ...usd('5550009'), routingNumber: '021000022' } }));
    expect(aba).toEqual([expect.objectContaining({ field: 'accountInfo.routingNumber', constraint: { format: 'aba-routing-number' } })]);
    const evm = fieldErrors(await create({ customerId, currency: 'USDC', accountInfo: { accountType: 'ETHEREUM_WALLET', address: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD' } }));
    expect(evm).toEqual([expect.objectContaining({ field: 'accountInfo.address', constraint: { format: 'eip55-address' } })]);
  });

  it('EVM addresses: any single case, EIP-55 when mixed', async () => {
    const w = (address: string) => create({ customerId, currency: 'USDC', accountInfo: { accountType: 'BASE_WALLET', address } });
    expect((await w('0xfb6916095ca1df60bb79ce92ce3ea74c37c5d359')).statusCode).toBe(201);
    expect((await w('0xFB6916095CA1DF60BB79CE92CE3EA74C37C5D359'.replace('0X', '0x'))).statusCode).toBe(409); // the same address (case-insensitive)
    expect((await w('0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB')).statusCode).toBe(201);
    const [e] = fieldErrors(await w('0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6Fb'));
    expect(e).toMatchObject({ field: 'accountInfo.address', constraint: { format: 'eip55-address' } });
    // The reference's placeholder address is mixed case without a valid checksum.
    expect(fieldErrors(await w('0xAbCDEF1234567890aBCdEf1234567890ABcDef12'))[0]!.field).toBe('accountInfo.address');
  });

  it('Solana and Tron addresses', async () => {
    const sol = (address: string) => create({ customerId, currency: 'USDT', accountInfo: { accountType: 'SOLANA_WALLET', address } });
    expect(fieldErrors(await sol('0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'))[0]).toMatchObject({ field: 'accountInfo.address', constraint: { pattern: '^[1-9A-HJ-NP-Za-km-z]{32,44}$' } });
    expect(fieldErrors(await sol('2222222222222222222222222222222222222222222'))[0]).toMatchObject({ constraint: { format: 'solana-address' } });
    const tron = (address: string) => create({ customerId, currency: 'USDT', accountInfo: { accountType: 'TRON_WALLET', address } });
    expect(fieldErrors(await tron('XNPeeaaFB7K9cmo4uQpcU32zGK8G1NYqeL'))[0]).toMatchObject({ field: 'accountInfo.address', constraint: { pattern: '^T[1-9A-HJ-NP-Za-km-z]{33}$' } });
    expect(fieldErrors(await tron('TNPeeaaFB7K9cmo4uQpcU32zGK8G1NYqeX'))[0]).toMatchObject({ constraint: { format: 'tron-address' } });
  });

  it('the currency must be one the kind holds', async () => {
    for (const [accountInfo, currency, allowed] of [
      [{ accountType: 'MXN_ACCOUNT', clabeNumber: '002010077777777771', beneficiary: PERSON }, 'USD', ['MXN']],
      [{ accountType: 'SLV_ACCOUNT', phoneNumber: '+50370123456', beneficiary: PERSON }, 'SVC', ['USD']],
      [{ accountType: 'SPARK_WALLET', address: SPARK }, 'USDC', ['BTC']],
      [{ accountType: 'TRON_WALLET', address: TRON }, 'TRX', ['USDT']],
    ] as const) {
      const [e] = fieldErrors(await create({ customerId, currency, accountInfo }));
      expect(e).toEqual({ field: 'currency', message: expect.stringContaining(allowed.join(', ')), constraint: { enum: allowed } });
    }
    const swift = fieldErrors(await create({ customerId, currency: 'USDC', accountInfo: VALID.SWIFT_ACCOUNT!.info && { accountType: 'SWIFT_ACCOUNT', ...VALID.SWIFT_ACCOUNT!.info } }));
    expect(swift[0]!.field).toBe('currency');
    expect(swift[0]!.constraint!.enum).toContain('JPY');
  });

  it('an unknown accountType is named with the allowed values', async () => {
    const [e] = fieldErrors(await create({ customerId, currency: 'USD', accountInfo: { accountType: 'ARS_ACCOUNT' } }));
    expect(e!.field).toBe('accountInfo.accountType');
    expect(e!.constraint!.enum).toHaveLength(46);
  });

  it('customerId, when given, must name a live customer of this platform', async () => {
    const empty = fieldErrors(await create({ customerId: '', currency: 'USD', accountInfo: usd('777000') }));
    expect(empty.map((e) => e.field)).toEqual(['customerId']);
    const deleted = await newCustomer(t);
    expect((await t.call('DELETE', `/customers/${deleted}`)).statusCode).toBe(200);
    expect(fieldErrors(await create({ customerId: deleted, currency: 'USD', accountInfo: usd('777001') }))).toEqual([
      { field: 'customerId', message: 'names a deleted customer' },
    ]);
  });

  it('the same account twice for one owner is 409; another customer may register it', async () => {
    expect((await create({ customerId, currency: 'USD', accountInfo: usd('888000111') })).statusCode).toBe(201);
    envelope(await create({ customerId, currency: 'USD', accountInfo: usd('888000111') }), 409, 'CONFLICT');
    const other = await newCustomer(t);
    expect((await create({ customerId: other, currency: 'USD', accountInfo: usd('888000111') })).statusCode).toBe(201);
  });

  it('platformAccountId on the request, or inside accountInfo as in the reference examples; unknown fields are not kept', async () => {
    const a = (await create({ customerId, currency: 'USD', platformAccountId: 'ext_1', accountInfo: usd('990001') })).json() as Account;
    expect(a.platformAccountId).toBe('ext_1');
    const res = await create({ customerId, currency: 'USD', accountInfo: { ...usd('990002'), platformAccountId: 'ext_acc_123456', color: 'blue', beneficiary: { ...PERSON, nickname: 'M' } } });
    expect(res.statusCode, res.body).toBe(201);
    const b = res.json() as Account;
    expect(b.platformAccountId).toBe('ext_acc_123456');
    expect(b.accountInfo.platformAccountId).toBeUndefined();
    expect(b.accountInfo.color).toBeUndefined();
    expect(b.accountInfo.beneficiary!.nickname).toBeUndefined();
  });

  it('the reference Spark example is accepted; a Lightning account needs exactly one destination', async () => {
    expect((await create({ customerId, currency: 'BTC', accountInfo: { accountType: 'SPARK_WALLET', address: SPARK } })).statusCode).toBe(201);
    expect(fieldErrors(await create({ customerId, currency: 'BTC', accountInfo: { accountType: 'LIGHTNING' } }))[0]!.field).toBe('accountInfo.invoice');
    expect((await create({ customerId, currency: 'BTC', accountInfo: { accountType: 'LIGHTNING', lightningAddress: 'maria@wallet.example' } })).statusCode).toBe(201);
    const [e] = fieldErrors(await create({ customerId, currency: 'BTC', accountInfo: { accountType: 'LIGHTNING', invoice: `${INVOICE.slice(0, -1)}q` } }));
    expect(e).toMatchObject({ field: 'accountInfo.invoice', constraint: { format: 'bolt11' } });
  });

  it('kinds paid on several rails need one complete rail; paymentRails follow the fields given', async () => {
    const inr = fieldErrors(await create({ customerId, currency: 'INR', accountInfo: { accountType: 'INR_ACCOUNT', beneficiary: PERSON } }));
    expect(inr.map((e) => e.field)).toEqual(['accountInfo.vpa']);
    const neft = await create({
      customerId,
      currency: 'INR',
      accountInfo: { accountType: 'INR_ACCOUNT', accountNumber: '123456789012', ifsc: 'HDFC0001234', rail: 'NEFT', vpa: 'maria@hdfcbank', beneficiary: PERSON },
    });
    expect(neft.statusCode, neft.body).toBe(201);
    expect((neft.json() as Account).accountInfo.paymentRails).toEqual(['UPI', 'NEFT']);
    const ghs = await create({ customerId, currency: 'GHS', accountInfo: { accountType: 'GHS_ACCOUNT', bankName: 'Ecobank', accountNumber: '1441000123456', phoneNumber: '+233201234567', beneficiary: PERSON } });
    expect((ghs.json() as Account).accountInfo.paymentRails).toEqual(['BANK_TRANSFER', 'MOBILE_MONEY']);
    const cny = await create({ customerId, currency: 'CNY', accountInfo: { accountType: 'CNY_ACCOUNT', bankName: 'Bank of China', accountNumber: '6217000010001234567', beneficiary: COMPANY } });
    expect(cny.statusCode, cny.body).toBe(201);
  });

  it('defaultUmaDepositAccount: at most one per customer, the newest wins', async () => {
    const c = await newCustomer(t);
    const first = (await create({ customerId: c, currency: 'USD', defaultUmaDepositAccount: true, accountInfo: usd('121200') })).json() as Account;
    expect(first.defaultUmaDepositAccount).toBe(true);
    const second = (await create({ customerId: c, currency: 'USD', defaultUmaDepositAccount: true, accountInfo: usd('121201') })).json() as Account;
    expect(second.defaultUmaDepositAccount).toBe(true);
    expect(((await t.call('GET', `/customers/external-accounts/${first.id}`)).json() as Account).defaultUmaDepositAccount).toBe(false);
  });

  it('regulated platforms: a self-custody wallet must say its ownership; a THIRD_PARTY wallet its owner', async () => {
    const reg = await newPlatform(t, { name: 'Regulated EU', regulated: true });
    const rc = await newCustomer(t, reg.auth);
    const w = (body: Json) => t.call('POST', '/customers/external-accounts', { customerId: rc, currency: 'USDC', ...body }, reg.auth);
    const res = await w({ accountInfo: { accountType: 'ETHEREUM_WALLET', address: CHECKSUMMED_EVM } });
    expect(fieldErrors(res)).toEqual([expect.objectContaining({ field: 'ownershipType', constraint: { enum: ['FIRST_PARTY', 'THIRD_PARTY'] } })]);
    expect(fieldErrors(await w({ ownershipType: 'THIRD_PARTY', accountInfo: { accountType: 'ETHEREUM_WALLET', address: CHECKSUMMED_EVM } }))[0]!.field).toBe('accountInfo.beneficiary');
    expect((await w({ ownershipType: 'THIRD_PARTY', accountInfo: { accountType: 'ETHEREUM_WALLET', address: CHECKSUMMED_EVM, beneficiary: COMPANY } })).statusCode).toBe(201);
    // Custodial wallets (vaspName) need no ownershipType.
    expect((await w({ accountInfo: { accountType: 'POLYGON_WALLET', address: CHECKSUMMED_EVM, vaspName: 'Kraken' } })).statusCode).toBe(201);
  });
});

describe(`sandbox beneficiary name verification (${STORE})`, () => {
  let t: TestApp;
  let customerId: string;
  beforeAll(async () => {
    t = await makeApp();
    customerId = await newCustomer(t);
  });
  afterAll(async () => t.close());

  const create = (accountInfo: Json, currency = 'USD') => t.call('POST', '/customers/external-accounts', { customerId, currency, accountInfo });

  it('the suffix of the account number decides', async () => {
    const cases: Array<[string, string, string | undefined]> = [
      ['4400102', 'NOT_MATCHED', 'Alex Rivera'],
      ['4400103', 'PARTIAL_MATCH', 'M. G. Lopez'],
      ['4400104', 'PENDING', undefined],
      ['4400106', 'UNSUPPORTED', undefined],
      ['4400107', 'CHECKED_BY_RECEIVING_FI', undefined],
      ['4400101', 'MATCHED', 'Maria Garcia Lopez'],
      ['4400108', 'MATCHED', 'Maria Garcia Lopez'],
      ['4400002', 'MATCHED', 'Maria Garcia Lopez'], // transfer suffixes do not touch name verification
    ];
    for (const [number, status, name] of cases) {
      const res = await create(usd(number));
      expect(res.statusCode, res.body).toBe(201);
      const a = res.json() as Account;
      expect(a.beneficiaryVerificationStatus, number).toBe(status);
      expect(a.beneficiaryVerifiedData?.fullName, number).toBe(name);
      expect(a.status).toBe('ACTIVE');
    }
  });

  it('a business beneficiary is verified by its legal name', async () => {
    const a = (await create(usd('5500102', COMPANY))).json() as Account;
    expect(a).toMatchObject({ beneficiaryVerificationStatus: 'NOT_MATCHED', beneficiaryVerifiedData: { fullName: 'Rivera Trading Ltd' } });
    const b = (await create(usd('5500103', COMPANY))).json() as Account;
    expect(b.beneficiaryVerifiedData?.fullName).toBe('A. T. Ltd');
  });

  it('105 is 400 INVALID_BANK_ACCOUNT and stores nothing', async () => {
    const before = ((await t.call('GET', `/customers/external-accounts?customerId=${customerId}`)).json() as List).totalCount;
    const env = envelope(await create(usd('9900105')), 400, 'INVALID_BANK_ACCOUNT');
    expect(env.details).toMatchObject({ field: 'accountInfo.accountNumber' });
    const iban = envelope(await create({ accountType: 'EUR_ACCOUNT', iban: 'DE67370400440532013105', beneficiary: PERSON }, 'EUR'), 400, 'INVALID_BANK_ACCOUNT');
    expect(iban.details).toMatchObject({ field: 'accountInfo.iban' });
    const wallet = await create({ accountType: 'ETHEREUM_WALLET', address: '0x0000000000000000000000000000000000000105' }, 'USDC');
    envelope(wallet, 400, 'INVALID_BANK_ACCOUNT');
    expect(((await t.call('GET', `/customers/external-accounts?customerId=${customerId}`)).json() as List).totalCount).toBe(before);
  });

  it('email-style identifiers: the digits at the end of the username part', async () => {
    const upi = (await create({ accountType: 'INR_ACCOUNT', vpa: 'user102@okaxis', beneficiary: PERSON }, 'INR')).json() as Account;
    expect(upi.beneficiaryVerificationStatus).toBe('NOT_MATCHED');
    const pix = (await create({ accountType: 'BRL_ACCOUNT', pixKey: 'user103@example.com.br', pixKeyType: 'EMAIL', taxId: '52998224725', beneficiary: PERSON }, 'BRL')).json() as Account;
    expect(pix.beneficiaryVerificationStatus).toBe('PARTIAL_MATCH');
    envelope(await create({ accountType: 'LIGHTNING', lightningAddress: 'user105@wallet.example' }, 'BTC'), 400, 'INVALID_BANK_ACCOUNT');
    const domainDigits = (await create({ accountType: 'INR_ACCOUNT', vpa: 'user@bank102', beneficiary: PERSON }, 'INR')).json() as Account;
    expect(domainDigits.beneficiaryVerificationStatus).toBe('MATCHED');
  });

  it('an account without a beneficiary name shows no name verification', async () => {
    const a = (await create({ accountType: 'ETHEREUM_WALLET', address: '0x0000000000000000000000000000000000000102' }, 'USDC')).json() as Account;
    expect(a.beneficiaryVerificationStatus).toBeUndefined();
    expect(a.beneficiaryVerifiedData).toBeUndefined();
  });
});

describe(`platform twins, lists, tenancy and delete (${STORE})`, () => {
  let t: TestApp;
  let customerId: string;
  beforeAll(async () => {
    t = await makeApp();
    customerId = await newCustomer(t);
  });
  afterAll(async () => t.close());

  it('platform accounts: no customer, their own paths, 404 on the customer paths and back', async () => {
    const res = await t.call('POST', '/platform/external-accounts', { currency: 'USD', platformAccountId: 'treasury', accountInfo: usd('3030303') });
    expect(res.statusCode, res.body).toBe(201);
    const p = res.json() as Account;
    expect(p.customerId).toBeUndefined();
    expect(p.defaultUmaDepositAccount).toBeUndefined();
    expect(p.platformAccountId).toBe('treasury');
    const c = (await t.call('POST', '/customers/external-accounts', { customerId, currency: 'USD', accountInfo: usd('3030303') })).json() as Account;

    expect((await t.call('GET', `/platform/external-accounts/${p.id}`)).json()).toEqual(p);
    envelope(await t.call('GET', `/customers/external-accounts/${p.id}`), 404, 'REFERENCE_NOT_FOUND');
    envelope(await t.call('GET', `/platform/external-accounts/${c.id}`), 404, 'REFERENCE_NOT_FOUND');
    envelope(await t.call('DELETE', `/customers/external-accounts/${p.id}`), 404, 'REFERENCE_NOT_FOUND');

    const platformList = (await t.call('GET', '/platform/external-accounts')).json() as List;
    expect(platformList.data.map((a) => a.id)).toEqual([p.id]);
    const customerList = (await t.call('GET', '/customers/external-accounts')).json() as List;
    expect(customerList.data.map((a) => a.id)).toContain(c.id);
    expect(customerList.data.map((a) => a.id)).not.toContain(p.id);

    // The platform body has no customerId; its validation lists every problem as well.
    const bad = fieldErrors(await t.call('POST', '/platform/external-accounts', { currency: 'GBP', accountInfo: { accountType: 'USD_ACCOUNT', accountNumber: '1', routingNumber: '021000022', beneficiary: PERSON } }));
    expect(bad.map((e) => e.field).sort()).toEqual(['accountInfo.routingNumber', 'currency']);
  });

  it('lists filter by customer and currency, newest first, with cursor pages', async () => {
    const c = await newCustomer(t);
    const ids: string[] = [];
    for (const n of ['60001', '60002', '60003']) ids.push(((await t.call('POST', '/customers/external-accounts', { customerId: c, currency: 'USD', accountInfo: usd(n) })).json() as Account).id);
    ids.push(((await t.call('POST', '/customers/external-accounts', { customerId: c, currency: 'EUR', accountInfo: { accountType: 'EUR_ACCOUNT', iban: 'DE89370400440532013000', beneficiary: PERSON } })).json() as Account).id);
    const all = (await t.call('GET', `/customers/external-accounts?customerId=${c}`)).json() as List;
    expect(all.data.map((a) => a.id)).toEqual([...ids].reverse());
    expect(all.totalCount).toBe(4);
    const eur = (await t.call('GET', `/customers/external-accounts?customerId=${c}&currency=EUR`)).json() as List;
    expect(eur.data.map((a) => a.id)).toEqual([ids[3]]);
    const page1 = (await t.call('GET', `/customers/external-accounts?customerId=${c}&currency=USD&limit=2`)).json() as List;
    expect(page1).toMatchObject({ hasMore: true, totalCount: 3 });
    const page2 = (await t.call('GET', `/customers/external-accounts?customerId=${c}&currency=USD&limit=2&cursor=${page1.nextCursor}`)).json() as List;
    expect([...page1.data, ...page2.data].map((a) => a.id)).toEqual([ids[2], ids[1], ids[0]]);
    expect(page2.hasMore).toBe(false);
    expect(((await t.call('GET', '/customers/external-accounts?customerId=Customer:unknown')).json() as List).totalCount).toBe(0);
  });

  it("another platform's accounts answer 404 like unknown ones", async () => {
    const other = await newPlatform(t, { name: 'Other platform' });
    const oc = await newCustomer(t, other.auth);
    const theirs = (await t.call('POST', '/customers/external-accounts', { customerId: oc, currency: 'USD', accountInfo: usd('7070707') }, other.auth)).json() as Account;
    const theirPlatform = (await t.call('POST', '/platform/external-accounts', { currency: 'USD', accountInfo: usd('7070708') }, other.auth)).json() as Account;
    for (const path of [`/customers/external-accounts/${theirs.id}`, `/platform/external-accounts/${theirPlatform.id}`]) {
      const unknown = envelope(await t.call('GET', path.replace(/[0-9a-f]{4}$/, '0000')), 404, 'REFERENCE_NOT_FOUND');
      const foreign = envelope(await t.call('GET', path), 404, 'REFERENCE_NOT_FOUND');
      expect(foreign.message.replace(/ExternalAccount:\S+/, '')).toBe(unknown.message.replace(/ExternalAccount:\S+/, ''));
      envelope(await t.call('DELETE', path), 404, 'REFERENCE_NOT_FOUND');
    }
    const mine = (await t.call('GET', '/customers/external-accounts')).json() as List;
    expect(mine.data.map((a) => a.id)).not.toContain(theirs.id);
    // Their customer is not ours either.
    expect(fieldErrors(await t.call('POST', '/customers/external-accounts', { customerId: oc, currency: 'USD', accountInfo: usd('7070709') })).map((e) => e.field)).toEqual(['customerId']);
    // Still there for them.
    expect((await t.call('GET', `/customers/external-accounts/${theirs.id}`, undefined, other.auth)).statusCode).toBe(200);
  });

  it('delete: 204, then 404 everywhere, and the account can be registered again', async () => {
    const a = (await t.call('POST', '/customers/external-accounts', { customerId, currency: 'USD', accountInfo: usd('8080808') })).json() as Account;
    const del = await t.call('DELETE', `/customers/external-accounts/${a.id}`);
    expect(del.statusCode).toBe(204);
    expect(del.body).toBe('');
    envelope(await t.call('GET', `/customers/external-accounts/${a.id}`), 404, 'REFERENCE_NOT_FOUND');
    envelope(await t.call('DELETE', `/customers/external-accounts/${a.id}`), 404, 'REFERENCE_NOT_FOUND');
    expect(((await t.call('GET', `/customers/external-accounts?customerId=${customerId}`)).json() as List).data.map((x) => x.id)).not.toContain(a.id);
    const again = await t.call('POST', '/customers/external-accounts', { customerId, currency: 'USD', accountInfo: usd('8080808') });
    expect(again.statusCode).toBe(201);
    expect((again.json() as Account).id).not.toBe(a.id);

    const p = (await t.call('POST', '/platform/external-accounts', { currency: 'USD', accountInfo: usd('8080809') })).json() as Account;
    expect((await t.call('DELETE', `/platform/external-accounts/${p.id}`)).statusCode).toBe(204);
    envelope(await t.call('GET', `/platform/external-accounts/${p.id}`), 404, 'REFERENCE_NOT_FOUND');
  });

  it('BasicAuth only; a VIEW token cannot create', async () => {
    const res = await t.call('GET', '/customers/external-accounts', undefined, { authorization: 'Bearer some-agent-token' });
    envelope(res, 401, 'UNAUTHORIZED');
    const tok = await t.call('POST', '/tokens', { name: 'viewer', permissions: ['VIEW'] });
    expect(tok.statusCode, tok.body).toBe(201);
    const { clientId, clientSecret } = tok.json() as { clientId: string; clientSecret: string };
    const view = { authorization: basic(clientId, clientSecret) };
    expect((await t.call('GET', '/customers/external-accounts', undefined, view)).statusCode).toBe(200);
    // createCustomerExternalAccount declares no 403: the missing permission is a 401 naming it.
    expect(envelope(await t.call('POST', '/customers/external-accounts', { customerId, currency: 'USD', accountInfo: usd('1') }, view), 401, 'UNAUTHORIZED').details).toMatchObject({ required: 'MANAGE', granted: ['VIEW'] });
  });
});

describe(`payouts to the vendor sample app's Mexican and Brazilian accounts (${STORE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeApp();
  });
  afterAll(async () => t.close());

  it.each([
    ['MXN', { accountType: 'MXN_ACCOUNT', clabeNumber: '014027000005555601' }],
    ['MXN', { accountType: 'MXN_ACCOUNT', clabeNumber: '123456789012345678' }],
    ['BRL', { accountType: 'BRL_ACCOUNT', pixKey: '12345678901', pixKeyType: 'CPF', taxId: '12345678901' }],
  ] as const)('a USD payout to %s %o completes', async (currency, info) => {
    const payer = await newPayer(t, ['USD']);
    await fund(t, payer.accounts.USD!.id, 100_000);
    const created = await t.call('POST', '/customers/external-accounts', { customerId: payer.id, currency, accountInfo: { ...info, beneficiary: PERSON } });
    expect(created.statusCode, created.body).toBe(201);
    const accountId = (created.json() as Account).id;
    const res = await t.call('POST', '/quotes', {
      source: { sourceType: 'ACCOUNT', accountId: payer.accounts.USD!.id },
      destination: { destinationType: 'ACCOUNT', accountId },
      lockedCurrencySide: 'SENDING',
      lockedCurrencyAmount: 10_000,
      immediatelyExecute: true,
      senderCustomerInfo: { FULL_NAME: 'Pat Payer', BIRTH_DATE: '1990-01-15', TAX_ID: '123-45-6789', POSTAL_ADDRESS: '1 Market Street, San Francisco, CA 94105, US' },
    });
    expect(res.statusCode, res.body).toBe(201);
    const q = res.json() as QuoteBody;
    expect(q.receivingCurrency.code).toBe(currency);
    expect((await t.call('POST', '/sandbox/clock/advance', { seconds: 2 })).statusCode).toBe(200);
    const tx = (await t.call('GET', `/transactions/${encodeURIComponent(q.transactionId)}`)).json() as { status: string };
    expect(tx.status).toBe('COMPLETED');
    await assertLedgerInvariants(t.store);
  });
});
