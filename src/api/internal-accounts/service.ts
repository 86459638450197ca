import type { Kysely, Transaction } from 'kysely';
import { iso, type Clock } from '../../kernel/clock.js';
import { findCurrency } from '../../kernel/currencies.js';
import type { Store } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { notFound } from '../../kernel/errors.js';
import { emitEvent } from '../../kernel/events.js';
import type { CustomerCreatedEvent, Hooks } from '../../kernel/hooks.js';
import { newId } from '../../kernel/ids.js';
import { currencyAmount } from '../../kernel/money.js';
import { paginate, type Page } from '../../kernel/pagination.js';
import { fundingInstructions, fundingReference } from '../../sandbox/rules/funding-instructions.js';
import { platformSettings } from '../config/service.js';
import { findCustomer } from '../customers/store.js';
import { type Balance, balancesOf, ensureWorldAccount, openInternalLedgerAccounts } from '../ledger/service.js';
import { findPlatform, type PlatformRow } from '../../operator/platforms/store.js';
import type { InternalAccount } from './schemas.js';
import {
  type AccountFilter,
  customerAccountQuery,
  findAccount,
  holdingAccountsOf,
  insertAccounts,
  type InternalAccountRow,
  markAccountsChecked,
  ownersWithoutAccounts,
  platformAccounts,
} from './store.js';

// Internal accounts: one holding account per currency for every customer (opened with the
// customer, and when an update adds currencies) and for the platform itself (opened with
// the platform, for each supported currency). Balances are read from the ledger.
//
// On an unregulated platform a customer's accounts exist only once its acceptance of the
// end-user terms is on file (hosted docs, payouts-and-b2b/onboarding/disclosures.mdx): a
// customer created without `endUserTermsConsent` has none until an update records it, and
// that update opens them in its transaction. Regulated platforms open them at once.

type Db = Kysely<DB> | Transaction<DB>;

/** INTERNAL_CRYPTO for crypto currencies, INTERNAL_FIAT otherwise. */
export function holdingTypeOf(currency: string): 'INTERNAL_FIAT' | 'INTERNAL_CRYPTO' {
  return findCurrency(currency)?.kind === 'CRYPTO' ? 'INTERNAL_CRYPTO' : 'INTERNAL_FIAT';
}

/**
 * Open the missing holding accounts of an owner (a customer, or the platform when
 * customerId is null) with their ledger accounts, in the caller's transaction. Idempotent:
 * currencies that already have an account are skipped, and so is a currency a concurrent
 * opener got first. Returns the ids opened now.
 */
export async function openHoldingAccounts(db: Db, platformId: string, customerId: string | null, currencies: readonly string[], at: string): Promise<string[]> {
  const wanted = [...new Set(currencies)].filter((c) => findCurrency(c) !== undefined);
  if (wanted.length === 0) return [];
  const have = new Set((await holdingAccountsOf(db, platformId, customerId)).map((r) => r.currency));
  const rows: InternalAccountRow[] = wanted
    .filter((c) => !have.has(c))
    .map((currency) => {
      const id = newId('InternalAccount');
      return {
        id,
        platform_id: platformId,
        customer_id: customerId,
        currency,
        type: holdingTypeOf(currency),
        status: 'ACTIVE',
        funding_reference: fundingReference(id),
        private_enabled: null,
        created_at: at,
        updated_at: at,
      };
    });
  const inserted = await insertAccounts(db, rows);
  await openInternalLedgerAccounts(db, platformId, inserted, at);
  return inserted.map((r) => r.id);
}

async function supportedCurrencies(db: Db, platform: PlatformRow): Promise<string[]> {
  return [...(await platformSettings(db, platform.id)).supportedCurrencies];
}

/**
 * The platform's own accounts, one per supported currency, and its 'outside world' ledger
 * counter-accounts in the same currencies. Called by createPlatform inside its transaction
 * (after the configuration row exists), by the start-up backfill and by the platform list.
 */
export async function openPlatformAccounts(db: Db, platform: PlatformRow, at: string): Promise<string[]> {
  const currencies = (await supportedCurrencies(db, platform)).filter((c) => findCurrency(c) !== undefined);
  for (const c of currencies) await ensureWorldAccount(db, platform.id, c, at);
  return openHoldingAccounts(db, platform.id, null, currencies, at);
}

/** May this customer hold internal accounts? Always on a regulated platform; elsewhere once the end-user terms are on file. */
export function customerMayHoldAccounts(platform: Pick<PlatformRow, 'regulated'>, endUserTermsOnFile: boolean): boolean {
  return platform.regulated === 1 || endUserTermsOnFile;
}

/** Open a customer's accounts for its currencies (the customerCreated and customerUpdated hooks), once it may hold them. */
export async function onCustomerCurrencies(e: CustomerCreatedEvent): Promise<void> {
  if (!customerMayHoldAccounts(e.platform, e.endUserTermsOnFile)) return;
  await openHoldingAccounts(e.trx, e.platform.id, e.customerId, e.currencies, e.at);
}

/** Register the accounts area on the app's hooks (buildApp calls this once). */
export function registerAccountHooks(hooks: Hooks): void {
  hooks.customerCreated.push(onCustomerCurrencies);
  hooks.customerUpdated.push(onCustomerCurrencies);
  hooks.platformConfigUpdated.push(async (e) => {
    await openPlatformAccounts(e.trx, e.platform, e.at);
  });
}

