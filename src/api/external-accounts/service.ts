import { randomBytes } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import type { TSchema } from 'typebox';
import { iso, platformNowMs, type Clock } from '../../kernel/clock.js';
import { isUniqueViolation, type Store } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { apiError, type FieldError, FieldErrors, invalidInput, notFound } from '../../kernel/errors.js';
import { emitEvent } from '../../kernel/events.js';
import { newId } from '../../kernel/ids.js';
import { paginate, type Page } from '../../kernel/pagination.js';
import { verifyWalletSignature, type BitcoinSignatureFormat } from '../../kernel/wallet-signatures.js';
import { beneficiaryRule, verifiedHolderName } from '../../sandbox/rules/beneficiary-rules.js';
import { primaryIdentifier, primaryIdentifierField, sandboxSuffix } from '../../sandbox/rules/identifiers.js';
import {
  LEGACY_SANDBOX_OWNERSHIP_SIGNATURE,
  LIVENESS_CHALLENGE_TTL_MS,
  OWNERSHIP_VERIFICATION_THRESHOLD_USD_CENTS,
  ownershipMessage,
  WALLET_SIGNATURE_CHALLENGE_TTL_MS,
} from '../../sandbox/rules/ownership-verification.js';
import { findCustomer, findCustomerForUpdate } from '../customers/store.js';
import { findPlatform, type PlatformRow } from '../../operator/platforms/store.js';
import { checkAccountBody } from './account-checks.js';
import { type AccountInfo, type Beneficiary, CREATE_VARIANTS, kindOf, type KindSpec } from './account-info.js';
import type { ExternalAccount, OwnershipChallenge, OwnershipVerifyRequest } from './schemas.js';
import {
  type AccountOwner,
  clearDefaultUmaDeposit,
  type ExternalAccountFilter,
  externalAccountQuery,
  type ExternalAccountRow,
  findExternalAccount,
  findExternalAccountByChallengeToken,
  identifierKeyTaken,
  insertExternalAccount,
  softDeleteExternalAccount,
  updateExternalAccount,
  updateExternalAccountIfChallenge,
} from './store.js';
import { effectTransaction } from '../../kernel/idempotency.js';

type Db = Kysely<DB> | Transaction<DB>;

export interface ExternalAccountDeps {
  store: Store;
  clock: Clock;
}

/** The one event type of an external account's status lifecycle. */
export const EXTERNAL_ACCOUNT_STATUS_UPDATED = 'EXTERNAL_ACCOUNT.STATUS_UPDATED';

// ---------------------------------------------------------------------------------------
// Views

export function accountInfoOf(row: ExternalAccountRow): AccountInfo {
  return JSON.parse(row.account_info) as AccountInfo;
}

export function externalAccountView(row: ExternalAccountRow): ExternalAccount {
  const v: ExternalAccount = {
    id: row.id,
    status: row.status as ExternalAccount['status'],
    currency: row.currency,
    accountInfo: accountInfoOf(row),
  };
  if (row.customer_id) {
    v.customerId = row.customer_id;
    v.defaultUmaDepositAccount = row.default_uma_deposit_account === 1;
  }
  if (row.platform_account_id) v.platformAccountId = row.platform_account_id;
  if (row.ownership_type) v.ownershipType = row.ownership_type as NonNullable<ExternalAccount['ownershipType']>;
  if (row.beneficiary_verification_status) v.beneficiaryVerificationStatus = row.beneficiary_verification_status as NonNullable<ExternalAccount['beneficiaryVerificationStatus']>;
  if (row.beneficiary_verified_data) v.beneficiaryVerifiedData = JSON.parse(row.beneficiary_verified_data) as { fullName?: string };
  return v;
}

/**
 * A live external account of the platform, or 404 REFERENCE_NOT_FOUND (also for another
 * platform's id, a deleted account, and, with `owner`, an account of the other owner kind).
 */
export async function requireExternalAccount(db: Db, platformId: string, id: string, owner: AccountOwner = 'any'): Promise<ExternalAccountRow> {
  const row = await findExternalAccount(db, platformId, id, owner);
  if (!row) throw notFound('REFERENCE_NOT_FOUND', 'External account', id);
  return row;
}

