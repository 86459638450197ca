import type { Transaction } from 'kysely';
import { createHash } from 'node:crypto';
import { iso } from '../../kernel/clock.js';
import type { Store } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { apiError } from '../../kernel/errors.js';
import { emitEvent, emitEventsTogether } from '../../kernel/events.js';
import type { BatchJobContext, JobContext, JobQueue } from '../../kernel/jobs.js';
import type { AccountInfoLike } from '../../sandbox/rules/identifiers.js';
import { outcomeNamed, type PaymentOutcome, pullPayoutOutcome, REFUND_DELAY_MS, settlementExpectation } from '../../sandbox/rules/payment-outcomes.js';
import { emitBalanceUpdates, openHoldingAccounts } from '../internal-accounts/service.js';
import { holdingAccountsOf } from '../internal-accounts/store.js';
import { findAccountInfoEvenDeleted, findAccountInfosEvenDeleted } from '../external-accounts/store.js';
import { findCurrency } from '../../kernel/currencies.js';
import { ensureClearingAccount, ensureWorldAccount, ensureWorldAccounts, type EntryInput, InsufficientFundsError, type Posting, type PostedEntry, postEntries, postEntry } from '../ledger/service.js';
import { moveQuotesStatus, moveQuoteStatus, updateQuoteStatus } from '../quotes/store.js';
import type { Refund } from './schemas.js';
import { findTransaction, findTransactions, insertTransaction, type TransactionRow, updateTransaction, updateTransactions, writeTransactionRow } from './store.js';
import { transactionView } from './views.js';

// The payment flows: how a transaction moves through the sandbox outcome it drew when it
// started (src/sandbox/rules/payment-outcomes.ts), as ledger entries and durable jobs on the
// platform clock (docs/ledger.md has the entries of every flow).
//
// OUTGOING (QUOTE_PAYOUT, UMA_PAYOUT, TRANSFER_OUT, INTERNAL_TRANSFER, UMA_DEPOSIT: an
// approved incoming UMA payment paid on to the customer's default UMA deposit account):
//   start    HOLD      payer.available −total, payer.held +total
//            (real-time funding: FUNDING_HOLD world −total, clearing.held +total; crypto
//            real-time funding: DEPOSIT world −total, payer.available +total, then the HOLD,
//            the payer being the payer's internal account in the asset)
//   settle   CAPTURE   payer.held −total, world +(total − fee), platform +fee
//                      (to an internal account: world(recv) −received, account +received)
//   fail     → refund PENDING; REFUND job: RELEASE payer.held −total, payer.available +total
//            (fiat real-time funding: back to the sender, world +total; crypto real-time
//            funding: into the payer's internal account in the asset); or the refund fails
//            and the money stays held
//   return   RETURN    world −(total − fee), platform −fee, payer.held +total; then refund
// INCOMING pull (PULL): start PULL_PENDING world −received, account.pending +received;
//   settle COLLECT (pending → available, platform fee) or UNWIND (pending → world).

type Trx = Transaction<DB>;
type Now = { ms: number; at: string };

export const PAYMENT_JOB = 'payment.step';
/** The job kind of earlier versions (one settle step); still handled. */
export const LEGACY_SETTLE_JOB = 'outgoing-payment.settle';

export type PaymentStep = 'SETTLE' | 'RETURN' | 'REFUND' | 'EXPIRE';

export interface PaymentDeps {
  store: Store;
  jobs: JobQueue;
}

export type Flow = 'QUOTE_PAYOUT' | 'UMA_PAYOUT' | 'TRANSFER_OUT' | 'INTERNAL_TRANSFER' | 'PULL' | 'UMA_DEPOSIT';

/** A payment to start: the transaction row as it will be stored (status and ledger fields are set here). */
export type NewPayment = Omit<
  TransactionRow,
  'status' | 'hold_entry_id' | 'failure_reason' | 'settled_at' | 'outcome' | 'refund' | 'pending_reason' | 'flow' | 'expected_settlement_at' | 'settlement_timeline_seconds'
> & {
  flow: Flow;
  /**
   * Money arrives from outside for this payment (REALTIME_FUNDING): into the platform's
   * clearing account (`hold_account_id` a clearing account), or, crypto, deposited into the
   * payer's internal account in the asset and held there (`hold_account_id` that account:
   * realtimeHoldAccount).
   */
  realtimeFunded?: boolean;
};

function eventPrefix(row: TransactionRow): string {
  return row.type === 'INCOMING' ? 'INCOMING_PAYMENT' : 'OUTGOING_PAYMENT';
}

async function emitTx(trx: Trx, row: TransactionRow, event: string, at: string): Promise<void> {
  await emitEvent(trx, row.platform_id, at, { type: `${eventPrefix(row)}.${event}`, resourceId: row.id, data: transactionView(row) });
}

/** Internal accounts an entry touched (counter-accounts are not internal accounts). */
function internalAccountsOf(entry: PostedEntry): string[] {
  return [...new Set(entry.postings.map((p) => p.accountId).filter((id) => id.startsWith('InternalAccount:')))];
}

async function post(trx: Trx, deps: Pick<PaymentDeps, 'store'>, row: TransactionRow, kind: string, at: string, postings: Posting[], relatedEntryId?: string | null, keyIsNew = false): Promise<PostedEntry> {
  const entry = await postEntry(trx, deps.store, {
    platformId: row.platform_id,
    kind,
    at,
    referenceId: row.id,
    relatedEntryId: relatedEntryId ?? undefined,
    idempotencyKey: `${kind.toLowerCase()}:${row.id}`,
    keyIsNew,
    // Its balances go only into the balance events below (the caller reads the entry's id).
    balancesForEventsOnly: true,
    postings: postings.filter((p) => p.amount !== 0),
  });
  await emitBalanceUpdates(trx, row.platform_id, internalAccountsOf(entry), at, entry.balances);
  return entry;
}

