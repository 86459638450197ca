import { keccak_256 } from '@noble/hashes/sha3.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { base58, bech32, bech32m, createBase58check, hex, utf8 } from '@scure/base';
import { COUNTRY_CODES } from './formats.js';

// Pure checks of payment-rail identifiers: what a bank, a clearing system or a chain would
// refuse before any money moves. No I/O, no sandbox rules. Each returns true when valid
// (or a reason string where the caller needs to say which check failed).

// ---------------------------------------------------------------------------------------
// Banks

/**
 * US ABA routing number: 9 digits, a Federal Reserve routing symbol (00–12, 21–32, 61–72,
 * 80) and the ABA checksum 3·(d1+d4+d7) + 7·(d2+d5+d8) + (d3+d6+d9) ≡ 0 (mod 10).
 */
export function isAbaRoutingNumber(s: string): boolean {
  if (!/^\d{9}$/.test(s)) return false;
  const prefix = Number(s.slice(0, 2));
  if (!((prefix >= 0 && prefix <= 12) || (prefix >= 21 && prefix <= 32) || (prefix >= 61 && prefix <= 72) || prefix === 80)) return false;
  const d = [...s].map(Number);
  const sum = 3 * (d[0]! + d[3]! + d[6]!) + 7 * (d[1]! + d[4]! + d[7]!) + (d[2]! + d[5]! + d[8]!);
  return sum % 10 === 0;
}

/** IBAN length per country (SWIFT IBAN registry). */
export const IBAN_LENGTHS: Readonly<Record<string, number>> = {
  AD: 24, AE: 23, AL: 28, AT: 20, AZ: 28, BA: 20, BE: 16, BG: 22, BH: 22, BI: 27, BR: 29, BY: 28, CH: 21, CR: 22, CY: 28,
  CZ: 24, DE: 22, DJ: 27, DK: 18, DO: 28, EE: 20, EG: 29, ES: 24, FI: 18, FK: 18, FO: 18, FR: 27, GB: 22, GE: 22, GI: 23,
  GL: 18, GR: 27, GT: 28, HN: 28, HR: 21, HU: 28, IE: 22, IL: 23, IQ: 23, IS: 26, IT: 27, JO: 30, KW: 30, KZ: 20, LB: 28,
  LC: 32, LI: 21, LT: 20, LU: 20, LV: 21, LY: 25, MC: 27, MD: 24, ME: 22, MK: 19, MN: 20, MR: 27, MT: 31, MU: 30, NI: 28,
  NL: 18, NO: 15, OM: 23, PK: 24, PL: 28, PS: 29, PT: 25, QA: 29, RO: 24, RS: 22, RU: 33, SA: 24, SC: 31, SD: 18, SE: 24,
  SI: 19, SK: 24, SM: 27, SO: 23, ST: 25, SV: 28, TL: 23, TN: 24, TR: 26, UA: 29, VA: 22, VG: 24, XK: 20,
};

/** Why an IBAN is refused ('country', 'length' or 'checksum'), or undefined when it is valid. */
export function ibanProblem(raw: string): 'format' | 'country' | 'length' | 'checksum' | undefined {
  const s = raw.toUpperCase();
  if (!/^[A-Z]{2}\d{2}[A-Z0-9]+$/.test(s)) return 'format';
  const length = IBAN_LENGTHS[s.slice(0, 2)];
  if (length === undefined) return 'country';
  if (s.length !== length) return 'length';
  return ibanMod97(s) === 1 ? undefined : 'checksum';
}

export function isIban(s: string): boolean {
  return ibanProblem(s) === undefined;
}

/** ISO 13616 / ISO 7064 mod 97-10 of an IBAN: 1 for a valid one. */
export function ibanMod97(iban: string): number {
  const rearranged = iban.slice(4) + iban.slice(0, 4);
  let rem = 0;
  for (const ch of rearranged) {
    const v = ch >= 'A' && ch <= 'Z' ? String(ch.charCodeAt(0) - 55) : ch;
    for (const digit of v) rem = (rem * 10 + Number(digit)) % 97;
  }
  return rem;
}