export async function getExternalAccount(db: Db, platformId: string, id: string, owner: AccountOwner = 'any'): Promise<ExternalAccount> {
  return externalAccountView(await requireExternalAccount(db, platformId, id, owner));
}

export async function listExternalAccounts(
  db: Kysely<DB>,
  platformId: string,
  filter: ExternalAccountFilter,
  page: { limit?: number | undefined; cursor?: string | undefined },
): Promise<Page<ExternalAccount>> {
  return paginate<ExternalAccountRow, ExternalAccount>(externalAccountQuery(db, platformId, filter), 'id', page, externalAccountView);
}

// ---------------------------------------------------------------------------------------
// Create

export interface CreateBody {
  customerId?: string;
  currency: string;
  platformAccountId?: string;
  ownershipType?: 'FIRST_PARTY' | 'THIRD_PARTY';
  defaultUmaDepositAccount?: boolean;
  accountInfo: AccountInfo;
}

/**
 * Whose account a create body makes: POST /customers/external-accounts without a customerId
 * creates the platform's own account (the reference: "created on behalf of the platform"),
 * the same account POST /platform/external-accounts makes.
 */
export function ownerOfCreate(owner: 'customer' | 'platform', body: unknown): 'customer' | 'platform' {
  if (owner === 'platform') return 'platform';
  const customerId = typeof body === 'object' && body !== null ? (body as { customerId?: unknown }).customerId : undefined;
  return customerId === undefined ? 'platform' : 'customer';
}

/** Every check of a create body beyond its schema; returns nothing, adds to `errors`. */
async function checkCreate(db: Db, platform: PlatformRow, path: 'customer' | 'platform', body: unknown, errors: FieldErrors): Promise<void> {
  const owner = ownerOfCreate(path, body);
  checkAccountBody(body, errors, { regulated: platform.regulated === 1 });
  if (owner !== 'customer' || typeof body !== 'object' || body === null) return;
  const customerId = (body as { customerId?: unknown }).customerId;
  if (typeof customerId !== 'string' || errors.list.some((e) => e.field === 'customerId')) return;
  const customer = await findCustomer(db, platform.id, customerId);
  if (!customer) errors.add('customerId', 'does not name a customer of this platform');
  else if (customer.is_deleted === 1) errors.add('customerId', 'names a deleted customer');
}

/**
 * A create body its schema refused (the route checks it before validation): one 400 with
 * the schema's problems and the rail checks together. Always throws.
 */
export async function rejectCreateBody(
  deps: Pick<ExternalAccountDeps, 'store'>,
  platform: PlatformRow,
  owner: 'customer' | 'platform',
  body: unknown,
  schemaErrors: readonly FieldError[],
): Promise<never> {
  const errors = new FieldErrors();
  errors.list.push(...schemaErrors);
  await checkCreate(deps.store.db, platform, owner, body, errors);
  throw invalidInput(errors.list, undefined, errors.details);
}

/** Keep only the fields a schema declares (unknown fields are accepted on input but never stored). */
function declared(schema: TSchema, value: unknown): unknown {
  const s = schema as { properties?: Record<string, TSchema>; oneOf?: TSchema[]; discriminator?: { propertyName: string }; items?: TSchema };
  if (Array.isArray(value)) return s.items ? value.map((v) => declared(s.items!, v)) : value;
  if (typeof value !== 'object' || value === null) return value;
  if (s.oneOf && s.discriminator) {
    const tag = (value as Record<string, unknown>)[s.discriminator.propertyName];
    const branch = s.oneOf.find((b) => {
      const p = (b as { properties?: Record<string, { const?: unknown }> }).properties?.[s.discriminator!.propertyName];
      return p?.const === tag;
    });
    return branch ? declared(branch, value) : value;
  }
  if (!s.properties) return value;
  const out: Record<string, unknown> = {};
  for (const [k, sub] of Object.entries(s.properties)) {
    const v = (value as Record<string, unknown>)[k];
    if (v !== undefined) out[k] = declared(sub, v);
  }
  return out;
}

