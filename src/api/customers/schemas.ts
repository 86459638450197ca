import { Type, type Static, type TSchema } from 'typebox';
import { ListOf, PageQuery, TimeRangeQuery } from '../../kernel/pagination.js';

// Customers: individuals and businesses. Create and update bodies are discriminated by
// `customerType`, so a 400 lists the problems of the shape the caller meant.

const Country = (description: string) => Type.String({ format: 'iso3166-1-alpha-2', description });
const DateOnly = (description: string) => Type.String({ format: 'date', description });

export const Address = Type.Object({
  line1: Type.String({ minLength: 1, maxLength: 255 }),
  line2: Type.Optional(Type.String({ maxLength: 255 })),
  city: Type.Optional(Type.String({ maxLength: 255 })),
  state: Type.Optional(Type.String({ maxLength: 255 })),
  postalCode: Type.String({ minLength: 1, maxLength: 32 }),
  country: Country('Country (ISO 3166-1 alpha-2)'),
});
export type Address = Static<typeof Address>;

export const ID_TYPES = ['SSN', 'ITIN', 'EIN', 'NON_US_TAX_ID'] as const;
export const IdentificationType = Type.Enum([...ID_TYPES], { description: 'Kind of identification number' });

export const KycStatus = Type.Enum(['UNVERIFIED', 'PENDING', 'APPROVED', 'REJECTED', 'HOLD']);
export const CustomerType = Type.Enum(['INDIVIDUAL', 'BUSINESS']);

export const EndUserTermsConsent = Type.Object({
  acceptedAt: Type.String({ format: 'date-time', description: 'When the customer accepted' }),
  ipAddress: Type.String({ minLength: 2, maxLength: 45, description: 'IP address the acceptance came from' }),
  termsVersion: Type.String({ minLength: 1, maxLength: 32, description: 'Version accepted (see GET /customers/end-user-terms)' }),
  acceptanceMethod: Type.Enum(['CHECKBOX', 'CLICK_TO_ACCEPT']),
});
export type EndUserTermsConsent = Static<typeof EndUserTermsConsent>;

export const ContactVerification = Type.Object({
  email: Type.Optional(Type.Enum(['PENDING', 'VERIFIED'])),
  phone: Type.Optional(Type.Enum(['PENDING', 'VERIFIED'])),
});

/** Enhanced due diligence: optional fields of an individual, with the reference's names. */
export const EddFields = {
  sourceOfFundsCategories: Type.Optional(
    Type.Array(Type.Enum(['SALARY', 'SELF_EMPLOYMENT_INCOME', 'INVESTMENT_INCOME', 'PENSION', 'RENTAL_INCOME', 'GIFT', 'INHERITANCE', 'LOAN', 'SAVINGS', 'SALE_OF_ASSETS', 'OTHER']), { uniqueItems: true }),
  ),
  sourceOfFundsOtherDescription: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
  sourceOfWealthCategories: Type.Optional(
    Type.Array(Type.Enum(['SALARY', 'BUSINESS_INCOME', 'INVESTMENTS', 'INHERITANCE', 'PROPERTY_SALE', 'GIFT', 'RETIREMENT', 'SAVINGS', 'OTHER']), { uniqueItems: true }),
  ),
  sourceOfWealthOtherDescription: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
  purposeOfAccount: Type.Optional(
    Type.Enum([
      'CONTRACTOR_PAYOUTS', 'CREATOR_PAYOUTS', 'EMPLOYEE_PAYOUTS', 'MARKETPLACE_SELLER_PAYOUTS', 'SUPPLIER_PAYMENTS', 'CROSS_BORDER_B2B',
      'AR_AUTOMATION', 'AP_AUTOMATION', 'EMBEDDED_PAYMENTS', 'PLATFORM_FEE_COLLECTION', 'P2P_TRANSFERS', 'CHARITABLE_DONATIONS', 'OTHER',
    ]),
  ),
  purposeOfAccountOtherDescription: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
  expectedMonthlyTransactionCount: Type.Optional(Type.Enum(['COUNT_UNDER_10', 'COUNT_10_TO_100', 'COUNT_100_TO_500', 'COUNT_500_TO_1000', 'COUNT_OVER_1000'])),
  expectedMonthlyTransactionVolume: Type.Optional(Type.Enum(['VOLUME_UNDER_10K', 'VOLUME_10K_TO_100K', 'VOLUME_100K_TO_1M', 'VOLUME_1M_TO_10M', 'VOLUME_OVER_10M'])),
  annualIncomeRange: Type.Optional(Type.Enum(['UNDER_50K', 'RANGE_50K_100K', 'RANGE_100K_250K', 'RANGE_250K_1M', 'OVER_1M'])),
  netWorthRange: Type.Optional(Type.Enum(['UNDER_100K', 'RANGE_100K_500K', 'RANGE_500K_1M', 'RANGE_1M_5M', 'RANGE_5M_25M', 'OVER_25M'])),
  pepStatus: Type.Optional(Type.Enum(['NONE', 'DOMESTIC', 'FOREIGN', 'HIO', 'FAMILY_OR_ASSOCIATE'])),
};
export const EDD_FIELD_NAMES = Object.keys(EddFields);

