import { CURRENCIES } from '../../kernel/currencies.js';

// The sandbox's receiving corridors: per receiving currency, what can be received (min and
// max in the currency's smallest unit), where (countries), through which external-account
// kinds (the reference's ExternalAccountType) and payment rails (its PaymentRail), at which
// banks and providers (GET /discoveries), and which payer data the receiving institution
// needs before a payment can complete (requiredPayerDataFields of the receiver lookups).
//
// The exchange-rate endpoint, the discoveries and the receiver lookups read this table;
// quotes and external accounts should too, so a corridor is described once.

export const PAYMENT_RAILS = [
  'ACH', 'ACH_COLOMBIA', 'BANK_TRANSFER', 'BRE_B', 'CIPS', 'FAST', 'FASTER_PAYMENTS', 'FEDNOW', 'INSTAPAY', 'MOBILE_MONEY',
  'NEFT', 'PAYNOW', 'PESONET', 'PIX', 'RTGS', 'RTP', 'SEPA', 'SEPA_INSTANT', 'SPEI', 'SWIFT', 'UNIONPAY', 'UPI', 'WIRE',
] as const;
export type PaymentRail = (typeof PAYMENT_RAILS)[number];

/**
 * Rails that settle within seconds (real-time schemes, mobile money): a transaction on one
 * reports no expectedSettlementAt unless its sandbox outcome holds it longer. The others
 * (ACH, wire, SEPA, SWIFT, bank transfers, NEFT/RTGS, PESONet, CIPS, UnionPay) are deferred.
 */
export const INSTANT_RAILS: ReadonlySet<PaymentRail> = new Set<PaymentRail>([
  'RTP', 'FEDNOW', 'SEPA_INSTANT', 'FASTER_PAYMENTS', 'PIX', 'SPEI', 'UPI', 'INSTAPAY', 'FAST', 'PAYNOW', 'BRE_B', 'MOBILE_MONEY',
]);

export const EXTERNAL_ACCOUNT_TYPES = [
  'AED_ACCOUNT', 'BDT_ACCOUNT', 'BRL_ACCOUNT', 'BWP_ACCOUNT', 'CAD_ACCOUNT', 'COP_ACCOUNT', 'DKK_ACCOUNT', 'EGP_ACCOUNT',
  'EUR_ACCOUNT', 'GBP_ACCOUNT', 'GHS_ACCOUNT', 'GTQ_ACCOUNT', 'HKD_ACCOUNT', 'HTG_ACCOUNT', 'IDR_ACCOUNT', 'INR_ACCOUNT',
  'JMD_ACCOUNT', 'KES_ACCOUNT', 'MWK_ACCOUNT', 'MXN_ACCOUNT', 'MYR_ACCOUNT', 'NGN_ACCOUNT', 'PHP_ACCOUNT', 'PKR_ACCOUNT',
  'RWF_ACCOUNT', 'SGD_ACCOUNT', 'SLV_ACCOUNT', 'THB_ACCOUNT', 'TZS_ACCOUNT', 'UGX_ACCOUNT', 'USD_ACCOUNT', 'VND_ACCOUNT',
  'XAF_ACCOUNT', 'XOF_ACCOUNT', 'ZAR_ACCOUNT', 'ZMW_ACCOUNT', 'SWIFT_ACCOUNT', 'BASE_WALLET', 'ETHEREUM_WALLET', 'LIGHTNING',
  'PLASMA_WALLET', 'POLYGON_WALLET', 'SOLANA_WALLET', 'SPARK_WALLET', 'TRON_WALLET', 'CNY_ACCOUNT',
] as const;
export type ExternalAccountType = (typeof EXTERNAL_ACCOUNT_TYPES)[number];

