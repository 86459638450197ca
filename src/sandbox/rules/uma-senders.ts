import type { PayerDataField } from './corridors.js';
import { corridorOf } from './corridors.js';
import { isSandboxUmaDomain, type UmaAddress } from './uma.js';

// The sandbox's UMA senders: who can pay a platform's customer through
// POST /sandbox/uma/receive (docs/sandbox.md, "Incoming UMA payments"), as data.
//
// A sender is `$<prefix><code>@sandbox.uma.money` (or at the reference's
// `sandbox.grid.uma.money`, src/sandbox/rules/uma.ts SANDBOX_UMA_DOMAINS), where `<code>` is the currency it sends
// (any currency with a sandbox corridor, like the receivers of src/sandbox/rules/uma.ts). The
// prefix picks a profile: the payer data it sends with the payment (counterpartyInformation),
// the receiver data it asks the receiving platform for (requestedReceiverCustomerInfoFields),
// and how a refund back to it ends. `success.` is also a receiver prefix in uma.ts (the same
// well-behaved counterparty in both directions); `receiver.info.` and `refund.fail.` are
// senders only (as receivers they are unknown: 404 UMA_NOT_FOUND).

export interface SenderProfile {
  /** Stored with the transaction (`transactions.outcome`) so later steps read the same profile. */
  name: string;
  /** The local part's prefix, without `$`. */
  prefix: string;
  summary: string;
  /** The sender's FULL_NAME in counterpartyInformation. */
  fullName: string;
  /** Receiver data the sender's VASP asks for (UMA payee data); the platform answers it when approving. */
  requestedReceiverFields?: readonly PayerDataField[];
  /** A refund back to this sender fails: the money stays in the receiving account's pending bucket. */
  refundFails?: boolean;
}

export const SENDER_PROFILES: readonly SenderProfile[] = [
  { name: 'UMA_SENDER', prefix: 'success.', summary: 'Sends its payer data; a refund back to it completes', fullName: 'John Sender' },
  {
    name: 'UMA_SENDER_RECEIVER_INFO',
    prefix: 'receiver.info.',
    summary: 'Also asks for the receiver’s NATIONALITY (mandatory) and POSTAL_ADDRESS (optional)',
    fullName: 'Ines Inquirer',
    requestedReceiverFields: [
      { name: 'NATIONALITY', mandatory: true },
      { name: 'POSTAL_ADDRESS', mandatory: false },
    ],
  },
  { name: 'UMA_SENDER_REFUND_FAILS', prefix: 'refund.fail.', summary: 'A refund back to it fails (REFUND_FAILED)', fullName: 'Rafe Refund', refundFails: true },
];

export interface SandboxSender {
  address: UmaAddress;
  /** The currency it sends (upper case). */
  currency: string;
  profile: SenderProfile;
}

/**
 * The sandbox sender an address names, or null: another domain (not the sandbox VASP's), or
 * a local part that is no sender at the sandbox domain.
 */
export function sandboxSender(address: UmaAddress): SandboxSender | null {
  if (!isSandboxUmaDomain(address.domain)) return null;
  const local = address.local.slice(1);
  for (const profile of SENDER_PROFILES) {
    if (!local.startsWith(profile.prefix)) continue;
    const currency = local.slice(profile.prefix.length).toUpperCase();
    if (corridorOf(currency)) return { address, currency, profile };
  }
  return null;
}

/** The profile a transaction stored (unknown names read as the plain sender). */
export function senderProfileNamed(name: string | null | undefined): SenderProfile {
  return SENDER_PROFILES.find((p) => p.name === name) ?? SENDER_PROFILES[0]!;
}

/** What every sandbox sender tells about itself, before the receiving platform asks for more. */
export const BASE_SENDER_FIELDS = ['FULL_NAME', 'BIRTH_DATE', 'NATIONALITY'] as const;

/**
 * The sender's value for one counterparty field: plausible, fixed data of a US resident
 * (the same field always has the same value). A field name the table does not know gets a
 * placeholder the platform can recognise.
 */
export function senderFieldValue(profile: SenderProfile, senderAddress: string, field: string): unknown {
  switch (field) {
    case 'FULL_NAME':
      return profile.fullName;
    case 'BIRTH_DATE':
      return '1985-06-15';
    case 'NATIONALITY':
    case 'COUNTRY_OF_RESIDENCE':
    case 'ULTIMATE_INSTITUTION_COUNTRY':
      return 'US';
    case 'PHONE_NUMBER':
      return '+14155550123';
    case 'EMAIL':
      return `${profile.fullName.split(' ')[0]!.toLowerCase()}@sender.example`;
    case 'POSTAL_ADDRESS':
      return { line1: '1 Market Street', city: 'San Francisco', state: 'CA', postalCode: '94105', country: 'US' };
    case 'TAX_ID':
      return '912-34-5678';
    case 'REGISTRATION_NUMBER':
      return 'SBX-REG-000123';
    case 'USER_TYPE':
      return 'INDIVIDUAL';
    case 'ACCOUNT_IDENTIFIER':
      return senderAddress;
    case 'FI_LEGAL_ENTITY_NAME':
      return 'Sandbox UMA Money Ltd.';
    case 'FI_ADDRESS':
      return { line1: '100 Sandbox Plaza', city: 'San Francisco', state: 'CA', postalCode: '94107', country: 'US' };
    case 'PURPOSE_OF_PAYMENT':
      return 'FAMILY_SUPPORT';
    case 'IDENTIFIER':
      return 'SBX-ID-000123';
    case 'BUSINESS_TYPE':
      return 'SOLE_PROPRIETORSHIP';
    case 'COMPANY_LEGAL_NAME':
      return `${profile.fullName} Trading LLC`;
    case 'ID_TYPE':
      return 'PASSPORT';
    case 'ID_NUMBER':
      return 'X12345678';
    default:
      return `SANDBOX-${field}`;
  }
}

/** The sender's counterpartyInformation: its base fields plus `fields` (kept in first-asked order). */
export function senderCounterpartyInformation(profile: SenderProfile, senderAddress: string, fields: readonly string[], base: Record<string, unknown> = {}): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const f of [...BASE_SENDER_FIELDS, ...fields]) {
    if (!(f in out)) out[f] = senderFieldValue(profile, senderAddress, f);
  }
  return out;
}
