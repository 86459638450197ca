import { Type, type Static } from 'typebox';

// Hosted KYC/KYB links: a single-use page on this server where the customer completes
// their data, uploads a document and submits the verification.

export const KycLinkCreateRequest = Type.Object(
  {
    redirectUri: Type.Optional(
      Type.String({ format: 'uri', maxLength: 2048, description: 'Where the customer is sent back to after completing the hosted flow (http or https)' }),
    ),
  },
  { title: 'KycLinkCreateRequest' },
);
export type KycLinkCreateRequest = Static<typeof KycLinkCreateRequest>;

export const KycLinkResponse = Type.Object(
  {
    kycUrl: Type.String({ format: 'uri', description: 'Hosted page the customer completes; single use, expires at expiresAt' }),
    expiresAt: Type.String({ format: 'date-time', description: 'When the link stops working' }),
    provider: Type.Enum(['SUMSUB'], { description: 'The KYC provider (informational)' }),
    token: Type.Optional(Type.String({ description: 'The link token (the last segment of kycUrl)' })),
  },
  { title: 'KycLinkResponse' },
);
export type KycLinkResponse = Static<typeof KycLinkResponse>;

export const KycTokenParams = Type.Object({ token: Type.String({ minLength: 1, maxLength: 128 }) });

/** GET /customers/kyc-link (an operation the official client calls, newer than the reference). */
export const KycLinkByPlatformCustomerIdQuery = Type.Object(
  {
    platformCustomerId: Type.String({ minLength: 1, maxLength: 255, description: 'Your id of the customer to onboard; a new INDIVIDUAL customer is created when none of yours has it' }),
    redirectUri: Type.Optional(
      Type.String({ format: 'uri', maxLength: 2048, description: 'Where the customer is sent back to after completing the hosted flow (http or https)' }),
    ),
  },
  { title: 'KycLinkByPlatformCustomerIdQuery' },
);
export type KycLinkByPlatformCustomerIdQuery = Static<typeof KycLinkByPlatformCustomerIdQuery>;

export const KycLinkByPlatformCustomerIdResponse = Type.Object(
  {
    customerId: Type.String({ description: 'The customer the link verifies (Customer:<uuid>), created by this call when it was new' }),
    kycUrl: Type.String({ format: 'uri', description: 'Hosted page the customer completes; single use, expires an hour after it was generated' }),
    platformCustomerId: Type.String({ description: 'Your id of the customer, as given' }),
  },
  { title: 'KycLinkByPlatformCustomerIdResponse' },
);
export type KycLinkByPlatformCustomerIdResponse = Static<typeof KycLinkByPlatformCustomerIdResponse>;