export type CustomerInfoFieldName =
  | 'FULL_NAME' | 'BIRTH_DATE' | 'NATIONALITY' | 'PHONE_NUMBER' | 'EMAIL' | 'POSTAL_ADDRESS' | 'TAX_ID' | 'REGISTRATION_NUMBER'
  | 'USER_TYPE' | 'COUNTRY_OF_RESIDENCE' | 'ACCOUNT_IDENTIFIER' | 'FI_LEGAL_ENTITY_NAME' | 'FI_ADDRESS' | 'PURPOSE_OF_PAYMENT'
  | 'ULTIMATE_INSTITUTION_COUNTRY' | 'IDENTIFIER' | 'BUSINESS_TYPE' | 'COMPANY_LEGAL_NAME' | 'ID_TYPE' | 'ID_NUMBER';

export interface PayerDataField {
  name: CustomerInfoFieldName;
  mandatory: boolean;
}

/** A bank or payment provider of a corridor (GET /discoveries). */
export interface Institution {
  /** Canonical name: the `bankName` to pass when creating an external account. */
  bankName: string;
  displayName: string;
  country: string;
  kind: 'BANK' | 'PROVIDER';
}

/** One way into a corridor: a country, the account kind used there and its rails. */
export interface CorridorRoute {
  country: string;
  accountType: ExternalAccountType;
  /** Rails in order of preference; the first is the default destination rail. */
  rails: PaymentRail[];
}

export interface Corridor {
  currency: string;
  /** Smallest receivable amount, in the currency's smallest unit (> 0). */
  min: number;
  /** Largest receivable amount, in the currency's smallest unit (> 0). */
  max: number;
  routes: CorridorRoute[];
  /** Wallet kinds for crypto corridors (no PaymentRail exists for them). */
  wallets?: ExternalAccountType[];
  institutions: Institution[];
  /** Payer data the receiving institution needs; absent when it asks for none. */
  requiredPayerDataFields?: PayerDataField[];
}

const bank = (country: string, bankName: string, displayName = bankName): Institution => ({ bankName, displayName, country, kind: 'BANK' });
const provider = (country: string, bankName: string, displayName = bankName): Institution => ({ bankName, displayName, country, kind: 'PROVIDER' });
const m = (name: CustomerInfoFieldName): PayerDataField => ({ name, mandatory: true });
const o = (name: CustomerInfoFieldName): PayerDataField => ({ name, mandatory: false });

const EUR_COUNTRIES = ['AT', 'BE', 'DE', 'ES', 'FI', 'FR', 'IE', 'IT', 'NL', 'PT'];
const XOF_COUNTRIES = ['BF', 'BJ', 'CI', 'ML', 'NE', 'SN', 'TG'];
const XAF_COUNTRIES = ['CF', 'CG', 'CM', 'GA', 'GQ', 'TD'];

