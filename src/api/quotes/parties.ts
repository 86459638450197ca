import type { Kysely, Transaction } from 'kysely';
import { findCurrency } from '../../kernel/currencies.js';
import type { DB } from '../../kernel/db/schema.js';
import { apiError, invalidInput } from '../../kernel/errors.js';
import { missingReference, referencedBy } from '../../kernel/references.js';
import { isIdOf } from '../../kernel/ids.js';
import { corridorOf, defaultRail, type PaymentRail } from '../../sandbox/rules/corridors.js';
import { hasInstantFunding } from '../../sandbox/rules/funding-instructions.js';
import { hasRate } from '../../sandbox/rules/fx.js';
import { assertCounterpartyStep, parseUmaAddress, umaCounterparty } from '../../sandbox/rules/uma.js';
import { networkNamed, networksCarrying } from '../../sandbox/rules/crypto-networks.js';
import { hasEndUserTermsOnFile } from '../customers/service.js';
import { findCustomer } from '../customers/store.js';
import { requireExternalAccount } from '../external-accounts/service.js';
import type { ExternalAccountRow } from '../external-accounts/store.js';
import { requireInternalAccount } from '../internal-accounts/service.js';
import { type LookupReceiver, usableLookup } from '../lookups/service.js';
import type { PlatformRow } from '../../operator/platforms/store.js';
import type { QuoteRequest } from './schemas.js';

// Who pays and who is paid: the quote's source (an internal or external account, or
// REALTIME_FUNDING), its destination (an external or internal account, or a UMA address),
// and on whose behalf (CreateOptions: a transfer, an agent).

type Db = Kysely<DB> | Transaction<DB>;

// ---- Parties ----------------------------------------------------------------------------

/**
 * The sending customer may send: not deleted (a missing reference, kernel/references.ts), end-user terms on file
 * on an unregulated platform (403 END_USER_TERMS_NOT_ACCEPTED), APPROVED (403 USER_NOT_READY).
 * Checked at creation and again at execution.
 */
export async function requireReadySender(db: Db, platform: PlatformRow, customerId: string): Promise<void> {
  const customer = await findCustomer(db, platform.id, customerId);
  if (!customer || customer.is_deleted === 1) throw missingReference('USER_NOT_FOUND', 'Customer', customerId, 'source.customerId', customer?.is_deleted === 1);
  if (platform.regulated !== 1 && !hasEndUserTermsOnFile(customer)) {
    throw apiError(403, 'END_USER_TERMS_NOT_ACCEPTED', `Customer ${customer.id} has not accepted the end-user terms`, { customerId: customer.id });
  }
  if (customer.status !== 'APPROVED') {
    const field = customer.customer_type === 'BUSINESS' ? 'kybStatus' : 'kycStatus';
    throw apiError(403, 'USER_NOT_READY', `Customer ${customer.id} is not approved (${field} ${customer.status})`, { customerId: customer.id, [field]: customer.status });
  }
}

/** The rails an external account of this kind can be paid on, default first. */
export function railsFor(currency: string, accountType: string): PaymentRail[] {
  const corridor = corridorOf(currency);
  if (!corridor) return [];
  const routes = corridor.routes.filter((r) => r.accountType === accountType);
  const rails = (routes.length > 0 ? routes : corridor.routes).flatMap((r) => r.rails);
  const first = defaultRail(corridor);
  return [...new Set([...(first && rails.includes(first) ? [first] : []), ...rails])];
}

export function accountTypeOf(ext: ExternalAccountRow): string {
  return (JSON.parse(ext.account_info) as { accountType: string }).accountType;
}

/** Who pays. */
type Payer =
  | { kind: 'INTERNAL'; accountId: string; currency: string; customerId: string | null }
  | { kind: 'EXTERNAL'; account: ExternalAccountRow; currency: string; customerId: string | null }
  | { kind: 'REALTIME'; currency: string; customerId: string | null; cryptoNetwork?: string | undefined };

/** Who is paid. */
type Payee =
  | { kind: 'EXTERNAL'; account: ExternalAccountRow; currency: string }
  | { kind: 'INTERNAL'; accountId: string; currency: string; customerId: string | null }
  | { kind: 'UMA'; address: string; currency: string; receiver: LookupReceiver | null };