/**
 * The account a real-time funded payment's money is held in: for a crypto sending currency
 * (USDC, USDT, BTC, …) the payer's internal account in that asset — the customer's, or the
 * platform's own for a platform quote — opened when missing, so the deposit shows on it and a
 * refund stays there; for fiat the platform's clearing account (a refund goes back to the
 * sender's instrument).
 */
export async function realtimeHoldAccount(trx: Trx, platformId: string, customerId: string | null, currency: string, at: string): Promise<string> {
  if (findCurrency(currency)?.kind !== 'CRYPTO') return ensureClearingAccount(trx, platformId, currency, at);
  await openHoldingAccounts(trx, platformId, customerId, [currency], at);
  const row = (await holdingAccountsOf(trx, platformId, customerId)).find((a) => a.currency === currency);
  if (!row) throw new Error(`${customerId ?? platformId} has no ${currency} account`);
  return row.id;
}

/** The platform's own holding account in a currency (opened when missing): platform fees land here. */
async function platformFeeAccount(trx: Trx, platformId: string, currency: string, at: string): Promise<string> {
  await openHoldingAccounts(trx, platformId, null, [currency], at);
  const row = (await holdingAccountsOf(trx, platformId, null)).find((a) => a.currency === currency);
  if (!row) throw new Error(`platform ${platformId} has no ${currency} account`);
  return row.id;
}

async function schedule(trx: Trx, deps: PaymentDeps, row: TransactionRow, step: PaymentStep, runAtMs: number, at: string): Promise<void> {
  await deps.jobs.schedule(trx, { platformId: row.platform_id, kind: PAYMENT_JOB, payload: { transactionId: row.id, step }, runAtMs, at });
}

/** A deterministic, realistic-looking hash for a sandbox settlement leg. */
export function sandboxHash(seed: string, style: 'evm' | 'base58' | 'hex' = 'hex'): string {
  const h = createHash('sha256').update(seed).digest();
  if (style === 'evm') return `0x${h.toString('hex')}`;
  if (style === 'base58') {
    const alphabet = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
    let n = BigInt(`0x${Buffer.concat([h, createHash('sha256').update(h).digest()]).toString('hex')}`);
    let out = '';
    while (n > 0n) {
      out = alphabet[Number(n % 58n)] + out;
      n /= 58n;
    }
    return out;
  }
  return h.toString('hex');
}

async function refreshed(trx: Trx, row: TransactionRow): Promise<TransactionRow> {
  return (await findTransaction(trx, row.platform_id, row.id))!;
}

async function setQuoteStatus(trx: Trx, row: TransactionRow, to: 'PROCESSING' | 'COMPLETED' | 'FAILED', at: string): Promise<void> {
  if (row.quote_id) await moveQuoteStatus(trx, row.platform_id, row.quote_id, to, at);
}

// ---- Start ----------------------------------------------------------------------------

/**
 * The transaction row of a payment to start (`input` without `realtimeFunded`), in the state
 * given, nothing held or settled yet. One object literal of every column, so that V8 keeps it
 * a fast object (issue 35): a copy made by keyed stores (`kernel/objects.ts` `extended`, since
 * removed) or a destructuring's rest object with ten keys added, as before, left V8 (Node 20)
 * a dictionary-mode object (more than a dozen properties added outside a literal), slower at
 * every later read: the insert's parameters, the events' views. A new column fails to
 * compile here until it is added.
 */
function rowOf(input: NewPayment, status: string, outcome: string | null, pendingReason: string | null): TransactionRow {
  return {
    id: input.id,
    platform_id: input.platform_id,
    customer_id: input.customer_id,
    platform_customer_id: input.platform_customer_id,
    type: input.type,
    direction: input.direction,
    quote_id: input.quote_id,
    source: input.source,
    source_account_id: input.source_account_id,
    destination: input.destination,
    destination_account_id: input.destination_account_id,
    sent_amount: input.sent_amount,
    sent_currency: input.sent_currency,
    received_amount: input.received_amount,
    received_currency: input.received_currency,
    fees: input.fees,
    platform_fees: input.platform_fees,
    exchange_rate: input.exchange_rate,
    rate_details: input.rate_details,
    payment_rail: input.payment_rail,
    description: input.description,
    created_at: input.created_at,
    updated_at: input.updated_at,
    counterparty_information: input.counterparty_information,
    reconciliation: input.reconciliation,
    receipt_delivery_confirmed_at: input.receipt_delivery_confirmed_at,
    rail_selection_mode: input.rail_selection_mode,
    payment_instructions: input.payment_instructions,
    requested_receiver_fields: input.requested_receiver_fields,
    receiver_customer_info: input.receiver_customer_info,
    agent_id: input.agent_id,
    hold_account_id: input.hold_account_id,
    approval_deadline_ms: input.approval_deadline_ms,
    expires_at_ms: input.expires_at_ms,
    flow: input.flow,
    status,
    hold_entry_id: null,
    failure_reason: null,
    settled_at: null,
    outcome,
    refund: null,
    pending_reason: pendingReason,
    expected_settlement_at: null,
    settlement_timeline_seconds: null,
  };
}

/**
 * The transaction of a quote that is not executed yet: `PENDING`, nothing moves. An OUTGOING
 * one is announced (OUTGOING_PAYMENT.PENDING) whether or not it is executed in the same
 * request, so every payout's events start PENDING → PROCESSING (or FAILED at once) → …
 * (docs/webhooks.md "Event sequences"); a pull (INCOMING) announces itself when it starts.
 * Unless `executesNow`, it expires with its quote (a durable EXPIRE step at `expiresAtMs`:
 * `EXPIRED`, OUTGOING_PAYMENT.EXPIRED); executing (or funding) the quote starts it (startPayment).
 */