/** The rails an account is paid on, from the fields it has. */
function paymentRailsOf(kind: KindSpec, info: AccountInfo): string[] | undefined {
  if (!kind.rails) return undefined;
  const has = (f: string) => typeof info[f] === 'string' && info[f] !== '';
  switch (kind.type) {
    case 'INR_ACCOUNT':
      return [...(has('vpa') ? ['UPI'] : []), ...(has('accountNumber') && typeof info.rail === 'string' ? [info.rail] : [])];
    case 'SGD_ACCOUNT':
      return ['FAST', 'BANK_TRANSFER']; // PAYNOW needs a proxy (phone or UEN) an account number is not
    default:
      if (!kind.railGroups) return [...kind.rails];
      return [...new Set(kind.railGroups.filter((g) => g.fields.every(has)).map((g) => g.rail))];
  }
}

/** Whether an account needs ownership verification: a FIRST_PARTY self-custody wallet (no VASP). */
export function needsOwnershipVerification(info: AccountInfo, ownershipType: string | null | undefined): boolean {
  const kind = kindOf(info.accountType);
  return kind?.signatureScheme !== undefined && ownershipType === 'FIRST_PARTY' && (info.vaspName === undefined || info.vaspName === null || info.vaspName === '');
}

function identifierKey(owner: string, info: AccountInfo): string {
  const field = primaryIdentifierField(info);
  let id = primaryIdentifier(info) ?? JSON.stringify(info);
  if (field === 'address' && id.startsWith('0x')) id = id.toLowerCase();
  if (field === 'iban' || field === 'invoice' || field === 'bolt12' || field === 'lightningAddress') id = id.toLowerCase();
  return `${owner}|${info.accountType}|${id}`;
}