/**
 * Mexican CLABE: 18 digits whose last is the check digit over weights 3, 7, 1. Input checks
 * take a CLABE by its form only (isClabeShape): the hosted sandbox accepts CLABEs whose check
 * digit does not verify (the reference's own example 123456789012345678, the vendor's sample
 * app's 014027000005555601). The sandbox's own CLABEs (funding instructions) carry a valid one.
 */
export function clabeCheckDigit(first17: string): number {
  const weights = [3, 7, 1];
  let sum = 0;
  for (let i = 0; i < 17; i++) sum += (Number(first17[i]) * weights[i % 3]!) % 10;
  return (10 - (sum % 10)) % 10;
}

export function isClabe(s: string): boolean {
  return /^\d{18}$/.test(s) && clabeCheckDigit(s.slice(0, 17)) === Number(s[17]);
}

/** A CLABE by its form: 18 digits (check digit not verified). */
export function isClabeShape(s: string): boolean {
  return /^\d{18}$/.test(s);
}

/** UK sort code (6 digits) and account number (8 digits). */
export function isUkSortCode(s: string): boolean {
  return /^\d{6}$/.test(s);
}
export function isUkAccountNumber(s: string): boolean {
  return /^\d{8}$/.test(s);
}

export const BIC_PATTERN = '^[A-Z]{4}[A-Z]{2}[A-Z0-9]{2}([A-Z0-9]{3})?$';

/** SWIFT/BIC (ISO 9362): 4-letter institution, ISO country, 2-character location, optional branch. */
export function isBic(s: string): boolean {
  return new RegExp(BIC_PATTERN).test(s) && COUNTRY_CODES.has(s.slice(4, 6));
}

export const E164_PATTERN = '^\\+[1-9][0-9]{6,14}$';

/** E.164 phone number: '+', a country code that does not start with 0, at most 15 digits. */
export function isE164(s: string): boolean {
  return new RegExp(E164_PATTERN).test(s);
}

// ---------------------------------------------------------------------------------------
// Brazil (PIX)

function allSameDigit(s: string): boolean {
  return /^(\d)\1*$/.test(s);
}

/** Brazilian CPF: 11 digits, two mod-11 check digits, not all digits equal. */
export function isCpf(s: string): boolean {
  if (!/^\d{11}$/.test(s) || allSameDigit(s)) return false;
  const d = [...s].map(Number);
  const check = (n: number): number => {
    let sum = 0;
    for (let i = 0; i < n; i++) sum += d[i]! * (n + 1 - i);
    const r = (sum * 10) % 11;
    return r === 10 ? 0 : r;
  };
  return check(9) === d[9] && check(10) === d[10];
}

/** Brazilian CNPJ: 14 digits, two mod-11 check digits, not all digits equal. */
export function isCnpj(s: string): boolean {
  if (!/^\d{14}$/.test(s) || allSameDigit(s)) return false;
  const d = [...s].map(Number);
  const check = (weights: number[]): number => {
    const sum = weights.reduce((acc, w, i) => acc + w * d[i]!, 0);
    const r = sum % 11;
    return r < 2 ? 0 : 11 - r;
  };
  return check([5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2]) === d[12] && check([6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2]) === d[13];
}

export type PixKeyType = 'CPF' | 'CNPJ' | 'EMAIL' | 'PHONE' | 'RANDOM';

// Input checks take CPF and CNPJ by their form only (11 or 14 digits): the hosted sandbox
// accepts numbers whose check digits do not verify (the vendor's sample app pays PIX to CPF
// 12345678901), so a platform testing against us must not be refused what it is not refused
// there. isCpf / isCnpj (the check digits) stay for whoever needs the real rule.

/** A CPF by its form: 11 digits (check digits not verified). */
export function isCpfShape(s: string): boolean {
  return /^\d{11}$/.test(s);
}

/** A CNPJ by its form: 14 digits (check digits not verified). */
export function isCnpjShape(s: string): boolean {
  return /^\d{14}$/.test(s);
}