export async function createPendingPayment(trx: Trx, deps: PaymentDeps, input: NewPayment, expiresAtMs: number, now: Now, executesNow: boolean, opts: { deferWrite?: boolean } = {}): Promise<TransactionRow> {
  const row = rowOf(input, 'PENDING', null, null);
  // `deferWrite` (a quote executed in the same request, issue 35 fourth pass): the PENDING row
  // is not written; startPayment writes the row once, in the state the request leaves it
  // (writeUnwrittenPayments writes it as it is for a path that needs it in the store first).
  if (executesNow && opts.deferWrite) unwrittenOf(trx).set(row.id, row);
  else await insertTransaction(trx, row);
  if (executesNow) pendingWritten(trx).set(row.id, row.created_at);
  if (row.type === 'OUTGOING') await emitTx(trx, row, 'PENDING', now.at);
  if (!executesNow) await schedule(trx, deps, row, 'EXPIRE', expiresAtMs + 1, now.at);
  return row;
}

/**
 * The PENDING rows createPendingPayment wrote in a database transaction that starts them
 * in the same transaction (a quote with immediatelyExecute): id → created_at. writeStarted
 * takes its row from here instead of reading back what this transaction just wrote (issue 35).
 */
const pendingRows = new WeakMap<Trx, Map<string, string>>();

function pendingWritten(trx: Trx): Map<string, string> {
  let rows = pendingRows.get(trx);
  if (!rows) pendingRows.set(trx, (rows = new Map()));
  return rows;
}

/**
 * The PENDING rows createPendingPayment made with `deferWrite` and nobody wrote yet, per
 * database transaction: id → row. Nothing reads a transaction between its quote's creation
 * and its start on that path (the quote's execution checks read the customer, the day's
 * volume, which a PENDING transaction does not count, and the accounts), so the row is
 * inserted once, in its started state, instead of inserted PENDING and then rewritten whole.
 */
const unwrittenRows = new WeakMap<Trx, Map<string, TransactionRow>>();

function unwrittenOf(trx: Trx): Map<string, TransactionRow> {
  let rows = unwrittenRows.get(trx);
  if (!rows) unwrittenRows.set(trx, (rows = new Map()));
  return rows;
}

/** Whether createPendingPayment deferred a row in `trx` that nobody wrote yet (a bug once the request's work is done). */
export function hasUnwrittenPayments(trx: Trx): boolean {
  return (unwrittenRows.get(trx)?.size ?? 0) > 0;
}

/** Write the PENDING rows createPendingPayment deferred in `trx` and nobody wrote yet, as they are (before a path that reads or updates them). */
export async function writeUnwrittenPayments(trx: Trx): Promise<void> {
  const rows = unwrittenRows.get(trx);
  if (!rows) return;
  unwrittenRows.delete(trx);
  for (const row of rows.values()) await insertTransaction(trx, row);
}

/**
 * Write a starting transaction: over its PENDING row when the quote created one (keeping its
 * createdAt), else new. With `deferUpdate`, the row is not written yet (the caller writes it
 * once, whole, when the money has moved: one write per state change); answers what the
 * caller still has to write: `update` over the PENDING row in the store, `insert` for a
 * PENDING row that was never written (createPendingPayment's `deferWrite`), or `none`.
 */
async function writeStarted(trx: Trx, row: TransactionRow, deferUpdate = false): Promise<'none' | 'update' | 'insert'> {
  const written = pendingRows.get(trx);
  const unwritten = unwrittenRows.get(trx)?.get(row.id);
  const createdAt = written?.get(row.id) ?? (await findTransaction(trx, row.platform_id, row.id))?.created_at;
  written?.delete(row.id);
  if (unwritten !== undefined) {
    // Its PENDING row was never written (createPendingPayment's `deferWrite`): one insert, now or when the money has moved.
    unwrittenRows.get(trx)!.delete(row.id);
    row.created_at = unwritten.created_at;
    if (deferUpdate) return 'insert';
    await insertTransaction(trx, row);
    return 'none';
  }
  if (createdAt === undefined) {
    await insertTransaction(trx, row);
    return 'none';
  }
  row.created_at = createdAt;
  if (deferUpdate) return 'update';
  await writeWhole(trx, row);
  return 'none';
}

async function writeWhole(trx: Trx, row: TransactionRow): Promise<void> {
  await writeTransactionRow(trx, row);
}

/**
 * Start a payment inside the caller's transaction: write the transaction, move the money
 * in (hold, or a pull's pending credit) and schedule its next step, per the outcome. An
 * outcome that fails at once writes a FAILED transaction and moves nothing. Not enough
 * available balance on the payer: 400 INVALID_AMOUNT (details.reason INSUFFICIENT_BALANCE),
 * nothing written. `opts.quoteProcessing`: the caller already moved the transaction's quote
 * to PROCESSING.
 */
