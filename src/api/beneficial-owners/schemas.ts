import { Type, type Static } from 'typebox';
import { ListOf, PageQuery } from '../../kernel/pagination.js';
import { Address, BeneficialOwner, BeneficialOwnerRole, IdentificationType } from '../customers/schemas.js';

// Beneficial owners, directors and officers of a business customer. The view
// (BeneficialOwner) lives with the customer schemas, which embed it.

export { BeneficialOwner };

const Country = (description: string) => Type.String({ format: 'iso3166-1-alpha-2', description });

const personalInfoProps = {
  firstName: Type.String({ minLength: 1, maxLength: 255, description: 'First name' }),
  middleName: Type.Optional(Type.String({ maxLength: 255, description: 'Middle name' })),
  lastName: Type.String({ minLength: 1, maxLength: 255, description: 'Last name; its last 3 characters steer the sandbox KYC outcome of the owner' }),
  birthDate: Type.String({ format: 'date', description: 'Date of birth (YYYY-MM-DD)' }),
  nationality: Country('Nationality (ISO 3166-1 alpha-2)'),
  email: Type.Optional(Type.String({ format: 'email', maxLength: 254, description: 'Email address' })),
  phoneNumber: Type.Optional(Type.String({ format: 'e.164', description: 'Phone number in E.164 form' })),
  address: Address,
  idType: IdentificationType,
  identifier: Type.String({ minLength: 1, maxLength: 64, description: 'Identification number; kept sealed (encrypted) and returned as sent' }),
  countryOfIssuance: Type.Optional(Country('Country that issued the identification (ISO 3166-1 alpha-2)')),
};

export const PersonalInfoWrite = Type.Object(personalInfoProps, { title: 'BeneficialOwnerPersonalInfo' });
export type PersonalInfoWrite = Static<typeof PersonalInfoWrite>;
export const PersonalInfoUpdate = Type.Partial(PersonalInfoWrite, { title: 'BeneficialOwnerPersonalInfoUpdate' });
export type PersonalInfoUpdate = Static<typeof PersonalInfoUpdate>;

const Roles = Type.Array(BeneficialOwnerRole, { minItems: 1, uniqueItems: true, description: 'Roles of the person within the business' });
const Ownership = Type.Integer({ minimum: 0, maximum: 100, description: 'Percentage of ownership in the business (0-100)' });

export const BeneficialOwnerCreateRequest = Type.Object(
  {
    customerId: Type.String({ minLength: 1, description: 'The business customer (Customer:<uuid>)' }),
    roles: Roles,
    ownershipPercentage: Ownership,
    personalInfo: PersonalInfoWrite,
  },
  { title: 'BeneficialOwnerCreateRequest' },
);
export type BeneficialOwnerCreateRequest = Static<typeof BeneficialOwnerCreateRequest>;

export const BeneficialOwnerUpdateRequest = Type.Object(
  {
    roles: Type.Optional(Roles),
    ownershipPercentage: Type.Optional(Ownership),
    personalInfo: Type.Optional(PersonalInfoUpdate),
  },
  { title: 'BeneficialOwnerUpdateRequest' },
);
export type BeneficialOwnerUpdateRequest = Static<typeof BeneficialOwnerUpdateRequest>;

export const BeneficialOwnerListQuery = Type.Object({
  customerId: Type.Optional(Type.String({ description: 'Only the owners of this business customer' })),
  ...PageQuery,
});

export const BeneficialOwnerListResponse = ListOf(BeneficialOwner, 'beneficial owners');
export const BeneficialOwnerIdParams = Type.Object({ beneficialOwnerId: Type.String({ description: 'BeneficialOwner:<uuid>' }) });