export async function createExternalAccount(
  deps: Pick<ExternalAccountDeps, 'store'>,
  platform: PlatformRow,
  at: string,
  path: 'customer' | 'platform',
  body: CreateBody,
): Promise<ExternalAccount> {
  const { store } = deps;
  const owner = ownerOfCreate(path, body);
  const errors = new FieldErrors();
  await checkCreate(store.db, platform, owner, body, errors);
  errors.throwIfAny();

  const kind = kindOf(body.accountInfo.accountType)!;
  const raw = body.accountInfo;
  // The reference's own examples put platformAccountId inside accountInfo: accepted there too.
  const platformAccountId = body.platformAccountId ?? (typeof raw.platformAccountId === 'string' && raw.platformAccountId !== '' ? raw.platformAccountId : undefined);
  const info = declared(CREATE_VARIANTS.get(kind.type)!, raw) as AccountInfo;
  const rails = paymentRailsOf(kind, info);
  if (rails) info.paymentRails = rails;

  // Sandbox beneficiary name verification, by the identifier's suffix (105: no such account).
  const rule = beneficiaryRule(sandboxSuffix(info));
  if (rule.kind === 'invalid-account') {
    const field = primaryIdentifierField(info)!;
    throw apiError(400, 'INVALID_BANK_ACCOUNT', `accountInfo.${field} ${String(info[field])} does not name an account the receiving institution holds`, {
      field: `accountInfo.${field}`,
      reason: 'ACCOUNT_NOT_FOUND',
    });
  }
  const beneficiary = info.beneficiary as Beneficiary | undefined;
  const name = beneficiary?.fullName ?? beneficiary?.legalName;
  const verifiedName = name !== undefined ? verifiedHolderName(rule, name, beneficiary!.beneficiaryType) : undefined;

  const customerId = owner === 'customer' ? body.customerId! : null;
  const row: ExternalAccountRow = {
    id: newId('ExternalAccount'),
    platform_id: platform.id,
    customer_id: customerId,
    platform_account_id: platformAccountId ?? null,
    currency: body.currency,
    account_type: kind.type,
    account_info: JSON.stringify(info),
    identifier_key: identifierKey(customerId ?? 'platform', info),
    status: needsOwnershipVerification(info, body.ownershipType) ? 'PENDING_OWNERSHIP_VERIFICATION' : 'ACTIVE',
    ownership_type: body.ownershipType ?? null,
    default_uma_deposit_account: owner === 'customer' && body.defaultUmaDepositAccount === true ? 1 : 0,
    beneficiary_verification_status: name !== undefined ? rule.status : null,
    beneficiary_verified_data: verifiedName !== undefined ? JSON.stringify({ fullName: verifiedName }) : null,
    challenge_method: null,
    challenge_nonce: null,
    challenge_message: null,
    challenge_token: null,
    challenge_expires_at_ms: null,
    is_deleted: 0,
    created_at: at,
    updated_at: at,
  };
  const conflict = () =>
    apiError(409, 'CONFLICT', `This ${kind.type} (${primaryIdentifier(info) ?? ''}) is already registered for this ${owner === 'customer' ? 'customer' : 'platform'}`, {
      field: `accountInfo.${primaryIdentifierField(info) ?? 'accountType'}`,
    });
  try {
    return await effectTransaction(store.db, async (trx) => {
      if (await identifierKeyTaken(trx, platform.id, row.identifier_key)) throw conflict();
      if (row.default_uma_deposit_account === 1) {
        // One default per customer (the reference: a new one replaces it). Creations of the
        // customer's defaults queue on its row (PostgreSQL), and the flag moves before the
        // insert, so the partial unique index (migration 0016) never refuses it.
        await findCustomerForUpdate(trx, platform.id, customerId!, store.kind === 'postgres');
        await clearDefaultUmaDeposit(trx, platform.id, customerId!, row.id);
      }
      await insertExternalAccount(trx, row);
      return externalAccountView(row);
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(); // two creates racing for the same account
    throw err;
  }
}

/** Checks other areas make before an external account is deleted (SCA: a trusted beneficiary is refused). */
export const deleteGuards = new Set<(db: Db, platformId: string, id: string) => Promise<void>>();

export async function deleteExternalAccount(db: Kysely<DB>, platformId: string, at: string, owner: 'customer' | 'platform', id: string): Promise<void> {
  for (const guard of deleteGuards) await guard(db, platformId, id);
  if (!(await softDeleteExternalAccount(db, platformId, id, owner, at))) throw notFound('REFERENCE_NOT_FOUND', 'External account', id);
}

// ---------------------------------------------------------------------------------------
// Ownership verification (Travel Rule)

/**
 * For quotes: must the destination's ownership be verified before sending `amountUsdMinor`
 * (US cents) to it? A wallet PENDING_OWNERSHIP_VERIFICATION is usable below
 * OWNERSHIP_VERIFICATION_THRESHOLD_USD_CENTS; an UNVERIFIED one (its last attempt failed)
 * at no amount; any other status needs nothing. True means 400 EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED.
 */
export function requiresOwnershipVerification(account: { status: string }, amountUsdMinor: number | bigint): boolean {
  if (account.status === 'UNVERIFIED') return true;
  if (account.status !== 'PENDING_OWNERSHIP_VERIFICATION') return false;
  return BigInt(amountUsdMinor) >= BigInt(OWNERSHIP_VERIFICATION_THRESHOLD_USD_CENTS);
}

const SIGNING: Record<string, { algorithm: 'secp256k1' | 'ed25519'; signatureFormat: 'EIP191_PERSONAL_SIGN' | 'TRON_SIGN_MESSAGE_V2' | 'BITCOIN_SIGNED_MESSAGE' | 'ED25519_BASE58' }> = {
  EIP191: { algorithm: 'secp256k1', signatureFormat: 'EIP191_PERSONAL_SIGN' },
  TIP191: { algorithm: 'secp256k1', signatureFormat: 'TRON_SIGN_MESSAGE_V2' },
  BITCOIN: { algorithm: 'secp256k1', signatureFormat: 'BITCOIN_SIGNED_MESSAGE' },
  ED25519: { algorithm: 'ed25519', signatureFormat: 'ED25519_BASE58' },
};

/** Path of the hosted liveness page of a challenge token (outside the version prefix). */
export function livenessPagePath(token: string): string {
  return `/hosted/ownership/${encodeURIComponent(token)}`;
}

const clearedChallenge = { challenge_method: null, challenge_nonce: null, challenge_message: null, challenge_token: null, challenge_expires_at_ms: null };

async function emitStatus(trx: Db, row: ExternalAccountRow, at: string): Promise<void> {
  await emitEvent(trx, row.platform_id, at, { type: EXTERNAL_ACCOUNT_STATUS_UPDATED, resourceId: row.id, data: externalAccountView(row) });
}

/**
 * Start (or restart) ownership verification. Only FIRST_PARTY self-custody wallets in
 * PENDING_OWNERSHIP_VERIFICATION or UNVERIFIED can (409 otherwise). A new challenge
 * abandons the previous one; an UNVERIFIED account returns to PENDING_OWNERSHIP_VERIFICATION.
 */
export async function startOwnershipChallenge(
  deps: Pick<ExternalAccountDeps, 'store'>,
  platform: PlatformRow,
  now: { ms: number; at: string },
  owner: AccountOwner,
  id: string,
  method: 'WALLET_SIGNATURE' | 'LIVENESS',
  origin: string,
): Promise<OwnershipChallenge> {
  const { store } = deps;
  return effectTransaction(store.db, async (trx) => {
    const row = await requireExternalAccount(trx, platform.id, id, owner);
    const info = accountInfoOf(row);
    if (!needsOwnershipVerification(info, row.ownership_type)) {
      throw apiError(409, 'CONFLICT', 'Ownership verification applies only to FIRST_PARTY self-custody crypto wallets (no vaspName)', {
        reason: 'NOT_APPLICABLE',
        accountType: info.accountType,
        ownershipType: row.ownership_type,
      });
    }
    if (row.status !== 'PENDING_OWNERSHIP_VERIFICATION' && row.status !== 'UNVERIFIED') {
      throw apiError(409, 'CONFLICT', `The account's ownership is already verified (status ${row.status})`, { reason: 'ALREADY_VERIFIED', status: row.status });
    }
    const nonce = randomBytes(16).toString('hex');
    const ttl = method === 'WALLET_SIGNATURE' ? WALLET_SIGNATURE_CHALLENGE_TTL_MS : LIVENESS_CHALLENGE_TTL_MS;
    const expiresMs = now.ms + ttl;
    const expiresAt = iso(expiresMs);
    const address = String(info.address);
    const message = method === 'WALLET_SIGNATURE' ? ownershipMessage({ address, accountId: row.id, nonce, issuedAt: now.at, expiresAt }) : null;
    const token = method === 'LIVENESS' ? randomBytes(24).toString('base64url') : null;
    const patch = {
      status: 'PENDING_OWNERSHIP_VERIFICATION',
      challenge_method: method,
      challenge_nonce: nonce,
      challenge_message: message,
      challenge_token: token,
      challenge_expires_at_ms: expiresMs,
      updated_at: now.at,
    };
    const next: ExternalAccountRow = { ...row, ...patch };
    await updateExternalAccount(trx, platform.id, row.id, patch);
    if (row.status !== next.status) await emitStatus(trx, next, now.at);
    if (method === 'LIVENESS') return { method, verificationLink: `${origin}${livenessPagePath(token!)}`, expiresAt };
    const signing = SIGNING[kindOf(info.accountType)!.signatureScheme!]!;
    return { method, messageToSign: message!, expiresAt, nonce, ...signing };
  });
}

/**
 * Complete a WALLET_SIGNATURE challenge. A valid signature by the account's address (or the
 * legacy fixed sandbox signature) → ACTIVE and the account; anything else → UNVERIFIED,
 * committed, then 400. Both emit EXTERNAL_ACCOUNT.STATUS_UPDATED in the same transaction.
 */
export async function verifyOwnership(
  deps: Pick<ExternalAccountDeps, 'store'>,
  platform: PlatformRow,
  now: { ms: number; at: string },
  owner: AccountOwner,
  id: string,
  body: OwnershipVerifyRequest,
): Promise<ExternalAccount> {
  const { store } = deps;
  const row = await requireExternalAccount(store.db, platform.id, id, owner);
  if (row.status !== 'PENDING_OWNERSHIP_VERIFICATION' || row.challenge_method !== 'WALLET_SIGNATURE' || !row.challenge_nonce || !row.challenge_message) {
    throw apiError(409, 'CONFLICT', 'No WALLET_SIGNATURE challenge is outstanding for this external account; start one with POST …/challenge', {
      reason: 'NO_OUTSTANDING_CHALLENGE',
      status: row.status,
    });
  }
  const info = accountInfoOf(row);
  const scheme = kindOf(info.accountType)!.signatureScheme!;
  let failure: string | undefined;
  if (now.ms >= Number(row.challenge_expires_at_ms)) {
    failure = `The challenge expired at ${iso(Number(row.challenge_expires_at_ms))}; start a new challenge`;
  } else if (body.signature !== LEGACY_SANDBOX_OWNERSHIP_SIGNATURE) {
    const check = verifyWalletSignature(scheme, String(info.address), row.challenge_message, body.signature, (body.signatureScheme ?? 'bip137') as BitcoinSignatureFormat);
    if (!check.ok) failure = check.reason;
  }
  const next: ExternalAccountRow = { ...row, ...clearedChallenge, status: failure ? 'UNVERIFIED' : 'ACTIVE', updated_at: now.at };
  // A pass is answered with the account, stored under the Idempotency-Key with the change; a
  // failure commits UNVERIFIED and answers 400 (stored by onSend; a retry finds no challenge: 409).
  await effectTransaction(
    store.db,
    async (trx) => {
      const applied = await updateExternalAccountIfChallenge(trx, platform.id, row.id, { status: row.status, nonce: row.challenge_nonce! }, {
        ...clearedChallenge,
        status: next.status,
        updated_at: now.at,
      });
      if (!applied) throw apiError(409, 'CONFLICT', 'The challenge was completed or replaced meanwhile; start a new challenge', { reason: 'CHALLENGE_REPLACED' });
      await emitStatus(trx, next, now.at);
    },
    () => (failure ? undefined : externalAccountView(next)),
  );
  if (failure) {
    throw apiError(400, 'INVALID_INPUT', `Ownership verification failed: ${failure}. The account is now UNVERIFIED; start a new challenge to retry`, {
      errors: [{ field: 'signature', message: failure }],
      status: 'UNVERIFIED',
    });
  }
  return externalAccountView(next);
}

// The hosted liveness page (src/api/external-accounts/pages.ts).

export type LivenessState =
  | { kind: 'unknown' }
  | { kind: 'expired'; expiresAt: string }
  | { kind: 'open'; row: ExternalAccountRow; platform: PlatformRow; nowMs: number; expiresAt: string };

export async function livenessState(deps: ExternalAccountDeps, token: string): Promise<LivenessState> {
  const row = await findExternalAccountByChallengeToken(deps.store.db, token);
  if (!row || row.challenge_method !== 'LIVENESS' || row.status !== 'PENDING_OWNERSHIP_VERIFICATION') return { kind: 'unknown' };
  const platform = await findPlatform(deps.store.db, row.platform_id);
  if (!platform) return { kind: 'unknown' };
  const nowMs = platformNowMs(deps.clock, Number(platform.clock_offset_ms));
  const expiresAt = iso(Number(row.challenge_expires_at_ms));
  if (nowMs >= Number(row.challenge_expires_at_ms)) return { kind: 'expired', expiresAt };
  return { kind: 'open', row, platform, nowMs, expiresAt };
}

/** The user's answer on the hosted page: pass → ACTIVE, fail → UNVERIFIED, with the event. */
export async function completeLiveness(deps: ExternalAccountDeps, token: string, outcome: 'pass' | 'fail'): Promise<{ state: LivenessState; account?: ExternalAccount }> {
  const state = await livenessState(deps, token);
  if (state.kind !== 'open') return { state };
  const { row, nowMs } = state;
  const at = iso(nowMs);
  const next: ExternalAccountRow = { ...row, ...clearedChallenge, status: outcome === 'pass' ? 'ACTIVE' : 'UNVERIFIED', updated_at: at };
  const applied = await deps.store.db.transaction().execute(async (trx) => {
    const ok = await updateExternalAccountIfChallenge(trx, row.platform_id, row.id, { status: row.status, nonce: row.challenge_nonce! }, {
      ...clearedChallenge,
      status: next.status,
      updated_at: at,
    });
    if (ok) await emitStatus(trx, next, at);
    return ok;
  });
  if (!applied) return { state: { kind: 'unknown' } };
  return { state, account: externalAccountView(next) };
}