export async function startPayment(trx: Trx, deps: PaymentDeps, input: NewPayment, outcome: PaymentOutcome, now: Now, opts: { quoteProcessing?: boolean } = {}): Promise<TransactionRow> {
  const { flow, realtimeFunded } = input;
  const incoming = input.type === 'INCOMING';
  const row = rowOf(input, incoming ? 'PENDING' : 'PROCESSING', outcome.name, outcome.pendingReason ?? null);

  if (outcome.failsAtStart) {
    row.status = 'FAILED';
    row.failure_reason = (incoming ? outcome.incomingFailure : outcome.outgoingFailure) ?? 'QUOTE_EXECUTION_FAILED';
    row.pending_reason = null;
    await writeStarted(trx, row);
    await setQuoteStatus(trx, row, 'FAILED', now.at);
    await emitTx(trx, row, 'FAILED', now.at);
    return row;
  }

  // A new transaction's row first (ledger entries reference it); a PENDING one is written
  // once, below, when the money has moved. A row this database transaction created (a quote
  // executed at creation) can have no ledger entry yet: its hold skips that look-up.
  const createdHere = pendingRows.get(trx)?.has(row.id) === true;
  const unwritten = await writeStarted(trx, row, true);
  const total = Number(row.sent_amount);
  let entry: PostedEntry;
  try {
    if (flow === 'PULL') {
      const world = await ensureWorldAccount(trx, row.platform_id, row.received_currency!, now.at, row.id);
      entry = await post(trx, deps, row, 'PULL_PENDING', now.at, [
        { accountId: world, currency: row.received_currency!, amount: -Number(row.received_amount) },
        { accountId: row.destination_account_id!, currency: row.received_currency!, amount: Number(row.received_amount), bucket: 'pending' },
      ]);
    } else if (realtimeFunded && !row.hold_account_id!.startsWith('InternalAccount:')) {
      const world = await ensureWorldAccount(trx, row.platform_id, row.sent_currency, now.at, row.id);
      entry = await post(trx, deps, row, 'FUNDING_HOLD', now.at, [
        { accountId: world, currency: row.sent_currency, amount: -total },
        { accountId: row.hold_account_id!, currency: row.sent_currency, amount: total, bucket: 'held' },
      ]);
    } else {
      if (realtimeFunded) {
        // A crypto deposit lands in the payer's internal account in the asset (its own
        // INTERNAL_ACCOUNT.BALANCE_UPDATED), then is held for the payment like a prefunded one.
        const world = await ensureWorldAccount(trx, row.platform_id, row.sent_currency, now.at, row.id);
        await post(trx, deps, row, 'DEPOSIT', now.at, [
          { accountId: world, currency: row.sent_currency, amount: -total },
          { accountId: row.hold_account_id!, currency: row.sent_currency, amount: total },
        ]);
      }
      entry = await post(
        trx,
        deps,
        row,
        'HOLD',
        now.at,
        [
          { accountId: row.hold_account_id!, currency: row.sent_currency, amount: -total },
          { accountId: row.hold_account_id!, currency: row.sent_currency, amount: total, bucket: 'held' },
        ],
        null,
        createdHere,
      );
    }
  } catch (err) {
    if (err instanceof InsufficientFundsError) {
      throw apiError(400, 'INVALID_AMOUNT', `The source account has ${err.balance} ${err.currency} available; the payment needs ${total}`, {
        reason: 'INSUFFICIENT_BALANCE',
        accountId: row.hold_account_id,
        currency: err.currency,
        available: err.balance,
        required: total,
        shortfall: err.shortfall,
      });
    }
    throw err;
  }
  row.hold_entry_id = entry.id;
  if (!incoming) {
    // Its expected settlement, from the outcome's timing and the quote's creation (created_at, kept by writeStarted).
    const expected = settlementExpectation(outcome, row.payment_rail, now.ms, Date.parse(row.created_at));
    row.expected_settlement_at = expected.expectedSettlementAt;
    row.settlement_timeline_seconds = expected.settlementTimelineSeconds;
  }
  if (unwritten === 'insert') await insertTransaction(trx, row);
  else if (unwritten === 'update') await writeWhole(trx, row);
  else
    await updateTransaction(trx, row.platform_id, row.id, {
      hold_entry_id: entry.id,
      expected_settlement_at: row.expected_settlement_at,
      settlement_timeline_seconds: row.settlement_timeline_seconds,
    });
  // `quoteProcessing`: the caller moved the quote to PROCESSING already (executing it), so this move would change nothing.
  if (!opts.quoteProcessing) await setQuoteStatus(trx, row, 'PROCESSING', now.at);
  await emitTx(trx, row, incoming ? 'PENDING' : 'PROCESSING', now.at);
  await schedule(trx, deps, row, 'SETTLE', now.ms + outcome.settleAfterMs, now.at);
  return row;
}

/**
 * Funds that arrived for a real-time funded payment that failed at once
 * (FUNDING_AMOUNT_MISMATCH): a crypto deposit is never sent back to the wallet — it stays in
 * the payer's internal account in the asset (DEPOSIT of the amount that arrived, with its
 * INTERNAL_ACCOUNT.BALANCE_UPDATED). Fiat (held in clearing) goes back outside the books:
 * nothing is posted.
 */
export async function keepFailedRealtimeDeposit(trx: Trx, deps: PaymentDeps, row: TransactionRow, amount: number, now: Now): Promise<void> {
  if (row.status !== 'FAILED' || !row.hold_account_id?.startsWith('InternalAccount:') || amount <= 0) return;
  const world = await ensureWorldAccount(trx, row.platform_id, row.sent_currency, now.at, row.id);
  await post(trx, deps, row, 'DEPOSIT', now.at, [
    { accountId: world, currency: row.sent_currency, amount: -amount },
    { accountId: row.hold_account_id, currency: row.sent_currency, amount },
  ]);
}

/** A payout the service starts on its own (no quote): same currency, from an internal account to an external one. */
export interface OnwardPayout {
  id: string;
  platformId: string;
  customerId: string;
  platformCustomerId: string;
  /** The paying internal account (held, then captured; a failure refunds it). */
  fromAccountId: string;
  to: { id: string; accountInfo: AccountInfoLike & { paymentRails?: unknown } };
  currency: string;
  amount: number;
  description: string;
  /** reconciliationInstructions.reference shown on the payout. */
  reference: string;
}

/**
 * Start an onward payout inside the caller's transaction, exactly as a transfer-out: the
 * transaction is announced (OUTGOING_PAYMENT.PENDING), then started (the money held on the
 * paying account, OUTGOING_PAYMENT.PROCESSING), its outcome drawn from the destination's
 * suffix in the transfers/payouts table (002/003 fail at once: nothing moves). Flow UMA_DEPOSIT.
 */
