import { Type, type Static } from 'typebox';
import { MAX_DOCUMENT_BYTES } from '../../kernel/multipart.js';
import { ListOf, PageQuery } from '../../kernel/pagination.js';

// Documents: verification files of customers and beneficial owners. Uploads are
// multipart/form-data; the text fields are checked against the *Fields schemas below
// (every problem in one 400), the file by its bytes.

export const DOCUMENT_TYPES = [
  'PASSPORT', 'DRIVERS_LICENSE', 'NATIONAL_ID', 'PROOF_OF_ADDRESS', 'BANK_STATEMENT', 'TAX_RETURN', 'CERTIFICATE_OF_INCORPORATION',
  'ARTICLES_OF_INCORPORATION', 'ARTICLES_OF_ASSOCIATION', 'STATE_REGISTRY_EXCERPT', 'GOOD_STANDING_CERTIFICATE', 'INFORMATION_STATEMENT',
  'INCUMBENCY_CERTIFICATE', 'BUSINESS_LICENSE', 'SHAREHOLDER_REGISTER', 'POWER_OF_ATTORNEY', 'UTILITY_BILL', 'ELECTRICITY_BILL',
  'RENT_OR_LEASE_AGREEMENT', 'DIRECTOR_REGISTRY', 'TRUST_AGREEMENT', 'STATE_COMPANY_REGISTRY', 'PARTNERSHIP_CONTROL_AGREEMENT',
  'PARTNERSHIP_AGREEMENT', 'SELFIE', 'OTHER',
] as const;
export type DocumentTypeName = (typeof DOCUMENT_TYPES)[number];

export const DocumentType = Type.Enum([...DOCUMENT_TYPES], { description: 'Type of identity or business verification document' });
export const DocumentSide = Type.Enum(['FRONT', 'BACK'], { description: 'Which side of a two-sided document (driver’s license, national ID)' });

/** The file types accepted, recognised by their first bytes (never by name or declared type). */
export const ACCEPTED_CONTENT_TYPES = ['image/jpeg', 'image/png', 'application/pdf'] as const;
export type AcceptedContentType = (typeof ACCEPTED_CONTENT_TYPES)[number];

export const Document = Type.Object({
  id: Type.String({ description: 'Document:<uuid>' }),
  documentHolder: Type.String({ description: 'The Customer or BeneficialOwner the document belongs to' }),
  documentType: DocumentType,
  side: Type.Optional(DocumentSide),
  country: Type.String({ description: 'Country that issued the document (ISO 3166-1 alpha-2)' }),
  documentNumber: Type.Optional(Type.String({ description: 'Document identification number' })),
  issuingAuthority: Type.Optional(Type.String({ description: 'Agency or organisation that issued the document' })),
  fileName: Type.String({ description: 'Original file name of the uploaded document' }),
  createdAt: Type.String({ format: 'date-time', description: 'When the document was uploaded' }),
  updatedAt: Type.String({ format: 'date-time', description: 'When the document was last replaced' }),
});
export type Document = Static<typeof Document>;

const metadataProps = {
  documentType: DocumentType,
  side: Type.Optional(DocumentSide),
  country: Type.String({ format: 'iso3166-1-alpha-2', description: 'Country that issued the document (ISO 3166-1 alpha-2)' }),
  documentNumber: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Document identification number' })),
  issuingAuthority: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Agency or organisation that issued the document' })),
};

/** The text fields of an upload (checked in the handler; the file is checked by its bytes). */
export const DocumentUploadFields = Type.Object(
  {
    documentHolder: Type.String({ minLength: 1, maxLength: 255, description: 'Customer or BeneficialOwner id' }),
    ...metadataProps,
  },
  { additionalProperties: false },
);
export type DocumentUploadFields = Static<typeof DocumentUploadFields>;

/** The text fields of a replace: the holder is fixed (it may be repeated, unchanged). */
export const DocumentReplaceFields = Type.Object(
  {
    documentHolder: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Must be the current holder when given' })),
    ...metadataProps,
  },
  { additionalProperties: false },
);
export type DocumentReplaceFields = Static<typeof DocumentReplaceFields>;

const fileProp = Type.String({ format: 'binary', description: `The document file: PDF, JPEG or PNG (recognised by content), at most ${MAX_DOCUMENT_BYTES} bytes (10 MB)` });

/** The multipart body as OpenAPI shows it (not used for validation). */
export const DocumentUploadForm = Type.Object({ ...DocumentUploadFields.properties, file: fileProp }, { title: 'DocumentUploadRequest' });
export const DocumentReplaceForm = Type.Object({ ...DocumentReplaceFields.properties, file: fileProp }, { title: 'DocumentReplaceRequest' });

export const DocumentIdParams = Type.Object({ documentId: Type.String({ description: 'Document:<uuid>' }) });

export const DocumentListQuery = Type.Object({
  documentHolder: Type.Optional(Type.String({ description: 'Filter by document holder (Customer or BeneficialOwner id)' })),
  ...PageQuery,
});

export const DocumentListResponse = ListOf(Document, 'documents');

export const DocumentContent = Type.Unsafe<Buffer>({ type: 'string', format: 'binary', description: 'The file as uploaded' });
