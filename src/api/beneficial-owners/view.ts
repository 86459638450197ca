import type { Kysely, Transaction } from 'kysely';
import type { Static } from 'typebox';
import type { DB } from '../../kernel/db/schema.js';
import { openSealed } from '../../kernel/sealed.js';
import { maskedIdentifier } from '../customers/identification.js';
import type { BeneficialOwner } from '../customers/schemas.js';
import { type OwnerRow, ownerRowsOfCustomer } from './store.js';

type Db = Kysely<DB> | Transaction<DB>;
export type BeneficialOwnerView = Static<typeof BeneficialOwner>;

/** The additional authenticated data of an owner's sealed identifier: its column and row. */
export function identifierContext(ownerId: string): string {
  return `beneficial_owners.identifier:${ownerId}`;
}

/**
 * A beneficial owner as the API shows it. `personalInfo.identifier`, which the reference
 * requires in every answer, is the identification number as it was sent, opened from
 * `identifier_sealed`. Rows from before migration 0017 kept only the last 4 characters, and
 * a value sealed with a data key this process does not have cannot be opened: those answer
 * the number masked (`***-**-6789` for SSN and ITIN, `****6789` otherwise).
 */
export function ownerView(r: OwnerRow): BeneficialOwnerView {
  const { identifierLast4, ...rest } = JSON.parse(r.personal_info) as Record<string, unknown>;
  const opened = r.identifier_sealed ? openSealed(r.identifier_sealed, identifierContext(r.id)) : undefined;
  const identifier = opened ?? maskedIdentifier(rest.idType as string | undefined, identifierLast4 as string | undefined);
  const personalInfo = { ...rest, identifier };
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