export async function startOnwardPayout(trx: Trx, deps: PaymentDeps, p: OnwardPayout, now: Now): Promise<TransactionRow> {
  const rails = Array.isArray(p.to.accountInfo.paymentRails) ? (p.to.accountInfo.paymentRails as unknown[]) : [];
  const input: NewPayment = {
    flow: 'UMA_DEPOSIT',
    id: p.id,
    platform_id: p.platformId,
    customer_id: p.customerId,
    platform_customer_id: p.platformCustomerId,
    type: 'OUTGOING',
    direction: 'DEBIT',
    quote_id: null,
    source: JSON.stringify({ sourceType: 'ACCOUNT', accountId: p.fromAccountId, currency: p.currency }),
    source_account_id: p.fromAccountId,
    destination: JSON.stringify({ destinationType: 'ACCOUNT', accountId: p.to.id, currency: p.currency }),
    destination_account_id: p.to.id,
    sent_amount: p.amount,
    sent_currency: p.currency,
    received_amount: p.amount,
    received_currency: p.currency,
    fees: 0,
    platform_fees: 0,
    exchange_rate: null,
    rate_details: null,
    payment_rail: typeof rails[0] === 'string' ? rails[0] : null,
    description: p.description,
    created_at: now.at,
    updated_at: now.at,
    counterparty_information: null,
    reconciliation: JSON.stringify({ reference: p.reference }),
    receipt_delivery_confirmed_at: null,
    rail_selection_mode: null,
    payment_instructions: null,
    requested_receiver_fields: null,
    receiver_customer_info: null,
    agent_id: null,
    hold_account_id: p.fromAccountId,
    approval_deadline_ms: null,
    expires_at_ms: null,
  };
  await createPendingPayment(trx, deps, input, now.ms, now, true);
  return startPayment(trx, deps, input, pullPayoutOutcome(p.to.accountInfo), now);
}

// ---- Steps ----------------------------------------------------------------------------

/** The money of an in-flight outgoing payment leaves (or reaches an internal destination). */
async function capture(trx: Trx, deps: PaymentDeps, row: TransactionRow, at: string): Promise<void> {
  const total = Number(row.sent_amount);
  const fee = Number(row.platform_fees);
  const currency = row.sent_currency;
  const world = await ensureWorldAccount(trx, row.platform_id, currency, at, row.id);
  const postings: Posting[] = [
    { accountId: row.hold_account_id!, currency, amount: -total, bucket: 'held' },
    { accountId: world, currency, amount: total - fee },
  ];
  if (fee > 0) postings.push({ accountId: await platformFeeAccount(trx, row.platform_id, currency, at), currency, amount: fee });
  if (row.flow === 'INTERNAL_TRANSFER' && row.destination_account_id && row.received_currency) {
    const worldRecv = await ensureWorldAccount(trx, row.platform_id, row.received_currency, at, row.id);
    const received = Number(row.received_amount);
    postings.push({ accountId: worldRecv, currency: row.received_currency, amount: -received }, { accountId: row.destination_account_id, currency: row.received_currency, amount: received });
  }
  await post(trx, deps, row, 'CAPTURE', at, postings, row.hold_entry_id);
}

/** A completed payout comes back: its money returns to the payer's held bucket (then refunded). */
async function unwindCapture(trx: Trx, deps: PaymentDeps, row: TransactionRow, at: string): Promise<void> {
  const total = Number(row.sent_amount);
  const fee = Number(row.platform_fees);
  const currency = row.sent_currency;
  const world = await ensureWorldAccount(trx, row.platform_id, currency, at, row.id);
  const postings: Posting[] = [{ accountId: row.hold_account_id!, currency, amount: total, bucket: 'held' }];
  if (fee > 0) {
    // The platform gives its fee back; what its account no longer holds is borne outside.
    const feeAccount = await platformFeeAccount(trx, row.platform_id, currency, at);
    const [held] = await trx.selectFrom('ledger_balances').select('available').where('account_id', '=', feeAccount).execute();
    const back = Math.min(fee, Number(held?.available ?? 0));
    if (back > 0) postings.push({ accountId: feeAccount, currency, amount: -back });
    postings.push({ accountId: world, currency, amount: -(total - back) });
  } else {
    postings.push({ accountId: world, currency, amount: -total });
  }
  await post(trx, deps, row, 'RETURN', at, postings);
}

/** Fail an in-flight payment: FAILED with its reason, and (outgoing) a PENDING refund. */
async function fail(trx: Trx, deps: PaymentDeps, row: TransactionRow, outcome: PaymentOutcome, now: Now, reason?: string, refundReason?: Refund['reason']): Promise<TransactionRow> {
  const incoming = row.type === 'INCOMING';
  const failure = reason ?? (incoming ? outcome.incomingFailure : outcome.outgoingFailure) ?? 'QUOTE_EXECUTION_FAILED';
  if (incoming) {
    // A pull that did not arrive: its pending credit is undone; nothing to refund.
    const world = await ensureWorldAccount(trx, row.platform_id, row.received_currency!, now.at, row.id);
    await post(trx, deps, row, 'UNWIND', now.at, [
      { accountId: row.destination_account_id!, currency: row.received_currency!, amount: -Number(row.received_amount), bucket: 'pending' },
      { accountId: world, currency: row.received_currency!, amount: Number(row.received_amount) },
    ], row.hold_entry_id);
    await updateTransaction(trx, row.platform_id, row.id, { status: 'FAILED', failure_reason: failure, pending_reason: null, updated_at: now.at });
    const done = await refreshed(trx, row);
    await setQuoteStatus(trx, done, 'FAILED', now.at);
    await emitTx(trx, done, 'FAILED', now.at);
    return done;
  }
  const refund: Refund = {
    reference: `REFUND-${row.id.slice(-12).toUpperCase()}`,
    initiatedAt: now.at,
    status: 'PENDING',
    reason: refundReason ?? outcome.refund?.reason ?? 'TRANSACTION_FAILED',
  };
  await updateTransaction(trx, row.platform_id, row.id, { status: 'FAILED', failure_reason: failure, pending_reason: null, refund: JSON.stringify(refund), updated_at: now.at });
  const done = await refreshed(trx, row);
  await setQuoteStatus(trx, done, 'FAILED', now.at);
  await emitTx(trx, done, 'FAILED', now.at);
  await emitTx(trx, done, 'REFUND_PENDING', now.at);
  await schedule(trx, deps, done, 'REFUND', now.ms + REFUND_DELAY_MS, now.at);
  return done;
}

