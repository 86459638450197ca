import { Type, type Static } from 'typebox';
import { ListOf, PageQuery } from '../../kernel/pagination.js';

// KYC/KYB verification results: one record per customer, updated by each submission.

export const VERIFICATION_STATUSES = ['RESOLVE_ERRORS', 'PENDING_MANUAL_REVIEW', 'APPROVED', 'REJECTED'] as const;
export const VerificationStatus = Type.Enum([...VERIFICATION_STATUSES], { description: 'Result of the latest submission' });

export const VERIFICATION_ERROR_TYPES = [
  'MISSING_FIELD',
  'INVALID_FIELD',
  'MISSING_LEGAL_PRESENCE_DOCUMENT',
  'MISSING_CONTROL_STRUCTURE_DOCUMENT',
  'MISSING_OWNERSHIP_STRUCTURE_DOCUMENT',
  'MISSING_PROOF_OF_ADDRESS_DOCUMENT',
  'MISSING_IDENTITY_DOCUMENT',
  'INVALID_DOCUMENT',
  'EXPIRED_DOCUMENT',
  'POOR_QUALITY_DOCUMENT',
  'SUSPECTED_FRAUD_DOCUMENT',
  'WRONG_DOCUMENT_TYPE',
  'INCOMPLETE_DOCUMENT',
  'UNREADABLE_DOCUMENT',
  'DOCUMENT_VERIFICATION_FAILED',
  'APPLICANT_SANCTIONED',
  'APPLICANT_FRAUD',
  'APPLICANT_CRIMINAL_RECORD',
  'APPLICANT_REJECTED',
  'MISSING_BENEFICIAL_OWNER',
  'MISSING_CONTROL_PERSON',
  'MISSING_GOOD_STANDING_DOCUMENT',
] as const;
export type VerificationErrorType = (typeof VERIFICATION_ERROR_TYPES)[number];

export const VerificationError = Type.Object(
  {
    resourceId: Type.String({ description: 'The customer or beneficial owner concerned' }),
    type: Type.Enum([...VERIFICATION_ERROR_TYPES], { description: 'Kind of problem' }),
    field: Type.Optional(Type.String({ description: 'Dot-notation path of the field concerned; present for MISSING_FIELD and INVALID_FIELD' })),
    acceptedDocumentTypes: Type.Optional(Type.Array(Type.String(), { description: 'Document types that satisfy the requirement; present for missing documents' })),
    reason: Type.String({ description: 'Human-readable description of the problem' }),
  },
  { title: 'VerificationError' },
);
export type VerificationError = Static<typeof VerificationError>;

export const Verification = Type.Object(
  {
    id: Type.String({ description: 'Verification:<uuid>' }),
    customerId: Type.String({ description: 'The customer being verified' }),
    verificationStatus: VerificationStatus,
    errors: Type.Array(VerificationError, { description: 'One entry per problem; empty unless verificationStatus is RESOLVE_ERRORS' }),
    createdAt: Type.String({ format: 'date-time', description: 'When the customer was first submitted' }),
    updatedAt: Type.String({ format: 'date-time', description: 'When the latest submission was evaluated' }),
  },
  { title: 'Verification' },
);
export type Verification = Static<typeof Verification>;

export const VerificationRequest = Type.Object(
  { customerId: Type.String({ minLength: 1, description: 'The customer to verify (Customer:<uuid>)' }) },
  { title: 'VerificationRequest' },
);
export type VerificationRequest = Static<typeof VerificationRequest>;

export const VerificationListQuery = Type.Object({
  customerId: Type.Optional(Type.String({ description: 'Only this customer' })),
  verificationStatus: Type.Optional(VerificationStatus),
  ...PageQuery,
});

export const VerificationListResponse = ListOf(Verification, 'verifications');
export const VerificationIdParams = Type.Object({ verificationId: Type.String({ description: 'Verification:<uuid>' }) });
