import type { Kysely, Transaction } from 'kysely';
import type { Static } from 'typebox';
import type { DB } from '../../kernel/db/schema.js';
import type { BeneficialOwner } from '../customers/schemas.js';
import { type OwnerRow, ownerRowsOfCustomer } from './store.js';

type Db = Kysely<DB> | Transaction<DB>;
export type BeneficialOwnerView = Static<typeof BeneficialOwner>;

/** A beneficial owner as the API shows it (personal identifiers are never returned). */
export function ownerView(r: OwnerRow): BeneficialOwnerView {
  const { identifierLast4: _hidden, ...personalInfo } = JSON.parse(r.personal_info) as Record<string, unknown>;
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