/**
 * Where a payment's refund goes: the payer's available balance (a prefunded payment, and a
 * crypto real-time funded one: its deposit passed through the payer's internal account in
 * the asset), or back to the outside sender (fiat real-time funding, held in clearing).
 */
async function refundPostings(trx: Trx, row: TransactionRow, at: string): Promise<Posting[]> {
  const total = Number(row.sent_amount);
  const currency = row.sent_currency;
  const back: Posting =
    row.hold_account_id && row.hold_account_id.startsWith('InternalAccount:')
      ? { accountId: row.hold_account_id, currency, amount: total }
      : { accountId: await ensureWorldAccount(trx, row.platform_id, currency, at, row.id), currency, amount: total };
  return [{ accountId: row.hold_account_id!, currency, amount: -total, bucket: 'held' }, back];
}

async function completeRefund(trx: Trx, deps: PaymentDeps, row: TransactionRow, outcome: PaymentOutcome, now: Now): Promise<void> {
  const refund = JSON.parse(row.refund ?? 'null') as Refund | null;
  if (!refund || refund.status !== 'PENDING') return;
  if (outcome.refund?.fails) {
    // The refund fails too: the money stays in the payer's held bucket, accounted for.
    const failed: Refund = { ...refund, status: 'FAILED' };
    await updateTransaction(trx, row.platform_id, row.id, { refund: JSON.stringify(failed), updated_at: now.at });
    await emitTx(trx, await refreshed(trx, row), 'REFUND_FAILED', now.at);
    return;
  }
  await post(trx, deps, row, 'REFUND', now.at, await refundPostings(trx, row, now.at), row.hold_entry_id);
  const done: Refund = { ...refund, status: 'COMPLETED', settledAt: now.at };
  await updateTransaction(trx, row.platform_id, row.id, { refund: JSON.stringify(done), updated_at: now.at });
  await emitTx(trx, await refreshed(trx, row), 'REFUND_COMPLETED', now.at);
}

async function settle(trx: Trx, deps: PaymentDeps, row: TransactionRow, outcome: PaymentOutcome, now: Now): Promise<void> {
  const incoming = row.type === 'INCOMING';
  if (row.status !== (incoming ? 'PENDING' : 'PROCESSING') || row.outcome === null) return;
  if (outcome.result === 'FAIL') {
    await fail(trx, deps, row, outcome, now);
    return;
  }
  const set: Partial<TransactionRow> = { status: 'COMPLETED', settled_at: now.at, pending_reason: null, updated_at: now.at };
  if (incoming) {
    const received = Number(row.received_amount);
    const postings: Posting[] = [
      { accountId: row.destination_account_id!, currency: row.received_currency!, amount: -received, bucket: 'pending' },
      { accountId: row.destination_account_id!, currency: row.received_currency!, amount: received },
    ];
    const fee = Number(row.platform_fees);
    if (fee > 0) {
      const world = await ensureWorldAccount(trx, row.platform_id, row.sent_currency, now.at, row.id);
      postings.push({ accountId: world, currency: row.sent_currency, amount: -fee }, { accountId: await platformFeeAccount(trx, row.platform_id, row.sent_currency, now.at), currency: row.sent_currency, amount: fee });
    }
    await post(trx, deps, row, 'COLLECT', now.at, postings, row.hold_entry_id);
  } else {
    await capture(trx, deps, row, now.at);
    Object.assign(set, await settlementLegs(trx, row));
  }
  await updateTransaction(trx, row.platform_id, row.id, set);
  const done = await refreshed(trx, row);
  await setQuoteStatus(trx, done, 'COMPLETED', now.at);
  await emitTx(trx, done, 'COMPLETED', now.at);
  if (outcome.returnAfterMs !== undefined) await schedule(trx, deps, done, 'RETURN', now.ms + outcome.returnAfterMs, now.at);
}

const WALLET_NETWORKS: Readonly<Record<string, { network: 'BASE' | 'ETHEREUM' | 'POLYGON' | 'SOLANA' | 'TRON' | 'PLASMA' | 'SPARK' | 'BITCOIN'; style: 'evm' | 'base58' | 'hex' }>> = {
  BASE_WALLET: { network: 'BASE', style: 'evm' },
  ETHEREUM_WALLET: { network: 'ETHEREUM', style: 'evm' },
  POLYGON_WALLET: { network: 'POLYGON', style: 'evm' },
  PLASMA_WALLET: { network: 'PLASMA', style: 'evm' },
  SOLANA_WALLET: { network: 'SOLANA', style: 'base58' },
  TRON_WALLET: { network: 'TRON', style: 'hex' },
  SPARK_WALLET: { network: 'SPARK', style: 'hex' },
};

/** The external account whose kind a settled payment's legs depend on (legsOf), if any. */
function legsAccountOf(row: TransactionRow): string | undefined {
  if (row.flow === 'UMA_PAYOUT' || !row.destination_account_id?.startsWith('ExternalAccount:')) return undefined;
  return row.destination_account_id;
}

/** What a settled outgoing payment reports of its settlement: the wallet leg's on-chain hash, or a UMA payment's inter-VASP leg. */
async function settlementLegs(trx: Trx, row: TransactionRow): Promise<Partial<TransactionRow>> {
  const account = legsAccountOf(row);
  return legsOf(row, account === undefined ? undefined : (await findAccountInfoEvenDeleted(trx, account))?.account_info);
}

