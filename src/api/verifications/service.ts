import type { Kysely, Transaction } from 'kysely';
import type { Store } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { apiError, notFound } from '../../kernel/errors.js';
import { missingReference } from '../../kernel/references.js';
import { emitEvent } from '../../kernel/events.js';
import { newId } from '../../kernel/ids.js';
import { paginate, type Page } from '../../kernel/pagination.js';
import {
  businessRule,
  IDENTITY_DOCUMENT_TYPES,
  individualOutcome,
  LEGAL_PRESENCE_DOCUMENT_TYPES,
  type VerificationStatus,
} from '../../sandbox/rules/verification-rules.js';
import { businessResolvedTerminally, resolveOwnersOfBusiness } from '../beneficial-owners/service.js';
import { ownerRowsOfCustomer } from '../beneficial-owners/store.js';
import { businessFields, contactVerificationOf, emitCustomerStatus, individualFields, requireCustomer } from '../customers/service.js';
import { type CustomerRow, findCustomerForUpdate, updateCustomer } from '../customers/store.js';
import { holderDocumentTypes, markHolderDocumentsSubmitted } from '../documents/store.js';
import { platformOptions } from '../../operator/platforms/service.js';
import type { PlatformRow } from '../../operator/platforms/store.js';
import type { Verification, VerificationError } from './schemas.js';
import {
  findVerification,
  findVerificationOfCustomer,
  insertVerification,
  updateVerification,
  verificationQuery,
  type VerificationRow,
} from './store.js';
import { effectTransaction } from '../../kernel/idempotency.js';

// KYC (individuals) and KYB (businesses) submissions, following the specification's
// "Customer and verification (sandbox)" table. A submission first collects what is
// missing; an incomplete one answers RESOLVE_ERRORS and changes no status. A complete
// one is decided by the sandbox suffix rules (src/sandbox/rules/verification-rules.ts).
// Each customer has one verification record, updated by every submission.

type Db = Kysely<DB> | Transaction<DB>;

export interface VerificationDeps {
  store: Store;
}

