import type { Kysely, Transaction } from 'kysely';
import { packRateDetails, unpackRateDetails } from './rate-details.js';
import { effectTransaction } from '../../kernel/idempotency.js';
import { authorizeWalletExecute, walletQuoteInstructions } from '../embedded-wallets/service.js';
import { iso } from '../../kernel/clock.js';
import { currencyView, findCurrency } from '../../kernel/currencies.js';
import type { DB } from '../../kernel/db/schema.js';
import { apiError, type FieldError, invalidInput, notFound } from '../../kernel/errors.js';
import { missingReference, referencedBy } from '../../kernel/references.js';
import { isIdOf, newId } from '../../kernel/ids.js';
import { corridorOf, defaultRail, type PaymentRail } from '../../sandbox/corridors.js';
import { fundingInstructions, fundingReference, hasInstantFunding } from '../../sandbox/funding-instructions.js';
import {
  convertMinor,
  type FeeSchedule,
  hasRate,
  netExchangeRate,
  type QuoteAmounts,
  quoteForReceiving,
  quoteForSending,
  rationalToDouble,
  sandboxRate,
  sendingBounds,
} from '../../sandbox/fx.js';
import {
  INTERNAL_OUTCOME,
  type PaymentOutcome,
  pullPayoutOutcome,
  quoteDestinationOutcome,
  umaDestinationOutcome,
  UMA_DESTINATION_OUTCOMES,
} from '../../sandbox/payment-outcomes.js';
import { assertCounterpartyStep, parseUmaAddress, umaCounterparty } from '../../sandbox/uma.js';
import { networkNamed, networksCarrying } from '../../sandbox/crypto-networks.js';
import { hasEndUserTermsOnFile } from '../customers/service.js';
import { findCustomer } from '../customers/store.js';
import { pairRate, platformFee } from '../exchange-rates/service.js';
import { accountInfoOf, requireExternalAccount, requiresOwnershipVerification } from '../external-accounts/service.js';
import type { ExternalAccountRow } from '../external-accounts/store.js';
import { requireInternalAccount } from '../internal-accounts/service.js';
import { balancesOf } from '../ledger/service.js';
import { checkDailyVolume, checkTransactionSize, type LimitSubject } from '../limits/service.js';
import { type LookupReceiver, usableLookup } from '../lookups/service.js';
import type { PlatformRow } from '../platforms/store.js';
import { createPendingPayment, type Flow, keepFailedRealtimeDeposit, type NewPayment, type PaymentDeps, realtimeHoldAccount, sandboxHash, startPayment } from '../transactions/payments.js';
import type { AnyTransaction } from '../transactions/schemas.js';
import { findTransaction, type TransactionRow } from '../transactions/store.js';
import { transactionView } from '../transactions/views.js';
import type { OutgoingRateDetails, PlatformFeeOverride, Quote, QuoteRequest } from './schemas.js';
import { findQuote, insertQuote, type QuoteRow, updateQuoteStatus } from './store.js';

// Quotes: a priced offer to move money, at the same rate and platform fee the receiver
// lookup and GET /exchange-rates show (pairRate / platformFee), executable until expiresAt
// (QUOTE_TTL_MS of platform time). Sources: an internal account, an external account with
// pull functionality (the pull path), or REALTIME_FUNDING (funded with the quote's
// paymentInstructions; sandbox: POST /sandbox/send). Destinations: an external account (a
// payout), an internal account, or a UMA address (needs the lookup). Executing starts the
// transaction (transactions/payments.ts); the sandbox outcome tables decide how it ends.

type Db = Kysely<DB> | Transaction<DB>;
type Now = { ms: number; at: string };
export type { PaymentDeps };

/** How long a quote can be executed, on the platform clock. */
export const QUOTE_TTL_MS = 5 * 60_000;

/** The only source currency platform fees (configured or overridden) apply to today. */
const FEE_SOURCE_CURRENCY = 'USD';

// ---- Views ----------------------------------------------------------------------------

/** The API view at `nowMs`: a PENDING quote past its expiry shows EXPIRED. */
export function quoteView(row: QuoteRow, nowMs: number): Quote {
  const status = row.status === 'PENDING' && nowMs > Number(row.expires_at_ms) ? 'EXPIRED' : row.status;
  const v: Quote = {
    id: row.id,
    status: status as Quote['status'],
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    source: JSON.parse(row.source) as Quote['source'],
    destination: JSON.parse(row.destination) as Quote['destination'],
    sendingCurrency: currencyView(row.sending_currency),
    receivingCurrency: currencyView(row.receiving_currency),
    totalSendingAmount: Number(row.total_sending),
    totalReceivingAmount: Number(row.total_receiving),
    exchangeRate: Number(row.exchange_rate),
    feesIncluded: Number(row.fees),
    platformFeesIncluded: Number(row.platform_fees),
    transactionId: row.transaction_id!,
    rateDetails: unpackRateDetails(row.rate_details),
  };
  // While a quote waits for SCA authorization it shows its challenge, and withholds its paymentInstructions.
  if (row.payment_instructions !== null && row.status !== 'PENDING_AUTHORIZATION') v.paymentInstructions = JSON.parse(row.payment_instructions) as Quote['paymentInstructions'];
  if (row.status === 'PENDING_AUTHORIZATION' && row.sca_challenge) v.scaChallenge = JSON.parse(row.sca_challenge) as Quote['scaChallenge'];
  if (row.description !== null) v.description = row.description;
  return v;
}

