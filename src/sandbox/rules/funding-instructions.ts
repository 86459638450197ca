import { createHash } from 'node:crypto';
import { findCurrency } from '../../kernel/currencies.js';
import { depositAddress, depositNetworks, NETWORK_RULES, networkNamed } from './crypto-networks.js';

// Sandbox funding instructions of an internal account: bank coordinates and wallet
// addresses a payer would use to deposit into it, shaped like the reference's
// Payment*AccountInfo variants. Nothing here reaches a real bank or chain. Every value
// is derived from the account id with SHA-256, so the same account always shows the same
// coordinates (no storage needed), and each one carries the checksums a real validator
// applies: ABA routing checksum, IBAN mod-97, CLABE weighted check digit, PIX BR Code
// CRC16, EIP-55 on EVM chains, base58check for Tron, bech32 for Bitcoin (crypto networks and
// their addresses: crypto-networks.ts). Every instruction has a `reference`
// the payer quotes, unique per account (stored as internal_accounts.funding_reference).

export interface FundingInput {
  /** The internal account, or the quote (purpose QUOTE) the payment is for. */
  accountId: string;
  currency: string;
  isPlatformAccount: boolean;
  /**
   * ACCOUNT (default): an internal account's coordinates, every rail that reaches them.
   * QUOTE: a real-time-funded quote's, instant rails only (just-in-time funding takes no
   * ACH, wire or other deferred rail), simulated with POST /sandbox/send.
   */
  purpose?: 'ACCOUNT' | 'QUOTE';
  /**
   * A crypto deposit's network, as the client named it (bare or testnet alias): only that
   * network's instructions. Absent: one per network that carries the currency.
   */
  cryptoNetwork?: string | undefined;
}

export type AccountOrWalletInfo = { accountType: string; reference: string } & Record<string, unknown>;

export interface FundingInstruction {
  instructionsNotes: string;
  isPlatformAccount: boolean;
  accountOrWalletInfo: AccountOrWalletInfo;
}

// ---- Derivation ------------------------------------------------------------------------

function bytes(accountId: string, label: string): Buffer {
  return createHash('sha256').update(`sandbox-funding|${label}|${accountId}`).digest();
}

// The derived strings are pure functions of the account id, so the last ones made are kept
// (issue 35: an internal account's view, in every INTERNAL_ACCOUNT.BALANCE_UPDATED event of a
// payment, derived its USD coordinates again: four SHA-256 and some 30 BigInt divisions,
// about 12 µs). Bounded: emptied when full. Only strings are kept; every view still gets
// objects of its own.
const DERIVED_MAX = 4096;
const derived = new Map<string, string>();

function remembered(key: string, make: () => string): string {
  let v = derived.get(key);
  if (v === undefined) {
    v = make();
    if (derived.size >= DERIVED_MAX) derived.clear();
    derived.set(key, v);
  }
  return v;
}

/** `n` decimal digits derived from the account id and a label. */
function digits(accountId: string, label: string, n: number): string {
  return remembered(`d|${label}|${n}|${accountId}`, () => computeDigits(accountId, label, n));
}