export const ENTITY_TYPES = [
  'SOLE_PROPRIETORSHIP', 'PARTNERSHIP', 'LLC', 'CORPORATION', 'S_CORPORATION', 'NON_PROFIT', 'PUBLICLY_LISTED_COMPANY', 'TRUST',
  'PRIVATE_FOUNDATION', 'CHARITY', 'OTHER',
] as const;

const businessInfoProps = {
  legalName: Type.String({ minLength: 1, maxLength: 255 }),
  doingBusinessAs: Type.Optional(Type.String({ maxLength: 255 })),
  country: Country('Country of incorporation (ISO 3166-1 alpha-2)'),
  registrationNumber: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Its last 3 characters steer the sandbox KYB outcome' })),
  incorporatedOn: DateOnly('Date of incorporation'),
  entityType: Type.Optional(Type.Enum([...ENTITY_TYPES])),
  taxId: Type.String({ minLength: 1, maxLength: 64 }),
  countriesOfOperation: Type.Optional(Type.Array(Country('Country of operation'))),
  businessType: Type.Optional(
    Type.Enum([
      'AGRICULTURE_FORESTRY_FISHING_AND_HUNTING', 'MINING_QUARRYING_AND_OIL_AND_GAS_EXTRACTION', 'UTILITIES', 'CONSTRUCTION', 'MANUFACTURING',
      'WHOLESALE_TRADE', 'RETAIL_TRADE', 'TRANSPORTATION_AND_WAREHOUSING', 'INFORMATION', 'FINANCE_AND_INSURANCE',
      'REAL_ESTATE_AND_RENTAL_AND_LEASING', 'PROFESSIONAL_SCIENTIFIC_AND_TECHNICAL_SERVICES', 'MANAGEMENT_OF_COMPANIES_AND_ENTERPRISES',
      'ADMINISTRATIVE_AND_SUPPORT_AND_WASTE_MANAGEMENT_AND_REMEDIATION_SERVICES', 'EDUCATIONAL_SERVICES', 'HEALTH_CARE_AND_SOCIAL_ASSISTANCE',
      'ARTS_ENTERTAINMENT_AND_RECREATION', 'ACCOMMODATION_AND_FOOD_SERVICES', 'OTHER_SERVICES', 'PUBLIC_ADMINISTRATION',
    ]),
  ),
  purposeOfAccount: EddFields.purposeOfAccount,
  sourceOfFunds: Type.Optional(Type.String({ maxLength: 500 })),
  expectedMonthlyTransactionCount: EddFields.expectedMonthlyTransactionCount,
  expectedMonthlyTransactionVolume: EddFields.expectedMonthlyTransactionVolume,
  expectedRecipientJurisdictions: Type.Optional(Type.Array(Country('Jurisdiction'))),
  naicsCode: Type.Optional(Type.String({ pattern: '^\\d{2,6}$' })),
  sourceOfFundsCategories: Type.Optional(
    Type.Array(Type.Enum(['OPERATING_REVENUE', 'INVESTMENT_INCOME', 'LOANS', 'VENTURE_CAPITAL', 'PERSONAL_SAVINGS', 'DONATIONS', 'OTHER']), { uniqueItems: true }),
  ),
  sourceOfFundsOtherDescription: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
  purposeOfAccountOtherDescription: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
  expectedCounterpartyCountries: Type.Optional(Type.Array(Country('Counterparty country'))),
  primaryContactFirstName: Type.Optional(Type.String({ maxLength: 250 })),
  primaryContactLastName: Type.Optional(Type.String({ maxLength: 250 })),
};

