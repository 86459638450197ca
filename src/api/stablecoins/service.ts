import type { FastifyRequest } from 'fastify';
import type { Kysely, Transaction } from 'kysely';
import { iso } from '../../kernel/clock.js';
import type { Store } from '../../kernel/db/connect.js';
import { isUniqueViolation } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { apiError, invalidInput, notFound } from '../../kernel/errors.js';
import { effectTransaction } from '../../kernel/idempotency.js';
import { newId } from '../../kernel/ids.js';
import type { JobContext, JobQueue } from '../../kernel/jobs.js';
import { paginate, type Page } from '../../kernel/pagination.js';
import { hashSecret } from '../../kernel/secrets.js';
import { findExternalAccount } from '../external-accounts/store.js';
import { findAccount } from '../internal-accounts/store.js';
import { ensureWorldAccount, InsufficientFundsError, type Posting, postEntry } from '../ledger/service.js';
import { insertBalanceRows } from '../ledger/store.js';
import type { PlatformRow } from '../../operator/platforms/store.js';
import type {
  Stablecoin,
  StablecoinBurnRequest,
  StablecoinMintRequest,
  StablecoinOperation,
  StablecoinProviderAccount,
  StablecoinProviderAccountLinkRequest,
  StablecoinRegisterRequest,
} from './schemas.js';
import { type OperationsTable, type ProviderAccountsTable, st, type StablecoinsTable } from './store.js';

// Stablecoins. A platform links provider accounts (the sandbox verifies credentials by
// their suffix), registers stablecoins against a link, and mints and burns them. Each
// operation moves through its states on the platform's sandbox clock (durable jobs) and
// posts to the ledger in the base currency: a mint moves the funding from the platform's
// internal account (held at creation) or from outside (a wire) into the stablecoin's
// minted-supply account, the reserve of the supply outstanding; a burn moves that reserve
// (held at creation) to the burned-supply account, the redeemed total paid out.

export const STEP_JOB = 'stablecoins.step';
/** Sandbox timings (seconds after creation). */
export const TIMINGS = {
  processing: 5,
  complete: 30,
  wireFunded: 60,
  wireComplete: 90,
  /** ACH debits: the provider's pull clears (PROCESSING), then the mint completes. */
  achFunded: 120,
  achComplete: 150,
  sameDayAchFunded: 45,
  sameDayAchComplete: 75,
  /** External-account burns: the tokens reach the deposit address, then the payout completes. */
  depositReceived: 60,
  depositComplete: 90,
} as const;

/** A mint funding source type: its first status and the two steps on the sandbox clock. */
const MINT_FLOWS: Record<string, { status: string; first: [string, number]; complete: number }> = {
  GRID_INTERNAL_ACCOUNT: { status: 'PENDING_PROVIDER', first: ['PROCESSING', TIMINGS.processing], complete: TIMINGS.complete },
  PROVIDER_INTERNAL_BALANCE: { status: 'PENDING_PROVIDER', first: ['PROCESSING', TIMINGS.processing], complete: TIMINGS.complete },
  WIRE: { status: 'PENDING_FUNDING', first: ['FUNDED', TIMINGS.wireFunded], complete: TIMINGS.wireComplete },
  ACH_DEBIT: { status: 'PENDING_FUNDING', first: ['FUNDED', TIMINGS.achFunded], complete: TIMINGS.achComplete },
  SAME_DAY_ACH_DEBIT: { status: 'PENDING_FUNDING', first: ['FUNDED', TIMINGS.sameDayAchFunded], complete: TIMINGS.sameDayAchComplete },
};

export interface StablecoinDeps {
  store: Store;
  jobs: JobQueue;
}
type Db = Kysely<DB> | Transaction<DB>;

/** A POST the reference marks with a required Idempotency-Key. */
export function requireIdempotencyKey(req: FastifyRequest): void {
  if (req.headers['idempotency-key'] === undefined) {
    throw invalidInput([{ field: 'Idempotency-Key', message: 'is required for this operation' }]);
  }
}

// ---- Provider accounts ----------------------------------------------------------------

