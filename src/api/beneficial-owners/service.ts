import type { Kysely, Transaction } from 'kysely';
import type { Store } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { FieldErrors, notFound } from '../../kernel/errors.js';
import { missingReference } from '../../kernel/references.js';
import { newId } from '../../kernel/ids.js';
import type { Sealer } from '../../kernel/sealed.js';
import { paginate, type Page } from '../../kernel/pagination.js';
import { ownerOutcome } from '../../sandbox/rules/verification-rules.js';
import { checkIdentification, identifierLast4 } from '../customers/identification.js';
import { findCustomer, findCustomerForUpdate } from '../customers/store.js';
import type { PlatformRow } from '../../operator/platforms/store.js';
import type { BeneficialOwnerCreateRequest, BeneficialOwnerUpdateRequest, PersonalInfoUpdate } from './schemas.js';
import { findOwner, insertOwner, type OwnerRow, ownerQuery, ownerRowsOfCustomer, updateOwner } from './store.js';
import { type BeneficialOwnerView, identifierContext, ownerView } from './view.js';
import { effectTransaction } from '../../kernel/idempotency.js';

type Db = Kysely<DB> | Transaction<DB>;

/**
 * What `personal_info` keeps: the personal data, with the identifier only as its last 4
 * characters (the masked answer when the sealed number cannot be opened); the full number is
 * sealed in `identifier_sealed`.
 */
export interface StoredPersonalInfo {
  firstName: string;
  middleName?: string;
  lastName: string;
  birthDate: string;
  nationality: string;
  email?: string;
  phoneNumber?: string;
  address: Record<string, unknown>;
  idType: string;
  identifierLast4: string;
  countryOfIssuance?: string;
}

export interface OwnerDeps {
  store: Store;
  sealer: Sealer;
}

/** A business's final KYB results; its owners then resolve by their last name's suffix. */
export function businessResolvedTerminally(kybStatus: string): boolean {
  return kybStatus === 'APPROVED' || kybStatus === 'REJECTED';
}

/** Rules JSON schema cannot say: the identifier against its idType, and where it was issued. */
function checkPersonalInfo(info: PersonalInfoUpdate, existing: StoredPersonalInfo | undefined, errors: FieldErrors): void {
  checkIdentification(info, existing, 'personalInfo.', (field, message, constraint) => errors.add(field, message, constraint));
}

const PLAIN_FIELDS = ['firstName', 'middleName', 'lastName', 'birthDate', 'nationality', 'email', 'phoneNumber', 'address', 'idType', 'countryOfIssuance'] as const;

/** Merge written personal info over what is stored, field by field; the identifier is kept as its last 4. */
function mergePersonalInfo(base: Partial<StoredPersonalInfo>, info: PersonalInfoUpdate): StoredPersonalInfo {
  const merged: Record<string, unknown> = { ...base };
  for (const k of PLAIN_FIELDS) {
    const v = info[k];
    if (v !== undefined) merged[k] = v;
  }
  if (info.identifier !== undefined) merged.identifierLast4 = identifierLast4(info.identifier);
  if ((merged.idType === 'SSN' || merged.idType === 'ITIN') && merged.countryOfIssuance === undefined) merged.countryOfIssuance = 'US';
  return merged as unknown as StoredPersonalInfo;
}

export function personalInfoOf(row: OwnerRow): StoredPersonalInfo {
  return JSON.parse(row.personal_info) as StoredPersonalInfo;
}

