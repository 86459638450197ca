import type { Transaction } from 'kysely';
import { effectTransaction } from '../../kernel/idempotency.js';
import { authorizeWalletExecute } from '../embedded-wallets/wallet-quotes.js';
import type { DB } from '../../kernel/db/schema.js';
import { apiError } from '../../kernel/errors.js';
import { fundingReference } from '../../sandbox/rules/funding-instructions.js';
import { INTERNAL_OUTCOME, type PaymentOutcome, pullPayoutOutcome, quoteDestinationOutcome, umaDestinationOutcome, UMA_DESTINATION_OUTCOMES } from '../../sandbox/rules/payment-outcomes.js';
import { networkNamed } from '../../sandbox/rules/crypto-networks.js';
import { findCustomer } from '../customers/store.js';
import { accountInfoOf, requireExternalAccount } from '../external-accounts/service.js';
import { checkDailyVolume, type LimitSubject } from '../limits/service.js';
import type { PlatformRow } from '../../operator/platforms/store.js';
import { type Flow, type NewPayment, type PaymentDeps, sandboxHash, startPayment, hasUnwrittenPayments, writeUnwrittenPayments } from '../transactions/payments.js';
import { findTransaction, type TransactionRow } from '../transactions/store.js';
import type { Quote } from './schemas.js';
import { findQuote, insertQuote, type QuoteRow, updateQuoteStatus } from './store.js';
import { authorizationGate } from './authorization.js';
import { type CreateOptions, type StoredPayee, requireReadySender } from './parties.js';
import { quoteView, requireQuote } from './views.js';

// Executing a quote: the checks at execution (expiry, state, limits), the payment it starts
// (transactions/payments.ts), and the embedded wallet's signature before it.

type Now = { ms: number; at: string };

// ---- Execute ----------------------------------------------------------------------------

/**
 * Quotes made and not written yet, per database transaction (issue 35, fourth pass): a quote
 * created with immediatelyExecute is written once, by executeRow, in the state its execution
 * leaves it (PROCESSING), instead of inserted PENDING and then updated. Its transaction's
 * PENDING row is deferred the same way (createPendingPayment's `deferWrite`).
 */
const unwrittenQuotes = new WeakMap<Transaction<DB>, Map<string, QuoteRow>>();

/** Keep `row` unwritten until executeRow (buildQuote with its writes deferred). */
export function deferQuoteInsert(trx: Transaction<DB>, row: QuoteRow): void {
  let rows = unwrittenQuotes.get(trx);
  if (!rows) unwrittenQuotes.set(trx, (rows = new Map()));
  rows.set(row.id, row);
}

/** What executeRow starts for a quote: its flow, its sandbox outcome and its transaction's row. */
export interface PaymentPlan {
  flow: Flow;
  outcome: PaymentOutcome;
  payment: NewPayment;
}

/**
 * The plans buildQuote worked out for the quotes it made to be executed next in the same
 * database transaction (its writes deferred), so executeRow does not work them out again
 * from the same rows (issue 35: the second planOf and paymentOf, about 1.3 % of a payment
 * request's profile).
 */
const keptPlans = new WeakMap<Transaction<DB>, Map<string, PaymentPlan>>();

/** Keep the plan of quote `id` for executeRow in this transaction (buildQuote with its writes deferred). */
export function keepPlan(trx: Transaction<DB>, id: string, plan: PaymentPlan): void {
  let plans = keptPlans.get(trx);
  if (!plans) keptPlans.set(trx, (plans = new Map()));
  plans.set(id, plan);
}

function takePlan(trx: Transaction<DB>, id: string): PaymentPlan | undefined {
  const plans = keptPlans.get(trx);
  const plan = plans?.get(id);
  if (plan !== undefined) plans!.delete(id);
  return plan;
}

/** The quote's row if it is still unwritten, no longer kept as such: the caller writes it. */
function takeUnwrittenQuote(trx: Transaction<DB>, id: string): QuoteRow | undefined {
  const rows = unwrittenQuotes.get(trx);
  const row = rows?.get(id);
  if (row !== undefined) rows!.delete(id);
  return row;
}

/**
 * After a request's work: every quote and transaction row it deferred has been written. A row
 * left unwritten would be an answer without its effect, so it fails the request (500, rolled
 * back) instead of committing without it.
 */
export function requireAllWritten(trx: Transaction<DB>): void {
  if ((unwrittenQuotes.get(trx)?.size ?? 0) > 0 || hasUnwrittenPayments(trx)) throw new Error('a deferred quote or transaction row was never written');
}

/** Write the quote and its transaction as they are, PENDING, if they are still unwritten (before a path that reads or updates them). */
async function writeUnwritten(trx: Transaction<DB>, id: string): Promise<void> {
  const row = takeUnwrittenQuote(trx, id);
  if (row !== undefined) await insertQuote(trx, row);
  await writeUnwrittenPayments(trx);
}

export function limitSubject(platform: PlatformRow, row: QuoteRow, nowMs: number): LimitSubject {
  return {
    platform,
    sendingCurrency: row.sending_currency,
    receivingCurrency: row.receiving_currency,
    sendingAmount: Number(row.total_sending),
    receivingAmount: Number(row.total_receiving),
    nowMs,
  };
}