/** The shape each PIX key kind must have, for the constraint a 400 reports. */
export const PIX_KEY_RULES: Readonly<Record<PixKeyType, { pattern?: string; format?: string; words: string }>> = {
  CPF: { pattern: '^[0-9]{11}$', words: 'a CPF: 11 digits' },
  CNPJ: { pattern: '^[0-9]{14}$', words: 'a CNPJ: 14 digits' },
  EMAIL: { format: 'email', words: 'an email address' },
  PHONE: { pattern: '^\\+55[0-9]{10,11}$', words: 'a Brazilian phone number in E.164 form (+55 and 10 or 11 digits)' },
  RANDOM: { format: 'uuid', words: 'a random key (a UUID)' },
};

export function isPixKey(type: PixKeyType, key: string): boolean {
  switch (type) {
    case 'CPF':
      return isCpfShape(key);
    case 'CNPJ':
      return isCnpjShape(key);
    case 'EMAIL':
      return /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(key) && key.length <= 77;
    case 'PHONE':
      return /^\+55\d{10,11}$/.test(key);
    case 'RANDOM':
      return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(key);
  }
}

/** Brazilian tax id of the account holder, by its form: a CPF (11 digits) or a CNPJ (14 digits); check digits not verified. */
export function isBrazilianTaxId(s: string): boolean {
  return isCpfShape(s) || isCnpjShape(s);
}

// ---------------------------------------------------------------------------------------
// India

export const UPI_VPA_PATTERN = '^[a-zA-Z0-9.\\-_]{2,256}@[a-zA-Z][a-zA-Z0-9]{1,63}$';

/** UPI virtual payment address: handle@psp, the handle 2–256 of [A-Za-z0-9._-], the PSP alphanumeric starting with a letter. */
export function isUpiVpa(s: string): boolean {
  return new RegExp(UPI_VPA_PATTERN).test(s);
}

export const IFSC_PATTERN = '^[A-Z]{4}0[A-Z0-9]{6}$';

// ---------------------------------------------------------------------------------------
// Chains

const te = (s: string): Uint8Array => utf8.decode(s);
const base58check = createBase58check(sha256);

export const EVM_ADDRESS_PATTERN = '^0x[0-9a-fA-F]{40}$';

/** The EIP-55 mixed-case checksum form of an EVM address. */
export function toEip55(address: string): string {
  const lower = address.slice(2).toLowerCase();
  const h = hex.encode(keccak_256(te(lower)));
  let out = '0x';
  for (let i = 0; i < 40; i++) out += parseInt(h[i]!, 16) >= 8 ? lower[i]!.toUpperCase() : lower[i]!;
  return out;
}

/** Why an EVM address is refused, or undefined: 0x + 40 hex; any single case, or EIP-55 when mixed. */
export function evmAddressProblem(address: string): 'format' | 'checksum' | undefined {
  if (!new RegExp(EVM_ADDRESS_PATTERN).test(address)) return 'format';
  const body = address.slice(2);
  if (body === body.toLowerCase() || body === body.toUpperCase()) return undefined;
  return toEip55(address) === address ? undefined : 'checksum';
}

export function isEvmAddress(address: string): boolean {
  return evmAddressProblem(address) === undefined;
}

/** The EVM address (lower case) of a secp256k1 public key (compressed or not). */
export function evmAddressOfPublicKey(publicKey: Uint8Array): string {
  const uncompressed = secp256k1.Point.fromBytes(publicKey).toBytes(false);
  return `0x${hex.encode(keccak_256(uncompressed.slice(1)).slice(-20))}`;
}

export const BASE58_PATTERN = '^[1-9A-HJ-NP-Za-km-z]+$';
export const SOLANA_ADDRESS_PATTERN = '^[1-9A-HJ-NP-Za-km-z]{32,44}$';

/** A Solana address: base58 of a 32-byte public key (program-derived addresses included). */
export function isSolanaAddress(address: string): boolean {
  if (!new RegExp(SOLANA_ADDRESS_PATTERN).test(address)) return false;
  try {
    return base58.decode(address).length === 32;
  } catch {
    return false;
  }
}

export const TRON_ADDRESS_PATTERN = '^T[1-9A-HJ-NP-Za-km-z]{33}$';