// Bounds are about 1 to 100,000 USD in round local amounts (crypto: see each row).
export const CORRIDORS: readonly Corridor[] = [
  {
    currency: 'USD', min: 100, max: 10_000_000,
    routes: [
      { country: 'US', accountType: 'USD_ACCOUNT', rails: ['ACH', 'WIRE', 'RTP', 'FEDNOW'] },
      { country: 'SV', accountType: 'SLV_ACCOUNT', rails: ['BANK_TRANSFER'] },
    ],
    institutions: [
      bank('US', 'JPMorgan Chase', 'JPMorgan Chase Bank'), bank('US', 'Bank of America'), bank('US', 'Wells Fargo'),
      bank('US', 'Citibank'), provider('US', 'Cash App'), bank('SV', 'Banco Agricola', 'Banco Agrícola'), bank('SV', 'Banco Cuscatlan', 'Banco Cuscatlán'),
    ],
  },
  {
    currency: 'EUR', min: 100, max: 10_000_000,
    routes: EUR_COUNTRIES.map((country) => ({ country, accountType: 'EUR_ACCOUNT' as const, rails: ['SEPA_INSTANT', 'SEPA'] as PaymentRail[] })),
    institutions: [
      bank('DE', 'Deutsche Bank'), bank('DE', 'Commerzbank'), bank('DE', 'N26'), bank('FR', 'BNP Paribas'), bank('FR', 'Societe Generale', 'Société Générale'),
      bank('ES', 'Banco Santander'), bank('ES', 'BBVA'), bank('IT', 'Intesa Sanpaolo'), bank('NL', 'ING'), bank('IE', 'Bank of Ireland'),
      bank('PT', 'Millennium BCP'), bank('BE', 'KBC'), bank('AT', 'Erste Bank'), bank('FI', 'Nordea'), provider('IE', 'Revolut'),
    ],
  },
  {
    currency: 'GBP', min: 100, max: 8_000_000,
    routes: [{ country: 'GB', accountType: 'GBP_ACCOUNT', rails: ['FASTER_PAYMENTS'] }],
    institutions: [bank('GB', 'Barclays'), bank('GB', 'HSBC UK'), bank('GB', 'Lloyds Bank'), bank('GB', 'NatWest'), bank('GB', 'Monzo'), provider('GB', 'Wise')],
  },
  {
    currency: 'MXN', min: 2_000, max: 200_000_000,
    routes: [{ country: 'MX', accountType: 'MXN_ACCOUNT', rails: ['SPEI'] }],
    institutions: [bank('MX', 'BBVA Mexico', 'BBVA México'), bank('MX', 'Banorte'), bank('MX', 'Santander Mexico', 'Santander México'), bank('MX', 'Banamex'), provider('MX', 'Mercado Pago')],
    requiredPayerDataFields: [m('FULL_NAME'), o('BIRTH_DATE')],
  },
  {
    currency: 'BRL', min: 500, max: 50_000_000,
    routes: [{ country: 'BR', accountType: 'BRL_ACCOUNT', rails: ['PIX'] }],
    institutions: [bank('BR', 'Itau Unibanco', 'Itaú Unibanco'), bank('BR', 'Banco do Brasil'), bank('BR', 'Bradesco'), bank('BR', 'Nubank'), provider('BR', 'PicPay')],
    requiredPayerDataFields: [m('FULL_NAME'), m('TAX_ID'), m('BIRTH_DATE'), o('POSTAL_ADDRESS')],
  },
  {
    currency: 'INR', min: 10_000, max: 800_000_000,
    routes: [{ country: 'IN', accountType: 'INR_ACCOUNT', rails: ['UPI', 'NEFT', 'RTGS'] }],
    institutions: [bank('IN', 'State Bank of India'), bank('IN', 'HDFC Bank'), bank('IN', 'ICICI Bank'), bank('IN', 'Axis Bank'), provider('IN', 'Paytm Payments'), provider('IN', 'PhonePe')],
    requiredPayerDataFields: [m('FULL_NAME'), m('BIRTH_DATE'), m('NATIONALITY'), m('POSTAL_ADDRESS'), m('PURPOSE_OF_PAYMENT'), o('PHONE_NUMBER')],
  },
  {
    currency: 'CAD', min: 100, max: 13_000_000,
    routes: [{ country: 'CA', accountType: 'CAD_ACCOUNT', rails: ['BANK_TRANSFER'] }],
    institutions: [bank('CA', 'Royal Bank of Canada'), bank('CA', 'TD Canada Trust'), bank('CA', 'Scotiabank'), bank('CA', 'BMO')],
  },
  {
    currency: 'DKK', min: 700, max: 68_000_000,
    routes: [{ country: 'DK', accountType: 'DKK_ACCOUNT', rails: ['BANK_TRANSFER'] }],
    institutions: [bank('DK', 'Danske Bank'), bank('DK', 'Nykredit'), bank('DK', 'Jyske Bank')],
  },
  {
    currency: 'NGN', min: 150_000, max: 15_000_000_000,
    routes: [{ country: 'NG', accountType: 'NGN_ACCOUNT', rails: ['BANK_TRANSFER'] }],
    institutions: [bank('NG', 'Access Bank'), bank('NG', 'Zenith Bank'), bank('NG', 'Guaranty Trust Bank'), bank('NG', 'First Bank of Nigeria'), provider('NG', 'OPay'), provider('NG', 'Moniepoint')],
    requiredPayerDataFields: [m('FULL_NAME'), m('POSTAL_ADDRESS'), m('PHONE_NUMBER'), m('COUNTRY_OF_RESIDENCE'), o('BIRTH_DATE')],
  },
  {
    currency: 'HKD', min: 800, max: 77_000_000,
    routes: [{ country: 'HK', accountType: 'HKD_ACCOUNT', rails: ['BANK_TRANSFER'] }],
    institutions: [bank('HK', 'HSBC Hong Kong'), bank('HK', 'Bank of China (Hong Kong)'), bank('HK', 'Hang Seng Bank')],
  },
  {
    currency: 'IDR', min: 1_600_000, max: 160_000_000_000,
    routes: [{ country: 'ID', accountType: 'IDR_ACCOUNT', rails: ['BANK_TRANSFER'] }],
    institutions: [bank('ID', 'Bank Central Asia'), bank('ID', 'Bank Mandiri'), bank('ID', 'Bank Rakyat Indonesia'), provider('ID', 'GoPay'), provider('ID', 'OVO')],
  },
  {
    currency: 'MYR', min: 500, max: 47_000_000,
    routes: [{ country: 'MY', accountType: 'MYR_ACCOUNT', rails: ['BANK_TRANSFER'] }],
    institutions: [bank('MY', 'Maybank'), bank('MY', 'CIMB Bank'), bank('MY', 'Public Bank'), provider('MY', "Touch 'n Go eWallet")],
  },
  {
    currency: 'PHP', min: 5_000, max: 570_000_000,
    routes: [{ country: 'PH', accountType: 'PHP_ACCOUNT', rails: ['INSTAPAY', 'PESONET'] }],
    institutions: [
      bank('PH', 'BDO Unibank'), bank('PH', 'BPI', 'Bank of the Philippine Islands'), bank('PH', 'Metrobank'), bank('PH', 'Landbank', 'Land Bank of the Philippines'),
      provider('PH', 'GCash'), provider('PH', 'Maya'),
    ],
    requiredPayerDataFields: [m('FULL_NAME'), o('POSTAL_ADDRESS')],
  },
  {
    currency: 'SGD', min: 100, max: 13_000_000,
    routes: [{ country: 'SG', accountType: 'SGD_ACCOUNT', rails: ['FAST', 'PAYNOW'] }],
    institutions: [bank('SG', 'DBS Bank'), bank('SG', 'OCBC Bank'), bank('SG', 'UOB', 'United Overseas Bank')],
  },
  {
    currency: 'THB', min: 3_500, max: 350_000_000,
    routes: [{ country: 'TH', accountType: 'THB_ACCOUNT', rails: ['BANK_TRANSFER'] }],
    institutions: [bank('TH', 'Bangkok Bank'), bank('TH', 'Kasikornbank'), bank('TH', 'Siam Commercial Bank')],
  },
  {
    currency: 'VND', min: 25_000, max: 2_500_000_000,
    routes: [{ country: 'VN', accountType: 'VND_ACCOUNT', rails: ['BANK_TRANSFER'] }],
    institutions: [bank('VN', 'Vietcombank'), bank('VN', 'Techcombank'), bank('VN', 'VietinBank'), provider('VN', 'MoMo')],
  },
  {
    currency: 'AED', min: 400, max: 36_000_000,
    routes: [{ country: 'AE', accountType: 'AED_ACCOUNT', rails: ['BANK_TRANSFER'] }],
    institutions: [bank('AE', 'Emirates NBD'), bank('AE', 'First Abu Dhabi Bank'), bank('AE', 'Abu Dhabi Commercial Bank')],
  },
  {
    currency: 'KES', min: 10_000, max: 1_000_000_000,
    routes: [{ country: 'KE', accountType: 'KES_ACCOUNT', rails: ['MOBILE_MONEY', 'BANK_TRANSFER'] }],
    institutions: [provider('KE', 'M-Pesa'), provider('KE', 'Airtel Money Kenya'), bank('KE', 'Equity Bank'), bank('KE', 'KCB Bank')],
    requiredPayerDataFields: [m('FULL_NAME'), m('PHONE_NUMBER')],
  },
  {
    currency: 'MWK', min: 200_000, max: 17_000_000_000,
    routes: [{ country: 'MW', accountType: 'MWK_ACCOUNT', rails: ['MOBILE_MONEY', 'BANK_TRANSFER'] }],
    institutions: [provider('MW', 'Airtel Money Malawi'), provider('MW', 'TNM Mpamba'), bank('MW', 'National Bank of Malawi')],
  },
  {
    currency: 'RWF', min: 1_500, max: 140_000_000,
    routes: [{ country: 'RW', accountType: 'RWF_ACCOUNT', rails: ['MOBILE_MONEY', 'BANK_TRANSFER'] }],
    institutions: [provider('RW', 'MTN MoMo Rwanda'), provider('RW', 'Airtel Money Rwanda'), bank('RW', 'Bank of Kigali')],
  },
  {
    currency: 'TZS', min: 300_000, max: 27_000_000_000,
    routes: [{ country: 'TZ', accountType: 'TZS_ACCOUNT', rails: ['MOBILE_MONEY', 'BANK_TRANSFER'] }],
    institutions: [provider('TZ', 'M-Pesa Tanzania'), provider('TZ', 'Tigo Pesa'), bank('TZ', 'CRDB Bank')],
  },
  {
    currency: 'UGX', min: 4_000, max: 370_000_000,
    routes: [{ country: 'UG', accountType: 'UGX_ACCOUNT', rails: ['MOBILE_MONEY', 'BANK_TRANSFER'] }],
    institutions: [provider('UG', 'MTN Mobile Money Uganda'), provider('UG', 'Airtel Money Uganda'), bank('UG', 'Stanbic Bank Uganda')],
  },
  {
    currency: 'XOF', min: 700, max: 60_000_000,
    routes: XOF_COUNTRIES.map((country) => ({ country, accountType: 'XOF_ACCOUNT' as const, rails: ['MOBILE_MONEY', 'BANK_TRANSFER'] as PaymentRail[] })),
    institutions: [provider('SN', 'Orange Money Senegal'), provider('SN', 'Wave Senegal'), provider('CI', "Orange Money Cote d'Ivoire", "Orange Money Côte d'Ivoire"), provider('CI', 'MTN MoMo Cote d\'Ivoire', "MTN MoMo Côte d'Ivoire"), bank('SN', 'Ecobank Senegal')],
  },
  {
    currency: 'XAF', min: 700, max: 60_000_000,
    routes: XAF_COUNTRIES.map((country) => ({ country, accountType: 'XAF_ACCOUNT' as const, rails: ['MOBILE_MONEY', 'BANK_TRANSFER'] as PaymentRail[] })),
    institutions: [provider('CM', 'MTN MoMo Cameroon'), provider('CM', 'Orange Money Cameroon'), bank('GA', 'BGFIBank Gabon')],
  },
  {
    currency: 'ZAR', min: 2_000, max: 180_000_000,
    routes: [{ country: 'ZA', accountType: 'ZAR_ACCOUNT', rails: ['BANK_TRANSFER'] }],
    institutions: [bank('ZA', 'Standard Bank'), bank('ZA', 'FNB', 'First National Bank'), bank('ZA', 'Absa'), bank('ZA', 'Capitec Bank')],
  },
  {
    currency: 'ZMW', min: 3_000, max: 260_000_000,
    routes: [{ country: 'ZM', accountType: 'ZMW_ACCOUNT', rails: ['MOBILE_MONEY', 'BANK_TRANSFER'] }],
    institutions: [provider('ZM', 'MTN MoMo Zambia'), provider('ZM', 'Airtel Money Zambia'), bank('ZM', 'Zanaco')],
  },
  {
    currency: 'BWP', min: 1_400, max: 130_000_000,
    routes: [{ country: 'BW', accountType: 'BWP_ACCOUNT', rails: ['BANK_TRANSFER'] }],
    institutions: [bank('BW', 'First National Bank Botswana'), bank('BW', 'Absa Bank Botswana'), provider('BW', 'Orange Money Botswana')],
  },
  {
    currency: 'BDT', min: 12_000, max: 1_200_000_000,
    routes: [{ country: 'BD', accountType: 'BDT_ACCOUNT', rails: ['BANK_TRANSFER', 'MOBILE_MONEY'] }],
    institutions: [bank('BD', 'Sonali Bank'), bank('BD', 'BRAC Bank'), provider('BD', 'bKash'), provider('BD', 'Nagad')],
    requiredPayerDataFields: [m('FULL_NAME'), m('POSTAL_ADDRESS'), m('PURPOSE_OF_PAYMENT')],
  },
  {
    currency: 'COP', min: 400_000, max: 42_000_000_000,
    routes: [{ country: 'CO', accountType: 'COP_ACCOUNT', rails: ['BRE_B', 'ACH_COLOMBIA'] }],
    institutions: [bank('CO', 'Bancolombia'), bank('CO', 'Banco de Bogota', 'Banco de Bogotá'), bank('CO', 'Davivienda'), provider('CO', 'Nequi')],
    requiredPayerDataFields: [m('FULL_NAME'), m('ID_TYPE'), m('ID_NUMBER')],
  },
  {
    currency: 'EGP', min: 5_000, max: 480_000_000,
    routes: [{ country: 'EG', accountType: 'EGP_ACCOUNT', rails: ['BANK_TRANSFER'] }],
    institutions: [bank('EG', 'National Bank of Egypt'), bank('EG', 'Banque Misr'), bank('EG', 'CIB Egypt', 'Commercial International Bank')],
    requiredPayerDataFields: [m('FULL_NAME'), m('POSTAL_ADDRESS'), m('PURPOSE_OF_PAYMENT')],
  },
  {
    currency: 'GHS', min: 1_500, max: 150_000_000,
    routes: [{ country: 'GH', accountType: 'GHS_ACCOUNT', rails: ['MOBILE_MONEY', 'BANK_TRANSFER'] }],
    institutions: [provider('GH', 'MTN Mobile Money Ghana'), provider('GH', 'Telecel Cash'), bank('GH', 'GCB Bank'), bank('GH', 'Ecobank Ghana')],
  },
  {
    currency: 'GTQ', min: 800, max: 77_000_000,
    routes: [{ country: 'GT', accountType: 'GTQ_ACCOUNT', rails: ['BANK_TRANSFER'] }],
    institutions: [bank('GT', 'Banco Industrial'), bank('GT', 'Banrural'), bank('GT', 'BAM', 'Banco Agromercantil')],
  },
  {
    currency: 'HTG', min: 13_000, max: 1_300_000_000,
    routes: [{ country: 'HT', accountType: 'HTG_ACCOUNT', rails: ['BANK_TRANSFER', 'MOBILE_MONEY'] }],
    institutions: [bank('HT', 'Unibank Haiti'), bank('HT', 'Sogebank'), provider('HT', 'MonCash')],
  },
  {
    currency: 'JMD', min: 16_000, max: 1_500_000_000,
    routes: [{ country: 'JM', accountType: 'JMD_ACCOUNT', rails: ['BANK_TRANSFER'] }],
    institutions: [bank('JM', 'National Commercial Bank Jamaica'), bank('JM', 'Scotiabank Jamaica'), bank('JM', 'JN Bank')],
  },
  {
    currency: 'PKR', min: 28_000, max: 2_800_000_000,
    routes: [{ country: 'PK', accountType: 'PKR_ACCOUNT', rails: ['BANK_TRANSFER'] }],
    institutions: [bank('PK', 'Habib Bank Limited'), bank('PK', 'United Bank Limited'), bank('PK', 'Meezan Bank'), provider('PK', 'JazzCash'), provider('PK', 'Easypaisa')],
    requiredPayerDataFields: [m('FULL_NAME'), m('POSTAL_ADDRESS'), m('PURPOSE_OF_PAYMENT')],
  },
  {
    currency: 'CNY', min: 700, max: 70_000_000,
    routes: [{ country: 'CN', accountType: 'CNY_ACCOUNT', rails: ['CIPS', 'UNIONPAY'] }],
    institutions: [bank('CN', 'Industrial and Commercial Bank of China'), bank('CN', 'China Construction Bank'), bank('CN', 'Bank of China'), provider('CN', 'Alipay'), provider('CN', 'WeChat Pay')],
    requiredPayerDataFields: [m('FULL_NAME'), m('ID_TYPE'), m('ID_NUMBER'), m('PURPOSE_OF_PAYMENT'), m('POSTAL_ADDRESS')],
  },
  {
    currency: 'JPY', min: 150, max: 15_000_000,
    routes: [{ country: 'JP', accountType: 'SWIFT_ACCOUNT', rails: ['SWIFT'] }],
    institutions: [bank('JP', 'MUFG Bank'), bank('JP', 'Sumitomo Mitsui Banking Corporation'), bank('JP', 'Mizuho Bank')],
    requiredPayerDataFields: [m('FULL_NAME'), m('POSTAL_ADDRESS'), o('PURPOSE_OF_PAYMENT')],
  },
  {
    currency: 'KRW', min: 1_400, max: 138_000_000,
    routes: [{ country: 'KR', accountType: 'SWIFT_ACCOUNT', rails: ['SWIFT'] }],
    institutions: [bank('KR', 'KB Kookmin Bank'), bank('KR', 'Shinhan Bank'), bank('KR', 'Woori Bank')],
    requiredPayerDataFields: [m('FULL_NAME'), m('POSTAL_ADDRESS'), o('PURPOSE_OF_PAYMENT')],
  },
  {
    currency: 'CHF', min: 100, max: 8_500_000,
    routes: [{ country: 'CH', accountType: 'SWIFT_ACCOUNT', rails: ['SWIFT'] }],
    institutions: [bank('CH', 'UBS'), bank('CH', 'PostFinance'), bank('CH', 'Zurcher Kantonalbank', 'Zürcher Kantonalbank')],
    requiredPayerDataFields: [m('FULL_NAME'), m('POSTAL_ADDRESS')],
  },
  {
    currency: 'AUD', min: 200, max: 15_000_000,
    routes: [{ country: 'AU', accountType: 'SWIFT_ACCOUNT', rails: ['SWIFT'] }],
    institutions: [bank('AU', 'Commonwealth Bank'), bank('AU', 'Westpac'), bank('AU', 'ANZ'), bank('AU', 'NAB', 'National Australia Bank')],
    requiredPayerDataFields: [m('FULL_NAME'), m('POSTAL_ADDRESS')],
  },
  // Crypto: wallets, no PaymentRail (the reference has none for them), no institutions.
  // BTC: 1,000 sats to 2 BTC. USDC/USDT: 1 to 100,000. SOL: 0.01 to 600 SOL.
  // Spark carries BTC only (every Spark example of the reference is BTC; the hosted docs
  // list Spark for BTC), as SPARK_WALLET external accounts do (external-accounts/account-info.ts).
  { currency: 'BTC', min: 1_000, max: 200_000_000, routes: [], wallets: ['LIGHTNING', 'SPARK_WALLET'], institutions: [] },
  { currency: 'USDC', min: 1_000_000, max: 100_000_000_000, routes: [], wallets: ['SOLANA_WALLET', 'BASE_WALLET', 'ETHEREUM_WALLET', 'POLYGON_WALLET'], institutions: [] },
  { currency: 'USDT', min: 1_000_000, max: 100_000_000_000, routes: [], wallets: ['TRON_WALLET', 'ETHEREUM_WALLET', 'PLASMA_WALLET'], institutions: [] },
  { currency: 'SOL', min: 10_000_000, max: 600_000_000_000, routes: [], wallets: ['SOLANA_WALLET'], institutions: [] },
  // ETH has 18 decimals: 1 ETH is 10^18 wei, beyond what a JSON integer carries exactly
  // (2^53 − 1). The bounds stay within it: 0.0001 ETH to 0.009 ETH.
  { currency: 'ETH', min: 100_000_000_000_000, max: 9_000_000_000_000_000, routes: [], wallets: ['ETHEREUM_WALLET'], institutions: [] },
];