export async function requireQuote(db: Db, platformId: string, id: string, lock = false): Promise<QuoteRow> {
  const row = isIdOf('Quote', id) ? await findQuote(db, platformId, id, lock) : undefined;
  if (!row) throw notFound('QUOTE_NOT_FOUND', 'Quote', id);
  return row;
}

export async function getQuote(db: Db, platformId: string, id: string, nowMs: number): Promise<Quote> {
  return quoteView(await requireQuote(db, platformId, id), nowMs);
}

// ---- Parties ----------------------------------------------------------------------------

/**
 * The sending customer may send: not deleted (a missing reference, kernel/references.ts), end-user terms on file
 * on an unregulated platform (403 END_USER_TERMS_NOT_ACCEPTED), APPROVED (403 USER_NOT_READY).
 * Checked at creation and again at execution.
 */
async function requireReadySender(db: Db, platform: PlatformRow, customerId: string): Promise<void> {
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
function railsFor(currency: string, accountType: string): PaymentRail[] {
  const corridor = corridorOf(currency);
  if (!corridor) return [];
  const routes = corridor.routes.filter((r) => r.accountType === accountType);
  const rails = (routes.length > 0 ? routes : corridor.routes).flatMap((r) => r.rails);
  const first = defaultRail(corridor);
  return [...new Set([...(first && rails.includes(first) ? [first] : []), ...rails])];
}

function accountTypeOf(ext: ExternalAccountRow): string {
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

async function resolvePayer(db: Db, platform: PlatformRow, source: QuoteRequest['source']): Promise<Payer> {
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

async function resolvePayee(db: Db, platform: PlatformRow, nowMs: number, body: QuoteRequest): Promise<Payee> {
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

// ---- Pricing ----------------------------------------------------------------------------

interface Priced {
  totalSending: number;
  totalReceiving: number;
  fees: number;
  exchangeRate: number;
  rateDetails: OutgoingRateDetails;
}

/**
 * The fee that applies: the override when given (USD source only: else 400 INVALID_INPUT, as
 * the hosted docs say of overrides; standing feeConfigs keep their 501), else the platform's
 * configured one.
 */
async function feeFor(db: Db, platformId: string, from: string, to: string, override: PlatformFeeOverride | undefined): Promise<FeeSchedule | null> {
  if (override === undefined) return platformFee(db, platformId, from);
  if (from !== FEE_SOURCE_CURRENCY) {
    throw invalidInput([{ field: 'platformFeeOverride', constraint: { enum: [FEE_SOURCE_CURRENCY] }, message: `applies only to a ${FEE_SOURCE_CURRENCY} sending currency today, not ${from}` }]);
  }
  if (override.platformFixedFee.currency.toUpperCase() !== from) {
    throw invalidInput([{ field: 'platformFeeOverride.platformFixedFee.currency', constraint: { enum: [from] }, message: `must be the source currency ${from}` }]);
  }
  if (from === to) return null;
  return { variableBps: override.platformVariableFeeBps, fixed: override.platformFixedFee.amount };
}

/**
 * Price a quote exactly as the lookup does: the platform's cached pair rate and its platform
 * fee (or the quote's override), both lock sides, within the receiving corridor's bounds.
 */
async function price(db: Db, platformId: string, nowMs: number, from: string, to: string, body: QuoteRequest): Promise<Priced> {
  const side = body.lockedCurrencySide;
  const amount = body.lockedCurrencyAmount;
  const corridor = corridorOf(to);
  const fee = await feeFor(db, platformId, from, to, body.platformFeeOverride);
  const cached = pairRate(platformId, from, to, nowMs, body.platformFeeOverride !== undefined ? null : fee);
  const rate = cached.rate.exact;
  const f = body.platformFeeOverride !== undefined ? fee : cached.fee;
  let q: QuoteAmounts | null;
  if (side === 'SENDING') {
    q = quoteForSending(amount, from, to, rate, f);
  } else {
    q = quoteForReceiving(amount, from, to, rate, f);
    if (q === null || q.sending > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw apiError(400, 'AMOUNT_OUT_OF_RANGE', `No sending amount in ${from} delivers ${amount} ${to}`, { field: 'lockedCurrencyAmount' });
    }
  }
  const { sending, receiving } = q;
  const min = corridor?.min ?? 1;
  const max = corridor?.max ?? Number.MAX_SAFE_INTEGER;
  const exchangeRate = netExchangeRate(q, from, to);
  if (receiving < BigInt(min) || receiving > BigInt(max) || sending <= 0n || exchangeRate === null) {
    const bounds = sendingBounds(min, max, from, to, rate, f);
    const details: Record<string, unknown> = { field: 'lockedCurrencyAmount', receivingCurrency: to, receivingAmount: Number(receiving), minReceivingAmount: min, maxReceivingAmount: max };
    if (bounds.minSendingAmount !== null) details.minSendingAmount = bounds.minSendingAmount;
    if (bounds.maxSendingAmount !== null) details.maxSendingAmount = bounds.maxSendingAmount;
    throw apiError(400, 'AMOUNT_OUT_OF_RANGE', `The quote would deliver ${receiving} ${to} (smallest unit); the corridor takes ${min} to ${max}`, details);
  }
  if (sending > BigInt(Number.MAX_SAFE_INTEGER)) throw apiError(400, 'AMOUNT_OUT_OF_RANGE', 'The sending amount is larger than an amount can carry', { field: 'lockedCurrencyAmount' });
  const variableRate = f ? f.variableBps / 10_000 : 0;
  return {
    totalSending: Number(sending),
    totalReceiving: Number(receiving),
    fees: Number(q.fees.total),
    exchangeRate: rationalToDouble(exchangeRate),
    rateDetails: {
      counterpartyMultiplier: rationalToDouble(rate),
      counterpartyFixedFee: 0,
      gridApiMultiplier: (10_000 - (f?.variableBps ?? 0)) / 10_000,
      gridApiFixedFee: f?.fixed ?? 0,
      gridApiVariableFeeRate: variableRate,
      gridApiVariableFeeAmount: Number(q.fees.variable),
    },
  };
}

/** An amount of a currency in US cents at the sandbox mid rate (for the ownership threshold). */
export function usdCents(amount: number, currency: string): bigint {
  if (currency === 'USD') return BigInt(amount);
  if (!hasRate(currency)) return 0n;
  return convertMinor(amount, currency, 'USD', sandboxRate(currency, 'USD').mid, 'floor');
}

// ---- Create -----------------------------------------------------------------------------

/** What the flows need to know about a quote beyond its row (the `receiver` JSON column carries the payee kind). */
interface StoredPayee {
  kind: Payee['kind'];
  receiver?: LookupReceiver | null;
}

export interface CreateOptions {
  /** The deprecated same-currency transfers: their outcome table and flow. */
  transfer?: 'IN' | 'OUT';
  /** The agent that initiated it (agents area): kept on its transaction (agentId). */
  agentId?: string;
}

/**
 * POST /quotes: resolve the payer and the payee, check the sender (terms, approval), the
 * rail, price it, check the corridor bounds, the single-transaction limit and the ownership
 * threshold, store it; with immediatelyExecute, execute it in the same transaction.
 */
export async function createQuote(deps: PaymentDeps, platform: PlatformRow, now: Now, body: QuoteRequest, opts: CreateOptions = {}): Promise<Quote> {
  return effectTransaction(deps.store.db, async (trx) => {
    const row = await buildQuote(trx, deps, platform, now, body, opts);
    if (row.source_type === 'REALTIME_FUNDING' && opts.transfer === undefined && (await authorizationGate?.(trx, deps, platform, row, now))) {
      return quoteView((await findQuote(trx, platform.id, row.id))!, now.ms);
    }
    if (body.immediatelyExecute === true) {
      await executeRow(trx, deps, platform, row, now, opts);
      return quoteView((await findQuote(trx, platform.id, row.id))!, now.ms);
    }
    return quoteView(row, now.ms);
  });
}

async function buildQuote(trx: Transaction<DB>, deps: PaymentDeps, platform: PlatformRow, now: Now, body: QuoteRequest, opts: CreateOptions): Promise<QuoteRow> {
  const platformId = platform.id;
  const payer = await resolvePayer(trx, platform, body.source);
  const payee = await resolvePayee(trx, platform, now.ms, body);

  const shape: FieldError[] = [];
  if (payer.kind === 'EXTERNAL' && payee.kind !== 'INTERNAL') {
    shape.push({ field: 'destination.accountId', message: 'an external-account source (a pull) pays into an internal account' });
  }
  if (payer.kind === 'REALTIME' && body.immediatelyExecute === true) {
    shape.push({ field: 'immediatelyExecute', message: 'a REALTIME_FUNDING quote is executed by funding it with its paymentInstructions (sandbox: POST /sandbox/send)' });
  }
  if (payee.kind === 'INTERNAL' && payer.kind === 'INTERNAL' && payee.accountId === payer.accountId) {
    shape.push({ field: 'destination.accountId', message: 'is the source account' });
  }
  if (shape.length > 0) throw invalidInput(shape);
  if (payee.kind === 'UMA' && payee.receiver?.kind === 'CUSTOMER' && payee.receiver.customerId === payer.customerId) {
    throw apiError(400, 'SELF_PAYMENT', `The sender ${payer.customerId} cannot pay itself`, { customerId: payer.customerId });
  }

  if (payer.customerId !== null) await requireReadySender(trx, platform, payer.customerId);

  const from = payer.currency;
  const to = payee.currency;
  if (!hasRate(from) || !hasRate(to) || !corridorOf(to)) {
    throw apiError(400, 'INVALID_CURRENCY', `The sandbox cannot send ${from} to ${to}`, { sendingCurrency: from, receivingCurrency: to });
  }
  if (opts.transfer && from !== to) {
    throw apiError(400, 'INVALID_CURRENCY', `A same-currency transfer needs both accounts in one currency, not ${from} and ${to}; use POST /quotes`, { sendingCurrency: from, receivingCurrency: to });
  }

  // The rail: a payout's destination rails; a pull's source rails.
  let rail: PaymentRail | null = null;
  let railMode: 'AUTO' | 'MANUAL' | null = null;
  const requested = body.destination.destinationType === 'ACCOUNT' ? body.destination.paymentRail : undefined;
  const railAccount = payee.kind === 'EXTERNAL' ? payee.account : payer.kind === 'EXTERNAL' ? payer.account : null;
  if (railAccount) {
    const rails = railsFor(railAccount.currency, accountTypeOf(railAccount));
    if (requested !== undefined && payee.kind === 'EXTERNAL' && !rails.includes(requested)) {
      throw invalidInput([{ field: 'destination.paymentRail', constraint: { enum: rails }, message: `is not a rail of ${railAccount.id}: ${rails.join(', ') || 'none'}` }]);
    }
    rail = (payee.kind === 'EXTERNAL' ? requested : undefined) ?? rails[0] ?? null;
    railMode = rail === null ? null : requested !== undefined && payee.kind === 'EXTERNAL' ? 'MANUAL' : 'AUTO';
  } else if (requested !== undefined) {
    throw invalidInput([{ field: 'destination.paymentRail', message: 'applies to an external-account destination only' }]);
  }

  const priced = await price(trx, platformId, now.ms, from, to, body);
  await checkTransactionSize(trx, { platform, sendingCurrency: from, receivingCurrency: to, sendingAmount: priced.totalSending, receivingAmount: priced.totalReceiving, nowMs: now.ms });
  if (payee.kind === 'EXTERNAL' && requiresOwnershipVerification(payee.account, usdCents(priced.totalSending, from))) {
    throw apiError(400, 'EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED', `The ownership of ${payee.account.id} must be verified before sending this amount to it`, {
      accountId: payee.account.id,
      status: payee.account.status,
    });
  }

  const id = newId('Quote');
  let sourceView: Record<string, unknown>;
  let sourceAccountId: string | null = null;
  let instructions: string | null = null;
  if (payer.kind === 'REALTIME') {
    sourceView = { sourceType: 'REALTIME_FUNDING', currency: from };
    if (payer.customerId !== null) sourceView.customerId = payer.customerId;
    if (payer.cryptoNetwork !== undefined) sourceView.cryptoNetwork = payer.cryptoNetwork;
    instructions = JSON.stringify(fundingInstructions({ accountId: id, currency: from, isPlatformAccount: payer.customerId === null, purpose: 'QUOTE', cryptoNetwork: payer.cryptoNetwork }));
  } else {
    sourceAccountId = payer.kind === 'INTERNAL' ? payer.accountId : payer.account.id;
    sourceView = { sourceType: 'ACCOUNT', accountId: sourceAccountId };
    if (payer.customerId !== null) sourceView.customerId = payer.customerId;
  }
  let destView: Record<string, unknown>;
  let destinationAccountId: string | null = null;
  if (payee.kind === 'UMA') {
    destView = { destinationType: 'UMA_ADDRESS', umaAddress: payee.address, currency: to };
  } else {
    destinationAccountId = payee.kind === 'INTERNAL' ? payee.accountId : payee.account.id;
    destView = { destinationType: 'ACCOUNT', accountId: destinationAccountId };
    if (rail !== null && payee.kind === 'EXTERNAL') destView.paymentRail = rail;
  }
  // A quote from an embedded wallet carries the payload its owner stamps to execute it.
  if (payer.kind === 'INTERNAL') {
    const dest = payee.kind === 'UMA' ? payee.address : destinationAccountId!;
    const q = { quoteId: id, sourceAccountId: payer.accountId, amount: priced.totalSending, currency: from, destination: dest, immediatelyExecute: body.immediatelyExecute === true || opts.transfer !== undefined, field: opts.transfer !== undefined ? 'source.accountId' : 'immediatelyExecute' };
    instructions = (await walletQuoteInstructions(trx, platformId, now.ms, q)) ?? instructions;
  }
  const stored: StoredPayee = { kind: payee.kind, ...(payee.kind === 'UMA' ? { receiver: payee.receiver } : {}) };
  const expiresMs = now.ms + QUOTE_TTL_MS;
  const row: QuoteRow = {
    id,
    platform_id: platformId,
    customer_id: payer.customerId,
    source_account_id: sourceAccountId,
    source: JSON.stringify(sourceView),
    destination_account_id: destinationAccountId,
    destination: JSON.stringify(destView),
    lookup_id: body.lookupId ?? null,
    sending_currency: from,
    receiving_currency: to,
    locked_side: body.lockedCurrencySide,
    locked_amount: body.lockedCurrencyAmount,
    total_sending: priced.totalSending,
    total_receiving: priced.totalReceiving,
    fees: priced.fees,
    platform_fees: priced.fees,
    exchange_rate: String(priced.exchangeRate),
    rate_details: packRateDetails(priced.rateDetails),
    payment_rail: rail,
    description: body.description ?? null,
    remittance_information: body.remittanceInformation ?? null,
    purpose_of_payment: body.purposeOfPayment ?? null,
    status: 'PENDING',
    transaction_id: newId('Transaction'),
    expires_at_ms: expiresMs,
    expires_at: iso(expiresMs),
    created_at: now.at,
    updated_at: now.at,
    source_type: payer.kind === 'REALTIME' ? 'REALTIME_FUNDING' : 'ACCOUNT',
    destination_type: payee.kind === 'UMA' ? 'UMA_ADDRESS' : 'ACCOUNT',
    payment_instructions: instructions,
    sender_customer_info: body.senderCustomerInfo !== undefined ? JSON.stringify(body.senderCustomerInfo) : null,
    fee_override: body.platformFeeOverride !== undefined ? JSON.stringify(body.platformFeeOverride) : null,
    receiver: JSON.stringify({ ...stored, railSelectionMode: railMode }),
    sca_challenge: null,
  };
  await insertQuote(trx, row);
  // Its transaction exists from now on, PENDING until the quote is executed (or funded), EXPIRED with it.
  const { flow } = await planOf(trx, row, opts);
  const pending = await paymentOf(trx, row, flow, flow === 'PULL' || payer.kind === 'REALTIME' ? null : row.source_account_id, opts.agentId);
  await createPendingPayment(trx, deps, { ...pending, created_at: now.at, updated_at: now.at, expires_at_ms: expiresMs }, expiresMs, now, body.immediatelyExecute === true || opts.transfer !== undefined);
  return row;
}

// ---- Execute ----------------------------------------------------------------------------

function limitSubject(platform: PlatformRow, row: QuoteRow, nowMs: number): LimitSubject {
  return {
    platform,
    sendingCurrency: row.sending_currency,
    receivingCurrency: row.receiving_currency,
    sendingAmount: Number(row.total_sending),
    receivingAmount: Number(row.total_receiving),
    nowMs,
  };
}

function assertNotExpired(row: QuoteRow, now: Now): void {
  if (row.status === 'EXPIRED' || (row.status === 'PENDING' && now.ms > Number(row.expires_at_ms))) {
    throw apiError(400, 'QUOTE_REQUEST_FAILED', `Quote ${row.id} expired at ${row.expires_at}; request a new quote`, {
      reason: 'QUOTE_EXPIRED',
      quoteId: row.id,
      expiresAt: row.expires_at,
    });
  }
}

function assertExecutable(row: QuoteRow, now: Now): void {
  assertNotExpired(row, now);
  if (row.status !== 'PENDING') {
    throw apiError(409, 'INVALID_STATE_TRANSITION', `Quote ${row.id} was already executed (status ${row.status})`, {
      quoteId: row.id,
      status: row.status,
      transactionId: row.transaction_id,
    });
  }
}

/** The outcome and flow of a quote's payment, and who it belongs to. */
async function planOf(trx: Transaction<DB>, row: QuoteRow, opts: CreateOptions): Promise<{ flow: Flow; outcome: PaymentOutcome }> {
  const stored = JSON.parse(row.receiver ?? '{}') as StoredPayee;
  const platformId = row.platform_id;
  if (row.source_account_id?.startsWith('ExternalAccount:')) {
    const src = await requireExternalAccount(trx, platformId, row.source_account_id);
    return { flow: 'PULL', outcome: pullPayoutOutcome(accountInfoOf(src)) };
  }
  if (stored.kind === 'UMA') {
    const receiver = stored.receiver ?? null;
    return { flow: 'UMA_PAYOUT', outcome: receiver?.kind === 'SANDBOX_UMA' ? umaDestinationOutcome(receiver.behaviour) : UMA_DESTINATION_OUTCOMES.SUCCESS };
  }
  if (row.destination_account_id?.startsWith('InternalAccount:')) return { flow: 'INTERNAL_TRANSFER', outcome: INTERNAL_OUTCOME };
  const dest = await requireExternalAccount(trx, platformId, row.destination_account_id!);
  if (opts.transfer === 'OUT') return { flow: 'TRANSFER_OUT', outcome: pullPayoutOutcome(accountInfoOf(dest)) };
  return { flow: 'QUOTE_PAYOUT', outcome: quoteDestinationOutcome(accountInfoOf(dest)) };
}

/** The transaction a quote's payment writes (payments.ts completes it). */
async function paymentOf(trx: Transaction<DB>, row: QuoteRow, flow: Flow, holdAccountId: string | null, agentId?: string): Promise<NewPayment> {
  const platformId = row.platform_id;
  let customerId = platformId;
  let platformCustomerId = platformId;
  if (row.customer_id !== null) {
    const customer = await findCustomer(trx, platformId, row.customer_id);
    customerId = row.customer_id;
    platformCustomerId = customer?.platform_customer_id ?? row.customer_id;
  }
  const quoteDest = JSON.parse(row.destination) as Record<string, unknown>;
  const source: Record<string, unknown> =
    row.source_type === 'REALTIME_FUNDING'
      ? { sourceType: 'REALTIME_FUNDING', currency: row.sending_currency, ...(row.customer_id !== null ? { customerId: row.customer_id } : {}) }
      : { sourceType: 'ACCOUNT', accountId: row.source_account_id, currency: row.sending_currency };
  // Crypto funds arrived on chain: the funding leg's hash (Lightning is off chain).
  // (The quote keeps the network as the client named it; the chain is the bare network.)
  const named = (JSON.parse(row.source) as { cryptoNetwork?: string }).cryptoNetwork;
  const network = named === undefined ? undefined : (networkNamed(named) ?? named);
  if (row.source_type === 'REALTIME_FUNDING' && network !== undefined && network !== 'LIGHTNING') {
    source.onChainTransaction = { transactionHash: sandboxHash(`funding|${row.transaction_id}`, network === 'SOLANA' ? 'base58' : network === 'BITCOIN' || network === 'SPARK' || network === 'TRON' ? 'hex' : 'evm'), network };
  }
  const destination =
    row.destination_type === 'UMA_ADDRESS'
      ? { destinationType: 'UMA_ADDRESS', umaAddress: quoteDest.umaAddress, currency: row.receiving_currency }
      : { destinationType: 'ACCOUNT', accountId: row.destination_account_id, currency: row.receiving_currency };
  const stored = JSON.parse(row.receiver ?? '{}') as { railSelectionMode?: 'AUTO' | 'MANUAL' | null };
  const incoming = flow === 'PULL';
  return {
    flow,
    realtimeFunded: row.source_type === 'REALTIME_FUNDING',
    id: row.transaction_id!,
    platform_id: platformId,
    customer_id: customerId,
    platform_customer_id: platformCustomerId,
    type: incoming ? 'INCOMING' : 'OUTGOING',
    direction: incoming ? 'CREDIT' : 'DEBIT',
    quote_id: row.id,
    source: JSON.stringify(source),
    source_account_id: row.source_account_id,
    destination: JSON.stringify(destination),
    destination_account_id: row.destination_account_id,
    sent_amount: Number(row.total_sending),
    sent_currency: row.sending_currency,
    received_amount: Number(row.total_receiving),
    received_currency: row.receiving_currency,
    fees: Number(row.fees),
    platform_fees: Number(row.platform_fees),
    exchange_rate: row.exchange_rate,
    rate_details: row.rate_details,
    payment_rail: row.payment_rail,
    description: row.description,
    created_at: '',
    updated_at: '',
    counterparty_information: null,
    reconciliation: flow === 'UMA_PAYOUT' ? JSON.stringify({ reference: fundingReference(row.transaction_id!) }) : null,
    receipt_delivery_confirmed_at: null,
    rail_selection_mode: stored.railSelectionMode ?? null,
    payment_instructions: row.payment_instructions,
    requested_receiver_fields: null,
    receiver_customer_info: null,
    agent_id: agentId ?? null,
    hold_account_id: holdAccountId,
    approval_deadline_ms: null,
    expires_at_ms: Number(row.expires_at_ms),
  };
}

/** Start the quote's payment (its money moves now), in the caller's transaction. */
async function executeRow(trx: Transaction<DB>, deps: PaymentDeps, platform: PlatformRow, row: QuoteRow, now: Now, opts: CreateOptions = {}): Promise<TransactionRow> {
  assertExecutable(row, now);
  if (row.source_type === 'REALTIME_FUNDING') {
    throw apiError(400, 'QUOTE_REQUEST_FAILED', `Quote ${row.id} is funded in real time: send the funds per its paymentInstructions (sandbox: POST /sandbox/send)`, {
      reason: 'REALTIME_FUNDING',
      quoteId: row.id,
    });
  }
  if (row.customer_id !== null) await requireReadySender(trx, platform, row.customer_id);
  await checkDailyVolume(trx, limitSubject(platform, row, now.ms));
  // SCA (src/areas/sca): a payment of an in-scope customer waits for its authorization instead.
  if (opts.transfer !== 'IN' && (await authorizationGate?.(trx, deps, platform, row, now))) return (await findTransaction(trx, platform.id, row.transaction_id!))!;
  if (!(await updateQuoteStatus(trx, row.platform_id, row.id, 'PENDING', { status: 'PROCESSING', updated_at: now.at }))) {
    throw apiError(409, 'INVALID_STATE_TRANSITION', `Quote ${row.id} was executed concurrently`, { quoteId: row.id });
  }
  const { flow, outcome } = await planOf(trx, row, opts);
  const hold = flow === 'PULL' ? null : row.source_account_id;
  const payment = await paymentOf(trx, row, flow, hold, opts.agentId);
  return startPayment(trx, deps, { ...payment, created_at: now.at, updated_at: now.at }, outcome, now);
}

// ---- Authorization (SCA) ----------------------------------------------------------------

/**
 * A gate the SCA area installs: given a quote about to be executed (or a REALTIME_FUNDING
 * quote just created), it either holds it for authorization (true: it moved the quote to
 * PENDING_AUTHORIZATION) or lets it through (false). Runs in the caller's transaction.
 */
export type AuthorizationGate = (trx: Transaction<DB>, deps: PaymentDeps, platform: PlatformRow, row: QuoteRow, now: Now) => Promise<boolean>;
let authorizationGate: AuthorizationGate | undefined;
export function setAuthorizationGate(gate: AuthorizationGate): void {
  authorizationGate = gate;
}

/** A prefunded quote whose authorization completed: PENDING_AUTHORIZATION → PROCESSING, its payment starts now. */
export async function releaseAuthorizedQuote(trx: Transaction<DB>, deps: PaymentDeps, platform: PlatformRow, row: QuoteRow, now: Now): Promise<void> {
  if (row.customer_id !== null) await requireReadySender(trx, platform, row.customer_id);
  if (!(await updateQuoteStatus(trx, row.platform_id, row.id, 'PENDING_AUTHORIZATION', { status: 'PROCESSING', sca_challenge: null, updated_at: now.at }))) {
    throw apiError(409, 'INVALID_STATE_TRANSITION', `Quote ${row.id} is no longer waiting for authorization`, { quoteId: row.id });
  }
  // A held transfer-out keeps its flow (and outcome table): its transaction says which it was.
  const held = await findTransaction(trx, row.platform_id, row.transaction_id!);
  const { flow, outcome } = await planOf(trx, row, held?.flow === 'TRANSFER_OUT' ? { transfer: 'OUT' } : {});
  const payment = await paymentOf(trx, row, flow, flow === 'PULL' ? null : row.source_account_id);
  await startPayment(trx, deps, { ...payment, created_at: now.at, updated_at: now.at }, outcome, now);
}

/** POST /quotes/{quoteId}/execute: lock the quote, then start its payment. */
export async function executeQuote(deps: PaymentDeps, platform: PlatformRow, now: Now, quoteId: string): Promise<Quote> {
  return effectTransaction(deps.store.db, async (trx) => {
    const row = await requireQuote(trx, platform.id, quoteId, deps.store.kind === 'postgres');
    await executeRow(trx, deps, platform, row, now);
    return quoteView((await findQuote(trx, platform.id, row.id))!, now.ms);
  });
}

/** A same-currency transfer as a quote request; no amount: the source's whole available balance. */
export type TransferQuoteRequest = Omit<QuoteRequest, 'lockedCurrencyAmount'> & { lockedCurrencyAmount?: number };

/**
 * The amount of a transfer without `amount`: the whole available balance of its internal-account
 * source. An external-account source's balance cannot be known: 400 INVALID_INPUT on `amount`;
 * nothing available: 400 INVALID_AMOUNT. Unknown accounts: 404 as for any quote.
 */
async function wholeAvailableBalance(trx: Transaction<DB>, platform: PlatformRow, source: QuoteRequest['source']): Promise<number> {
  const payer = await resolvePayer(trx, platform, source);
  if (payer.kind !== 'INTERNAL') {
    throw invalidInput([{ field: 'amount', message: 'is required when the source is an external account: its balance cannot be known' }]);
  }
  const available = (await balancesOf(trx, [payer.accountId])).get(payer.accountId)?.available ?? 0;
  if (available <= 0) {
    throw apiError(400, 'INVALID_AMOUNT', `The source account ${payer.accountId} has no available balance to transfer`, {
      reason: 'NO_AVAILABLE_BALANCE',
      field: 'amount',
      accountId: payer.accountId,
      currency: payer.currency,
      available,
    });
  }
  return available;
}

/**
 * The deprecated same-currency transfers: a quote (side SENDING) executed at once; they answer
 * its transaction. A transfer-out answers it as created — `PENDING`, what its
 * OUTGOING_PAYMENT.PENDING carries — though it is already `PROCESSING` when the answer leaves
 * (its money held, OUTGOING_PAYMENT.PROCESSING emitted in the same transaction); one that
 * failed at once answers `FAILED`. A transfer-in (a pull) answers its `PENDING` (or `FAILED`)
 * incoming transaction.
 */
export async function createTransfer(deps: PaymentDeps, platform: PlatformRow, now: Now, request: TransferQuoteRequest, direction: 'IN' | 'OUT'): Promise<AnyTransaction> {
  return effectTransaction(deps.store.db, async (trx) => transferIn(trx, deps, platform, now, request, direction));
}

/** A transfer inside the caller's transaction (createTransfer's body; the agents area calls it with its agent). */
export async function transferIn(
  trx: Transaction<DB>,
  deps: PaymentDeps,
  platform: PlatformRow,
  now: Now,
  request: TransferQuoteRequest,
  direction: 'IN' | 'OUT',
  agentId?: string,
): Promise<AnyTransaction> {
  const opts: CreateOptions = { transfer: direction, ...(agentId !== undefined ? { agentId } : {}) };
  const row = await prepareTransfer(trx, deps, platform, now, request, direction, agentId);
  const created = await findTransaction(trx, platform.id, row.transaction_id!);
  const tx = await executeRow(trx, deps, platform, row, now, opts);
  if (direction === 'OUT' && created && tx.status !== 'FAILED' && tx.status !== 'PENDING_AUTHORIZATION') return transactionView(created);
  return transactionView((await findTransaction(trx, platform.id, tx.id)) ?? tx);
}

/**
 * A transfer's quote and its PENDING transaction, not executed (nothing moves): the agents
 * area holds it for approval, then executes it with executeQuoteIn(…, {transfer}).
 */
export async function prepareTransfer(
  trx: Transaction<DB>,
  deps: PaymentDeps,
  platform: PlatformRow,
  now: Now,
  request: TransferQuoteRequest,
  direction: 'IN' | 'OUT',
  agentId?: string,
): Promise<QuoteRow> {
  const body: QuoteRequest = { ...request, lockedCurrencyAmount: request.lockedCurrencyAmount ?? (await wholeAvailableBalance(trx, platform, request.source)) };
  return buildQuote(trx, deps, platform, now, body, { transfer: direction, ...(agentId !== undefined ? { agentId } : {}) });
}

/** POST /quotes inside the caller's transaction, never executed at once (the agents area). */
export async function createQuoteIn(trx: Transaction<DB>, deps: PaymentDeps, platform: PlatformRow, now: Now, body: QuoteRequest, opts: CreateOptions = {}): Promise<QuoteRow> {
  return buildQuote(trx, deps, platform, now, { ...body, immediatelyExecute: false }, opts);
}

/** Execute a quote inside the caller's transaction (the agents area, after its policy allowed it). */
export async function executeQuoteIn(trx: Transaction<DB>, deps: PaymentDeps, platform: PlatformRow, now: Now, quoteId: string, opts: CreateOptions = {}): Promise<TransactionRow> {
  const row = await requireQuote(trx, platform.id, quoteId, deps.store.kind === 'postgres');
  return executeRow(trx, deps, platform, row, now, opts);
}


// ---- Real-time funding ------------------------------------------------------------------

export interface SandboxSend {
  quoteId: string;
  currencyCode: string;
  currencyAmount?: number | undefined;
}

/**
 * POST /sandbox/send: the funds of a REALTIME_FUNDING quote arrive. The quote must be
 * waiting for them (PENDING, not expired: else 400 QUOTE_REQUEST_FAILED with the reason) in
 * its sending currency (else 400 INVALID_CURRENCY). An amount other than the quote's total
 * fails the payment at once with FUNDING_AMOUNT_MISMATCH (the funds go back to the sender).
 */
export async function fundRealtimeQuote(deps: PaymentDeps, platform: PlatformRow, now: Now, body: SandboxSend): Promise<AnyTransaction> {
  return effectTransaction(deps.store.db, async (trx) => {
    const row = await requireQuote(trx, platform.id, body.quoteId, deps.store.kind === 'postgres');
    if (row.source_type !== 'REALTIME_FUNDING') {
      throw apiError(400, 'QUOTE_REQUEST_FAILED', `Quote ${row.id} is not funded in real time; execute it with POST /quotes/{quoteId}/execute`, {
        reason: 'NOT_REALTIME_FUNDING',
        quoteId: row.id,
      });
    }
    assertNotExpired(row, now);
    if (row.status !== 'PENDING') {
      throw apiError(400, 'QUOTE_REQUEST_FAILED', `Quote ${row.id} is not waiting for funds (status ${row.status})`, {
        reason: 'NOT_AWAITING_FUNDS',
        quoteId: row.id,
        status: row.status,
        transactionId: row.transaction_id,
      });
    }
    assertExecutable(row, now);
    if (body.currencyCode.toUpperCase() !== row.sending_currency) {
      throw apiError(400, 'INVALID_CURRENCY', `Quote ${row.id} is funded in ${row.sending_currency}, not ${body.currencyCode}`, {
        field: 'currencyCode',
        expected: row.sending_currency,
      });
    }
    if (row.customer_id !== null) await requireReadySender(trx, platform, row.customer_id);
    await checkDailyVolume(trx, limitSubject(platform, row, now.ms));
    await updateQuoteStatus(trx, row.platform_id, row.id, 'PENDING', { status: 'PROCESSING', updated_at: now.at });
    const { flow, outcome } = await planOf(trx, row, {});
    const hold = await realtimeHoldAccount(trx, platform.id, row.customer_id, row.sending_currency, now.at);
    const payment = { ...(await paymentOf(trx, row, flow, hold)), created_at: now.at, updated_at: now.at };
    const mismatch = body.currencyAmount !== undefined && body.currencyAmount !== Number(row.total_sending);
    const tx = mismatch
      ? await startPayment(trx, deps, payment, { name: 'FUNDING_AMOUNT_MISMATCH', summary: 'Funded with another amount', failsAtStart: true, settleAfterMs: 0, result: 'FAIL', outgoingFailure: 'FUNDING_AMOUNT_MISMATCH' }, now)
      : await startPayment(trx, deps, payment, outcome, now);
    if (mismatch) await keepFailedRealtimeDeposit(trx, deps, tx, body.currencyAmount!, now);
    return transactionView(tx);
  });
}

/**
 * POST /quotes/{quoteId}/execute of a quote funded from an embedded wallet: the wallet's
 * signed-retry challenge (202) while the signature is missing, else null (the embedded-wallets
 * area checks the signature). Not a wallet's quote: null.
 */
export function walletExecuteChallenge(...args: Parameters<typeof authorizeWalletExecute>): ReturnType<typeof authorizeWalletExecute> {
  return authorizeWalletExecute(...args);
}