export const BusinessInfo = Type.Object(businessInfoProps);
export const BusinessInfoUpdate = Type.Partial(BusinessInfo);
export type BusinessInfo = Static<typeof BusinessInfo>;

const commonWriteProps = {
  platformCustomerId: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Your id for the customer; generated when absent; unique per platform' })),
  region: Type.Optional(Country('Regional identity and regulatory jurisdiction (ISO 3166-1 alpha-2)')),
  currencies: Type.Optional(Type.Array(Type.String({ format: 'iso4217' }), { minItems: 1, uniqueItems: true, description: 'Currencies enabled for the customer; every currency configured on the platform when absent at create' })),
  email: Type.Optional(Type.String({ format: 'email', maxLength: 254 })),
  phoneNumber: Type.Optional(Type.String({ format: 'e.164', description: 'Phone number in E.164 form' })),
  umaAddress: Type.Optional(Type.String({ pattern: '^\\$[A-Za-z0-9._+-]{1,63}@[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)+$', description: 'UMA address ($name@domain); the username before @, $ included, is at most 64 characters; generated when absent' })),
  endUserTermsConsent: Type.Optional(EndUserTermsConsent),
};

const individualProps = {
  fullName: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Its last 3 characters steer the sandbox KYC outcome' })),
  birthDate: Type.Optional(DateOnly('Date of birth (YYYY-MM-DD)')),
  nationality: Type.Optional(Country('Nationality (ISO 3166-1 alpha-2)')),
  address: Type.Optional(Address),
  idType: Type.Optional(IdentificationType),
  identifier: Type.Optional(Type.String({ minLength: 1, maxLength: 64, writeOnly: true, description: 'Identification number; write-only' })),
  countryOfIssuance: Type.Optional(Country('Country that issued the identification')),
  ...EddFields,
};

const IndividualCreate = Type.Object({ customerType: Type.Literal('INDIVIDUAL'), ...commonWriteProps, ...individualProps }, { title: 'IndividualCustomerCreateRequest' });
const BusinessCreate = Type.Object(
  { customerType: Type.Literal('BUSINESS'), ...commonWriteProps, address: Type.Optional(Address), businessInfo: BusinessInfo },
  { title: 'BusinessCustomerCreateRequest' },
);
const IndividualUpdate = Type.Object({ customerType: Type.Literal('INDIVIDUAL'), ...commonWriteProps, ...individualProps }, { title: 'IndividualCustomerUpdateRequest' });
const BusinessUpdate = Type.Object(
  { customerType: Type.Literal('BUSINESS'), ...commonWriteProps, address: Type.Optional(Address), businessInfo: Type.Optional(BusinessInfoUpdate) },
  { title: 'BusinessCustomerUpdateRequest' },
);

/** A oneOf discriminated by customerType (Ajv validates only the branch it names). */
function byCustomerType<A extends TSchema, B extends TSchema>(a: A, b: B) {
  return Type.Unsafe<Static<A> | Static<B>>({
    type: 'object',
    required: ['customerType'],
    discriminator: { propertyName: 'customerType' },
    oneOf: [a, b],
  });
}

