import { randomBytes } from 'node:crypto';
import { iso, platformNowMs, type Clock } from '../../kernel/clock.js';
import type { Store } from '../../kernel/db/connect.js';
import { ApiError, apiError, type FieldError } from '../../kernel/errors.js';
import { missingReference } from '../../kernel/references.js';
import type { Hooks } from '../../kernel/hooks.js';
import { checkSchema } from '../../kernel/validation.js';
import { IDENTITY_DOCUMENT_TYPES, KYC_LINK_TTL_MS, LEGAL_PRESENCE_DOCUMENT_TYPES } from '../../sandbox/rules/verification-rules.js';
import { unverifiedChannels } from '../contact-verification/service.js';
import { type Customer, CustomerUpdateRequest } from '../customers/schemas.js';
import { businessFields, createCustomer, customerView, individualFields, requireCustomer, updateCustomer } from '../customers/service.js';
import { type CustomerRow, findCustomer, findLiveCustomerByPlatformCustomerId } from '../customers/store.js';
import type { MultipartForm } from '../../kernel/multipart.js';
import { uploadDocument, uploadFormErrors } from '../documents/service.js';
import type { PlatformRow } from '../../operator/platforms/store.js';
import { findPlatform } from '../../operator/platforms/store.js';
import type { Verification, VerificationError } from '../verifications/schemas.js';
import { isSettled, pendingItems, submitVerification } from '../verifications/service.js';
import type { KycLinkByPlatformCustomerIdQuery, KycLinkByPlatformCustomerIdResponse, KycLinkCreateRequest, KycLinkResponse } from './schemas.js';
import { claimKycLink, findKycLink, insertKycLink, type KycLinkRow, releaseKycLink } from './store.js';
import { effectTransaction } from '../../kernel/idempotency.js';

// Hosted KYC links. POST /customers/{id}/kyc-link mints a random single-use token; the
// hosted page (pages.ts) shows what the customer still lacks and, on submit, runs the
// same service code as the API: updateCustomer, uploadDocument and submitVerification.
// A submission that leaves nothing to resolve uses the link up; one that still misses
// something (RESOLVE_ERRORS) keeps it open so the customer can finish.

export interface KycLinkDeps {
  store: Store;
  hooks: Hooks;
  clock: Clock;
}

export const KYC_PROVIDER = 'SUMSUB' as const;

export function hostedKycPath(token: string): string {
  return `/hosted/kyc/${encodeURIComponent(token)}`;
}

/** Mint a link. EU customers (contactVerification present) must have every channel on file VERIFIED first. */
export async function createKycLink(
  deps: KycLinkDeps,
  platform: PlatformRow,
  now: { ms: number; at: string },
  customerId: string,
  body: KycLinkCreateRequest | undefined,
  origin: string,
): Promise<KycLinkResponse> {
  const row = await requireCustomer(deps.store.db, platform.id, customerId);
  if (row.is_deleted === 1) throw missingReference('USER_NOT_FOUND', 'Customer', customerId, 'customerId', true);
  const pending = unverifiedChannels(row);
  if (pending.length > 0) {
    throw apiError(409, 'CONFLICT', `Customer ${customerId} must verify their ${pending.join(' and ')} before a KYC link can be generated`, {
      customerId,
      unverifiedChannels: pending,
    });
  }
  const token = randomBytes(24).toString('base64url');
  const expiresMs = now.ms + KYC_LINK_TTL_MS;
  // The link and the request's Idempotency-Key answer commit together (kernel/idempotency.ts).
  return effectTransaction(deps.store.db, async (trx) => {
    await insertKycLink(trx, {
      token,
      platform_id: platform.id,
      customer_id: row.id,
      redirect_uri: body?.redirectUri ?? null,
      expires_at_ms: expiresMs,
      used_at: null,
      created_at: now.at,
    });
    return { kycUrl: `${origin}${hostedKycPath(token)}`, expiresAt: iso(expiresMs), provider: KYC_PROVIDER, token };
  });
}

/**
 * GET /customers/kyc-link (the official client's getKYCLink): a hosted link for the live
 * customer of the platform with this platformCustomerId, created first (an INDIVIDUAL with
 * only that id, through the ordinary create) when the platform has none. The link is the one
 * POST /customers/{customerId}/kyc-link mints: same page, single use, same expiry and checks.
 */
export async function kycLinkForPlatformCustomerId(
  deps: KycLinkDeps,
  platform: PlatformRow,
  now: { ms: number; at: string },
  query: KycLinkByPlatformCustomerIdQuery,
  origin: string,
): Promise<KycLinkByPlatformCustomerIdResponse> {
  const find = async () => (await findLiveCustomerByPlatformCustomerId(deps.store.db, platform.id, query.platformCustomerId))?.id;
  let customerId = await find();
  if (customerId === undefined) {
    try {
      customerId = (await createCustomer(deps, platform, now.at, { customerType: 'INDIVIDUAL', platformCustomerId: query.platformCustomerId })).id;
    } catch (err) {
      // A concurrent request created it first (409 on the platformCustomerId): use that one.
      const raced = err instanceof ApiError && err.status === 409 ? await find() : undefined;
      if (raced === undefined) throw err;
      customerId = raced;
    }
  }
  const link = await createKycLink(deps, platform, now, customerId, query.redirectUri === undefined ? undefined : { redirectUri: query.redirectUri }, origin);
  return { customerId, kycUrl: link.kycUrl, platformCustomerId: query.platformCustomerId };
}

