import type { Transaction } from 'kysely';
import { packRateDetails } from './rate-details.js';
import { effectTransaction } from '../../kernel/idempotency.js';
import { emitEventsTogether } from '../../kernel/events.js';
import { walletQuoteInstructions } from '../embedded-wallets/wallet-quotes.js';
import { iso } from '../../kernel/clock.js';
import type { DB } from '../../kernel/db/schema.js';
import { apiError, type FieldError, invalidInput } from '../../kernel/errors.js';
import { newId } from '../../kernel/ids.js';
import { corridorOf, type PaymentRail } from '../../sandbox/rules/corridors.js';
import { fundingInstructions } from '../../sandbox/rules/funding-instructions.js';
import { hasRate } from '../../sandbox/rules/fx.js';
import { requiresOwnershipVerification } from '../external-accounts/service.js';
import { checkTransactionSize } from '../limits/service.js';
import type { PlatformRow } from '../../operator/platforms/store.js';
import { createPendingPayment, type PaymentDeps } from '../transactions/payments.js';
import type { Quote, QuoteRequest } from './schemas.js';
import { findQuote, insertQuote, type QuoteRow } from './store.js';
import { authorizationGate } from './authorization.js';
import { deferQuoteInsert, executeRow, keepPlan, requireAllWritten, paymentOf, planOf, quoteAfterExecute } from './execute.js';
import { type CreateOptions, type StoredPayee, accountTypeOf, railsFor, requireReadySender, resolvePayee, resolvePayer } from './parties.js';
import { price, usdCents } from './pricing.js';
import { quoteView } from './views.js';

type Now = { ms: number; at: string };

// Quotes: a priced offer to move money, at the same rate and platform fee the receiver
// lookup and GET /exchange-rates show (pairRate / platformFee), executable until expiresAt
// (QUOTE_TTL_MS of platform time). Sources: an internal account, an external account with
// pull functionality (the pull path), or REALTIME_FUNDING (funded with the quote's
// paymentInstructions; sandbox: POST /sandbox/send). Destinations: an external account (a
// payout), an internal account, or a UMA address (needs the lookup). Executing starts the
// transaction (transactions/payments.ts); the sandbox outcome tables decide how it ends.

export type { PaymentDeps };

/** How long a quote can be executed, on the platform clock. */
export const QUOTE_TTL_MS = 5 * 60_000;

// ---- Create -----------------------------------------------------------------------------

/**
 * POST /quotes: resolve the payer and the payee, check the sender (terms, approval), the
 * rail, price it, check the corridor bounds, the single-transaction limit and the ownership
 * threshold, store it; with immediatelyExecute, execute it in the same transaction.
 */
export async function createQuote(deps: PaymentDeps, platform: PlatformRow, now: Now, body: QuoteRequest, opts: CreateOptions = {}): Promise<Quote> {
  const create = async (trx: Transaction<DB>): Promise<Quote> => {
    // Executed at once (not a transfer): the quote and its transaction are written once each, in their started state (executeRow).
    const row = await buildQuote(trx, deps, platform, now, body, opts, body.immediatelyExecute === true && opts.transfer === undefined);
    if (row.source_type === 'REALTIME_FUNDING' && opts.transfer === undefined && (await authorizationGate?.(trx, deps, platform, row, now))) {
      return quoteView((await findQuote(trx, platform.id, row.id))!, now.ms);
    }
    if (body.immediatelyExecute === true) {
      const tx = await executeRow(trx, deps, platform, row, now, opts);
      const after = await quoteAfterExecute(trx, row, tx, now);
      requireAllWritten(trx);
      return quoteView(after, now.ms);
    }
    return quoteView(row, now.ms);
  };
  // A payment (issue 35): its events (PENDING, BALANCE_UPDATED, PROCESSING) in one insert at
  // the end of its work, in the order emitted; nothing on the way reads them.
  return effectTransaction(deps.store.db, (trx) => (body.immediatelyExecute === true ? emitEventsTogether(trx, () => create(trx)) : create(trx)));
}

export async function buildQuote(trx: Transaction<DB>, deps: PaymentDeps, platform: PlatformRow, now: Now, body: QuoteRequest, opts: CreateOptions, deferWrites = false): Promise<QuoteRow> {
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
  // `deferWrites`: executeRow, called next in this transaction, writes the quote (execute.ts deferQuoteInsert).
  if (deferWrites) deferQuoteInsert(trx, row);
  else await insertQuote(trx, row);
  // Its transaction exists from now on, PENDING until the quote is executed (or funded), EXPIRED with it.
  const { flow, outcome } = await planOf(trx, row, opts);
  const pending = await paymentOf(trx, row, flow, flow === 'PULL' || payer.kind === 'REALTIME' ? null : row.source_account_id, now.at, opts.agentId);
  // Executed next in this transaction (a real-time funded quote never is): executeRow starts this same plan.
  if (deferWrites && payer.kind !== 'REALTIME') keepPlan(trx, row.id, { flow, outcome, payment: pending });
  await createPendingPayment(trx, deps, pending, expiresMs, now, body.immediatelyExecute === true || opts.transfer !== undefined, { deferWrite: deferWrites });
  return row;
}

/** POST /quotes inside the caller's transaction, never executed at once (the agents area). */
export async function createQuoteIn(trx: Transaction<DB>, deps: PaymentDeps, platform: PlatformRow, now: Now, body: QuoteRequest, opts: CreateOptions = {}): Promise<QuoteRow> {
  return buildQuote(trx, deps, platform, now, { ...body, immediatelyExecute: false }, opts);
}