function computeDigits(accountId: string, label: string, n: number): string {
  let v = BigInt(`0x${bytes(accountId, label).toString('hex')}`);
  let s = '';
  for (let i = 0; i < n; i++) {
    s += (v % 10n).toString();
    v /= 10n;
  }
  return s;
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** The reference a payer quotes: `UMA-` and 10 Crockford base32 characters (50 bits). */
export function fundingReference(accountId: string): string {
  return remembered(`r|${accountId}`, () => computeReference(accountId));
}

function computeReference(accountId: string): string {
  const b = bytes(accountId, 'reference');
  let v = BigInt(`0x${b.subarray(0, 8).toString('hex')}`);
  let s = '';
  for (let i = 0; i < 10; i++) {
    s = CROCKFORD[Number(v % 32n)]! + s;
    v /= 32n;
  }
  return `UMA-${s}`;
}

// ---- Check digits (exported for tests and for validating external accounts) -----------

const ABA_WEIGHTS = [3, 7, 1, 3, 7, 1, 3, 7, 1];

/** True when a 9-digit ABA routing number passes its checksum. */
export function isValidAbaRouting(rn: string): boolean {
  if (!/^\d{9}$/.test(rn)) return false;
  return [...rn].reduce((s, d, i) => s + Number(d) * ABA_WEIGHTS[i]!, 0) % 10 === 0;
}

function abaCheckDigit(first8: string): string {
  const s = [...first8].reduce((acc, d, i) => acc + Number(d) * ABA_WEIGHTS[i]!, 0);
  return String((10 - (s % 10)) % 10);
}

function ibanRemainder(rearranged: string): number {
  const numeric = [...rearranged.toUpperCase()].map((ch) => (/[A-Z]/.test(ch) ? String(ch.charCodeAt(0) - 55) : ch)).join('');
  let r = 0;
  for (const ch of numeric) r = (r * 10 + Number(ch)) % 97;
  return r;
}

/** True when an IBAN's check digits pass ISO 13616 mod-97. */
export function isValidIban(iban: string): boolean {
  if (!/^[A-Z]{2}\d{2}[A-Z0-9]{11,30}$/.test(iban)) return false;
  return ibanRemainder(iban.slice(4) + iban.slice(0, 4)) === 1;
}

function iban(country: string, bban: string): string {
  const check = 98 - ibanRemainder(`${bban}${country}00`);
  return `${country}${String(check).padStart(2, '0')}${bban}`;
}

const CLABE_WEIGHTS = [3, 7, 1];

function clabeCheckDigit(first17: string): string {
  const s = [...first17].reduce((acc, d, i) => acc + ((Number(d) * CLABE_WEIGHTS[i % 3]!) % 10), 0);
  return String((10 - (s % 10)) % 10);
}

/** True when an 18-digit CLABE's last digit is its weighted (3, 7, 1) check digit. */
export function isValidClabe(clabe: string): boolean {
  return /^\d{18}$/.test(clabe) && clabeCheckDigit(clabe.slice(0, 17)) === clabe[17];
}

/** CRC16/CCITT-FALSE (poly 0x1021, init 0xFFFF), as the PIX BR Code ends with. */
export function crc16(text: string): string {
  let crc = 0xffff;
  for (const byte of Buffer.from(text, 'utf8')) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc.toString(16).toUpperCase().padStart(4, '0');
}

const BECH32 = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';

function bech32Polymod(values: number[]): number {
  const gen = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3];
  let chk = 1;
  for (const v of values) {
    const top = chk >>> 25;
    chk = ((chk & 0x1ffffff) << 5) ^ v;
    for (let i = 0; i < 5; i++) if ((top >>> i) & 1) chk ^= gen[i]!;
  }
  return chk >>> 0;
}

function bech32Encode(hrp: string, data: number[]): string {
  const expand = [...hrp].map((c) => c.charCodeAt(0) >> 5).concat([0], [...hrp].map((c) => c.charCodeAt(0) & 31));
  const mod = bech32Polymod([...expand, ...data, 0, 0, 0, 0, 0, 0]) ^ 1;
  const checksum = Array.from({ length: 6 }, (_, i) => (mod >>> (5 * (5 - i))) & 31);
  return `${hrp}1${[...data, ...checksum].map((d) => BECH32[d]).join('')}`;
}

/** True when a bech32 (BIP-173) string's checksum holds. */
export function isValidBech32(addr: string): boolean {
  const pos = addr.lastIndexOf('1');
  if (pos < 1 || addr.length - pos < 7) return false;
  const hrp = addr.slice(0, pos);
  const data = [...addr.slice(pos + 1)].map((c) => BECH32.indexOf(c));
  if (data.some((d) => d < 0)) return false;
  const expand = [...hrp].map((c) => c.charCodeAt(0) >> 5).concat([0], [...hrp].map((c) => c.charCodeAt(0) & 31));
  return bech32Polymod([...expand, ...data]) === 1;
}

function toWords(b: Buffer): number[] {
  const out: number[] = [];
  let acc = 0;
  let bits = 0;
  for (const byte of b) {
    acc = (acc << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out.push((acc >>> bits) & 31);
    }
  }
  if (bits > 0) out.push((acc << (5 - bits)) & 31);
  return out;
}

// ---- Per currency ----------------------------------------------------------------------