// ---- The hosted page ----

/** Where a link stands when the page is opened or submitted. */
export type LinkState =
  | { kind: 'unknown' }
  | { kind: 'used'; usedAt: string; redirectUri: string | null }
  | { kind: 'expired'; expiresAt: string }
  | { kind: 'gone' }
  | { kind: 'open'; link: KycLinkRow; platform: PlatformRow; customer: CustomerRow; now: { ms: number; at: string } };

export async function linkState(deps: KycLinkDeps, token: string): Promise<LinkState> {
  const db = deps.store.db;
  const link = await findKycLink(db, token);
  if (!link) return { kind: 'unknown' };
  if (link.used_at) return { kind: 'used', usedAt: link.used_at, redirectUri: link.redirect_uri };
  const platform = await findPlatform(db, link.platform_id);
  if (!platform) return { kind: 'unknown' };
  const ms = platformNowMs(deps.clock, Number(platform.clock_offset_ms));
  if (ms >= Number(link.expires_at_ms)) return { kind: 'expired', expiresAt: iso(Number(link.expires_at_ms)) };
  const customer = await findCustomer(db, platform.id, link.customer_id);
  if (!customer || customer.is_deleted === 1) return { kind: 'gone' };
  return { kind: 'open', link, platform, customer, now: { ms, at: iso(ms) } };
}

/** Everything the form needs: who, what is missing, what to prefill, what to pick from. */
export interface KycPageModel {
  token: string;
  customerId: string;
  customerType: 'INDIVIDUAL' | 'BUSINESS';
  displayName: string;
  status: string;
  settled: boolean;
  missing: VerificationError[];
  values: Record<string, string>;
  identifierOnFile: boolean;
  documentTypes: readonly string[];
  expiresAt: string;
  redirectUri: string | null;
}

const ADDRESS_KEYS = ['line1', 'line2', 'city', 'state', 'postalCode', 'country'] as const;
const INDIVIDUAL_KEYS = ['fullName', 'birthDate', 'nationality', 'idType', 'countryOfIssuance'] as const;
const BUSINESS_INFO_KEYS = ['legalName', 'registrationNumber', 'country', 'incorporatedOn', 'taxId'] as const;

/** The stored values the form starts from. */
function storedValues(row: CustomerRow): Record<string, string> {
  const v: Record<string, string> = {};
  const put = (k: string, x: unknown) => {
    if (typeof x === 'string' && x !== '') v[k] = x;
  };
  if (row.customer_type === 'INDIVIDUAL') {
    const f = individualFields(row);
    for (const k of INDIVIDUAL_KEYS) put(k, f[k]);
    for (const k of ADDRESS_KEYS) put(`address.${k}`, f.address?.[k]);
    put('documentCountry', f.countryOfIssuance ?? f.nationality);
  } else {
    const f = businessFields(row);
    for (const k of BUSINESS_INFO_KEYS) put(`businessInfo.${k}`, f.businessInfo?.[k]);
    for (const k of ADDRESS_KEYS) put(`address.${k}`, f.address?.[k]);
    put('documentCountry', f.businessInfo?.country);
  }
  return v;
}

function displayName(row: CustomerRow): string {
  if (row.customer_type === 'INDIVIDUAL') return individualFields(row).fullName ?? 'Customer';
  const info = businessFields(row).businessInfo;
  return info?.legalName ?? info?.doingBusinessAs ?? 'Business customer';
}

export async function pageModel(deps: KycLinkDeps, state: Extract<LinkState, { kind: 'open' }>, values?: Record<string, string>): Promise<KycPageModel> {
  const { customer, platform, link } = state;
  const business = customer.customer_type === 'BUSINESS';
  return {
    token: link.token,
    customerId: customer.id,
    customerType: business ? 'BUSINESS' : 'INDIVIDUAL',
    displayName: displayName(customer),
    status: customer.status,
    settled: isSettled(customer.status),
    missing: await pendingItems(deps, platform, customer.id),
    // What the customer typed wins over what is stored; the identification number is never echoed.
    values: Object.fromEntries(Object.entries({ ...storedValues(customer), ...(values ?? {}) }).filter(([k]) => k !== 'identifier')),
    identifierOnFile: !business && typeof individualFields(customer).identifierLast4 === 'string',
    documentTypes: business ? LEGAL_PRESENCE_DOCUMENT_TYPES : IDENTITY_DOCUMENT_TYPES,
    expiresAt: iso(Number(link.expires_at_ms)),
    redirectUri: link.redirect_uri,
  };
}

