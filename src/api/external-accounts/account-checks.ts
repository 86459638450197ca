import type { FieldConstraint, FieldErrors } from '../../kernel/errors.js';
import {
  evmAddressProblem,
  ibanProblem,
  isAbaRoutingNumber,
  isBic,
  isBolt11Invoice,
  isBrazilianTaxId,
  isCountryCode,
  isE164,
  isPixKey,
  isSolanaAddress,
  isSparkAddress,
  isTronAddress,
  isUpiVpa,
  PIX_KEY_RULES,
  type PixKeyType,
  UPI_VPA_PATTERN,
} from '../../kernel/rails.js';
import { kindOf, type KindSpec } from './account-info.js';

// The rail checks JSON schema cannot express: check digits and checksums (ABA, IBAN mod 97
// and country length, EIP-55, base58check; CLABE, CPF and CNPJ by their form only, as the
// hosted sandbox takes them: docs/sandbox.md), code lists (BIC country),
// the currency each kind holds, and "one of these groups of fields" for kinds paid on
// several rails. The body may have failed its schema (those errors are already in
// `errors`, so one 400 lists every problem): it is read defensively, and a field the
// schema already reported is not reported again.

export interface CheckContext {
  /** Regulated platforms are the ones with Travel Rule counterparty requirements. */
  regulated: boolean;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (o: Obj, k: string): string | undefined => (typeof o[k] === 'string' ? (o[k] as string) : undefined);
const present = (o: Obj, k: string): boolean => o[k] !== undefined && o[k] !== null && o[k] !== '';

export const WALLET_TYPES = new Set(['BASE_WALLET', 'ETHEREUM_WALLET', 'PLASMA_WALLET', 'POLYGON_WALLET', 'SOLANA_WALLET', 'SPARK_WALLET', 'TRON_WALLET']);

/** Check a create body's currency, accountInfo and ownershipType together; adds to `errors`. */
export function checkAccountBody(body: unknown, errors: FieldErrors, ctx: CheckContext): void {
  if (!isObj(body)) return;
  const info = body.accountInfo;
  if (!isObj(info) || typeof info.accountType !== 'string') return;
  const kind = kindOf(info.accountType);
  if (!kind) return;

  const reported = new Set(errors.list.map((e) => e.field));
  const add = (field: string, message: string, constraint?: FieldConstraint): void => {
    if (reported.has(field)) return;
    reported.add(field);
    errors.add(field, message, constraint);
  };
  const at = (k: string) => `accountInfo.${k}`;

  if (typeof body.currency === 'string' && !kind.currencies.includes(body.currency)) {
    add('currency', `must be a currency of a ${kind.type}: ${kind.currencies.join(', ')}`, { enum: [...kind.currencies] });
  }

  const checkDigits = () => hintCheckDigits(errors);
  checkBankFields(kind, info, add, at, checkDigits);
  checkRailGroups(kind, info, add, at);
  checkWallet(kind, info, body, add, at, ctx, checkDigits);
}

type Add = (field: string, message: string, constraint?: FieldConstraint) => void;

/**
 * `details.hint` of a 400 whose identifier fails its check digits (IBAN mod 97, ABA routing
 * number, EIP-55): the sandbox keeps those checks, so an identifier made up to carry a
 * magic suffix needs valid check digits; docs/sandbox.md lists one for each suffix.
 */
export const CHECK_DIGIT_HINT =
  'Sandbox magic suffixes (the last 3 digits of the identifier) need an identifier with valid check digits: see docs/sandbox.md, "Ready-to-use identifiers", for one ending in each suffix';

function hintCheckDigits(errors: FieldErrors): void {
  errors.details.hint = CHECK_DIGIT_HINT;
}

function checkBankFields(kind: KindSpec, info: Obj, add: Add, at: (k: string) => string, checkDigits: () => void): void {
  for (const f of ['routingNumber', 'intermediaryRoutingNumber']) {
    const v = str(info, f);
    if (v !== undefined && /^\d{9}$/.test(v) && !isAbaRoutingNumber(v)) {
      add(at(f), 'is not a valid ABA routing number: its check digit does not match, or it has no Federal Reserve routing prefix', { format: 'aba-routing-number' });
      checkDigits();
    }
  }
  if (kind.type === 'USD_ACCOUNT') {
    // A correspondent bank is named by both its name and its routing number.
    const name = present(info, 'intermediaryBankName');
    const routing = present(info, 'intermediaryRoutingNumber');
    if (name && !routing) add(at('intermediaryRoutingNumber'), 'is required when intermediaryBankName is given');
    if (routing && !name) add(at('intermediaryBankName'), 'is required when intermediaryRoutingNumber is given');
  }

  const iban = str(info, 'iban');
  if (iban !== undefined && /^[A-Z]{2}\d{2}[A-Za-z0-9]+$/.test(iban)) {
    const problem = ibanProblem(iban);
    const messages = {
      format: 'is not an IBAN',
      country: `is not an IBAN: ${iban.slice(0, 2)} does not issue IBANs`,
      length: `is not an IBAN: a ${iban.slice(0, 2)} IBAN has a different length`,
      checksum: 'is not a valid IBAN: its check digits do not match (ISO 7064 mod 97)',
    };
    if (problem) add(at('iban'), messages[problem], { format: 'iban' });
    if (problem === 'checksum') checkDigits();
  }

  // CLABE: 18 digits (the schema's pattern); its check digit is not verified (kernel/rails.ts isClabeShape).

  const bic = str(info, 'swiftCode');
  if (bic !== undefined && /^[A-Z]{4}[A-Z]{2}[A-Z0-9]{2}([A-Z0-9]{3})?$/.test(bic) && !isBic(bic)) {
    add(at('swiftCode'), `is not a valid SWIFT/BIC code: ${bic.slice(4, 6)} is not a country code`, { format: 'bic' });
  }

  if (kind.type === 'SWIFT_ACCOUNT') {
    const country = str(info, 'country');
    if (country !== undefined && /^[A-Z]{2}$/.test(country) && !isCountryCode(country)) {
      add(at('country'), 'must be a two-letter ISO 3166-1 country code', { format: 'iso3166-1-alpha-2' });
    }
  }

  const phone = str(info, 'phoneNumber');
  if (phone !== undefined && /^\+[0-9]{6,14}$/.test(phone) && !isE164(phone)) {
    add(at('phoneNumber'), 'must be a phone number in E.164 form (+ and a country code, which does not start with 0)', { format: 'e.164' });
  }

  if (kind.type === 'BRL_ACCOUNT') {
    const type = str(info, 'pixKeyType') as PixKeyType | undefined;
    const key = str(info, 'pixKey');
    if (type && key !== undefined && PIX_KEY_RULES[type] && !isPixKey(type, key)) {
      const rule = PIX_KEY_RULES[type];
      add(at('pixKey'), `must be ${rule.words}, as pixKeyType is ${type}`, rule.pattern ? { pattern: rule.pattern } : { format: rule.format! });
    }
    const taxId = str(info, 'taxId');
    if (taxId !== undefined && /^\d{11,14}$/.test(taxId) && !isBrazilianTaxId(taxId)) {
      add(at('taxId'), 'must be a CPF (11 digits) or a CNPJ (14 digits)', { format: 'cpf-or-cnpj' });
    }
  }

  if (kind.type === 'INR_ACCOUNT') {
    const vpa = str(info, 'vpa');
    if (vpa !== undefined && /^[a-zA-Z0-9.\-_]+@[a-zA-Z0-9]+$/.test(vpa) && !isUpiVpa(vpa)) {
      add(at('vpa'), 'is not a UPI address: handle@psp, the handle 2 or more characters, the PSP starting with a letter', { pattern: UPI_VPA_PATTERN });
    }
  }
}

/** Kinds paid on several rails: the fields of at least one rail must be complete. */
function checkRailGroups(kind: KindSpec, info: Obj, add: Add, at: (k: string) => string): void {
  if (kind.type === 'INR_ACCOUNT') {
    const bankFields = ['accountNumber', 'ifsc', 'rail'];
    const bankStarted = bankFields.some((f) => present(info, f));
    if (!present(info, 'vpa') && !bankStarted) {
      add(at('vpa'), 'is required for UPI, unless accountNumber, ifsc and rail are given for NEFT or RTGS');
      return;
    }
    if (bankStarted) {
      for (const f of bankFields) if (!present(info, f)) add(at(f), 'is required for a NEFT or RTGS bank account (accountNumber, ifsc and rail)');
      const rail = str(info, 'rail');
      if (rail !== undefined && !['NEFT', 'RTGS'].includes(rail)) add(at('rail'), 'must be one of: NEFT, RTGS', { enum: ['NEFT', 'RTGS'] });
    }
    return;
  }
  if (kind.type === 'LIGHTNING') {
    const given = ['invoice', 'bolt12', 'lightningAddress'].filter((f) => present(info, f));
    if (given.length === 0) add(at('invoice'), 'one of invoice, bolt12 or lightningAddress is required');
    for (const f of given.slice(1)) add(at(f), `must not be given with ${given[0]}: give exactly one of invoice, bolt12 or lightningAddress`);
    const invoice = str(info, 'invoice');
    if (invoice !== undefined && !isBolt11Invoice(invoice)) add(at('invoice'), 'is not a BOLT 11 invoice: its bech32 checksum does not match', { format: 'bolt11' });
    return;
  }
  const groups = kind.railGroups;
  if (!groups) return;
  if (groups.some((g) => g.fields.every((f) => present(info, f)))) {
    checkCnyBusiness(kind, info, add, at);
    return;
  }
  const started = groups.filter((g) => g.fields.some((f) => present(info, f)));
  const alternatives = groups.map((g) => `${g.fields.join(' and ')} (${g.rail})`).join(', or ');
  for (const g of started.length > 0 ? started : [groups[0]!]) {
    for (const f of g.fields) if (!present(info, f)) add(at(f), `is required: give ${alternatives}`);
  }
}

/** CNY bank transfers are business to business. */
function checkCnyBusiness(kind: KindSpec, info: Obj, add: Add, at: (k: string) => string): void {
  if (kind.type !== 'CNY_ACCOUNT' || !present(info, 'accountNumber')) return;
  const b = info.beneficiary;
  if (isObj(b) && b.beneficiaryType === 'INDIVIDUAL') {
    add(at('beneficiary.beneficiaryType'), 'must be BUSINESS: CNY bank transfers (accountNumber) are business to business only; use phoneNumber for a wallet', { enum: ['BUSINESS'] });
  }
}

function checkWallet(kind: KindSpec, info: Obj, body: Obj, add: Add, at: (k: string) => string, ctx: CheckContext, checkDigits: () => void): void {
  if (!WALLET_TYPES.has(kind.type)) return;
  const address = str(info, 'address');
  if (address !== undefined) {
    switch (kind.type) {
      case 'SOLANA_WALLET':
        if (/^[1-9A-HJ-NP-Za-km-z]{32,44}$/.test(address) && !isSolanaAddress(address)) add(at('address'), 'is not a Solana address: it must be the base58 of 32 bytes', { format: 'solana-address' });
        break;
      case 'TRON_WALLET':
        if (/^T[1-9A-HJ-NP-Za-km-z]{33}$/.test(address) && !isTronAddress(address)) add(at('address'), 'is not a Tron address: its base58check checksum does not match', { format: 'tron-address' });
        break;
      case 'SPARK_WALLET':
        if (/^spark[a-z]*1/.test(address) && !isSparkAddress(address)) add(at('address'), 'is not a Spark address: it does not carry a valid identity public key', { format: 'spark-address' });
        break;
      default:
        if (evmAddressProblem(address) === 'checksum') {
          add(at('address'), 'is not a valid mixed-case address: its EIP-55 checksum does not match (send it in one case, or checksummed)', { format: 'eip55-address' });
          checkDigits();
        }
    }
  }
  if (!ctx.regulated) return;
  // Platforms with counterparty requirements (the EU Travel Rule): who owns the wallet must be said.
  const selfCustody = !present(info, 'vaspName');
  if (selfCustody && !present(body, 'ownershipType')) {
    add('ownershipType', 'is required for a self-custody wallet on a platform subject to the Travel Rule', { enum: ['FIRST_PARTY', 'THIRD_PARTY'] });
  }
  if (body.ownershipType === 'THIRD_PARTY' && !present(info, 'beneficiary')) {
    add(at('beneficiary'), 'is required for a THIRD_PARTY wallet on a platform subject to the Travel Rule');
  }
}
