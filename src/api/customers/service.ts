import type { Kysely, Transaction } from 'kysely';
import type { Store } from '../../kernel/db/connect.js';
import { isUniqueViolation } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { ApiError, apiError, type FieldConstraint, type FieldError, FieldErrors, invalidInput, notFound } from '../../kernel/errors.js';
import { missingReference } from '../../kernel/references.js';
import { emitEvent } from '../../kernel/events.js';
import { effectTransaction } from '../../kernel/idempotency.js';
import type { Hooks } from '../../kernel/hooks.js';
import { newId, randomHex } from '../../kernel/ids.js';
import { paginate, type Page } from '../../kernel/pagination.js';
import { keptCount } from '../../kernel/db/list-counts.js';
import { providerMandatesCustomerAuthentication } from '../../sandbox/rules/customer-authentication.js';
import { END_USER_TERMS_VERSIONS, individualOutcome } from '../../sandbox/rules/verification-rules.js';
import { platformSettings } from '../config/service.js';
import { platformOptions } from '../../operator/platforms/service.js';
import type { PlatformRow } from '../../operator/platforms/store.js';
import { ownersOfCustomer } from '../beneficial-owners/view.js';
import type { Address, BusinessInfo, Customer, CustomerCreateRequest, CustomerUpdateRequest, EndUserTermsConsent, IndividualWrite } from './schemas.js';
import { CustomerCreateRequest as CustomerCreateRequestSchema, EDD_FIELD_NAMES } from './schemas.js';
import { checkSchema } from '../../kernel/validation.js';
import { checkIdentification, identifierLast4 } from './identification.js';
import {
  activePlatformCustomerIdTaken,
  type CustomerFilter,
  customerQuery,
  type CustomerRow,
  findCustomer,
  findCustomerForUpdate,
  insertCustomer,
  insertCustomers,
  markCustomerDeleted,
  takenPlatformCustomerIds,
  takenUmaAddresses,
  umaAddressTaken,
  updateCustomer as updateCustomerRow,
} from './store.js';

type Db = Kysely<DB> | Transaction<DB>;

/** What the customers row keeps in `fields`: the type's own data. Identifiers only as their last 4. */
export interface IndividualFields {
  fullName?: string;
  birthDate?: string;
  nationality?: string;
  address?: Address;
  idType?: string;
  identifierLast4?: string;
  countryOfIssuance?: string;
  [edd: string]: unknown;
}

export interface BusinessFields {
  address?: Address;
  businessInfo?: Partial<BusinessInfo>;
}

export function individualFields(row: CustomerRow): IndividualFields {
  return JSON.parse(row.fields) as IndividualFields;
}

export function businessFields(row: CustomerRow): BusinessFields {
  return JSON.parse(row.fields) as BusinessFields;
}

export function contactVerificationOf(row: CustomerRow): { email?: 'PENDING' | 'VERIFIED'; phone?: 'PENDING' | 'VERIFIED' } | undefined {
  return row.contact_verification ? (JSON.parse(row.contact_verification) as { email?: 'PENDING' | 'VERIFIED'; phone?: 'PENDING' | 'VERIFIED' }) : undefined;
}

/** The service check the quotes area uses: has the customer's acceptance of the end-user terms been recorded? */
export function hasEndUserTermsOnFile(row: CustomerRow): boolean {
  return row.end_user_terms_consent !== null;
}