/** settlementLegs with the destination's account_info at hand (the batch reads them all at once). */
function legsOf(row: TransactionRow, accountInfo: string | undefined): Partial<TransactionRow> {
  const out: Partial<TransactionRow> = {};
  if (row.flow === 'UMA_PAYOUT') {
    const rec = JSON.parse(row.reconciliation ?? '{}') as Record<string, unknown>;
    out.reconciliation = JSON.stringify({ ...rec, transactionHash: sandboxHash(`uma-settlement|${row.id}`, 'base58') });
    return out;
  }
  if (legsAccountOf(row) === undefined) return out;
  const type = accountInfo !== undefined ? (JSON.parse(accountInfo) as { accountType: string }).accountType : '';
  const wallet = WALLET_NETWORKS[type];
  if (wallet) {
    const dest = JSON.parse(row.destination) as Record<string, unknown>;
    out.destination = JSON.stringify({ ...dest, onChainTransaction: { transactionHash: sandboxHash(`payout|${row.id}`, wallet.style), network: wallet.network } });
  }
  return out;
}

async function returnPayout(trx: Trx, deps: PaymentDeps, row: TransactionRow, outcome: PaymentOutcome, now: Now): Promise<void> {
  if (row.status !== 'COMPLETED') return;
  await unwindCapture(trx, deps, row, now.at);
  await fail(trx, deps, row, outcome, now, outcome.outgoingFailure ?? 'PAYOUT_RETURNED');
}

/** A quote's transaction that was never started expires with it. */
async function expire(trx: Trx, row: TransactionRow, now: Now): Promise<void> {
  if (row.status !== 'PENDING' || row.outcome !== null) return;
  await updateTransaction(trx, row.platform_id, row.id, { status: 'EXPIRED', updated_at: now.at });
  if (row.quote_id) await updateQuoteStatus(trx, row.platform_id, row.quote_id, 'PENDING', { status: 'EXPIRED', updated_at: now.at });
  if (row.type === 'OUTGOING') await emitTx(trx, await refreshed(trx, row), 'EXPIRED', now.at);
}

/** Run one step of a payment (the job handler). */
export async function runPaymentStep(deps: PaymentDeps, ctx: JobContext): Promise<void> {
  const { trx, job } = ctx;
  if (job.platformId === null) return;
  const { transactionId, step } = job.payload as { transactionId: string; step?: PaymentStep };
  const row = await findTransaction(trx, job.platformId, transactionId, deps.store.kind === 'postgres');
  if (!row) return;
  const now = { ms: ctx.nowMs, at: iso(ctx.nowMs) };
  const outcome = outcomeNamed(row.outcome);
  switch (step ?? 'SETTLE') {
    case 'SETTLE':
      return settle(trx, deps, row, outcome, now);
    case 'RETURN':
      return returnPayout(trx, deps, row, outcome, now);
    case 'REFUND':
      return completeRefund(trx, deps, row, outcome, now);
    case 'EXPIRE':
      return expire(trx, row, now);
  }
}

// ---- Settlement in batches ------------------------------------------------------------

/**
 * Whether the SETTLE step of this transaction is the common one settleBatch does: an outgoing
 * payment in flight (not an internal transfer) whose outcome succeeds. Anything else (a pull,
 * a failing outcome, a step already done, an internal transfer) runs one at a time.
 */
function settlesInBatch(row: TransactionRow, outcome: PaymentOutcome): boolean {
  return row.type === 'OUTGOING' && row.status === 'PROCESSING' && row.outcome !== null && outcome.result !== 'FAIL' && row.flow !== 'INTERNAL_TRANSFER' && row.hold_account_id !== null;
}

/**
 * The worker's batch of payment steps (kernel/jobs.ts BatchJobHandler): the SETTLE steps of
 * many payments of one platform at once, with the writes, events and next steps of `settle`
 * for each, in the jobs' order, but set-based: one read of the transactions, one opening of
 * the world accounts, the CAPTURE entries through postEntries (one statement each for the
 * entries, their postings and the balances), one update of the transactions (one per payment
 * whose legs differ: wallet and UMA payouts), one of the quotes. The events are emitted per
 * payment in today's order (its BALANCE_UPDATED, then OUTGOING_PAYMENT.COMPLETED). It takes the
 * leading jobs only, up to the first that is not such a SETTLE (another step, a SETTLE that is
 * not the common case, settlesInBatch, or a second step of the same transaction): the worker
 * runs that one through runPaymentStep and hands the rest back, so every job runs in order. A refusal (the held money
 * short, an entry already posted) throws: the worker rolls the batch back and runs its jobs
 * one at a time, which answers as it always did.
 */