function accountView(r: ProviderAccountsTable): StablecoinProviderAccount {
  const v: StablecoinProviderAccount = {
    id: r.id,
    provider: r.provider as 'BRALE',
    providerAccountId: r.provider_account_id,
    providerEnvironment: r.provider_environment as 'SANDBOX',
    status: r.status as StablecoinProviderAccount['status'],
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
  if (r.last_verified_at) v.lastVerifiedAt = r.last_verified_at;
  return v;
}

/** Sandbox verification: the secret's suffix decides. */
export function verificationOutcome(secret: string): 'ACTIVE' | 'INVALID' | 'REVOKED' {
  const s = secret.toLowerCase();
  if (s.endsWith('invalid')) return 'INVALID';
  if (s.endsWith('revoked')) return 'REVOKED';
  return 'ACTIVE';
}

export async function linkProviderAccount(deps: StablecoinDeps, platform: PlatformRow, at: string, body: StablecoinProviderAccountLinkRequest): Promise<StablecoinProviderAccount> {
  const status = verificationOutcome(body.apiClientSecret);
  const providerAccountId = body.providerAccountId ?? `brale_${body.apiClientId}`;
  const existing = await st(deps.store.db)
    .selectFrom('stablecoin_provider_accounts')
    .selectAll()
    .where('platform_id', '=', platform.id)
    .where('provider', '=', body.provider)
    .where('provider_account_id', '=', providerAccountId)
    .where('status', '=', 'ACTIVE')
    .executeTakeFirst();
  if (existing) throw apiError(409, 'CONFLICT', `Provider account ${providerAccountId} is already linked (${existing.id})`, { stablecoinProviderAccountId: existing.id });
  const row: ProviderAccountsTable = {
    id: newId('StablecoinProviderAccount'),
    platform_id: platform.id,
    provider: body.provider,
    provider_account_id: providerAccountId,
    provider_environment: 'SANDBOX',
    status,
    api_client_id: body.apiClientId,
    secret_hash: await hashSecret(body.apiClientSecret),
    last_verified_at: status === 'ACTIVE' ? at : null,
    created_at: at,
    updated_at: at,
  };
  await st(deps.store.db).insertInto('stablecoin_provider_accounts').values(row).execute();
  return accountView(row);
}

async function findLink(db: Db, platformId: string, id: string): Promise<ProviderAccountsTable | undefined> {
  return st(db).selectFrom('stablecoin_provider_accounts').selectAll().where('platform_id', '=', platformId).where('id', '=', id).executeTakeFirst();
}

export async function getProviderAccount(db: Kysely<DB>, platformId: string, id: string): Promise<StablecoinProviderAccount> {
  const r = await findLink(db, platformId, id);
  if (!r) throw notFound('STABLECOIN_PROVIDER_ACCOUNT_NOT_FOUND', 'Stablecoin provider account', id);
  return accountView(r);
}

export async function listProviderAccounts(db: Kysely<DB>, platformId: string, f: { provider?: string | undefined; status?: string | undefined }, page: { limit?: number | undefined; cursor?: string | undefined }): Promise<Page<StablecoinProviderAccount>> {
  let q = st(db).selectFrom('stablecoin_provider_accounts').where('platform_id', '=', platformId);
  if (f.provider !== undefined) q = q.where('provider', '=', f.provider);
  if (f.status !== undefined) q = q.where('status', '=', f.status);
  return paginate<ProviderAccountsTable, StablecoinProviderAccount>(q, 'id', page, accountView);
}

function unusable(r: ProviderAccountsTable): never {
  if (r.status === 'REVOKED') throw apiError(400, 'STABLECOIN_PROVIDER_ACCOUNT_REVOKED', `Provider account link ${r.id} has been revoked`, { stablecoinProviderAccountId: r.id });
  throw apiError(400, 'STABLECOIN_PROVIDER_ACCOUNT_INVALID', `Provider account link ${r.id} failed verification: its credentials are not usable`, { stablecoinProviderAccountId: r.id });
}

/** The link an operation uses: the one named, or the platform's only ACTIVE one. */
export async function resolveLink(db: Db, platformId: string, id: string | undefined): Promise<ProviderAccountsTable> {
  if (id !== undefined) {
    const r = await findLink(db, platformId, id);
    if (!r) throw notFound('STABLECOIN_PROVIDER_ACCOUNT_NOT_FOUND', 'Stablecoin provider account', id);
    if (r.status !== 'ACTIVE') unusable(r);
    return r;
  }
  const all = await st(db).selectFrom('stablecoin_provider_accounts').selectAll().where('platform_id', '=', platformId).orderBy('id', 'desc').execute();
  const active = all.filter((r) => r.status === 'ACTIVE');
  if (active.length === 1) return active[0]!;
  if (active.length > 1) {
    throw apiError(400, 'STABLECOIN_PROVIDER_ACCOUNT_SELECTION_REQUIRED', `${active.length} provider account links are ACTIVE: pass stablecoinProviderAccountId to choose one`, {
      stablecoinProviderAccountIds: active.map((r) => r.id),
    });
  }
  if (all.length > 0) unusable(all[0]!);
  throw apiError(404, 'STABLECOIN_PROVIDER_ACCOUNT_NOT_FOUND', 'This platform has no stablecoin provider account linked: link one with POST /stablecoin-provider-accounts');
}

// ---- Stablecoins ------------------------------------------------------------------------

function coinView(r: StablecoinsTable): Stablecoin {
  return {
    id: r.id,
    name: r.name,
    symbol: r.symbol,
    baseCurrency: r.base_currency,
    network: r.network as 'SPARK',
    decimals: Number(r.decimals),
    issuanceStatus: r.issuance_status as Stablecoin['issuanceStatus'],
    gridOperationsStatus: r.operations_status as Stablecoin['gridOperationsStatus'],
    networkTokenIdentifier: r.network_token_identifier,
    // The reference's currency code exists once the coin is enabled for operations.
    ...(r.operations_status === 'ENABLED' ? { currency: r.symbol } : {}),
    provider: r.provider as 'BRALE',
    stablecoinProviderAccountId: r.provider_account_id,
    providerEnvironment: r.provider_environment as 'SANDBOX',
    providerTokenIdentifier: r.provider_token_identifier,
    outstandingSupply: r.outstanding,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export async function registerStablecoin(deps: StablecoinDeps, platform: PlatformRow, at: string, body: StablecoinRegisterRequest): Promise<Stablecoin> {
  const link = await resolveLink(deps.store.db, platform.id, body.stablecoinProviderAccountId);
  const base = body.baseCurrency ?? 'USD';
  const row: StablecoinsTable = {
    id: newId('Stablecoin'),
    platform_id: platform.id,
    provider_account_id: link.id,
    provider: link.provider,
    provider_environment: link.provider_environment,
    provider_token_identifier: body.providerTokenIdentifier,
    network_token_identifier: body.networkTokenIdentifier,
    network: body.network,
    name: body.name ?? body.providerTokenIdentifier,
    symbol: body.symbol ?? body.providerTokenIdentifier.toUpperCase(),
    decimals: body.decimals ?? 6,
    base_currency: base,
    issuance_status: 'PROVISIONED',
    operations_status: 'NOT_ENABLED',
    minted_account_id: newId('LedgerAccount'),
    burned_account_id: newId('LedgerAccount'),
    outstanding: '0',
    created_at: at,
    updated_at: at,
  };
  try {
    await deps.store.db.transaction().execute(async (trx) => {
      await st(trx).insertInto('stablecoins').values(row).execute();
      const ledgerRow = (id: string) => ({ account_id: id, platform_id: platform.id, kind: 'CLEARING', currency: base, allow_negative: 0, available: 0, pending: 0, held: 0, version: 0, created_at: at, updated_at: at });
      await insertBalanceRows(trx, [ledgerRow(row.minted_account_id), ledgerRow(row.burned_account_id)]);
    });
  } catch (err) {
    if (isUniqueViolation(err)) {
      throw apiError(409, 'CONFLICT', `Stablecoin ${body.providerTokenIdentifier} on ${body.network} is already registered against link ${link.id}`, { field: 'providerTokenIdentifier' });
    }
    throw err;
  }
  return coinView(row);
}

async function requireCoin(db: Db, platformId: string, id: string): Promise<StablecoinsTable> {
  const r = await st(db).selectFrom('stablecoins').selectAll().where('platform_id', '=', platformId).where('id', '=', id).executeTakeFirst();
  if (!r) throw apiError(404, 'REFERENCE_NOT_FOUND', `Stablecoin ${id} not found`);
  return r;
}

export async function getStablecoin(db: Kysely<DB>, platformId: string, id: string): Promise<Stablecoin> {
  return coinView(await requireCoin(db, platformId, id));
}

export async function listStablecoins(
  db: Kysely<DB>,
  platformId: string,
  f: { issuanceStatus?: string | undefined; gridOperationsStatus?: string | undefined; provider?: string | undefined },
  page: { limit?: number | undefined; cursor?: string | undefined },
): Promise<Page<Stablecoin>> {
  let q = st(db).selectFrom('stablecoins').where('platform_id', '=', platformId);
  if (f.issuanceStatus !== undefined) q = q.where('issuance_status', '=', f.issuanceStatus);
  if (f.gridOperationsStatus !== undefined) q = q.where('operations_status', '=', f.gridOperationsStatus);
  if (f.provider !== undefined) q = q.where('provider', '=', f.provider);
  return paginate<StablecoinsTable, Stablecoin>(q, 'id', page, coinView);
}

// ---- Operations -------------------------------------------------------------------------

/** The sandbox provider's Spark deposit address of an external-account burn (one per operation). */
function depositAddress(opId: string): string {
  return `spark1sandbox${opId.slice(opId.indexOf(':') + 1).replace(/-/g, '')}`;
}

function opView(r: OperationsTable, coin: Pick<StablecoinsTable, 'provider' | 'provider_environment' | 'base_currency' | 'provider_token_identifier'>): StablecoinOperation {
  const source = JSON.parse(r.source) as StablecoinOperation['source'] & { type: string };
  const destination = JSON.parse(r.destination) as NonNullable<StablecoinOperation['destination']>;
  const v: StablecoinOperation = {
    id: r.id,
    stablecoinId: r.stablecoin_id,
    operationType: r.operation_type as 'MINT' | 'BURN',
    status: r.status as StablecoinOperation['status'],
    amount: r.amount,
    provider: coin.provider as 'BRALE',
    providerEnvironment: coin.provider_environment as 'SANDBOX',
    stablecoinProviderAccountId: r.provider_account_id,
    source,
    destination,
    providerStatus: r.status.toLowerCase(),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
  if (r.operation_type === 'MINT' && source?.type === 'WIRE') {
    v.fundingInstructions = { rail: 'WIRE', accountNumber: '9876543210', routingNumber: '021000021', reference: r.id.slice(-12).toUpperCase() };
  }
  if (r.operation_type === 'BURN' && source?.type === 'EXTERNAL_ACCOUNT') {
    // The reference's shape for Spark sources: where to send the tokens, and which token.
    v.fundingInstructions = { rail: 'SPARK', network: 'SPARK', address: depositAddress(r.id), valueType: coin.provider_token_identifier };
  }
  if (r.operation_type === 'BURN') {
    const seconds = source?.type === 'EXTERNAL_ACCOUNT' ? TIMINGS.depositComplete : TIMINGS.complete;
    v.estimatedDelivery = { rail: destination.rail ?? 'WIRE', amount: String(r.fiat_minor), currency: coin.base_currency, timing: `same day (sandbox: ${seconds} seconds)` };
  }
  if (r.failure_reason) v.failureReason = r.failure_reason;
  if (r.description) v.description = r.description;
  return v;
}

/** Token units → base-currency minor units (2 decimals); a 400 unless exact. */
function fiatOf(amount: string, decimals: number): number {
  const scale = 10n ** BigInt(decimals - 2);
  const tokens = BigInt(amount);
  if (tokens === 0n) throw invalidInput([{ field: 'amount', message: 'must be greater than 0' }]);
  if (tokens % scale !== 0n) {
    throw invalidInput([{ field: 'amount', message: `must be a whole cent: a multiple of ${scale} (the token has ${decimals} decimals)` }]);
  }
  const minor = tokens / scale;
  if (minor > BigInt(Number.MAX_SAFE_INTEGER)) throw invalidInput([{ field: 'amount', message: 'is too large' }]);
  return Number(minor);
}

/** Sandbox: an amount of a whole number of dollars and 5 cents ($10.05) fails at the provider. */
function failsAtProvider(fiatMinor: number): boolean {
  return fiatMinor % 100 === 5;
}

function insufficient(err: InsufficientFundsError, accountId: string, needed: number): never {
  throw apiError(400, 'INVALID_AMOUNT', `Account ${accountId} has ${err.balance} ${err.currency} available; the operation needs ${needed}`, {
    reason: 'INSUFFICIENT_BALANCE',
    accountId,
    available: err.balance,
    required: needed,
  });
}

async function schedule(deps: StablecoinDeps, trx: Transaction<DB>, platformId: string, opId: string, step: string, startMs: number, afterS: number, at: string): Promise<void> {
  await deps.jobs.schedule(trx, { platformId, kind: STEP_JOB, payload: { operationId: opId, step }, runAtMs: startMs + afterS * 1000, at });
}

/** 404 REFERENCE_NOT_FOUND for a referenced account the platform does not have. */
function unknownAccount(field: string, id: string): never {
  throw apiError(404, 'REFERENCE_NOT_FOUND', `${field} ${id} is not an account of this platform`, { field, accountId: id });
}

export async function createMint(deps: StablecoinDeps, platform: PlatformRow, now: { ms: number; at: string }, coinId: string, body: StablecoinMintRequest): Promise<StablecoinOperation> {
  const db = deps.store.db;
  const coin = await requireCoin(db, platform.id, coinId);
  const link = await resolveLink(db, platform.id, coin.provider_account_id);
  const fiat = fiatOf(body.amount, Number(coin.decimals));
  const src = body.fundingSource;
  // Unknown (or another platform's) accounts are 404s; existing ones of the wrong kind or currency 400s.
  const errors: Array<{ field: string; message: string }> = [];
  let funding: string | null = null;
  let source: Record<string, string> = { type: src.type };
  if (src.type === 'GRID_INTERNAL_ACCOUNT') {
    const acct = await findAccount(db, platform.id, src.accountId);
    if (!acct) unknownAccount('fundingSource.accountId', src.accountId);
    if (acct.customer_id !== null) errors.push({ field: 'fundingSource.accountId', message: 'is a customer\'s internal account: a mint is funded from the platform\'s own' });
    else if (acct.currency !== coin.base_currency) errors.push({ field: 'fundingSource.accountId', message: `holds ${acct.currency}; the stablecoin's base currency is ${coin.base_currency}` });
    else funding = acct.id;
    source = { type: src.type, accountId: src.accountId };
  } else if (src.type === 'ACH_DEBIT' || src.type === 'SAME_DAY_ACH_DEBIT') {
    const ext = await findExternalAccount(db, platform.id, src.externalAccountId);
    if (!ext) unknownAccount('fundingSource.externalAccountId', src.externalAccountId);
    if (ext.customer_id !== null) errors.push({ field: 'fundingSource.externalAccountId', message: 'is a customer\'s external account: an ACH debit mint pulls from the platform\'s own' });
    else if (ext.currency !== coin.base_currency) errors.push({ field: 'fundingSource.externalAccountId', message: `is in ${ext.currency}; the stablecoin's base currency is ${coin.base_currency}` });
    source = { type: src.type, externalAccountId: src.externalAccountId };
  } else if (src.type === 'PROVIDER_INTERNAL_BALANCE') {
    source = { type: src.type, sourceTokenIdentifier: src.sourceTokenIdentifier, cryptoNetwork: src.cryptoNetwork };
  }
  const dest = body.destination.accountId;
  if (!(await findExternalAccount(db, platform.id, dest)) && !(await findAccount(db, platform.id, dest))) unknownAccount('destination.accountId', dest);
  if (errors.length > 0) throw invalidInput(errors);
  const flow = MINT_FLOWS[src.type]!;
  const row: OperationsTable = {
    id: newId('StablecoinOperation'),
    platform_id: platform.id,
    stablecoin_id: coin.id,
    operation_type: 'MINT',
    status: flow.status,
    amount: BigInt(body.amount).toString(),
    fiat_minor: fiat,
    provider_account_id: link.id,
    source: JSON.stringify(source),
    destination: JSON.stringify({ accountId: dest }),
    funding_account_id: funding,
    hold_entry_id: null,
    failure_reason: null,
    description: body.description ?? null,
    created_at: now.at,
    updated_at: now.at,
  };
  return effectTransaction(db, async (trx) => {
    if (funding) {
      try {
        const e = await postEntry(trx, deps.store, {
          platformId: platform.id,
          kind: 'STABLECOIN_MINT_HOLD',
          referenceId: row.id,
          at: now.at,
          postings: [
            { accountId: funding, currency: coin.base_currency, amount: -fiat },
            { accountId: funding, currency: coin.base_currency, amount: fiat, bucket: 'held' },
          ],
        });
        row.hold_entry_id = e.id;
      } catch (err) {
        if (err instanceof InsufficientFundsError) insufficient(err, funding, fiat);
        throw err;
      }
    }
    // Funded from outside the platform's ledger (a wire, an ACH debit of its bank account, the
    // balance it holds at the provider): the cents come from WORLD when the mint completes.
    await st(trx).insertInto('stablecoin_operations').values(row).execute();
    await schedule(deps, trx, platform.id, row.id, flow.first[0], now.ms, flow.first[1], now.at);
    await schedule(deps, trx, platform.id, row.id, 'COMPLETE', now.ms, flow.complete, now.at);
    return opView(row, coin);
  });
}

export async function createBurn(deps: StablecoinDeps, platform: PlatformRow, now: { ms: number; at: string }, coinId: string, body: StablecoinBurnRequest): Promise<StablecoinOperation> {
  const db = deps.store.db;
  const coin = await requireCoin(db, platform.id, coinId);
  const link = await resolveLink(db, platform.id, coin.provider_account_id);
  const fiat = fiatOf(body.amount, Number(coin.decimals));
  const errors: Array<{ field: string; message: string }> = [];
  const src = body.source;
  if (src.type === 'GRID_INTERNAL_ACCOUNT') {
    const acct = await findAccount(db, platform.id, src.accountId);
    if (!acct) unknownAccount('source.accountId', src.accountId);
    if (acct.customer_id !== null) errors.push({ field: 'source.accountId', message: 'is a customer\'s internal account: a burn spends the platform\'s own' });
  }
  const destId = body.destination.externalAccountId;
  const dest = await findExternalAccount(db, platform.id, destId);
  if (!dest) unknownAccount('destination.externalAccountId', destId);
  if (dest.currency !== coin.base_currency) errors.push({ field: 'destination.externalAccountId', message: `is in ${dest.currency}; the stablecoin pays out ${coin.base_currency}` });
  if (errors.length > 0) throw invalidInput(errors);
  // An external (Spark) source waits for the tokens at the deposit address of its funding
  // instructions; the others spend what the platform already holds.
  const external = src.type === 'EXTERNAL_ACCOUNT';
  if (BigInt(body.amount) > BigInt(coin.outstanding)) {
    throw apiError(400, 'INVALID_AMOUNT', `Only ${coin.outstanding} ${coin.symbol} units are outstanding; cannot burn ${body.amount}`, { outstandingSupply: coin.outstanding, required: body.amount });
  }
  const row: OperationsTable = {
    id: newId('StablecoinOperation'),
    platform_id: platform.id,
    stablecoin_id: coin.id,
    operation_type: 'BURN',
    status: external ? 'PENDING_FUNDING' : 'PENDING_PROVIDER',
    amount: BigInt(body.amount).toString(),
    fiat_minor: fiat,
    provider_account_id: link.id,
    source: JSON.stringify(body.source),
    destination: JSON.stringify({ accountId: body.destination.externalAccountId, rail: body.destination.rail }),
    funding_account_id: null,
    hold_entry_id: null,
    failure_reason: null,
    description: body.description ?? null,
    created_at: now.at,
    updated_at: now.at,
  };
  return effectTransaction(db, async (trx) => {
    try {
      // The reserve of the burned tokens is set aside now (burns in flight cannot spend it twice).
      const e = await postEntry(trx, deps.store, {
        platformId: platform.id,
        kind: 'STABLECOIN_BURN_HOLD',
        referenceId: row.id,
        at: now.at,
        postings: [
          { accountId: coin.minted_account_id, currency: coin.base_currency, amount: -fiat },
          { accountId: coin.minted_account_id, currency: coin.base_currency, amount: fiat, bucket: 'held' },
        ],
      });
      row.hold_entry_id = e.id;
    } catch (err) {
      if (err instanceof InsufficientFundsError) insufficient(err, coin.minted_account_id, fiat);
      throw err;
    }
    await st(trx).insertInto('stablecoin_operations').values(row).execute();
    if (external) {
      await schedule(deps, trx, platform.id, row.id, 'FUNDED', now.ms, TIMINGS.depositReceived, now.at);
      await schedule(deps, trx, platform.id, row.id, 'COMPLETE', now.ms, TIMINGS.depositComplete, now.at);
    } else {
      await schedule(deps, trx, platform.id, row.id, 'PROCESSING', now.ms, TIMINGS.processing, now.at);
      await schedule(deps, trx, platform.id, row.id, 'COMPLETE', now.ms, TIMINGS.complete, now.at);
    }
    return opView(row, coin);
  });
}

export async function getOperation(db: Kysely<DB>, platformId: string, id: string): Promise<StablecoinOperation> {
  const r = await st(db).selectFrom('stablecoin_operations').selectAll().where('platform_id', '=', platformId).where('id', '=', id).executeTakeFirst();
  if (!r) throw apiError(404, 'REFERENCE_NOT_FOUND', `Stablecoin operation ${id} not found`);
  return opView(r, await requireCoin(db, platformId, r.stablecoin_id));
}

export async function listOperations(db: Kysely<DB>, platformId: string, coinId: string, f: { operationType?: string | undefined }, page: { limit?: number | undefined; cursor?: string | undefined }): Promise<Page<StablecoinOperation>> {
  const coin = await requireCoin(db, platformId, coinId);
  let q = st(db).selectFrom('stablecoin_operations').where('platform_id', '=', platformId).where('stablecoin_id', '=', coinId);
  if (f.operationType !== undefined) q = q.where('operation_type', '=', f.operationType);
  return paginate<OperationsTable, StablecoinOperation>(q, 'id', page, (r) => opView(r, coin));
}

// ---- The steps, on the sandbox clock -----------------------------------------------------

async function step(deps: StablecoinDeps, ctx: JobContext): Promise<void> {
  const { trx } = ctx;
  const { operationId, step: name } = ctx.job.payload as { operationId: string; step: string };
  const op = await st(trx).selectFrom('stablecoin_operations').selectAll().where('id', '=', operationId).executeTakeFirst();
  if (!op || ['COMPLETED', 'FAILED', 'EXPIRED'].includes(op.status)) return;
  const coin = (await st(trx).selectFrom('stablecoins').selectAll().where('id', '=', op.stablecoin_id).executeTakeFirst())!;
  const at = iso(ctx.nowMs);
  const cur = coin.base_currency;
  const fiat = Number(op.fiat_minor);
  const set = async (patch: Partial<OperationsTable>) => st(trx).updateTable('stablecoin_operations').set({ ...patch, updated_at: at }).where('id', '=', op.id).execute();
  const post = async (kind: string, postings: Posting[]) => postEntry(trx, deps.store, { platformId: op.platform_id, kind, referenceId: op.id, relatedEntryId: op.hold_entry_id ?? undefined, at, postings });
  if (name === 'PROCESSING' || name === 'FUNDED') {
    await set({ status: 'PROCESSING' });
    return;
  }
  // COMPLETE: the provider settles, or (sandbox amount ending in 05 cents) rejects it.
  const fail = failsAtProvider(fiat);
  if (op.operation_type === 'MINT') {
    if (op.funding_account_id) {
      const held = op.funding_account_id;
      await post(
        fail ? 'STABLECOIN_MINT_RELEASE' : 'STABLECOIN_MINT',
        fail
          ? [
              { accountId: held, currency: cur, amount: -fiat, bucket: 'held' },
              { accountId: held, currency: cur, amount: fiat },
            ]
          : [
              { accountId: held, currency: cur, amount: -fiat, bucket: 'held' },
              { accountId: coin.minted_account_id, currency: cur, amount: fiat },
            ],
      );
    } else if (!fail) {
      const world = await ensureWorldAccount(trx, op.platform_id, cur, at, op.id);
      await post('STABLECOIN_MINT', [
        { accountId: world, currency: cur, amount: -fiat },
        { accountId: coin.minted_account_id, currency: cur, amount: fiat },
      ]);
    }
  } else {
    await post(
      fail ? 'STABLECOIN_BURN_RELEASE' : 'STABLECOIN_BURN',
      fail
        ? [
            { accountId: coin.minted_account_id, currency: cur, amount: -fiat, bucket: 'held' },
            { accountId: coin.minted_account_id, currency: cur, amount: fiat },
          ]
        : [
            { accountId: coin.minted_account_id, currency: cur, amount: -fiat, bucket: 'held' },
            { accountId: coin.burned_account_id, currency: cur, amount: fiat },
          ],
    );
  }
  if (fail) {
    await set({ status: 'FAILED', failure_reason: 'PROVIDER_REJECTED' });
    return;
  }
  await set({ status: 'COMPLETED' });
  const delta = op.operation_type === 'MINT' ? BigInt(op.amount) : -BigInt(op.amount);
  await st(trx).updateTable('stablecoins').set({ outstanding: String(BigInt(coin.outstanding) + delta), updated_at: at }).where('id', '=', coin.id).execute();
}

export function registerStablecoinJobs(deps: StablecoinDeps): void {
  deps.jobs.registerOnce(STEP_JOB, (ctx) => step(deps, ctx));
}