export const CustomerCreateRequest = byCustomerType(IndividualCreate, BusinessCreate);
export type CustomerCreateRequest = Static<typeof CustomerCreateRequest>;
export const CustomerUpdateRequest = byCustomerType(IndividualUpdate, BusinessUpdate);
export type CustomerUpdateRequest = Static<typeof CustomerUpdateRequest>;
export type IndividualWrite = Static<typeof IndividualCreate>;
export type BusinessWrite = Static<typeof BusinessUpdate>;

export const BeneficialOwnerRole = Type.Enum(['UBO', 'DIRECTOR', 'COMPANY_OFFICER', 'CONTROL_PERSON', 'TRUSTEE', 'GENERAL_PARTNER']);

export const PersonalInfoView = Type.Object({
  firstName: Type.String(),
  middleName: Type.Optional(Type.String()),
  lastName: Type.String(),
  birthDate: Type.String({ format: 'date' }),
  nationality: Type.String(),
  email: Type.Optional(Type.String()),
  phoneNumber: Type.Optional(Type.String()),
  address: Address,
  idType: IdentificationType,
  identifier: Type.String({ description: 'The identification number as it was sent (kept sealed at rest); owners recorded before it was kept in full show it masked (***-**-6789 for SSN and ITIN, ****6789 otherwise)' }),
  countryOfIssuance: Type.Optional(Type.String()),
});

export const BeneficialOwner = Type.Object({
  id: Type.String({ description: 'BeneficialOwner:<uuid>' }),
  customerId: Type.String(),
  roles: Type.Array(BeneficialOwnerRole),
  ownershipPercentage: Type.Integer({ minimum: 0, maximum: 100 }),
  personalInfo: PersonalInfoView,
  kycStatus: KycStatus,
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.Optional(Type.String({ format: 'date-time' })),
});

/** A customer as the API shows it: the individual and business fields in one object. */
export const Customer = Type.Object({
  id: Type.String({ description: 'Customer:<uuid>' }),
  platformCustomerId: Type.String(),
  customerType: CustomerType,
  umaAddress: Type.String(),
  region: Type.Optional(Type.String()),
  currencies: Type.Array(Type.String()),
  email: Type.Optional(Type.String()),
  phoneNumber: Type.Optional(Type.String()),
  endUserTermsConsent: Type.Optional(EndUserTermsConsent),
  contactVerification: Type.Optional(ContactVerification),
  kycStatus: Type.Optional(KycStatus),
  kybStatus: Type.Optional(KycStatus),
  fullName: Type.Optional(Type.String()),
  birthDate: Type.Optional(Type.String({ format: 'date' })),
  nationality: Type.Optional(Type.String()),
  address: Type.Optional(Address),
  idType: Type.Optional(IdentificationType),
  countryOfIssuance: Type.Optional(Type.String()),
  ...EddFields,
  businessInfo: Type.Optional(Type.Partial(BusinessInfo)),
  beneficialOwners: Type.Optional(Type.Array(BeneficialOwner)),
  isDeleted: Type.Boolean(),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
});
export type Customer = Static<typeof Customer>;

export const CustomerListQuery = Type.Object({
  platformCustomerId: Type.Optional(Type.String()),
  customerType: Type.Optional(CustomerType),
  region: Type.Optional(Type.String()),
  currency: Type.Optional(Type.String()),
  umaAddress: Type.Optional(Type.String()),
  isIncludingDeleted: Type.Optional(Type.Boolean()),
  ...TimeRangeQuery,
  ...PageQuery,
});

export const CustomerListResponse = ListOf(Customer, 'customers');
export const CustomerIdParams = Type.Object({ customerId: Type.String({ description: 'Customer:<uuid>' }) });

export const EndUserTerms = Type.Object({
  version: Type.String({ description: 'Current version of the end-user terms' }),
  url: Type.String({ format: 'uri', description: 'Where this version is published' }),
});