export async function createOwner(deps: OwnerDeps, platform: PlatformRow, at: string, body: BeneficialOwnerCreateRequest): Promise<BeneficialOwnerView> {
  const { store } = deps;
  const customer = await findCustomer(store.db, platform.id, body.customerId);
  if (!customer) throw notFound('USER_NOT_FOUND', 'Customer', body.customerId);
  const errors = new FieldErrors();
  if (customer.customer_type !== 'BUSINESS') {
    errors.add('customerId', `must be a BUSINESS customer; ${body.customerId} is ${customer.customer_type}`, { enum: ['BUSINESS'] });
  }
  checkPersonalInfo(body.personalInfo, undefined, errors);
  errors.throwIfAny();
  if (customer.is_deleted === 1) throw missingReference('USER_NOT_FOUND', 'Customer', body.customerId, 'customerId', true);

  return effectTransaction(store.db, async (trx) => {
    // Read the business's status under its row lock, so an owner added while the
    // business resolves is resolved by one of the two.
    const business = (await findCustomerForUpdate(trx, platform.id, customer.id, store.kind === 'postgres'))!;
    const personalInfo = mergePersonalInfo({}, body.personalInfo);
    const id = newId('BeneficialOwner');
    const row: OwnerRow = {
      id,
      platform_id: platform.id,
      customer_id: customer.id,
      roles: JSON.stringify(body.roles),
      ownership_percentage: body.ownershipPercentage,
      personal_info: JSON.stringify(personalInfo),
      identifier_sealed: deps.sealer.seal(body.personalInfo.identifier, identifierContext(id)),
      kyc_status: businessResolvedTerminally(business.status) ? ownerOutcome(personalInfo.lastName) : 'UNVERIFIED',
      created_at: at,
      updated_at: at,
    };
    await insertOwner(trx, row);
    return ownerView(row);
  });
}

export async function requireOwner(db: Db, platformId: string, id: string): Promise<OwnerRow> {
  const row = await findOwner(db, platformId, id);
  if (!row) throw notFound('REFERENCE_NOT_FOUND', 'Beneficial owner', id);
  return row;
}

export async function getOwner(db: Kysely<DB>, platformId: string, id: string): Promise<BeneficialOwnerView> {
  return ownerView(await requireOwner(db, platformId, id));
}

export async function listOwners(
  db: Kysely<DB>,
  platformId: string,
  filter: { customerId?: string | undefined },
  page: { limit?: number | undefined; cursor?: string | undefined },
): Promise<Page<BeneficialOwnerView>> {
  return paginate<OwnerRow, BeneficialOwnerView>(ownerQuery(db, platformId, filter), 'id', page, ownerView);
}

/** Partial update; personal info is merged field by field. The KYC status is not touched. */
export async function updateOwnerById(deps: OwnerDeps, platform: PlatformRow, at: string, id: string, body: BeneficialOwnerUpdateRequest): Promise<BeneficialOwnerView> {
  const { store } = deps;
  const current = await requireOwner(store.db, platform.id, id);
  const errors = new FieldErrors();
  if (body.personalInfo) checkPersonalInfo(body.personalInfo, personalInfoOf(current), errors);
  errors.throwIfAny();
  return store.db.transaction().execute(async (trx) => {
    const row = (await findOwner(trx, platform.id, id))!;
    const patch: Parameters<typeof updateOwner>[2] = { updated_at: at };
    if (body.roles !== undefined) patch.roles = JSON.stringify(body.roles);
    if (body.ownershipPercentage !== undefined) patch.ownership_percentage = body.ownershipPercentage;
    if (body.personalInfo !== undefined) patch.personal_info = JSON.stringify(mergePersonalInfo(personalInfoOf(row), body.personalInfo));
    if (body.personalInfo?.identifier !== undefined) patch.identifier_sealed = deps.sealer.seal(body.personalInfo.identifier, identifierContext(id));
    await updateOwner(trx, id, patch);
    return ownerView({ ...row, ...patch });
  });
}

/**
 * The business resolved terminally (APPROVED or REJECTED): every owner not yet resolved
 * takes the outcome of its last name's suffix. Call inside the transaction that resolves
 * the business.
 */
export async function resolveOwnersOfBusiness(db: Db, platformId: string, customerId: string, at: string): Promise<void> {
  for (const owner of await ownerRowsOfCustomer(db, platformId, customerId)) {
    if (owner.kyc_status !== 'UNVERIFIED') continue;
    await updateOwner(db, owner.id, { kyc_status: ownerOutcome(personalInfoOf(owner).lastName), updated_at: at });
  }
}
