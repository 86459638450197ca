// The sandbox's KYC/KYB outcomes, steered by the last 3 characters of a name field.
// One table per subject, straight from the specification's "Customer and verification
// (sandbox)" table. `suffixOf` is the only reader of the magic characters.

import { EU_PROVIDER_REGIONS } from './customer-authentication.js';

export type KycStatus = 'UNVERIFIED' | 'PENDING' | 'APPROVED' | 'REJECTED';
export type KybStatus = 'UNVERIFIED' | 'PENDING' | 'APPROVED' | 'REJECTED';
export type VerificationStatus = 'RESOLVE_ERRORS' | 'PENDING_MANUAL_REVIEW' | 'APPROVED' | 'REJECTED';

/** The last three characters of a value ('' when absent). */
export function suffixOf(value: string | undefined | null): string {
  return (value ?? '').trim().slice(-3);
}

/** Individuals: fullName's suffix, applied at create (regulated, or skip paperwork) or on a complete submission. */
export interface IndividualOutcome {
  /** kycStatus the suffix gives. */
  kycStatus: KycStatus;
  /** What a complete POST /verifications then reports. */
  verificationStatus: VerificationStatus;
  /** 003: a correctable rejection of the identity document. */
  poorQualityDocument: boolean;
}

export const INDIVIDUAL_BY_SUFFIX: Readonly<Record<string, IndividualOutcome>> = {
  '001': { kycStatus: 'PENDING', verificationStatus: 'PENDING_MANUAL_REVIEW', poorQualityDocument: false },
  '002': { kycStatus: 'REJECTED', verificationStatus: 'REJECTED', poorQualityDocument: false },
  '003': { kycStatus: 'UNVERIFIED', verificationStatus: 'RESOLVE_ERRORS', poorQualityDocument: true },
};
export const INDIVIDUAL_OTHERWISE: IndividualOutcome = { kycStatus: 'APPROVED', verificationStatus: 'APPROVED', poorQualityDocument: false };

export function individualOutcome(fullName: string | undefined | null): IndividualOutcome {
  return INDIVIDUAL_BY_SUFFIX[suffixOf(fullName)] ?? INDIVIDUAL_OTHERWISE;
}

/** Businesses: businessInfo.registrationNumber's suffix, applied at verification. */
export type BusinessRule =
  /** Normal validation; RESOLVE_ERRORS until complete, then PENDING_MANUAL_REVIEW (kybStatus PENDING). */
  | 'REVIEW'
  /** kybStatus and verificationStatus REJECTED (after missing-data errors in the default flow). */
  | 'REJECT'
  /** kybStatus and verificationStatus APPROVED, skipping validation. */
  | 'APPROVE';

export const BUSINESS_BY_SUFFIX: Readonly<Record<string, BusinessRule>> = {
  '001': 'REVIEW',
  '003': 'REVIEW', // also the suffix for testing the hosted link flow
  '002': 'REJECT',
};

export function businessRule(registrationNumber: string | undefined | null): BusinessRule {
  return BUSINESS_BY_SUFFIX[suffixOf(registrationNumber)] ?? 'APPROVE';
}

/** Beneficial owners: personalInfo.lastName's suffix, when their business resolves terminally. */
export const OWNER_BY_SUFFIX: Readonly<Record<string, KycStatus>> = {
  '001': 'PENDING',
  '002': 'REJECTED',
};

export function ownerOutcome(lastName: string | undefined | null): KycStatus {
  return OWNER_BY_SUFFIX[suffixOf(lastName)] ?? 'APPROVED';
}

/** Identity documents an individual's verification accepts. */
export const IDENTITY_DOCUMENT_TYPES = ['PASSPORT', 'DRIVERS_LICENSE', 'NATIONAL_ID'] as const;

/** Documents that prove a business exists (its legal presence). */
export const LEGAL_PRESENCE_DOCUMENT_TYPES = [
  'CERTIFICATE_OF_INCORPORATION',
  'ARTICLES_OF_INCORPORATION',
  'ARTICLES_OF_ASSOCIATION',
  'STATE_REGISTRY_EXCERPT',
  'STATE_COMPANY_REGISTRY',
  'GOOD_STANDING_CERTIFICATE',
  'BUSINESS_LICENSE',
  'TRUST_AGREEMENT',
  'PARTNERSHIP_AGREEMENT',
] as const;

/**
 * Regions whose payment provider mandates contact verification (EU and EEA): their
 * customers carry `contactVerification`, and each present channel must be VERIFIED
 * before KYC can be submitted. The same rule decides SCA: see customer-authentication.ts.
 */
export const CONTACT_VERIFICATION_REGIONS: ReadonlySet<string> = EU_PROVIDER_REGIONS;

/** The sandbox one-time code for email and phone verification. */
export const CONTACT_VERIFICATION_CODE = '123456';

/** The end-user terms versions the service accepts; the first is current. */
export const END_USER_TERMS_VERSIONS = ['V1'] as const;

/** How long a hosted KYC link stays valid. */
export const KYC_LINK_TTL_MS = 60 * 60_000;