/** The customer update the form asks for: what was filled in, in the API's update shape. */
function customerUpdateFrom(customerType: string, v: Record<string, string>): Record<string, unknown> {
  const body: Record<string, unknown> = { customerType };
  const filled = (k: string) => (v[k] ?? '').trim();
  const group = (prefix: string, keys: readonly string[]) => {
    const out: Record<string, string> = {};
    for (const k of keys) if (filled(`${prefix}.${k}`)) out[k] = filled(`${prefix}.${k}`);
    return Object.keys(out).length > 0 ? out : undefined;
  };
  if (customerType === 'INDIVIDUAL') {
    for (const k of [...INDIVIDUAL_KEYS, 'identifier']) if (filled(k)) body[k] = filled(k);
  } else {
    const info = group('businessInfo', BUSINESS_INFO_KEYS);
    if (info) body.businessInfo = info;
  }
  const address = group('address', ADDRESS_KEYS);
  if (address) body.address = address;
  return body;
}

/** The document part of the form as a documents-area upload form, or undefined when no file was chosen. */
function documentFormFrom(customerId: string, form: MultipartForm, v: Record<string, string>): MultipartForm | undefined {
  const files = (form.files.document ?? []).filter((f) => f.size > 0 || f.fileName !== '' || f.truncated);
  if (files.length === 0) return undefined;
  const fields: Record<string, string[]> = { documentHolder: [customerId] };
  for (const [name, from] of [['documentType', 'documentType'], ['country', 'documentCountry'], ['documentNumber', 'documentNumber']] as const) {
    if (v[from]) fields[name] = [v[from]!];
  }
  return { fields, files: { file: files } };
}

/** Page field names for the errors of the document upload. */
const DOCUMENT_FIELD_NAMES: Record<string, string> = { file: 'document', country: 'documentCountry' };

export type SubmitOutcome =
  | { kind: 'closed'; state: Exclude<LinkState, { kind: 'open' }> }
  | { kind: 'invalid'; model: KycPageModel; errors: FieldError[]; message: string }
  | { kind: 'incomplete'; model: KycPageModel; verification: Verification }
  | { kind: 'done'; verification: Verification; customer: Customer; redirectUri: string | null };

/** Submit the hosted form: update the customer, upload the document, submit the verification. */
export async function submitKycForm(deps: KycLinkDeps, token: string, form: MultipartForm): Promise<SubmitOutcome> {
  const state = await linkState(deps, token);
  if (state.kind !== 'open') return { kind: 'closed', state };
  const { customer, platform } = state;
  const values: Record<string, string> = {};
  for (const [k, list] of Object.entries(form.fields)) values[k] = list[0] ?? '';

  // 1. Check everything first, so a rejected form changes nothing.
  const update = customerUpdateFrom(customer.customer_type, values);
  const errors: FieldError[] = Object.keys(update).length > 1 ? checkSchema(CustomerUpdateRequest, update) : [];
  const docForm = documentFormFrom(customer.id, form, values);
  if (docForm) errors.push(...uploadFormErrors(docForm).map((e) => ({ ...e, field: DOCUMENT_FIELD_NAMES[e.field] ?? e.field })));
  const invalid = async (list: FieldError[], message: string): Promise<SubmitOutcome> => ({
    kind: 'invalid',
    model: await pageModel(deps, { ...state, customer: (await findCustomer(deps.store.db, platform.id, customer.id)) ?? customer }, values),
    errors: list,
    message,
  });
  if (errors.length > 0) return invalid(errors, 'Some of the information is not valid. Correct the fields marked below.');
  if (isSettled(customer.status)) return invalid([], `This verification is already complete (${customer.status}).`);

  // 2. Take the link, so a second submission cannot run alongside; give it back unless the flow completes.
  const at = state.now.at;
  if (!(await claimKycLink(deps.store.db, token, at))) {
    // Another submission took it a moment ago.
    const now = await linkState(deps, token);
    return { kind: 'closed', state: now.kind === 'open' ? { kind: 'used', usedAt: at, redirectUri: state.link.redirect_uri } : now };
  }
  let keep = false;
  try {
    if (Object.keys(update).length > 1) await updateCustomer(deps, platform, at, customer.id, update as CustomerUpdateRequest);
    if (docForm) await uploadDocument(deps, platform.id, at, docForm);
    const verification = await submitVerification(deps, platform, at, customer.id);
    if (verification.verificationStatus === 'RESOLVE_ERRORS') {
      const fresh = (await findCustomer(deps.store.db, platform.id, customer.id))!;
      return { kind: 'incomplete', model: await pageModel(deps, { ...state, customer: fresh }), verification };
    }
    keep = true;
    const fresh = (await findCustomer(deps.store.db, platform.id, customer.id))!;
    return { kind: 'done', verification, customer: await customerView(deps.store.db, fresh), redirectUri: state.link.redirect_uri };
  } catch (err) {
    if (err instanceof ApiError && err.status < 500) {
      const list = Array.isArray(err.details?.errors) ? (err.details.errors as FieldError[]) : [];
      return invalid(list.map((e) => ({ ...e, field: DOCUMENT_FIELD_NAMES[e.field] ?? e.field })), err.message);
    }
    throw err;
  } finally {
    if (!keep) await releaseKycLink(deps.store.db, token, at);
  }
}