export async function settleBatch(deps: PaymentDeps, ctx: BatchJobContext): Promise<number> {
  const { trx, nowMs } = ctx;
  const platformId = ctx.jobs[0]?.platformId;
  if (!platformId) return 0;
  const settleOf = (job: BatchJobContext['jobs'][number]): string | undefined => {
    const p = job.payload as { transactionId?: unknown; step?: PaymentStep } | null;
    return job.kind === PAYMENT_JOB && p && typeof p.transactionId === 'string' && (p.step ?? 'SETTLE') === 'SETTLE' ? p.transactionId : undefined;
  };
  // The leading SETTLE steps, each of another transaction (no other step can then come between).
  const leading: string[] = [];
  for (const job of ctx.jobs) {
    const id = settleOf(job);
    if (id === undefined || leading.includes(id)) break;
    leading.push(id);
  }
  if (leading.length === 0) return 0;
  const rows = new Map((await findTransactions(trx, platformId, leading, deps.store.kind === 'postgres')).map((r) => [r.id, r]));
  const settling: Array<{ row: TransactionRow; outcome: PaymentOutcome }> = [];
  for (const id of leading) {
    const row = rows.get(id);
    const outcome = outcomeNamed(row?.outcome);
    if (!row || !settlesInBatch(row, outcome)) break;
    settling.push({ row, outcome });
  }
  if (settling.length === 0) return 0;
  const now: Now = { ms: nowMs, at: iso(nowMs) };

  // The transactions (and their quotes) COMPLETED.
  const infos = await findAccountInfosEvenDeleted(trx, settling.map((s) => legsAccountOf(s.row)).filter((id): id is string => id !== undefined));
  const base = { status: 'COMPLETED', settled_at: now.at, pending_reason: null, updated_at: now.at } satisfies Partial<TransactionRow>;
  const plain: string[] = [];
  const done: TransactionRow[] = [];
  for (const { row } of settling) {
    const account = legsAccountOf(row);
    const legs = legsOf(row, account === undefined ? undefined : infos.get(account));
    if (Object.keys(legs).length === 0) plain.push(row.id);
    else await updateTransaction(trx, platformId, row.id, { ...base, ...legs });
    done.push({ ...row, ...base, ...legs });
  }
  await updateTransactions(trx, platformId, plain, base);
  await moveQuotesStatus(trx, platformId, done.flatMap((r) => (r.quote_id ? [r.quote_id] : [])), 'COMPLETED', now.at);

  // The CAPTURE of each (capture() for each payment), after the rows above: on PostgreSQL the
  // payer's balance row is locked from here to the commit, and requests paying from it wait.
  const worlds = await ensureWorldAccounts(trx, platformId, settling.map((s) => ({ currency: s.row.sent_currency, spread: s.row.id })), now.at);
  const feeAccounts = new Map<string, string>();
  for (const { row } of settling) {
    if (Number(row.platform_fees) > 0 && !feeAccounts.has(row.sent_currency)) feeAccounts.set(row.sent_currency, await platformFeeAccount(trx, platformId, row.sent_currency, now.at));
  }
  const inputs: EntryInput[] = settling.map(({ row }, i) => {
    const total = Number(row.sent_amount);
    const fee = Number(row.platform_fees);
    const currency = row.sent_currency;
    const postings: Posting[] = [
      { accountId: row.hold_account_id!, currency, amount: -total, bucket: 'held' },
      { accountId: worlds[i]!, currency, amount: total - fee },
    ];
    if (fee > 0) postings.push({ accountId: feeAccounts.get(currency)!, currency, amount: fee });
    return {
      platformId,
      kind: 'CAPTURE',
      at: now.at,
      referenceId: row.id,
      relatedEntryId: row.hold_entry_id ?? undefined,
      idempotencyKey: `capture:${row.id}`,
      postings: postings.filter((p) => p.amount !== 0),
    };
  });
  const posted = await postEntries(trx, deps.store, platformId, inputs);

  // Each payment's events in settle's order, payment after payment, written together (one
  // insert of the events, one of their deliveries); then its next step.
  await emitEventsTogether(trx, async () => {
    for (let i = 0; i < settling.length; i++) {
      const entry = posted[i]!;
      await emitBalanceUpdates(trx, platformId, internalAccountsOf(entry), now.at, entry.balances);
      await emitTx(trx, done[i]!, 'COMPLETED', now.at);
      const { outcome } = settling[i]!;
      if (outcome.returnAfterMs !== undefined) await schedule(trx, deps, done[i]!, 'RETURN', now.ms + outcome.returnAfterMs, now.at);
    }
  });
  return settling.length;
}

// ---- Cancellation ----------------------------------------------------------------------

/** Bank rails whose transfers the partner can still cancel before they settle. */
export const CANCELLABLE_RAILS: ReadonlySet<string> = new Set(['ACH', 'WIRE', 'SWIFT', 'SEPA', 'BANK_TRANSFER', 'NEFT', 'RTGS', 'PESONET', 'ACH_COLOMBIA']);

export function isCancellable(row: TransactionRow): boolean {
  if (row.outcome === null) return false; // a quote's transaction not started yet
  if (row.flow === 'PULL') return row.status === 'PENDING' && row.payment_rail !== null && CANCELLABLE_RAILS.has(row.payment_rail);
  if (row.type !== 'OUTGOING' || row.status !== 'PROCESSING') return false;
  return row.payment_rail !== null && CANCELLABLE_RAILS.has(row.payment_rail);
}

/** Cancel an in-flight bank transfer: FAILED, and its money back at once (refund reason USER_CANCELLATION). */
export async function cancelPayment(trx: Trx, deps: PaymentDeps, row: TransactionRow, now: Now): Promise<TransactionRow> {
  const outcome = outcomeNamed(row.outcome);
  if (row.type === 'INCOMING') return fail(trx, deps, row, outcome, now, 'COLLECTION_FAILED');
  const failed = await fail(trx, deps, row, { ...outcome, refund: { reason: 'USER_CANCELLATION' } }, now, 'QUOTE_EXECUTION_FAILED', 'USER_CANCELLATION');
  await completeRefund(trx, deps, failed, { ...outcome, refund: { reason: 'USER_CANCELLATION' } }, now);
  return refreshed(trx, row);
}

const registered = new WeakSet<JobQueue>();

/** Register the payment jobs on the app's queue (buildApp calls this; a second app on the same queue reuses them). */
export function registerPaymentJobs(jobs: JobQueue, store: Store): void {
  if (registered.has(jobs)) return;
  registered.add(jobs);
  const deps = { store, jobs };
  jobs.register(PAYMENT_JOB, (ctx) => runPaymentStep(deps, ctx), { batch: (ctx) => settleBatch(deps, ctx) });
  jobs.register(LEGACY_SETTLE_JOB, (ctx) => runPaymentStep(deps, ctx));
}