/**
 * Open the accounts of platforms and customers that have none: those that predate the
 * accounts (migration 0003) or were written around the services. A customer of an
 * unregulated platform without the end-user terms on file is not missing any (it may hold
 * none yet). Only customers not checked before are read (`accounts_unchecked`); two
 * statements when nothing is missing, at any number of customers. Returns the ids opened.
 */
export async function backfillAccounts(store: Store, clock: Clock): Promise<string[]> {
  const owners = await ownersWithoutAccounts(store.db);
  const opened: string[] = [];
  for (const owner of owners) {
    const ids = await store.db.transaction().execute(async (trx) => {
      const platform = await findPlatform(trx, owner.platform_id);
      if (!platform) return [];
      const at = iso(clock.nowMs() + Number(platform.clock_offset_ms));
      if (owner.customer_id === null) return openPlatformAccounts(trx, platform, at);
      const customer = await findCustomer(trx, owner.platform_id, owner.customer_id);
      if (!customer || !customerMayHoldAccounts(platform, customer.end_user_terms_consent !== null)) return [];
      return openHoldingAccounts(trx, owner.platform_id, customer.id, JSON.parse(customer.currencies) as string[], at);
    });
    opened.push(...ids);
  }
  // One statement, however many: the customers read above are checked (those without the
  // terms get their accounts when the terms arrive, through the customer hooks).
  await markAccountsChecked(store.db);
  return opened;
}

// ---- Views ------------------------------------------------------------------------------

function view(row: InternalAccountRow, balance: Balance | undefined): InternalAccount {
  const v: InternalAccount = {
    id: row.id,
    type: row.type as InternalAccount['type'],
    status: row.status as InternalAccount['status'],
    balance: currencyAmount(balance?.available ?? 0, row.currency),
    totalBalance: currencyAmount(balance?.total ?? 0, row.currency),
    // Only an account that can receive advertises where to send money.
    fundingPaymentInstructions:
      row.status === 'ACTIVE'
        ? (fundingInstructions({ accountId: row.id, currency: row.currency, isPlatformAccount: row.customer_id === null }) as InternalAccount['fundingPaymentInstructions'])
        : [],
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
  if (row.customer_id !== null) v.customerId = row.customer_id;
  if (row.type === 'EMBEDDED_WALLET') v.privateEnabled = row.private_enabled === 1;
  return v;
}

/** The API view of accounts, their balances read in one query. */
export async function accountViews(db: Db, rows: InternalAccountRow[], known?: readonly Balance[]): Promise<InternalAccount[]> {
  // Balances the caller has just written (a posted entry's) need no second read.
  const given = new Map((known ?? []).map((b) => [b.accountId, b]));
  const missing = rows.filter((r) => !given.has(r.id)).map((r) => r.id);
  const balances = missing.length > 0 ? await balancesOf(db, missing) : new Map<string, Balance>();
  return rows.map((r) => view(r, given.get(r.id) ?? balances.get(r.id)));
}

/**
 * The customers' accounts of the platform. A customerId filter naming no customer of the
 * platform (unknown, or another platform's) matches nothing: an empty page, not a 404 —
 * the reference lists no 404 for this operation, and filters never 404 elsewhere either.
 */
export async function listCustomerAccounts(
  db: Kysely<DB>,
  platformId: string,
  filter: AccountFilter,
  page: { limit?: number | undefined; cursor?: string | undefined },
): Promise<Page<InternalAccount>> {
  const rows = await paginate<InternalAccountRow, InternalAccountRow>(customerAccountQuery(db, platformId, filter), 'id', page, (r) => r);
  return { ...rows, data: await accountViews(db, rows.data) };
}

/**
 * The platform's own accounts, oldest first. A supported currency added to the
 * configuration since the accounts were opened gets its account here (nothing is written
 * when none is missing).
 */
export async function listPlatformAccounts(db: Db, platformId: string, filter: Omit<AccountFilter, 'customerId'>): Promise<{ data: InternalAccount[] }> {
  return { data: await accountViews(db, await platformAccounts(db, platformId, filter)) };
}

/** An internal account of the platform; another platform's id is as unknown as a missing one. */
export async function requireInternalAccount(db: Db, platformId: string, id: string): Promise<InternalAccountRow> {
  const row = await findAccount(db, platformId, id);
  if (!row) throw notFound('REFERENCE_NOT_FOUND', 'Internal account', id);
  return row;
}

export async function getInternalAccount(db: Db, platformId: string, id: string): Promise<InternalAccount> {
  return (await accountViews(db, [await requireInternalAccount(db, platformId, id)]))[0]!;
}

/**
 * INTERNAL_ACCOUNT.BALANCE_UPDATED for each of these internal accounts, in the caller's
 * transaction after it posted (the money-movement area calls this; counter-accounts are
 * not internal accounts and are skipped). `known`: balances the caller has just posted
 * (PostedEntry.balances), used as they are instead of read again.
 */
export async function emitBalanceUpdates(trx: Db, platformId: string, accountIds: string[], at: string, known?: readonly Balance[]): Promise<void> {
  const rows: InternalAccountRow[] = [];
  for (const id of new Set(accountIds)) {
    const row = await findAccount(trx, platformId, id);
    if (row) rows.push(row);
  }
  for (const v of await accountViews(trx, rows, known)) {
    await emitEvent(trx, platformId, at, { type: 'INTERNAL_ACCOUNT.BALANCE_UPDATED', resourceId: v.id, data: v });
  }
}