export function assertNotExpired(row: QuoteRow, now: Now): void {
  if (row.status === 'EXPIRED' || (row.status === 'PENDING' && now.ms > Number(row.expires_at_ms))) {
    throw apiError(400, 'QUOTE_REQUEST_FAILED', `Quote ${row.id} expired at ${row.expires_at}; request a new quote`, {
      reason: 'QUOTE_EXPIRED',
      quoteId: row.id,
      expiresAt: row.expires_at,
    });
  }
}

export function assertExecutable(row: QuoteRow, now: Now): void {
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
export async function planOf(trx: Transaction<DB>, row: QuoteRow, opts: CreateOptions): Promise<{ flow: Flow; outcome: PaymentOutcome }> {
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
export async function paymentOf(trx: Transaction<DB>, row: QuoteRow, flow: Flow, holdAccountId: string | null, at: string, agentId?: string): Promise<NewPayment> {
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
    created_at: at,
    updated_at: at,
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
export async function executeRow(trx: Transaction<DB>, deps: PaymentDeps, platform: PlatformRow, row: QuoteRow, now: Now, opts: CreateOptions = {}): Promise<TransactionRow> {
  assertExecutable(row, now);
  if (row.source_type === 'REALTIME_FUNDING') {
    throw apiError(400, 'QUOTE_REQUEST_FAILED', `Quote ${row.id} is funded in real time: send the funds per its paymentInstructions (sandbox: POST /sandbox/send)`, {
      reason: 'REALTIME_FUNDING',
      quoteId: row.id,
    });
  }
  if (row.customer_id !== null) await requireReadySender(trx, platform, row.customer_id);
  await checkDailyVolume(trx, limitSubject(platform, row, now.ms));
  // SCA (src/api/sca): a payment of an in-scope customer waits for its authorization instead.
  // A gate that holds the quote writes it first (its unwritten rows, if any: `beforeHold`).
  if (opts.transfer !== 'IN' && (await authorizationGate?.(trx, deps, platform, row, now, () => writeUnwritten(trx, row.id)))) return (await findTransaction(trx, platform.id, row.transaction_id!))!;
  const unwritten = takeUnwrittenQuote(trx, row.id);
  // A quote this transaction made and has not written: no one else can have executed it; its one write, PROCESSING.
  if (unwritten !== undefined) await insertQuote(trx, { ...unwritten, status: 'PROCESSING', updated_at: now.at });
  else if (!(await updateQuoteStatus(trx, row.platform_id, row.id, 'PENDING', { status: 'PROCESSING', updated_at: now.at }))) {
    throw apiError(409, 'INVALID_STATE_TRANSITION', `Quote ${row.id} was executed concurrently`, { quoteId: row.id });
  }
  const kept = takePlan(trx, row.id);
  if (kept !== undefined) return startPayment(trx, deps, kept.payment, kept.outcome, now, { quoteProcessing: true });
  const { flow, outcome } = await planOf(trx, row, opts);
  const hold = flow === 'PULL' ? null : row.source_account_id;
  return startPayment(trx, deps, await paymentOf(trx, row, flow, hold, now.at, opts.agentId), outcome, now, { quoteProcessing: true });
}

/**
 * The quote row after executeRow (`row` as it was before, `tx` what executeRow answered):
 * when its payment started (PROCESSING), the one change executeRow made to the quote is
 * its move to PROCESSING at `now`, so the row is known without reading it back (issue 35).
 * Anything else (held for authorization, failed at once, a pull): read again.
 */
export async function quoteAfterExecute(trx: Transaction<DB>, row: QuoteRow, tx: TransactionRow, now: Now): Promise<QuoteRow> {
  if (tx.status === 'PROCESSING' && tx.quote_id === row.id && row.status === 'PENDING') return { ...row, status: 'PROCESSING', updated_at: now.at };
  return (await findQuote(trx, row.platform_id, row.id))!;
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
  await startPayment(trx, deps, await paymentOf(trx, row, flow, flow === 'PULL' ? null : row.source_account_id, now.at), outcome, now, { quoteProcessing: true });
}

/** POST /quotes/{quoteId}/execute: lock the quote, then start its payment. */
export async function executeQuote(deps: PaymentDeps, platform: PlatformRow, now: Now, quoteId: string): Promise<Quote> {
  return effectTransaction(deps.store.db, async (trx) => {
    const row = await requireQuote(trx, platform.id, quoteId, deps.store.kind === 'postgres');
    const tx = await executeRow(trx, deps, platform, row, now);
    return quoteView(await quoteAfterExecute(trx, row, tx, now), now.ms);
  });
}

/** Execute a quote inside the caller's transaction (the agents area, after its policy allowed it). */
export async function executeQuoteIn(trx: Transaction<DB>, deps: PaymentDeps, platform: PlatformRow, now: Now, quoteId: string, opts: CreateOptions = {}): Promise<TransactionRow> {
  const row = await requireQuote(trx, platform.id, quoteId, deps.store.kind === 'postgres');
  return executeRow(trx, deps, platform, row, now, opts);
}

/**
 * POST /quotes/{quoteId}/execute of a quote funded from an embedded wallet: the wallet's
 * signed-retry challenge (202) while the signature is missing, else null (the embedded-wallets
 * area checks the signature). Not a wallet's quote: null.
 */
export function walletExecuteChallenge(...args: Parameters<typeof authorizeWalletExecute>): ReturnType<typeof authorizeWalletExecute> {
  return authorizeWalletExecute(...args);
}