const BY_CURRENCY: ReadonlyMap<string, Corridor> = new Map(CORRIDORS.map((c) => [c.currency, c]));

for (const c of CORRIDORS) {
  if (!CURRENCIES.has(c.currency)) throw new Error(`corridor for unknown currency ${c.currency}`);
  if (!(Number.isSafeInteger(c.min) && Number.isSafeInteger(c.max) && c.min > 0 && c.max >= c.min)) throw new Error(`corridor ${c.currency}: bad bounds`);
  for (const i of c.institutions) {
    if (!c.routes.some((r) => r.country === i.country)) throw new Error(`corridor ${c.currency}: ${i.bankName} is in ${i.country}, which has no route`);
  }
}

/** The receiving corridor of a currency, if the sandbox can pay out in it. */
export function corridorOf(currency: string): Corridor | undefined {
  return BY_CURRENCY.get(currency);
}

/** The default destination rail of a corridor (its first route's first rail); none for crypto. */
export function defaultRail(c: Corridor, country?: string): PaymentRail | undefined {
  const route = (country ? c.routes.find((r) => r.country === country) : undefined) ?? c.routes[0];
  return route?.rails[0];
}

/** Every payment rail the corridor can use, in preference order, without repeats. */
export function railsOf(c: Corridor, country?: string): PaymentRail[] {
  const routes = country ? c.routes.filter((r) => r.country === country) : c.routes;
  return [...new Set(routes.flatMap((r) => r.rails))];
}

