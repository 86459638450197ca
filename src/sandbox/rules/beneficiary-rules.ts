// Sandbox beneficiary name verification, run when an external account is created: the
// suffix of the account's primary identifier (sandboxSuffix in identifiers.ts) decides,
// straight from the specification's "Sandbox beneficiary name verification" table.
//
// The 1xx suffixes are reserved for name verification: they never trigger a transfer,
// pull, payout or quote outcome (those tables use 002–007), and an account ending in 1xx
// moves money like any other ("any other" row of those tables).

export type BeneficiaryVerificationStatus = 'MATCHED' | 'PARTIAL_MATCH' | 'NOT_MATCHED' | 'PENDING' | 'UNSUPPORTED' | 'CHECKED_BY_RECEIVING_FI';

export type BeneficiaryRule =
  /** The account is valid; name verification answers `status`. `verifiedName` says what the rail reports as the holder's name. */
  | { kind: 'status'; status: BeneficiaryVerificationStatus; verifiedName: 'SUBMITTED' | 'FUZZY' | 'OTHER' | 'NONE' }
  /** 105: the account does not exist; create answers 400 INVALID_BANK_ACCOUNT and stores nothing. */
  | { kind: 'invalid-account' };

export const BENEFICIARY_BY_SUFFIX: Readonly<Record<string, BeneficiaryRule>> = {
  '102': { kind: 'status', status: 'NOT_MATCHED', verifiedName: 'OTHER' }, // account valid, name does not match
  '103': { kind: 'status', status: 'PARTIAL_MATCH', verifiedName: 'FUZZY' }, // account valid, fuzzy name match
  '104': { kind: 'status', status: 'PENDING', verifiedName: 'NONE' }, // verification still in progress
  '105': { kind: 'invalid-account' }, // 400, invalid account
  '106': { kind: 'status', status: 'UNSUPPORTED', verifiedName: 'NONE' }, // rail does not support name verification
  '107': { kind: 'status', status: 'CHECKED_BY_RECEIVING_FI', verifiedName: 'NONE' }, // deferred to the receiving institution
};

export const BENEFICIARY_OTHERWISE: BeneficiaryRule = { kind: 'status', status: 'MATCHED', verifiedName: 'SUBMITTED' };

export function beneficiaryRule(suffix: string): BeneficiaryRule {
  return BENEFICIARY_BY_SUFFIX[suffix] ?? BENEFICIARY_OTHERWISE;
}

/** The name the bank holds for a NOT_MATCHED account (a different person or business). */
export const SANDBOX_OTHER_HOLDER = { INDIVIDUAL: 'Alex Rivera', BUSINESS: 'Rivera Trading Ltd' } as const;

/**
 * The holder name the rail reports (beneficiaryVerifiedData.fullName), or undefined when
 * it reports none. FUZZY keeps the last word and shortens the others to initials
 * ("John Michael Doe" → "J. M. Doe"; a one-word name is upper-cased).
 */
export function verifiedHolderName(rule: BeneficiaryRule, submitted: string, beneficiaryType: 'INDIVIDUAL' | 'BUSINESS'): string | undefined {
  if (rule.kind !== 'status') return undefined;
  switch (rule.verifiedName) {
    case 'SUBMITTED':
      return submitted;
    case 'OTHER':
      return SANDBOX_OTHER_HOLDER[beneficiaryType];
    case 'FUZZY': {
      const words = submitted.trim().split(/\s+/);
      if (words.length < 2) return submitted.toUpperCase();
      return [...words.slice(0, -1).map((w) => `${w[0]!.toUpperCase()}.`), words[words.length - 1]!].join(' ');
    }
    case 'NONE':
      return undefined;
  }
}