const BANK_NAME = 'Payments Sandbox Bank';
const HOLDER = 'Payments Service Sandbox FBO';
const ABA_PREFIXES = ['02', '03', '04', '05', '06', '07', '08', '09', '10', '11', '12', '21', '22', '26', '31'];

/** Country of the bank a fiat currency's sandbox SWIFT account sits in. */
const SWIFT_COUNTRY: Record<string, string> = {
  HKD: 'HK', IDR: 'ID', MYR: 'MY', PHP: 'PH', SGD: 'SG', THB: 'TH', VND: 'VN', AED: 'AE', KES: 'KE', MWK: 'MW', RWF: 'RW',
  TZS: 'TZ', UGX: 'UG', XOF: 'SN', XAF: 'CM', ZAR: 'ZA', ZMW: 'ZM', BWP: 'BW', BDT: 'BD', COP: 'CO', EGP: 'EG', GHS: 'GH',
  GTQ: 'GT', HTG: 'HT', JMD: 'JM', PKR: 'PK', CNY: 'CN', JPY: 'JP', KRW: 'KR', CHF: 'CH', AUD: 'AU',
};

/** A sandbox BIC: location code ending in 0, which SWIFT reserves for test BICs. */
function bic(country: string): string {
  return `PSBX${country}P0`;
}

function note(input: FundingInput, ref: string, how: string): string {
  if (input.purpose === 'QUOTE') {
    const body = JSON.stringify({ quoteId: input.accountId, currencyCode: input.currency });
    return `Sandbox coordinates: no real money moves. ${how} Quote the reference ${ref} with the payment so it funds this quote. To simulate the payment, call POST /sandbox/send with ${body}.`;
  }
  return `Sandbox coordinates: no real money moves. ${how} Quote the reference ${ref} with the payment so it is credited to this account. To simulate a deposit, call POST /sandbox/internal-accounts/${input.accountId}/fund.`;
}

/**
 * Just-in-time funding of a quote: per fiat currency, the instant rails of its sandbox
 * coordinates, what to tell the payer, and the fields of deferred rails to leave out.
 * A fiat currency not listed has no instant rail in the sandbox and cannot fund a quote.
 */
const INSTANT_FUNDING: Readonly<Record<string, { rails: string[] | null; how: string; drop?: string[] }>> = {
  USD: { rails: ['RTP', 'FEDNOW'], how: 'Send by RTP or FedNow (instant rails only) to the account and routing number below.' },
  EUR: { rails: ['SEPA_INSTANT'], how: 'Send by SEPA Instant to the IBAN below.' },
  DKK: { rails: ['SEPA_INSTANT'], how: 'Send by SEPA Instant to the IBAN below.' },
  GBP: { rails: ['FASTER_PAYMENTS'], how: 'Send by Faster Payments to the sort code and account number below.' },
  MXN: { rails: ['SPEI'], how: 'Send by SPEI to the CLABE below; put the reference in the concepto.' },
  BRL: { rails: null, how: 'Pay by PIX: scan or paste the QR code payload, or send to the random PIX key below.' },
  INR: { rails: ['UPI'], how: 'Pay by UPI to the VPA below.', drop: ['accountNumber', 'ifsc', 'bankName'] },
};

/** True when a quote can be funded just in time in this currency (an instant fiat rail, or a crypto deposit). */
export function hasInstantFunding(code: string): boolean {
  const currency = findCurrency(code);
  if (!currency) return false;
  if (currency.kind === 'CRYPTO') return cryptoInstructions({ accountId: '', currency: code, isPlatformAccount: false }, '').length > 0;
  return INSTANT_FUNDING[code] !== undefined;
}

/** A quote's fiat coordinates: the account's, narrowed to the instant rails (none: no instructions). */
function quoteFiat(input: FundingInput, ref: string): Array<{ notes: string; info: AccountOrWalletInfo }> {
  const instant = INSTANT_FUNDING[input.currency];
  if (!instant) return [];
  return fiat(input, ref).map(({ info }) => {
    const narrowed: AccountOrWalletInfo = { ...info };
    for (const f of instant.drop ?? []) delete narrowed[f];
    if (instant.rails !== null) narrowed.paymentRails = instant.rails;
    return { notes: note(input, ref, instant.how), info: narrowed };
  });
}

