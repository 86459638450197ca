import type { Kysely, Transaction } from 'kysely';
import type { Static } from 'typebox';
import type { DB } from '../../kernel/db/schema.js';
import { maskedIdentifier } from '../customers/identification.js';
import type { BeneficialOwner } from '../customers/schemas.js';
import { type OwnerRow, ownerRowsOfCustomer } from './store.js';

type Db = Kysely<DB> | Transaction<DB>;
export type BeneficialOwnerView = Static<typeof BeneficialOwner>;

/**
 * A beneficial owner as the API shows it. Its identification number is kept only as its
 * last 4 characters (as the individual customer's), so `personalInfo.identifier`, which the
 * reference requires in every answer, is that number masked: `***-**-6789`.
 */
export function ownerView(r: OwnerRow): BeneficialOwnerView {
  const { identifierLast4, ...rest } = JSON.parse(r.personal_info) as Record<string, unknown>;
  const personalInfo = { ...rest, identifier: maskedIdentifier(rest.idType as string | undefined, identifierLast4 as string | undefined) };
  return {
    id: r.id,
    customerId: r.customer_id,
    roles: JSON.parse(r.roles) as BeneficialOwnerView['roles'],
    ownershipPercentage: Number(r.ownership_percentage),
    personalInfo: personalInfo as BeneficialOwnerView['personalInfo'],
    kycStatus: r.kyc_status as BeneficialOwnerView['kycStatus'],
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export async function ownersOfCustomer(db: Db, platformId: string, customerId: string): Promise<BeneficialOwnerView[]> {
  return (await ownerRowsOfCustomer(db, platformId, customerId)).map(ownerView);
}
