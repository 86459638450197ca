// The sandbox's magic digits of an external account. This module is the ONE reader of
// them: beneficiary name verification (beneficiary-rules.ts), the lookup, quotes, pulls and
// payouts all ask `sandboxSuffix(accountInfo)`.
//
// The primary identifier is the account number, IBAN, CLABE, self-custody wallet address,
// or an email-style key with a domain part (a UPI VPA, a PIX email key, a Lightning
// address); mobile-money kinds are identified by their phone number. The suffix is the
// last 3 digits of the identifier; for an identifier with a domain part, the digits at the
// end of the username part (`alice002@bank.example` → `002`). An identifier that does not
// end in 3 digits has no suffix ('') and falls under every table's "any other" row.

/** An accountInfo as the API shows it (only accountType and the identifying fields are read). */
export interface AccountInfoLike {
  readonly accountType: string;
  readonly [field: string]: unknown;
}

/**
 * The fields that identify an account of each kind, in order of preference: the first
 * present one is the primary identifier (kinds paid on more than one rail name them all).
 */
export const IDENTIFIER_FIELDS: Readonly<Record<string, readonly string[]>> = {
  AED_ACCOUNT: ['iban'],
  BDT_ACCOUNT: ['accountNumber', 'phoneNumber'],
  BRL_ACCOUNT: ['pixKey'],
  BWP_ACCOUNT: ['phoneNumber'],
  CAD_ACCOUNT: ['accountNumber'],
  CNY_ACCOUNT: ['accountNumber', 'phoneNumber'],
  COP_ACCOUNT: ['accountNumber', 'phoneNumber'],
  DKK_ACCOUNT: ['iban'],
  EGP_ACCOUNT: ['iban', 'phoneNumber'],
  EUR_ACCOUNT: ['iban'],
  GBP_ACCOUNT: ['accountNumber'],
  GHS_ACCOUNT: ['accountNumber', 'phoneNumber'],
  GTQ_ACCOUNT: ['accountNumber'],
  HKD_ACCOUNT: ['accountNumber'],
  HTG_ACCOUNT: ['phoneNumber'],
  IDR_ACCOUNT: ['accountNumber'],
  INR_ACCOUNT: ['vpa', 'accountNumber'],
  JMD_ACCOUNT: ['accountNumber'],
  KES_ACCOUNT: ['phoneNumber'],
  MWK_ACCOUNT: ['phoneNumber'],
  MXN_ACCOUNT: ['clabeNumber'],
  MYR_ACCOUNT: ['accountNumber'],
  NGN_ACCOUNT: ['accountNumber'],
  PHP_ACCOUNT: ['accountNumber'],
  PKR_ACCOUNT: ['accountNumber', 'iban', 'phoneNumber'],
  RWF_ACCOUNT: ['phoneNumber'],
  SGD_ACCOUNT: ['accountNumber'],
  SLV_ACCOUNT: ['accountNumber', 'phoneNumber'],
  THB_ACCOUNT: ['accountNumber'],
  TZS_ACCOUNT: ['phoneNumber'],
  UGX_ACCOUNT: ['phoneNumber'],
  USD_ACCOUNT: ['accountNumber'],
  VND_ACCOUNT: ['accountNumber'],
  XAF_ACCOUNT: ['phoneNumber'],
  XOF_ACCOUNT: ['phoneNumber'],
  ZAR_ACCOUNT: ['accountNumber'],
  ZMW_ACCOUNT: ['phoneNumber'],
  SWIFT_ACCOUNT: ['accountNumber', 'iban'],
  BASE_WALLET: ['address'],
  ETHEREUM_WALLET: ['address'],
  PLASMA_WALLET: ['address'],
  POLYGON_WALLET: ['address'],
  SOLANA_WALLET: ['address'],
  SPARK_WALLET: ['address'],
  TRON_WALLET: ['address'],
  LIGHTNING: ['lightningAddress', 'invoice', 'bolt12'],
};

/** For a kind this table does not know: the usual identifying fields. */
const FALLBACK_FIELDS = ['accountNumber', 'iban', 'clabeNumber', 'address', 'vpa', 'pixKey', 'lightningAddress', 'phoneNumber', 'invoice', 'bolt12'];

function nonEmpty(v: unknown): v is string {
  return typeof v === 'string' && v.trim().length > 0;
}

/** The accountInfo field that holds the primary identifier (e.g. 'iban'), or undefined. */
export function primaryIdentifierField(info: AccountInfoLike): string | undefined {
  const fields = IDENTIFIER_FIELDS[info.accountType] ?? FALLBACK_FIELDS;
  return fields.find((f) => nonEmpty(info[f]));
}

/** The primary identifier: account number, IBAN, CLABE, wallet address, or an email-style key. */
export function primaryIdentifier(info: AccountInfoLike): string | undefined {
  const field = primaryIdentifierField(info);
  return field === undefined ? undefined : (info[field] as string).trim();
}

/**
 * The magic digits of one identifier: its last 3 characters when they are digits; for an
 * identifier with a domain part (`user@domain`), those of the username part. '' otherwise.
 */
export function suffixOfIdentifier(identifier: string | undefined | null): string {
  if (!identifier) return '';
  let s = identifier.trim();
  const at = s.lastIndexOf('@');
  if (at > 0) s = s.slice(0, at);
  return /\d{3}$/.test(s) ? s.slice(-3) : '';
}

/** The sandbox suffix of an external account: the last 3 digits of its primary identifier ('' if none). */
export function sandboxSuffix(info: AccountInfoLike): string {
  return suffixOfIdentifier(primaryIdentifier(info));
}