/** Every external-account kind that receives in the corridor. */
export function accountTypesOf(c: Corridor): ExternalAccountType[] {
  return [...new Set([...c.routes.map((r) => r.accountType), ...(c.wallets ?? [])])];
}

/**
 * The union of payer data fields over several corridors (or other lists): one entry per
 * name, mandatory when any list makes it mandatory, in first-seen order.
 */
export function mergePayerDataFields(lists: ReadonlyArray<readonly PayerDataField[] | undefined>): PayerDataField[] {
  const out = new Map<string, PayerDataField>();
  for (const list of lists) {
    for (const f of list ?? []) {
      const seen = out.get(f.name);
      if (seen) seen.mandatory ||= f.mandatory;
      else out.set(f.name, { name: f.name, mandatory: f.mandatory });
    }
  }
  return [...out.values()];
}

/** A route row of the discoveries: an institution of a corridor with its rails and account kind. */
export interface DiscoveryRow extends Institution {
  currency: string;
  accountType: ExternalAccountType;
  paymentRails: PaymentRail[];
}

/** Banks and providers, filtered by country and/or currency; sorted by country, currency, name. */
export function discoveries(filter: { country?: string | undefined; currency?: string | undefined }): DiscoveryRow[] {
  const rows: DiscoveryRow[] = [];
  for (const c of CORRIDORS) {
    if (filter.currency !== undefined && c.currency !== filter.currency) continue;
    for (const inst of c.institutions) {
      if (filter.country !== undefined && inst.country !== filter.country) continue;
      const route = c.routes.find((r) => r.country === inst.country);
      if (!route) continue;
      rows.push({ ...inst, currency: c.currency, accountType: route.accountType, paymentRails: [...route.rails] });
    }
  }
  return rows.sort((a, b) => a.country.localeCompare(b.country) || a.currency.localeCompare(b.currency) || a.bankName.localeCompare(b.bankName));
}