export async function customerView(db: Db, row: CustomerRow): Promise<Customer> {
  const v: Customer = {
    id: row.id,
    platformCustomerId: row.platform_customer_id,
    customerType: row.customer_type as Customer['customerType'],
    umaAddress: row.uma_address,
    currencies: JSON.parse(row.currencies) as string[],
    isDeleted: row.is_deleted === 1,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
  if (row.region) v.region = row.region;
  if (row.email) v.email = row.email;
  if (row.phone_number) v.phoneNumber = row.phone_number;
  if (row.end_user_terms_consent) v.endUserTermsConsent = JSON.parse(row.end_user_terms_consent) as EndUserTermsConsent;
  const cv = contactVerificationOf(row);
  // Only the channel statuses: the JSON also keeps where a code was last sent (contact-verification area).
  if (cv) v.contactVerification = { ...(cv.email ? { email: cv.email } : {}), ...(cv.phone ? { phone: cv.phone } : {}) };
  if (row.customer_type === 'INDIVIDUAL') {
    const { identifierLast4: _hidden, ...fields } = individualFields(row);
    Object.assign(v, fields);
    v.kycStatus = row.status as Customer['kycStatus'];
  } else {
    const f = businessFields(row);
    if (f.address) v.address = f.address;
    if (f.businessInfo) v.businessInfo = f.businessInfo;
    v.kybStatus = row.status as Customer['kybStatus'];
    v.beneficialOwners = await ownersOfCustomer(db, row.platform_id, row.id);
  }
  return v;
}

/** The CUSTOMER.* webhook type for a KYC/KYB status, if that status is announced. */
export function customerStatusEventType(customerType: string, status: string): string | undefined {
  if (!['APPROVED', 'REJECTED', 'PENDING'].includes(status)) return undefined;
  return `CUSTOMER.${customerType === 'BUSINESS' ? 'KYB' : 'KYC'}_${status}`;
}

/**
 * The status event of `row`, if its status is announced; `view` is the row's customerView when
 * the caller has it. Stored as text, not packed (kernel/event-bodies.ts, version 3): packing
 * was about a tenth of a `POST /customers` (issue 35), and a customer's events have no bytes target.
 */
export async function emitCustomerStatus(db: Db, row: CustomerRow, at: string, view?: Customer): Promise<void> {
  const type = customerStatusEventType(row.customer_type, row.status);
  if (type) await emitEvent(db, row.platform_id, at, { type, resourceId: row.id, data: view ?? (await customerView(db, row)), packed: false });
}

/**
 * Rules JSON schema cannot say: identifiers per idType, platform currencies. The body may
 * have failed the schema (its errors are already in `errors`, so one 400 lists every
 * invalid field): it is read defensively, and a field the schema already reported is not
 * reported twice.
 */
function checkCustomerFields(body: unknown, existing: IndividualFields | undefined, errors: FieldErrors, supported: string[]): void {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return;
  const b = body as Record<string, unknown>;
  const str = (k: string): string | undefined => (typeof b[k] === 'string' ? (b[k] as string) : undefined);
  const reported = new Set(errors.list.map((e) => e.field));
  const add = (field: string, message: string, constraint: FieldConstraint): void => {
    if (!reported.has(field)) errors.add(field, message, constraint);
  };
  if (Array.isArray(b.currencies)) {
    b.currencies.forEach((c, i) => {
      if (typeof c === 'string' && !supported.includes(c)) add(`currencies.${i}`, `${c} is not a supported currency of this platform`, { enum: supported });
    });
  }
  if (b.customerType !== 'INDIVIDUAL') return;
  checkIdentification({ idType: str('idType'), identifier: str('identifier'), countryOfIssuance: str('countryOfIssuance') }, existing, '', add);
}

/** An update's checks against its customer (undefined: unknown id): the type it must keep, then checkCustomerFields. */
function checkUpdateFields(body: unknown, row: CustomerRow | undefined, errors: FieldErrors, supported: string[]): void {
  const type = typeof body === 'object' && body !== null ? (body as { customerType?: unknown }).customerType : undefined;
  if (row && typeof type === 'string' && type !== row.customer_type && !errors.list.some((e) => e.field === 'customerType')) {
    errors.add('customerType', `must be ${row.customer_type}, the type of this customer`, { enum: [row.customer_type] });
  }
  checkCustomerFields(body, row?.customer_type === 'INDIVIDUAL' ? individualFields(row) : undefined, errors, supported);
}

async function supportedCurrencies(db: Db, platform: PlatformRow): Promise<string[]> {
  return [...(await platformSettings(db, platform.id)).supportedCurrencies];
}

function fieldErrorsWith(prior: readonly FieldError[]): FieldErrors {
  const errors = new FieldErrors();
  errors.list.push(...prior);
  return errors;
}

/**
 * A create body its schema refused (the route checks it before validation): one 400 that
 * lists the schema's problems together with the service's own, so a client sees every
 * invalid field at once. Always throws.
 */
export async function rejectCreateBody(deps: CustomerDeps, platform: PlatformRow, body: unknown, schemaErrors: readonly FieldError[]): Promise<never> {
  const errors = fieldErrorsWith(schemaErrors);
  checkCustomerFields(body, undefined, errors, await supportedCurrencies(deps.store.db, platform));
  throw invalidInput(errors.list);
}

/** The same for an update body; a 400 comes before the customer's 404 (unknown or deleted), as schema errors always did. Always throws. */
export async function rejectUpdateBody(deps: CustomerDeps, platform: PlatformRow, id: string, body: unknown, schemaErrors: readonly FieldError[]): Promise<never> {
  const errors = fieldErrorsWith(schemaErrors);
  checkUpdateFields(body, await findCustomer(deps.store.db, platform.id, id), errors, await supportedCurrencies(deps.store.db, platform));
  throw invalidInput(errors.list);
}

function checkConsent(consent: EndUserTermsConsent | undefined): void {
  if (consent && !(END_USER_TERMS_VERSIONS as readonly string[]).includes(consent.termsVersion)) {
    throw apiError(400, 'END_USER_TERMS_VERSION_NOT_FOUND', `End-user terms version ${consent.termsVersion} is not supported; the current version is ${END_USER_TERMS_VERSIONS[0]}`, {
      field: 'endUserTermsConsent.termsVersion',
      supportedVersions: [...END_USER_TERMS_VERSIONS],
    });
  }
}

function slug(s: string): string {
  return s.toLowerCase().normalize('NFKD').replace(/[^a-z0-9]+/g, '.').replace(/^\.+|\.+$/g, '').slice(0, 40) || 'customer';
}

function splitIndividual(body: Partial<IndividualWrite>, base: IndividualFields): IndividualFields {
  const f: IndividualFields = { ...base };
  for (const k of ['fullName', 'birthDate', 'nationality', 'address', 'idType', 'countryOfIssuance', ...EDD_FIELD_NAMES] as const) {
    const v = (body as Record<string, unknown>)[k];
    if (v !== undefined) f[k] = v;
  }
  if (body.identifier !== undefined) f.identifierLast4 = identifierLast4(body.identifier);
  if ((f.idType === 'SSN' || f.idType === 'ITIN') && f.countryOfIssuance === undefined) f.countryOfIssuance = 'US';
  return f;
}

export interface CustomerDeps {
  store: Store;
  hooks: Hooks;
}

export async function createCustomer(deps: CustomerDeps, platform: PlatformRow, at: string, body: CustomerCreateRequest): Promise<Customer> {
  const { store } = deps;
  const settings = await createSettings(store.db, platform);
  const supported = settings.supported;
  const errors = new FieldErrors();
  checkCustomerFields(body, undefined, errors, supported);
  errors.throwIfAny();
  checkConsent(body.endUserTermsConsent);
  // A value the service generates (the UMA address, the platformCustomerId) never answers
  // 409: one that is taken (by another customer, or by a create racing this one) is drawn
  // again, with a longer random part after a few draws. Only a value the request names can
  // conflict (docs/decisions.md, issue 15).
  const generatedUma = body.umaAddress === undefined;
  const generatedPcid = body.platformCustomerId === undefined;
  for (let attempt = 0; ; attempt++) {
    const row = newCustomerRow(platform, settings, at, body, attempt);
    const retry = attempt < MAX_GENERATION_ATTEMPTS - 1;
    try {
      // The answer is stored under the request's Idempotency-Key with the customer (kernel/idempotency.ts).
      // No look-up of the two identifiers first (issue 35): the unique indexes on
      // (platform_id, platform_customer_id) of live customers and on uma_address refuse a
      // taken one, and the insert's failure is told apart below, in the order the checks had.
      return await effectTransaction(store.db, (trx) => insertNewCustomer(deps.hooks, trx, platform, row, at, { checked: true }));
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      // A taken identifier, already stored or written by a create racing this one: a
      // generated one is drawn again, one the request names answers 409 (platformCustomerId first).
      if (await activePlatformCustomerIdTaken(store.db, platform.id, row.platform_customer_id)) {
        if (generatedPcid && retry) continue;
        throw platformCustomerIdConflict(row.platform_customer_id);
      }
      if (await umaAddressTaken(store.db, row.uma_address)) {
        if (generatedUma && retry) continue;
        throw umaAddressConflict(row.uma_address);
      }
      // The row that took it is gone again (its transaction rolled back, or it was deleted): try once more.
      if (retry) continue;
      throw generatedUma ? platformCustomerIdConflict(row.platform_customer_id) : umaAddressConflict(row.uma_address);
    }
  }
}

/** Draws of a generated value before giving up (each later draw is 64 random bits: never reached in practice). */
export const MAX_GENERATION_ATTEMPTS = 8;

/**
 * The random parts of generated customer values: the UMA address's suffix (3 random bytes,
 * as before, for a short readable address; 8 bytes from the fourth draw) and the
 * platformCustomerId's (8 bytes; 12 from the fourth draw). An object so a test can force a collision.
 */
export const generatedParts = {
  umaSuffix(attempt: number): string {
    return randomHex(attempt < 3 ? 3 : 8);
  },
  platformCustomerIdSuffix(attempt: number): string {
    return randomHex(attempt < 3 ? 8 : 12);
  },
};

/** What a create needs of the platform's configuration: its currencies and UMA domain. */
export interface CreateSettings {
  supported: string[];
  umaDomain: string;
}

export async function createSettings(db: Db, platform: PlatformRow): Promise<CreateSettings> {
  const config = await platformSettings(db, platform.id);
  return { supported: [...config.supportedCurrencies], umaDomain: config.umaDomain };
}

/**
 * Every problem of a create body, as `POST /customers` reports them: the schema's, then the
 * service's own (identifiers, currencies, the end-user terms version). Empty when the body
 * is valid. For callers that create customers from other input (the bulk CSV import).
 */
export function customerCreateErrors(body: unknown, settings: CreateSettings): FieldError[] {
  const errors = fieldErrorsWith(checkSchema(CustomerCreateRequestSchema, body));
  checkCustomerFields(body, undefined, errors, settings.supported);
  if (errors.list.length === 0) {
    try {
      checkConsent((body as CustomerCreateRequest).endUserTermsConsent);
    } catch {
      errors.add('endUserTermsConsent.termsVersion', `is not a supported version; the current version is ${END_USER_TERMS_VERSIONS[0]}`, { enum: [...END_USER_TERMS_VERSIONS] });
    }
  }
  return errors.list;
}

/** The row a valid create body becomes (status, generated ids, currencies). */
export function newCustomerRow(platform: PlatformRow, settings: CreateSettings, at: string, body: CustomerCreateRequest, attempt = 0): CustomerRow {
  const individual = body.customerType === 'INDIVIDUAL';
  const options = platformOptions(platform);
  const fields: IndividualFields | BusinessFields = individual
    ? splitIndividual(body, {})
    : { ...(body.address ? { address: body.address } : {}), businessInfo: body.businessInfo };
  // Regulated platforms, and platforms that skip verification paperwork, resolve
  // individuals at create by the name's suffix; everyone else starts UNVERIFIED.
  const status = individual && (platform.regulated === 1 || options.skipVerificationPaperwork) ? individualOutcome(body.fullName).kycStatus : 'UNVERIFIED';
  const region = body.region ?? null;
  const contact =
    providerMandatesCustomerAuthentication(region)
      ? JSON.stringify({ ...(body.email ? { email: 'PENDING' } : {}), ...(body.phoneNumber ? { phone: 'PENDING' } : {}) })
      : null;
  const id = newId('Customer');
  const name = individual ? body.fullName : body.businessInfo.legalName;
  const umaAddress = body.umaAddress ?? `$${slug(name ?? 'customer')}.${generatedParts.umaSuffix(attempt)}@${settings.umaDomain}`;
  return {
    id,
    platform_id: platform.id,
    customer_type: body.customerType,
    platform_customer_id: body.platformCustomerId ?? `cust_${generatedParts.platformCustomerIdSuffix(attempt)}`,
    uma_address: umaAddress,
    region,
    email: body.email ?? null,
    phone_number: body.phoneNumber ?? null,
    // No list in the request: every currency configured on the platform (an explicit list wins).
    currencies: JSON.stringify(body.currencies ?? settings.supported),
    status,
    fields: JSON.stringify(fields),
    end_user_terms_consent: body.endUserTermsConsent ? JSON.stringify(body.endUserTermsConsent) : null,
    contact_verification: contact,
    is_deleted: 0,
    // Its accounts are opened with it (or when its end-user terms arrive): nothing for start-up to check.
    accounts_unchecked: 0,
    created_at: at,
    updated_at: at,
  };
}

export function platformCustomerIdConflict(platformCustomerId: string): ApiError {
  return apiError(409, 'CONFLICT', `platformCustomerId ${platformCustomerId} is already used by another customer of this platform`, { field: 'platformCustomerId' });
}

export function umaAddressConflict(umaAddress: string): ApiError {
  return apiError(409, 'UMA_ADDRESS_EXISTS', `UMA address ${umaAddress} is already taken`, { field: 'umaAddress' });
}

/**
 * Which of these identifiers are taken, in one query each (a batch of creates checks them
 * at once, then inserts with `checked`): platformCustomerIds of the platform's live
 * customers, UMA addresses of any customer.
 */
export async function takenIdentifiers(db: Db, platformId: string, platformCustomerIds: string[], umaAddresses: string[]): Promise<{ platformCustomerIds: Set<string>; umaAddresses: Set<string> }> {
  return { platformCustomerIds: await takenPlatformCustomerIds(db, platformId, platformCustomerIds), umaAddresses: await takenUmaAddresses(db, umaAddresses) };
}

/**
 * Insert many new customers whose identifiers the caller checked (takenIdentifiers), in
 * multi-row statements, then for each the other areas' hooks and its status event, as
 * insertNewCustomer does.
 */
export async function insertNewCustomers(hooks: Hooks, trx: Transaction<DB>, platform: PlatformRow, rows: CustomerRow[], at: string): Promise<void> {
  await insertCustomers(trx, rows);
  for (const row of rows) {
    await hooks.emitCustomerCreated({ trx, platform, customerId: row.id, currencies: JSON.parse(row.currencies) as string[], endUserTermsOnFile: hasEndUserTermsOnFile(row), email: row.email, at });
    await emitCustomerStatus(trx, row, at);
  }
}

/**
 * Insert a new customer inside the caller's transaction: 409 when its platformCustomerId or
 * UMA address is taken (unless the caller `checked` them, or lets the unique indexes refuse
 * them), then the row, the other areas' hooks (its internal accounts) and its status event.
 * Answers the customer's view.
 */
export async function insertNewCustomer(
  hooks: Hooks,
  trx: Transaction<DB>,
  platform: PlatformRow,
  row: CustomerRow,
  at: string,
  opts: { checked?: boolean } = {},
): Promise<Customer> {
  if (!opts.checked) {
    if (await activePlatformCustomerIdTaken(trx, platform.id, row.platform_customer_id)) throw platformCustomerIdConflict(row.platform_customer_id);
    if (await umaAddressTaken(trx, row.uma_address)) throw umaAddressConflict(row.uma_address);
  }
  await insertCustomer(trx, row);
  await hooks.emitCustomerCreated({ trx, platform, customerId: row.id, currencies: JSON.parse(row.currencies) as string[], endUserTermsOnFile: hasEndUserTermsOnFile(row), email: row.email, at });
  // One view for the status event and the answer (they were built twice).
  const view = await customerView(trx, row);
  await emitCustomerStatus(trx, row, at, view);
  return view;
}

export async function requireCustomer(db: Db, platformId: string, id: string): Promise<CustomerRow> {
  const row = await findCustomer(db, platformId, id);
  if (!row) throw notFound('USER_NOT_FOUND', 'Customer', id);
  return row;
}

export async function getCustomer(db: Kysely<DB>, platformId: string, id: string): Promise<Customer> {
  const row = await requireCustomer(db, platformId, id);
  // An individual's view is a function of its row alone; a business's also reads its owners.
  if (row.customer_type !== 'INDIVIDUAL' || !Object.isFrozen(row)) return customerView(db, row);
  let view = individualViews.get(row);
  if (!view) individualViews.set(row, (view = Object.freeze(await customerView(db, row))));
  return view;
}

/**
 * The views of rows read through the customers' TableCache (frozen, shared by requests): a
 * row object stands for one version of its customer (a change is a new object), so its view
 * is built once (issue 35). Frozen: shared by the answers (the route keeps its JSON text too).
 */
const individualViews = new WeakMap<CustomerRow, Customer>();

export async function listCustomers(db: Kysely<DB>, platformId: string, filter: CustomerFilter, page: { limit?: number | undefined; cursor?: string | undefined }): Promise<Page<Customer>> {
  // The unfiltered list (deleted customers in or out) reads its kept count: O(1), exact.
  const unfiltered = Object.entries(filter).every(([k, v]) => k === 'isIncludingDeleted' || v === undefined);
  const kept = unfiltered ? () => keptCount(db, platformId, { list: 'customers', scope: filter.isIncludingDeleted ? 'all' : 'live' }) : undefined;
  const rows = await paginate<CustomerRow, CustomerRow>(customerQuery(db, platformId, filter), 'id', page, (r) => r, kept);
  return { ...rows, data: await Promise.all(rows.data.map((r) => customerView(db, r))) };
}

/** Partial update. Settled KYC/KYB results are never overwritten: no field here changes the status. */
export async function updateCustomer(deps: CustomerDeps, platform: PlatformRow, at: string, id: string, body: CustomerUpdateRequest): Promise<Customer> {
  const { store } = deps;
  const current = await requireCustomer(store.db, platform.id, id);
  if (current.is_deleted === 1) throw missingReference('USER_NOT_FOUND', 'Customer', id, 'customerId', true);
  const errors = new FieldErrors();
  checkUpdateFields(body, current, errors, await supportedCurrencies(store.db, platform));
  errors.throwIfAny();
  checkConsent(body.endUserTermsConsent);

  try {
    return await store.db.transaction().execute(async (trx) => {
      const row = (await findCustomerForUpdate(trx, platform.id, id, store.kind === 'postgres'))!;
      if (row.is_deleted === 1) throw missingReference('USER_NOT_FOUND', 'Customer', id, 'customerId', true); // deleted meanwhile
      const patch: Parameters<typeof updateCustomerRow>[2] = { updated_at: at };
      if (body.platformCustomerId !== undefined && body.platformCustomerId !== row.platform_customer_id) {
        if (await activePlatformCustomerIdTaken(trx, platform.id, body.platformCustomerId, id)) {
          throw apiError(409, 'CONFLICT', `platformCustomerId ${body.platformCustomerId} is already used by another customer of this platform`, { field: 'platformCustomerId' });
        }
        patch.platform_customer_id = body.platformCustomerId;
      }
      if (body.umaAddress !== undefined && body.umaAddress !== row.uma_address) {
        if (await umaAddressTaken(trx, body.umaAddress, id)) throw apiError(409, 'UMA_ADDRESS_EXISTS', `UMA address ${body.umaAddress} is already taken`, { field: 'umaAddress' });
        patch.uma_address = body.umaAddress;
      }
      if (body.region !== undefined) patch.region = body.region;
      if (body.currencies !== undefined) patch.currencies = JSON.stringify(body.currencies);
      if (body.endUserTermsConsent !== undefined) patch.end_user_terms_consent = JSON.stringify(body.endUserTermsConsent);
      const cv = contactVerificationOf(row);
      if (body.email !== undefined && body.email !== row.email) {
        patch.email = body.email;
        if (cv) cv.email = 'PENDING'; // a new address must be verified again
      }
      if (body.phoneNumber !== undefined && body.phoneNumber !== row.phone_number) {
        patch.phone_number = body.phoneNumber;
        if (cv) cv.phone = 'PENDING';
      }
      if (cv) patch.contact_verification = JSON.stringify(cv);
      if (body.customerType === 'INDIVIDUAL') {
        patch.fields = JSON.stringify(splitIndividual(body, individualFields(row)));
      } else {
        const f = businessFields(row);
        if (body.address !== undefined) f.address = body.address;
        if (body.businessInfo !== undefined) f.businessInfo = { ...f.businessInfo, ...body.businessInfo };
        patch.fields = JSON.stringify(f);
      }
      await updateCustomerRow(trx, id, patch);
      await deps.hooks.emitCustomerUpdated({
        trx,
        platform,
        customerId: id,
        currencies: JSON.parse(patch.currencies ?? row.currencies) as string[],
        endUserTermsOnFile: hasEndUserTermsOnFile({ ...row, ...patch }),
        email: patch.email ?? row.email,
        at,
      });
      return customerView(trx, { ...row, ...patch });
    });
  } catch (err) {
    // Two requests racing for the same ids: the unique indexes decide (as on create).
    if (isUniqueViolation(err)) {
      if (body.umaAddress !== undefined && (await umaAddressTaken(store.db, body.umaAddress, id))) {
        throw apiError(409, 'UMA_ADDRESS_EXISTS', `UMA address ${body.umaAddress} is already taken`, { field: 'umaAddress' });
      }
      throw apiError(409, 'CONFLICT', `platformCustomerId ${body.platformCustomerId ?? ''} is already used by another customer of this platform`, { field: 'platformCustomerId' });
    }
    throw err;
  }
}

export async function deleteCustomer(db: Kysely<DB>, platformId: string, at: string, id: string): Promise<Customer> {
  const row = await requireCustomer(db, platformId, id);
  // Conditional: of concurrent deletes only the one that flips the row answers 200.
  if (row.is_deleted === 1 || !(await markCustomerDeleted(db, platformId, id, at))) {
    throw apiError(410, 'CUSTOMER_DELETED', `Customer ${id} was already deleted`);
  }
  return customerView(db, { ...row, is_deleted: 1, updated_at: at });
}

/** The end-user terms version GET /customers/end-user-terms offers (the newest of sandbox/rules/verification-rules.ts). */
export function currentEndUserTermsVersion(): (typeof END_USER_TERMS_VERSIONS)[number] {
  return END_USER_TERMS_VERSIONS[0];
}

/** Whether the sandbox publishes end-user terms of this version (its page at /legal/end-user-terms/{version}). */
export function isEndUserTermsVersion(version: string): boolean {
  return (END_USER_TERMS_VERSIONS as readonly string[]).includes(version);
}
