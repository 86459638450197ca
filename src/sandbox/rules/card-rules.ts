import { createHash } from 'node:crypto';

// The cards sandbox's magic values (hosted docs, cards → Sandbox testing; docs/cards.md).
// Each table is keyed by the last three characters of an identifier the platform chooses.

/** The last three characters of a value: what every card table below is keyed by. */
export function suffixOf(value: string): string {
  return value.slice(-3);
}

// ---- Issuance: the last 3 characters of platformCardId (else of cardholderId) -----------

export type IssuanceOutcome =
  /** `001`: stays PROCESSING indefinitely (test the polling path). */
  | { kind: 'STAYS_PROCESSING' }
  /** `002`: the issuer rejects provisioning: CLOSED with stateReason ISSUER_REJECTED. */
  | { kind: 'ISSUER_REJECTED' }
  /** `005`: activation after about 30 seconds (sandbox clock), then CARD.STATE_CHANGE. */
  | { kind: 'DELAYED_ACTIVATION'; afterMs: number }
  /** Any other suffix: activated at once. */
  | { kind: 'INSTANT_ACTIVATION' };

export const DELAYED_ACTIVATION_MS = 30_000;

export function issuanceOutcome(suffix: string): IssuanceOutcome {
  switch (suffix) {
    case '001':
      return { kind: 'STAYS_PROCESSING' };
    case '002':
      return { kind: 'ISSUER_REJECTED' };
    case '005':
      return { kind: 'DELAYED_ACTIVATION', afterMs: DELAYED_ACTIVATION_MS };
    default:
      return { kind: 'INSTANT_ACTIVATION' };
  }
}

/** The card's last four digits: deterministic from the issuance suffix (the same suffix, the same last4). */
export function last4OfSuffix(suffix: string): string {
  const n = createHash('sha256').update(`card-last4|${suffix}`).digest().readUInt32BE(0) % 10_000;
  return n.toString().padStart(4, '0');
}

// ---- Funding sources: the last 3 characters of the internal account id ------------------

export type FundingSourceRefusal = 'INSUFFICIENT_BALANCE_CHECK' | 'ACCOUNT_CLOSED';

/** `002` and `003` make an account ineligible as a funding source; any other suffix binds. */
export function fundingSourceRefusal(accountId: string): FundingSourceRefusal | undefined {
  switch (suffixOf(accountId)) {
    case '002':
      return 'INSUFFICIENT_BALANCE_CHECK';
    case '003':
      return 'ACCOUNT_CLOSED';
    default:
      return undefined;
  }
}

/** The currencies a card can be funded in (docs/cards.md: USDB is not a currency of this service; USD is). */
export const CARD_ELIGIBLE_CURRENCIES: readonly string[] = ['USD'];

// ---- Authorizations: the last 3 characters of merchant.descriptor -----------------------

export type AuthorizationOutcome =
  /** `002`: declined INSUFFICIENT_FUNDS (the pull on the funding source fails). */
  | { kind: 'DECLINE'; reason: 'INSUFFICIENT_FUNDS' | 'CARD_PAUSED' }
  /** `005`: approved; the pull stays PENDING about 30 seconds, then CONFIRMED. */
  | { kind: 'DELAYED_PULL'; afterMs: number }
  /** `006`: approved; the pull succeeds but its confirmation reports FAILED: EXCEPTION when the network settles. */
  | { kind: 'CONFIRMATION_FAILS' }
  /** Any other suffix: approved, the pull confirmed at once. */
  | { kind: 'APPROVED' };

export const DELAYED_PULL_MS = 30_000;

export function authorizationOutcome(descriptor: string): AuthorizationOutcome {
  switch (suffixOf(descriptor)) {
    case '002':
      return { kind: 'DECLINE', reason: 'INSUFFICIENT_FUNDS' };
    case '003':
      return { kind: 'DECLINE', reason: 'CARD_PAUSED' };
    case '005':
      return { kind: 'DELAYED_PULL', afterMs: DELAYED_PULL_MS };
    case '006':
      return { kind: 'CONFIRMATION_FAILS' };
    default:
      return { kind: 'APPROVED' };
  }
}

/** How long a reveal's embed URL loads (the reference: "within minutes"). */
export const REVEAL_TTL_MS = 5 * 60_000;