export function verificationView(row: VerificationRow): Verification {
  return {
    id: row.id,
    customerId: row.customer_id,
    verificationStatus: row.verification_status as Verification['verificationStatus'],
    errors: JSON.parse(row.errors) as VerificationError[],
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** A final KYC/KYB result: it is never overwritten and cannot be resubmitted. */
export function isSettled(status: string): boolean {
  return status === 'APPROVED' || status === 'REJECTED';
}

/** Whether the platform asks for documents at all (the "Skip verification paperwork" option turns them off). */
function documentsRequired(platform: PlatformRow): boolean {
  return !platformOptions(platform).skipVerificationPaperwork;
}

const missingField = (resourceId: string, field: string, reason: string): VerificationError => ({ resourceId, type: 'MISSING_FIELD', field, reason });

const INDIVIDUAL_FIELDS: ReadonlyArray<[key: 'fullName' | 'birthDate' | 'nationality' | 'idType' | 'identifierLast4' | 'address', field: string, reason: string]> = [
  ['fullName', 'fullName', 'Full name is required'],
  ['birthDate', 'birthDate', 'Date of birth is required'],
  ['nationality', 'nationality', 'Nationality is required'],
  ['idType', 'idType', 'Identification type (idType) is required'],
  ['identifierLast4', 'identifier', 'Identification number (identifier) is required'],
  ['address', 'address', 'Residential address is required'],
];

const BUSINESS_FIELDS: ReadonlyArray<[key: 'legalName' | 'country' | 'taxId' | 'incorporatedOn' | 'registrationNumber', reason: string]> = [
  ['legalName', 'Legal name of the business is required'],
  ['country', 'Country of incorporation is required'],
  ['taxId', 'Tax identification number is required'],
  ['incorporatedOn', 'Date of incorporation is required'],
  ['registrationNumber', 'Registration number is required'],
];

const present = (v: unknown): boolean => v !== undefined && v !== null && v !== '';

/**
 * A full name names a given name and a family name: at least two words with a letter in
 * them. A word without letters (the sandbox suffix "001") is no name, so "Jane Doe 001"
 * passes and "Jane 001" and "Jane001" do not.
 */
export function hasGivenAndFamilyName(fullName: string): boolean {
  return fullName.trim().split(/\s+/).filter((w) => /\p{L}/u.test(w)).length >= 2;
}

/** What an individual's submission lacks: personal data, and an identity document unless paperwork is skipped. */
async function individualMissing(db: Db, platform: PlatformRow, row: CustomerRow): Promise<VerificationError[]> {
  const f = individualFields(row);
  const out: VerificationError[] = [];
  for (const [key, field, reason] of INDIVIDUAL_FIELDS) if (!present(f[key])) out.push(missingField(row.id, field, reason));
  if (present(f.fullName) && !hasGivenAndFamilyName(f.fullName!)) {
    out.unshift({ resourceId: row.id, type: 'INVALID_FIELD', field: 'fullName', reason: 'Full name must contain a given name and a family name' });
  }
  if (documentsRequired(platform)) {
    const onFile = await holderDocumentTypes(db, platform.id, row.id);
    if (!onFile.some((t) => (IDENTITY_DOCUMENT_TYPES as readonly string[]).includes(t))) {
      out.push({
        resourceId: row.id,
        type: 'MISSING_IDENTITY_DOCUMENT',
        acceptedDocumentTypes: [...IDENTITY_DOCUMENT_TYPES],
        reason: 'An identity document is required: a passport, driver\'s license or national ID',
      });
    }
  }
  return out;
}

/** The business's own data: the business info fields and its address. */
function businessFieldsMissing(row: CustomerRow): VerificationError[] {
  const f = businessFields(row);
  const info = f.businessInfo ?? {};
  const out: VerificationError[] = [];
  for (const [key, reason] of BUSINESS_FIELDS) if (!present(info[key])) out.push(missingField(row.id, `businessInfo.${key}`, reason));
  if (!present(f.address)) out.push(missingField(row.id, 'address', 'Business address (principal place of business) is required'));
  return out;
}

/** Everything a business under normal validation lacks: data, legal-presence documents (unless skipped) and owners. */
async function businessMissing(db: Db, platform: PlatformRow, row: CustomerRow): Promise<VerificationError[]> {
  const out = businessFieldsMissing(row);
  if (documentsRequired(platform)) {
    const onFile = await holderDocumentTypes(db, platform.id, row.id);
    if (!onFile.some((t) => (LEGAL_PRESENCE_DOCUMENT_TYPES as readonly string[]).includes(t))) {
      out.push({
        resourceId: row.id,
        type: 'MISSING_LEGAL_PRESENCE_DOCUMENT',
        acceptedDocumentTypes: [...LEGAL_PRESENCE_DOCUMENT_TYPES],
        reason: 'A document proving the business exists is required, such as a certificate of incorporation or a registry excerpt',
      });
    }
  }
  if ((await ownerRowsOfCustomer(db, platform.id, row.id)).length === 0) {
    out.push({ resourceId: row.id, type: 'MISSING_BENEFICIAL_OWNER', reason: 'At least one beneficial owner is required (POST /beneficial-owners)' });
  }
  return out;
}

/** The default unregulated flow: not regulated and paperwork not skipped. */
function defaultFlow(platform: PlatformRow): boolean {
  return platform.regulated !== 1 && !platformOptions(platform).skipVerificationPaperwork;
}

interface Assessment {
  verificationStatus: VerificationStatus;
  errors: VerificationError[];
  /** The customer's kycStatus / kybStatus after the submission. */
  status: string;
  /** Nothing was missing: the submission went in with the holder's documents. */
  complete: boolean;
}

function incomplete(row: CustomerRow, errors: VerificationError[]): Assessment {
  return { verificationStatus: 'RESOLVE_ERRORS', errors, status: row.status, complete: false };
}

async function assessIndividual(db: Db, platform: PlatformRow, row: CustomerRow): Promise<Assessment> {
  const missing = await individualMissing(db, platform, row);
  if (missing.length > 0) return incomplete(row, missing);
  const outcome = individualOutcome(individualFields(row).fullName);
  const errors: VerificationError[] = outcome.poorQualityDocument
    ? [{ resourceId: row.id, type: 'POOR_QUALITY_DOCUMENT', reason: 'The identity document could not be read: upload a clearer image of it and resubmit' }]
    : [];
  return { verificationStatus: outcome.verificationStatus, errors, status: outcome.kycStatus, complete: true };
}

async function assessBusiness(db: Db, platform: PlatformRow, row: CustomerRow): Promise<Assessment> {
  const rule = businessRule(businessFields(row).businessInfo?.registrationNumber);
  if (rule === 'APPROVE') return { verificationStatus: 'APPROVED', errors: [], status: 'APPROVED', complete: true };
  if (rule === 'REJECT') {
    // Data and documents are not validated; the default flow still reports missing data first.
    const missing = defaultFlow(platform) ? businessFieldsMissing(row) : [];
    if (missing.length > 0) return incomplete(row, missing);
    return { verificationStatus: 'REJECTED', errors: [], status: 'REJECTED', complete: true };
  }
  const missing = await businessMissing(db, platform, row);
  if (missing.length > 0) return incomplete(row, missing);
  return { verificationStatus: 'PENDING_MANUAL_REVIEW', errors: [], status: 'PENDING', complete: true };
}

function settledError(row: CustomerRow): never {
  const which = row.customer_type === 'BUSINESS' ? 'kybStatus' : 'kycStatus';
  throw apiError(400, 'INVALID_INPUT', `The verification result of customer ${row.id} is settled (${which} ${row.status}) and cannot be resubmitted`, {
    customerId: row.id,
    [which]: row.status,
    errors: [{ field: 'customerId', message: `has a settled verification result (${which} ${row.status})` }],
  });
}

/** Customers whose provider mandates contact verification (EU) verify each channel on file first. */
function requireContactVerified(row: CustomerRow): void {
  const cv = contactVerificationOf(row);
  if (!cv) return;
  const channels = (['email', 'phone'] as const).filter((c) => cv[c] !== undefined && cv[c] !== 'VERIFIED');
  if (channels.length > 0) {
    throw apiError(409, 'CONFLICT', `Customer ${row.id} must verify their ${channels.join(' and ')} before KYC can be submitted`, {
      customerId: row.id,
      unverifiedChannels: channels,
    });
  }
}

/**
 * Submit a customer for KYC/KYB verification: POST /verifications, and the hosted KYC page.
 * Returns the customer's verification record, created on the first submission and updated
 * by each one after. Status changes and their events commit together.
 */
export async function submitVerification(deps: VerificationDeps, platform: PlatformRow, at: string, customerId: string): Promise<Verification> {
  const { store } = deps;
  const found = await requireCustomer(store.db, platform.id, customerId);
  if (found.is_deleted === 1) throw missingReference('USER_NOT_FOUND', 'Customer', customerId, 'customerId', true);
  return effectTransaction(store.db, async (trx) => {
    // Under the customer's row lock: two submissions of one customer run one after the other.
    const row = (await findCustomerForUpdate(trx, platform.id, found.id, store.kind === 'postgres'))!;
    if (isSettled(row.status)) settledError(row);
    const business = row.customer_type === 'BUSINESS';
    if (!business) requireContactVerified(row);
    const result = business ? await assessBusiness(trx, platform, row) : await assessIndividual(trx, platform, row);

    let record = await findVerificationOfCustomer(trx, platform.id, row.id);
    const errors = JSON.stringify(result.errors);
    if (record) {
      await updateVerification(trx, record.id, { verification_status: result.verificationStatus, errors, updated_at: at });
      record = { ...record, verification_status: result.verificationStatus, errors, updated_at: at };
    } else {
      record = { id: newId('Verification'), platform_id: platform.id, customer_id: row.id, verification_status: result.verificationStatus, errors, created_at: at, updated_at: at };
      await insertVerification(trx, record);
    }

    if (result.complete) {
      await markHolderDocumentsSubmitted(trx, platform.id, row.id);
      if (business) for (const owner of await ownerRowsOfCustomer(trx, platform.id, row.id)) await markHolderDocumentsSubmitted(trx, platform.id, owner.id);
    }
    if (business && businessResolvedTerminally(result.status)) await resolveOwnersOfBusiness(trx, platform.id, row.id, at);

    const view = verificationView(record);
    await emitEvent(trx, platform.id, at, { type: `VERIFICATION.${view.verificationStatus}`, resourceId: view.id, data: view });
    if (result.status !== row.status) {
      await updateCustomer(trx, row.id, { status: result.status, updated_at: at });
      await emitCustomerStatus(trx, { ...row, status: result.status, updated_at: at }, at);
    }
    return view;
  });
}

/**
 * What a customer still has to provide before a submission is complete, as the
 * verification errors a submission would report now (for the hosted KYC page).
 * Empty when nothing is missing, when the customer's result is settled, and for
 * businesses whose sandbox rule skips validation.
 */
export async function pendingItems(deps: VerificationDeps, platform: PlatformRow, customerId: string): Promise<VerificationError[]> {
  const db = deps.store.db;
  const row = await requireCustomer(db, platform.id, customerId);
  if (isSettled(row.status)) return [];
  if (row.customer_type !== 'BUSINESS') return individualMissing(db, platform, row);
  const rule = businessRule(businessFields(row).businessInfo?.registrationNumber);
  if (rule === 'APPROVE') return [];
  if (rule === 'REJECT') return defaultFlow(platform) ? businessFieldsMissing(row) : [];
  return businessMissing(db, platform, row);
}

export async function getVerification(db: Kysely<DB>, platformId: string, id: string): Promise<Verification> {
  const row = await findVerification(db, platformId, id);
  if (!row) throw notFound('REFERENCE_NOT_FOUND', 'Verification', id);
  return verificationView(row);
}

export async function listVerifications(
  db: Kysely<DB>,
  platformId: string,
  filter: { customerId?: string | undefined; verificationStatus?: string | undefined },
  page: { limit?: number | undefined; cursor?: string | undefined },
): Promise<Page<Verification>> {
  return paginate<VerificationRow, Verification>(verificationQuery(db, platformId, filter), 'id', page, verificationView);
}