export async function resolvePayer(db: Db, platform: PlatformRow, source: QuoteRequest['source']): Promise<Payer> {
  if (source.sourceType === 'REALTIME_FUNDING') {
    const currency = source.currency.toUpperCase();
    if (!findCurrency(currency) || !hasRate(currency)) {
      throw apiError(400, 'INVALID_CURRENCY', `The sandbox cannot take real-time funding in ${source.currency}`, { field: 'source.currency', currency: source.currency });
    }
    // Just-in-time funding takes instant rails only: a currency without one cannot fund a quote.
    if (!hasInstantFunding(currency)) {
      throw apiError(400, 'INVALID_CURRENCY', `Real-time funding needs an instant payment rail; the sandbox has none for ${currency}`, { field: 'source.currency', currency: source.currency });
    }
    // A crypto deposit names its network (required for stablecoins); fiat has none. A testnet
    // alias (SOLANA_DEVNET, TRON_TESTNET, …) stands for its network and is echoed as sent.
    const networks = findCurrency(currency)!.kind === 'CRYPTO' ? networksCarrying(currency) : [];
    const network = source.cryptoNetwork?.toUpperCase();
    if (networks.length > 0 && network === undefined && (currency === 'USDC' || currency === 'USDT')) {
      throw invalidInput([{ field: 'source.cryptoNetwork', constraint: { enum: networks }, message: `is required for a ${currency} deposit: one of ${networks.join(', ')}` }]);
    }
    const bare = network === undefined ? undefined : networkNamed(network);
    if (network !== undefined && (bare === undefined || !networks.includes(bare))) {
      const message = networks.length > 0 ? `does not carry ${currency}: ${currency} is deposited on ${networks.join(', ')} (or their testnet names)` : `applies to crypto currencies only, not ${currency}`;
      throw invalidInput([{ field: 'source.cryptoNetwork', constraint: { enum: networks }, message }]);
    }
    if (source.customerId !== undefined) {
      const customer = isIdOf('Customer', source.customerId) ? await findCustomer(db, platform.id, source.customerId) : undefined;
      if (!customer || customer.is_deleted === 1) throw missingReference('USER_NOT_FOUND', 'Customer', source.customerId, 'source.customerId', customer?.is_deleted === 1);
    }
    return { kind: 'REALTIME', currency, customerId: source.customerId ?? null, cryptoNetwork: network ?? networks[0] };
  }
  const id = source.accountId;
  if (id.startsWith('ExternalAccount:')) {
    const account = await referencedBy('source.accountId', requireExternalAccount(db, platform.id, id));
    if (source.customerId !== undefined && source.customerId !== (account.customer_id ?? undefined)) {
      throw invalidInput([{ field: 'source.customerId', message: `is not the owner of ${account.id}` }]);
    }
    return { kind: 'EXTERNAL', account, currency: account.currency, customerId: account.customer_id };
  }
  const account = await referencedBy('source.accountId', requireInternalAccount(db, platform.id, id));
  if (source.customerId !== undefined && source.customerId !== (account.customer_id ?? undefined)) {
    throw invalidInput([{ field: 'source.customerId', message: `is not the owner of ${account.id}` }]);
  }
  return { kind: 'INTERNAL', accountId: account.id, currency: account.currency, customerId: account.customer_id };
}

export async function resolvePayee(db: Db, platform: PlatformRow, nowMs: number, body: QuoteRequest): Promise<Payee> {
  const dest = body.destination;
  if (dest.destinationType === 'UMA_ADDRESS') {
    const address = parseUmaAddress(dest.umaAddress);
    if (!address) {
      throw apiError(400, 'INVALID_UMA_ADDRESS', `destination.umaAddress "${dest.umaAddress}" is not a UMA address ($name@domain)`, {
        errors: [{ field: 'destination.umaAddress', message: 'must be a UMA address: $name@domain' }],
      });
    }
    if (body.lookupId === undefined) {
      throw invalidInput([{ field: 'lookupId', message: 'is required for a UMA_ADDRESS destination: look the receiver up first (GET /receiver/uma/{receiverUmaAddress})' }]);
    }
    // A lookup's rates are estimates: one priced from another currency than the source's, or
    // for another sender, is fine, the quote is priced afresh from its own source (price()).
    // Only a lookup of another receiver or platform, or an expired one, is refused.
    const lookup = await referencedBy('lookupId', usableLookup(db, platform.id, body.lookupId, nowMs));
    if (lookup.kind !== 'UMA' || lookup.target.toLowerCase() !== address.normalized) throw invalidInput([{ field: 'lookupId', message: `is not a lookup of ${dest.umaAddress}` }]);
    // The counterparty's pay request happens now: a `$fail.payreq` receiver fails here.
    assertCounterpartyStep(umaCounterparty(address), 'QUOTE');
    const offered = lookup.supportedCurrencies.map((c) => c.currency.code);
    const currency = (dest.currency ?? offered[0] ?? '').toUpperCase();
    if (!offered.includes(currency)) {
      throw apiError(400, 'INVALID_CURRENCY', `${dest.umaAddress} receives ${offered.join(', ') || 'nothing'}, not ${dest.currency}`, {
        field: 'destination.currency',
        supportedCurrencies: offered,
      });
    }
    return { kind: 'UMA', address: address.address, currency, receiver: lookup.receiver };
  }
  if (dest.accountId.startsWith('InternalAccount:')) {
    const account = await referencedBy('destination.accountId', requireInternalAccount(db, platform.id, dest.accountId));
    return { kind: 'INTERNAL', accountId: account.id, currency: account.currency, customerId: account.customer_id };
  }
  const account = await referencedBy('destination.accountId', requireExternalAccount(db, platform.id, dest.accountId));
  if (body.lookupId !== undefined) {
    // Priced afresh from the source whatever the lookup was priced from (as for UMA above).
    const lookup = await referencedBy('lookupId', usableLookup(db, platform.id, body.lookupId, nowMs));
    if (lookup.kind !== 'EXTERNAL_ACCOUNT' || lookup.target !== account.id) throw invalidInput([{ field: 'lookupId', message: `is a lookup of another receiver than ${account.id}` }]);
  }
  return { kind: 'EXTERNAL', account, currency: account.currency };
}

/** What the flows need to know about a quote beyond its row (the `receiver` JSON column carries the payee kind). */
export interface StoredPayee {
  kind: Payee['kind'];
  receiver?: LookupReceiver | null;
}

export interface CreateOptions {
  /** The deprecated same-currency transfers: their outcome table and flow. */
  transfer?: 'IN' | 'OUT';
  /** The agent that initiated it (agents area): kept on its transaction (agentId). */
  agentId?: string;
}