function fiat(input: FundingInput, ref: string): Array<{ notes: string; info: AccountOrWalletInfo }> {
  const id = input.accountId;
  switch (input.currency) {
    case 'USD': {
      const prefix = ABA_PREFIXES[Number(digits(id, 'aba-prefix', 4)) % ABA_PREFIXES.length]!;
      const first8 = prefix + digits(id, 'aba', 6);
      return [
        {
          notes: note(input, ref, 'Send by ACH, wire or RTP to the account and routing number below.'),
          info: {
            accountType: 'USD_ACCOUNT',
            accountNumber: `8${digits(id, 'usd-account', 11)}`,
            routingNumber: first8 + abaCheckDigit(first8),
            bankName: BANK_NAME,
            bankAccountType: 'CHECKING',
            bankAddress: '1 Sandbox Plaza, New York, NY 10004',
            paymentRails: ['ACH', 'WIRE', 'RTP', 'FEDNOW'],
            reference: ref,
          },
        },
      ];
    }
    case 'EUR':
      return [
        {
          notes: note(input, ref, 'Send by SEPA or SEPA Instant to the IBAN below.'),
          info: { accountType: 'EUR_ACCOUNT', iban: iban('DE', `10010${digits(id, 'eur-blz', 3)}${digits(id, 'eur-account', 10)}`), swiftCode: bic('DE'), paymentRails: ['SEPA', 'SEPA_INSTANT'], reference: ref },
        },
      ];
    case 'DKK':
      return [
        {
          notes: note(input, ref, 'Send to the IBAN below.'),
          info: { accountType: 'DKK_ACCOUNT', iban: iban('DK', `9${digits(id, 'dkk-bank', 3)}${digits(id, 'dkk-account', 10)}`), swiftCode: bic('DK'), paymentRails: ['SEPA', 'SEPA_INSTANT'], reference: ref },
        },
      ];
    case 'GBP':
      return [
        {
          notes: note(input, ref, 'Send by Faster Payments to the sort code and account number below.'),
          info: { accountType: 'GBP_ACCOUNT', sortCode: `04${digits(id, 'gbp-sort', 4)}`, accountNumber: digits(id, 'gbp-account', 8), paymentRails: ['FASTER_PAYMENTS'], reference: ref },
        },
      ];
    case 'MXN': {
      // Bank 646 (STP), plaza 180, 11-digit account, check digit.
      const first17 = `646180${digits(id, 'clabe', 11)}`;
      return [
        {
          notes: note(input, ref, 'Send by SPEI to the CLABE below; put the reference in the concepto.'),
          info: { accountType: 'MXN_ACCOUNT', clabeNumber: first17 + clabeCheckDigit(first17), paymentRails: ['SPEI'], reference: ref },
        },
      ];
    }
    case 'BRL': {
      const h = bytes(id, 'pix').toString('hex');
      const pixKey = `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${['8', '9', 'a', 'b'][parseInt(h[16]!, 16) % 4]}${h.slice(17, 20)}-${h.slice(20, 32)}`;
      return [
        {
          notes: note(input, ref, 'Pay by PIX: scan or paste the QR code payload, or send to the random PIX key below.'),
          info: { accountType: 'BRL_ACCOUNT', qrCode: pixBrCode(pixKey, ref), pixKey, pixKeyType: 'RANDOM', reference: ref },
        },
      ];
    }
    case 'INR': {
      const ifsc = `PSBX0${digits(id, 'ifsc', 6)}`;
      return [
        {
          notes: note(input, ref, 'Pay by UPI to the VPA below, or by NEFT or RTGS to the account number and IFSC.'),
          info: {
            accountType: 'INR_ACCOUNT',
            vpa: `sbx${digits(id, 'vpa', 10)}@psbx`,
            accountNumber: `9${digits(id, 'inr-account', 13)}`,
            ifsc,
            bankName: BANK_NAME,
            paymentRails: ['UPI', 'NEFT', 'RTGS'],
            reference: ref,
          },
        },
      ];
    }
    case 'CAD':
      return [
        {
          notes: note(input, ref, 'Send by bank transfer to the institution, transit and account numbers below.'),
          info: { accountType: 'CAD_ACCOUNT', bankCode: '621', branchCode: digits(id, 'cad-transit', 5), accountNumber: digits(id, 'cad-account', 10), paymentRails: ['BANK_TRANSFER'], reference: ref },
        },
      ];
    case 'NGN':
      return [
        {
          notes: note(input, ref, 'Send by bank transfer to the account number below.'),
          info: { accountType: 'NGN_ACCOUNT', accountNumber: digits(id, 'ngn-account', 10), bankName: BANK_NAME, paymentRails: ['BANK_TRANSFER'], reference: ref },
        },
      ];
    default: {
      const country = SWIFT_COUNTRY[input.currency] ?? 'US';
      return [
        {
          notes: note(input, ref, `Send an international (SWIFT) transfer in ${input.currency} to the account below; copy the account holder name exactly.`),
          info: {
            accountType: 'SWIFT_ACCOUNT',
            country,
            swiftCode: bic(country),
            bankName: BANK_NAME,
            accountNumber: digits(id, 'swift-account', 12),
            accountHolderName: HOLDER,
            reference: ref,
          },
        },
      ];
    }
  }
}