/** A Tron address: base58check (double SHA-256) of 0x41 followed by 20 bytes, 'T…'. */
export function isTronAddress(address: string): boolean {
  if (!new RegExp(TRON_ADDRESS_PATTERN).test(address)) return false;
  try {
    const bytes = base58check.decode(address);
    return bytes.length === 21 && bytes[0] === 0x41;
  } catch {
    return false;
  }
}

/** The Tron address of a secp256k1 public key. */
export function tronAddressOfPublicKey(publicKey: Uint8Array): string {
  const uncompressed = secp256k1.Point.fromBytes(publicKey).toBytes(false);
  const body = keccak_256(uncompressed.slice(1)).slice(-20);
  return base58check.encode(new Uint8Array([0x41, ...body]));
}

const BECH32_CHARSET = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
/** Spark networks' address prefixes: mainnet, testnet, regtest, signet, local. */
export const SPARK_HRPS = ['spark', 'sparkt', 'sparkrt', 'sparks', 'sparkl'] as const;
export const SPARK_ADDRESS_PATTERN = `^(${SPARK_HRPS.join('|')})1[${BECH32_CHARSET}]{50,}$`;

/**
 * The identity public key (33-byte compressed secp256k1) a Spark address carries. A Spark
 * address is bech32m over a protobuf whose field 1 (tag 0x0a, length 0x21) is that key.
 * The checksum is not verified: the reference's own example address carries an invalid
 * checksum, so the check is the structure and that the key is a point on the curve.
 */
export function sparkIdentityKey(address: string): Uint8Array | undefined {
  if (!new RegExp(SPARK_ADDRESS_PATTERN).test(address)) return undefined;
  const data = address.slice(address.lastIndexOf('1') + 1, -6);
  const words = [...data].map((c) => BECH32_CHARSET.indexOf(c));
  const bytes = bech32.fromWordsUnsafe(words);
  if (!bytes || bytes.length < 35 || bytes[0] !== 0x0a || bytes[1] !== 0x21) return undefined;
  const key = bytes.slice(2, 35);
  try {
    secp256k1.Point.fromBytes(key);
  } catch {
    return undefined;
  }
  return key;
}

export function isSparkAddress(address: string): boolean {
  return sparkIdentityKey(address) !== undefined;
}

/** The Spark address (bech32m) of an identity public key, for a network prefix. */
export function sparkAddressOf(identityKey: Uint8Array, hrp: (typeof SPARK_HRPS)[number] = 'spark'): string {
  const payload = new Uint8Array([0x0a, 0x21, ...identityKey]);
  return bech32m.encode(hrp, bech32m.toWords(payload), 1000);
}

export const BOLT11_PATTERN = '^ln(bc|tb|tbs|bcrt|sb)[0-9]*[munp]?1[qpzry9x8gf2tvdw0s3jn54khce6mua7l]+$';
export const BOLT12_OFFER_PATTERN = '^lno1[qpzry9x8gf2tvdw0s3jn54khce6mua7l]+$';
export const LIGHTNING_ADDRESS_PATTERN = '^[a-z0-9._+-]+@[a-z0-9-]+(\\.[a-z0-9-]+)+$';

/** A BOLT 11 invoice: bech32 (checksum verified) with an ln + network prefix. Case-insensitive, not mixed. */
export function isBolt11Invoice(invoice: string): boolean {
  const s = invoice.toLowerCase();
  if (invoice !== s && invoice !== invoice.toUpperCase()) return false;
  if (!new RegExp(BOLT11_PATTERN).test(s)) return false;
  try {
    bech32.decode(s as `${string}1${string}`, 10_000);
    return true;
  } catch {
    return false;
  }
}

/** A BOLT 12 offer: lno1 followed by bech32 characters (offers carry no checksum). */
export function isBolt12Offer(offer: string): boolean {
  return new RegExp(BOLT12_OFFER_PATTERN).test(offer.toLowerCase());
}

/** A Lightning address (LUD-16): user@domain. */
export function isLightningAddress(address: string): boolean {
  return new RegExp(LIGHTNING_ADDRESS_PATTERN, 'i').test(address) && address.length <= 320;
}

export function isCountryCode(s: string): boolean {
  return COUNTRY_CODES.has(s);
}