/** A static PIX BR Code (EMV QR payload) for a key, with the reference as its txid. */
function pixBrCode(pixKey: string, ref: string): string {
  const f = (id: string, value: string) => `${id}${String(value.length).padStart(2, '0')}${value}`;
  const txid = ref.replace(/[^A-Za-z0-9]/g, '').slice(0, 25);
  const body =
    f('00', '01') +
    f('26', f('00', 'br.gov.bcb.pix') + f('01', pixKey)) +
    f('52', '0000') +
    f('53', '986') +
    f('58', 'BR') +
    f('59', 'PAYMENTS SANDBOX') +
    f('60', 'SAO PAULO') +
    f('62', f('05', txid)) +
    '6304';
  return body + crc16(body);
}

/** A native SegWit (P2WPKH, bech32) address. */
function bitcoinAddress(id: string): string {
  return bech32Encode('bc', [0, ...toWords(bytes(id, 'btc').subarray(0, 20))]);
}

function cryptoInstructions(input: FundingInput, ref: string): Array<{ notes: string; info: AccountOrWalletInfo }> {
  const id = input.accountId;
  const c = input.currency;
  const owner = input.purpose === 'QUOTE' ? 'quote' : 'account';
  if (c === 'BTC') {
    return [
      {
        notes: note(input, ref, `Send bitcoin on-chain to the native SegWit address below; it belongs to this ${owner} only.`),
        info: { accountType: 'BITCOIN_L1', address: bitcoinAddress(id), network: 'BITCOIN', reference: ref },
      },
    ];
  }
  // A wallet on each network that carries the asset, or on the one network asked for.
  const asked = input.cryptoNetwork === undefined ? undefined : networkNamed(input.cryptoNetwork);
  const networks = depositNetworks(c).filter((n) => asked === undefined || n === asked);
  const stablecoin = c === 'USDC' || c === 'USDT';
  return networks.map((n) => {
    const rule = NETWORK_RULES[n];
    // The network as the client named it (a testnet alias stays one).
    const named = asked === n && input.cryptoNetwork !== n ? `${rule.label} (${input.cryptoNetwork})` : rule.label;
    return {
      notes: note(input, ref, `Send ${c} on ${named} to the address below; it belongs to this ${owner} only.`),
      info: { accountType: rule.depositWallet!, address: depositAddress(n, c, id), ...(stablecoin ? { assetType: c } : {}), reference: ref } as AccountOrWalletInfo,
    };
  });
}

/**
 * The funding instructions of an internal account, or (purpose QUOTE) of a real-time-funded
 * quote: deterministic, derived from its id.
 */
export function fundingInstructions(input: FundingInput): FundingInstruction[] {
  const currency = findCurrency(input.currency);
  if (!currency) return [];
  const ref = fundingReference(input.accountId);
  const list = currency.kind === 'CRYPTO' ? cryptoInstructions(input, ref) : input.purpose === 'QUOTE' ? quoteFiat(input, ref) : fiat(input, ref);
  return list.map((x) => ({ instructionsNotes: x.notes, isPlatformAccount: input.isPlatformAccount, accountOrWalletInfo: x.info }));
}
