import type { Transaction } from 'kysely';
import { effectTransaction } from '../../kernel/idempotency.js';
import type { AppDeps } from '../../kernel/deps.js';
import { type Clock, iso } from '../../kernel/clock.js';
import { findCurrency } from '../../kernel/currencies.js';
import type { Store } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { apiError, type FieldError, invalidInput } from '../../kernel/errors.js';
import { missingReference } from '../../kernel/references.js';
import { emitEvent, listEvents } from '../../kernel/events.js';
import { idPattern, isIdOf, newId } from '../../kernel/ids.js';
import type { JobContext, JobQueue } from '../../kernel/jobs.js';
import { checkSchema } from '../../kernel/validation.js';
import { convertMinor, invertR, rationalToNumber, sandboxRate } from '../../sandbox/rules/fx.js';
import { REFUND_DELAY_MS } from '../../sandbox/rules/payment-outcomes.js';
import { isSandboxUmaDomain, parseUmaAddress, SANDBOX_UMA_DOMAINS, UMA_ADDRESS_PATTERN } from '../../sandbox/rules/uma.js';
import { type SandboxSender, sandboxSender, senderCounterpartyInformation, senderProfileNamed } from '../../sandbox/rules/uma-senders.js';
import type { PlatformCurrencyConfig } from '../config/schemas.js';
import { findConfig } from '../config/store.js';
import { type CustomerRow, findCustomer, findCustomerByUmaAddress } from '../customers/store.js';
import { hasEndUserTermsOnFile } from '../customers/service.js';
import { emitBalanceUpdates } from '../internal-accounts/service.js';
import { holdingAccountsOf } from '../internal-accounts/store.js';
import { ensureWorldAccount, type Posting, type PostedEntry, postEntry } from '../ledger/service.js';
import { type LookupFieldErrors, throwLookupFieldErrors, umaAddressError } from '../lookups/service.js';
import { accountInfoOf, requiresOwnershipVerification } from '../external-accounts/service.js';
import { findDefaultUmaDepositAccount } from '../external-accounts/store.js';
import { findPlatform, type PlatformRow } from '../../operator/platforms/store.js';
import { usdCents } from '../quotes/pricing.js';
import type { AnyTransaction, IncomingFailureReason, IncomingTransaction, Refund } from '../transactions/schemas.js';
import { startOnwardPayout } from '../transactions/payments.js';
import { requireTransaction } from '../transactions/service.js';
import { findTransaction, insertTransaction, type TransactionRow, updateTransaction, updateTransactionStatus } from '../transactions/store.js';
import { transactionView } from '../transactions/views.js';
import type { AnswerVerdict, DeliveryAnswer, WebhookDeliverer } from '../webhooks/service.js';
import { SandboxUmaReceiveRequest } from './schemas.js';

// Incoming UMA payments (POST /sandbox/uma/receive) and the platform's approval of them
// (docs/sandbox.md "Incoming UMA payments", docs/webhooks.md "Answers that decide",
// docs/ledger.md "Incoming UMA payments").
//
// Pending platform approval is a state any transaction row can be in: status PENDING with
// `approval_deadline_ms` set (the deadline on the platform clock). The column stays set
// after the decision, marking the transaction as one that needed approval. Which effects
// approving and declining have depends on the transaction's flow (APPROVAL_FLOWS below; this
// area registers UMA_INCOMING); how the decision arrives does not:
//
//   - the platform's answer to the approval request webhook (INCOMING_PAYMENT.PENDING),
//     read by handleApprovalAnswer, which the WebhookDeliverer calls after each attempt;
//   - POST /transactions/{id}/approve or /reject (after a 202, or at any time while pending);
//   - the APPROVAL_TIMEOUT job at the deadline (PAYMENT_APPROVAL_TIMED_OUT);
//   - no webhook endpoint: approved at once.
//
// UMA_INCOMING ledger entries (idempotency key `<kind>:<transactionId>`):
//   arrival   UMA_RECEIVE  world −x, account.pending +x
//   approved  UMA_SETTLE   account.pending −x, account.available +x; with a default UMA
//             deposit account in the currency, an onward payout (flow UMA_DEPOSIT) of x starts
//             from the account (payments.ts: HOLD, then CAPTURE or a refund into the account)
//   declined  → refund PENDING; REFUND job 1 s later: UMA_REFUND account.pending −x, world +x,
//               or (sender `$refund.fail.*`) the refund FAILS and x stays pending.

type Trx = Transaction<DB>;
type Now = { ms: number; at: string };

export interface IncomingDeps {
  store: Store;
  jobs: JobQueue;
  clock: Clock;
}

export const UMA_INCOMING_FLOW = 'UMA_INCOMING';
export const INCOMING_PAYMENT_JOB = 'incoming-payment.step';
/** How long the platform has to decide (sandbox clock): from the arrival, a 202 answer, or a new request after a 422. */
export const APPROVAL_WINDOW_MS = 5_000;
/** The approval request: a deliverer answer handler reads the answers to it. */
export const APPROVAL_REQUEST_EVENT = 'INCOMING_PAYMENT.PENDING';

type IncomingStep = 'APPROVAL_TIMEOUT' | 'REFUND';

// ---- The pending-approval state ------------------------------------------------------------

/** Status PENDING with an approval deadline: the platform has to approve or reject it. */
export function isPendingPlatformApproval(row: TransactionRow): boolean {
  return row.status === 'PENDING' && row.approval_deadline_ms !== null;
}

/** Why a transaction is declined; each flow maps it to its status and failure reason. */
export type DeclineKind =
  /** 403 to the approval request, or POST /reject. */
  | 'REJECTED_BY_PLATFORM'
  /** No decision before the deadline. */
  | 'TIMED_OUT'
  /** The approval request got no usable answer (another status, a network error, a timeout). */
  | 'WEBHOOK_ERROR'
  /** Approved without the receiver data the sender asked for as mandatory. */
  | 'MISSING_PAYEE_DATA'
  /** Asked for more counterparty information a second time (422 after the sender supplied it). */
  | 'INFORMATION_NOT_SATISFIED';

export interface Decline {
  kind: DeclineKind;
  /** Free text kept in the ledger memo of the refund (the platform's `reason`). */
  reason?: string | undefined;
  /** Who decided (the API token of POST /transactions/{id}/reject), for flows that keep an audit trail. */
  actor?: string | undefined;
}

/** Approval with missing mandatory receiver data: POST /approve answers 400, the webhook path declines. */
export class MissingPayeeDataError extends Error {
  constructor(readonly fields: string[]) {
    super(`receiverCustomerInfo lacks the mandatory ${fields.join(', ')}`);
  }
}

/** What approving and declining do to a transaction of one flow (inside the caller's transaction, row locked). */
export interface ApprovalFlow {
  /**
   * Throws MissingPayeeDataError (before writing anything) when mandatory receiver data is
   * missing, unless `byDefault` (approved because nobody could be asked: no webhook endpoint).
   */
  approve(trx: Trx, deps: IncomingDeps, row: TransactionRow, info: Record<string, unknown> | undefined, now: Now, opts?: { byDefault?: boolean; actor?: string }): Promise<TransactionRow>;
  decline(trx: Trx, deps: IncomingDeps, row: TransactionRow, decline: Decline, now: Now): Promise<TransactionRow>;
  /** A 422 asking for counterparty fields: supply them and ask again (or decline). Absent: a 422 is a webhook error. */
  moreInformation?(trx: Trx, deps: IncomingDeps, row: TransactionRow, requiredFields: string[], now: Now): Promise<TransactionRow>;
}

const APPROVAL_FLOWS = new Map<string, ApprovalFlow>();

/** Make a flow's transactions approvable (a later area, e.g. agents' OUTGOING payments, registers its own). */
export function registerApprovalFlow(flow: string, handlers: ApprovalFlow): void {
  APPROVAL_FLOWS.set(flow, handlers);
}

function flowOf(row: TransactionRow): ApprovalFlow {
  const f = row.flow === null ? undefined : APPROVAL_FLOWS.get(row.flow);
  if (!f) throw new Error(`transaction ${row.id} is pending approval but flow ${row.flow ?? '(none)'} has no approval handlers`);
  return f;
}

async function refreshed(trx: Trx, row: TransactionRow): Promise<TransactionRow> {
  return (await findTransaction(trx, row.platform_id, row.id))!;
}

async function lockTransaction(trx: Trx, deps: IncomingDeps, platformId: string, id: string): Promise<TransactionRow | undefined> {
  return findTransaction(trx, platformId, id, deps.store.kind === 'postgres');
}

async function schedule(trx: Trx, deps: IncomingDeps, row: TransactionRow, step: IncomingStep, runAtMs: number, at: string, memo?: string): Promise<void> {
  await deps.jobs.schedule(trx, {
    platformId: row.platform_id,
    kind: INCOMING_PAYMENT_JOB,
    payload: { transactionId: row.id, step, ...(memo !== undefined ? { memo } : {}) },
    runAtMs,
    at,
  });
}

/** Move the deadline to now + the window (never earlier) and schedule the timeout job for it. */
async function extendDeadline(trx: Trx, deps: IncomingDeps, row: TransactionRow, now: Now): Promise<TransactionRow> {
  const deadline = now.ms + APPROVAL_WINDOW_MS;
  if (row.approval_deadline_ms !== null && Number(row.approval_deadline_ms) >= deadline) return row;
  await updateTransaction(trx, row.platform_id, row.id, { approval_deadline_ms: deadline, updated_at: now.at });
  await schedule(trx, deps, row, 'APPROVAL_TIMEOUT', deadline, now.at);
  return refreshed(trx, row);
}

async function emitTx(trx: Trx, row: TransactionRow, event: string, at: string): Promise<void> {
  const prefix = row.type === 'INCOMING' ? 'INCOMING_PAYMENT' : 'OUTGOING_PAYMENT';
  await emitEvent(trx, row.platform_id, at, { type: `${prefix}.${event}`, resourceId: row.id, data: transactionView(row) });
}

// ---- POST /sandbox/uma/receive: the request's fields ------------------------------------------

/**
 * Every field problem of a receive request in one 400: the schema's, plus the checks it
 * cannot express (addresses, neither receiver field, the customer id's shape, an unknown
 * currency code). INVALID_INPUT when any problem is not about a UMA address (all listed),
 * else INVALID_UMA_ADDRESS. Nothing is read from the store.
 */
export function throwReceiveFieldErrors(body: unknown): void {
  const errors: LookupFieldErrors = { invalid: [...checkSchema(SandboxUmaReceiveRequest, body ?? null)], umaAddress: [] };
  if (body !== null && typeof body === 'object' && !Array.isArray(body)) {
    const b = body as Record<string, unknown>;
    if (typeof b.senderUmaAddress === 'string') {
      const sender = parseUmaAddress(b.senderUmaAddress);
      if (!sender) errors.umaAddress.push(umaAddressError('senderUmaAddress'));
      else if (!isSandboxUmaDomain(sender.domain)) {
        errors.umaAddress.push({
          field: 'senderUmaAddress',
          constraint: { pattern: `^\\$[A-Za-z0-9._+-]{1,64}@(${SANDBOX_UMA_DOMAINS.map((d) => d.replace(/\./g, '\\.')).join('|')})$` },
          message: `must be a sandbox sender: $<name>@${SANDBOX_UMA_DOMAINS.join(' or $<name>@')}`,
        });
      }
    }
    if (typeof b.receiverUmaAddress === 'string' && !parseUmaAddress(b.receiverUmaAddress)) errors.umaAddress.push(umaAddressError('receiverUmaAddress'));
    if (b.receiverUmaAddress === undefined && b.customerId === undefined) {
      const message = 'is required: give receiverUmaAddress or customerId (or both)';
      errors.invalid.push({ field: 'receiverUmaAddress', message }, { field: 'customerId', message });
    }
    if (typeof b.customerId === 'string' && !isIdOf('Customer', b.customerId)) {
      errors.invalid.push({ field: 'customerId', constraint: { pattern: idPattern('Customer') }, message: 'must be a customer id: Customer:<uuid>' });
    }
    if (typeof b.receivingCurrencyCode === 'string' && !findCurrency(b.receivingCurrencyCode)) {
      errors.invalid.push({ field: 'receivingCurrencyCode', constraint: { format: 'iso4217' }, message: 'must be a known currency code (ISO 4217, or a crypto ticker)' });
    }
  }
  throwLookupFieldErrors(errors);
}

/** The receiver: a live customer of the platform, by customerId and/or receiverUmaAddress (both must name it). */
async function resolveReceiver(trx: Trx, platformId: string, body: SandboxUmaReceiveRequest): Promise<CustomerRow> {
  let customer: CustomerRow | undefined;
  if (body.customerId !== undefined) {
    customer = await findCustomer(trx, platformId, body.customerId);
    if (!customer || customer.is_deleted === 1) throw missingReference('USER_NOT_FOUND', 'Customer', body.customerId, 'customerId', customer?.is_deleted === 1);
    if (body.receiverUmaAddress !== undefined && customer.uma_address.toLowerCase() !== body.receiverUmaAddress.trim().toLowerCase()) {
      throw invalidInput([{ field: 'receiverUmaAddress', message: `is not the UMA address of customer ${body.customerId}` }]);
    }
    return customer;
  }
  const address = body.receiverUmaAddress!.trim();
  customer = (await findCustomerByUmaAddress(trx, address)) ?? (await findCustomerByUmaAddress(trx, address.toLowerCase()));
  if (!customer || customer.platform_id !== platformId) {
    throw apiError(404, 'USER_NOT_FOUND', `No customer of this platform has the UMA address ${address}`, { field: 'receiverUmaAddress' });
  }
  return customer;
}

/** What the sender pays in its own currency for `received` (the sandbox market, spread included), and the rate shown. */
function senderSide(received: number, receiving: string, sending: string): { sent: number; exchangeRate: string | null } {
  if (receiving === sending) return { sent: received, exchangeRate: null };
  const rate = sandboxRate(sending, receiving);
  const sent = convertMinor(received, receiving, sending, invertR(rate.exact), 'ceil');
  if (sent > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw apiError(400, 'AMOUNT_OUT_OF_RANGE', `Sending ${received} ${receiving} would take more than 2^53 - 1 of the sender's ${sending}`, {
      field: 'receivingCurrencyAmount',
      sendingCurrency: sending,
    });
  }
  // Sending units per receiving unit, as every transaction shows it.
  return { sent: Number(sent), exchangeRate: String(rationalToNumber(invertR(rate.exact))) };
}

/** Counterparty fields the receiving platform asks of senders in this currency (its configuration). */
function configuredCounterpartyFields(supportedCurrencies: string | undefined, currency: string): string[] {
  if (!supportedCurrencies) return [];
  const list = JSON.parse(supportedCurrencies) as PlatformCurrencyConfig[];
  return (list.find((c) => c.currencyCode === currency)?.requiredCounterpartyFields ?? []).map((f) => f.name);
}

function reconciliationReference(id: string): string {
  return `REF-${id.replace(/[^0-9a-f]/gi, '').slice(-12).toUpperCase()}`;
}

/**
 * POST /sandbox/uma/receive: a sandbox sender pays a customer of the calling platform. The
 * money arrives in the customer's pending balance and the platform is asked to approve
 * (INCOMING_PAYMENT.PENDING); without a webhook endpoint it is approved at once.
 */
export async function receiveUmaPayment(deps: IncomingDeps, platform: PlatformRow, now: Now, body: SandboxUmaReceiveRequest): Promise<IncomingTransaction> {
  const senderAddress = parseUmaAddress(body.senderUmaAddress)!;
  const found = sandboxSender(senderAddress);
  if (!found) {
    throw apiError(404, 'UMA_NOT_FOUND', `${senderAddress.address} is no sandbox sender`, { senderUmaAddress: senderAddress.address, field: 'senderUmaAddress' });
  }
  // The answer is the view of the transaction as committed: stored with it under an Idempotency-Key.
  const sender = found;
  return effectTransaction(deps.store.db, async (trx) => transactionView(await receiveIn(trx)) as IncomingTransaction);

  async function receiveIn(trx: Trx): Promise<TransactionRow> {
    const customer = await resolveReceiver(trx, platform.id, body);
    // An unregulated platform's customer receives nothing before their end-user terms are on file.
    if (platform.regulated !== 1 && !hasEndUserTermsOnFile(customer)) {
      throw apiError(403, 'END_USER_TERMS_NOT_ACCEPTED', `Customer ${customer.id} has not accepted the end-user terms`, { customerId: customer.id });
    }
    const currency = body.receivingCurrencyCode;
    const accounts = (await holdingAccountsOf(trx, platform.id, customer.id)).filter((a) => a.status === 'ACTIVE');
    const account = accounts.find((a) => a.currency === currency);
    if (!account) {
      const held = accounts.map((a) => a.currency);
      throw apiError(400, 'INVALID_CURRENCY', `Customer ${customer.id} has no internal account in ${currency}; it holds ${held.join(', ') || 'none'}`, {
        errors: [{ field: 'receivingCurrencyCode', constraint: { enum: held }, message: `must be a currency the receiver holds an internal account in: ${held.join(', ')}` }],
      });
    }
    const received = body.receivingCurrencyAmount;
    const { sent, exchangeRate } = senderSide(received, currency, sender.currency);
    const config = await findConfig(trx, platform.id);
    const endpoint = config?.webhook_endpoint ?? null;
    const info = senderCounterpartyInformation(sender.profile, sender.address.address, configuredCounterpartyFields(config?.supported_currencies, currency));
    const id = newId('Transaction');
    const tx: TransactionRow = {
      id,
      platform_id: platform.id,
      customer_id: customer.id,
      platform_customer_id: customer.platform_customer_id,
      type: 'INCOMING',
      direction: 'CREDIT',
      status: 'PENDING',
      quote_id: null,
      source: JSON.stringify({ sourceType: 'UMA_ADDRESS', umaAddress: sender.address.address, currency: sender.currency }),
      source_account_id: null,
      destination: JSON.stringify({ destinationType: 'UMA_ADDRESS', umaAddress: customer.uma_address, currency }),
      destination_account_id: account.id,
      sent_amount: sent,
      sent_currency: sender.currency,
      received_amount: received,
      received_currency: currency,
      fees: 0,
      platform_fees: 0,
      exchange_rate: exchangeRate,
      rate_details: null,
      payment_rail: null,
      description: null,
      hold_entry_id: null,
      failure_reason: null,
      settled_at: null,
      created_at: now.at,
      updated_at: now.at,
      pending_reason: null,
      refund: null,
      counterparty_information: JSON.stringify(info),
      reconciliation: JSON.stringify({ reference: reconciliationReference(id) }),
      receipt_delivery_confirmed_at: null,
      rail_selection_mode: null,
      payment_instructions: null,
      expected_settlement_at: null,
      settlement_timeline_seconds: null,
      outcome: sender.profile.name,
      requested_receiver_fields: sender.profile.requestedReceiverFields ? JSON.stringify(sender.profile.requestedReceiverFields) : null,
      receiver_customer_info: null,
      agent_id: null,
      hold_account_id: null,
      flow: UMA_INCOMING_FLOW,
      // With an endpoint the platform decides, within the window; without one nobody is asked.
      approval_deadline_ms: endpoint ? now.ms + APPROVAL_WINDOW_MS : null,
      expires_at_ms: null,
    };
    // The transaction row first: ledger entries reference it.
    await insertTransaction(trx, tx);
    const world = await ensureWorldAccount(trx, platform.id, currency, now.at, tx.id);
    const entry = await post(trx, deps, tx, 'UMA_RECEIVE', now.at, [
      { accountId: world, currency, amount: -received },
      { accountId: account.id, currency, amount: received, bucket: 'pending' },
    ]);
    await updateTransaction(trx, platform.id, id, { hold_entry_id: entry.id });
    const pending = await refreshed(trx, tx);
    await emitTx(trx, pending, 'PENDING', now.at);
    if (!endpoint) return umaIncoming.approve(trx, deps, pending, undefined, now, { byDefault: true });
    await schedule(trx, deps, pending, 'APPROVAL_TIMEOUT', Number(pending.approval_deadline_ms), now.at);
    return pending;
  }
}

// ---- The UMA_INCOMING flow ---------------------------------------------------------------------

async function post(trx: Trx, deps: Pick<IncomingDeps, 'store'>, row: TransactionRow, kind: string, at: string, postings: Posting[], extra: { relatedEntryId?: string | null; memo?: string } = {}): Promise<PostedEntry> {
  const entry = await postEntry(trx, deps.store, {
    platformId: row.platform_id,
    kind,
    at,
    referenceId: row.id,
    relatedEntryId: extra.relatedEntryId ?? undefined,
    idempotencyKey: `${kind.toLowerCase()}:${row.id}`,
    memo: extra.memo,
    postings,
  });
  if (!entry.replayed) await emitBalanceUpdates(trx, row.platform_id, [row.destination_account_id!], at, entry.balances);
  return entry;
}

function requestedFields(row: TransactionRow): Array<{ name: string; mandatory: boolean }> {
  return row.requested_receiver_fields === null ? [] : (JSON.parse(row.requested_receiver_fields) as Array<{ name: string; mandatory: boolean }>);
}

/** The mandatory receiver fields the sender asked for that `info` does not carry (null, '' and absent are missing). */
export function missingPayeeFields(row: TransactionRow, info: Record<string, unknown> | undefined): string[] {
  return requestedFields(row)
    .filter((f) => f.mandatory)
    .map((f) => f.name)
    .filter((name) => {
      const v = info?.[name];
      return v === undefined || v === null || v === '';
    });
}

const DECLINES: Readonly<Record<DeclineKind, { status: 'REJECTED' | 'FAILED'; failureReason: IncomingFailureReason; memo: string }>> = {
  REJECTED_BY_PLATFORM: { status: 'REJECTED', failureReason: 'COMPLIANCE_REJECTED', memo: 'rejected by the receiving platform' },
  TIMED_OUT: { status: 'FAILED', failureReason: 'PAYMENT_APPROVAL_TIMED_OUT', memo: 'no approval within the window' },
  WEBHOOK_ERROR: { status: 'FAILED', failureReason: 'PAYMENT_APPROVAL_WEBHOOK_ERROR', memo: 'the approval webhook got no usable answer' },
  MISSING_PAYEE_DATA: { status: 'FAILED', failureReason: 'MISSING_MANDATORY_PAYEE_DATA', memo: 'approved without the mandatory receiver data' },
  INFORMATION_NOT_SATISFIED: { status: 'FAILED', failureReason: 'PAY_REQUEST_FAILED', memo: 'more counterparty information asked for again' },
};

export const umaIncoming: Required<ApprovalFlow> = {
  async approve(trx, deps, row, info, now, opts = {}) {
    if (!opts.byDefault) {
      const missing = missingPayeeFields(row, info);
      if (missing.length > 0) throw new MissingPayeeDataError(missing);
    }
    const set: Partial<TransactionRow> = { status: 'COMPLETED', settled_at: now.at, pending_reason: null, updated_at: now.at };
    if (info !== undefined) set.receiver_customer_info = JSON.stringify(info);
    if (!(await updateTransactionStatus(trx, row.platform_id, row.id, 'PENDING', set))) throw new Error(`transaction ${row.id} left PENDING under its lock`);
    const amount = Number(row.received_amount);
    const currency = row.received_currency!;
    await post(trx, deps, row, 'UMA_SETTLE', now.at, [
      { accountId: row.destination_account_id!, currency, amount: -amount, bucket: 'pending' },
      { accountId: row.destination_account_id!, currency, amount },
    ], { relatedEntryId: row.hold_entry_id });
    const done = await refreshed(trx, row);
    await emitTx(trx, done, 'COMPLETED', now.at);
    await payOnToDefaultDepositAccount(trx, deps, done, now);
    return done;
  },

  async decline(trx, deps, row, decline, now) {
    const d = DECLINES[decline.kind];
    const refund: Refund = { reference: `REFUND-${row.id.replace(/[^0-9a-f]/gi, '').slice(-12).toUpperCase()}`, initiatedAt: now.at, status: 'PENDING', reason: 'TRANSACTION_FAILED' };
    const set: Partial<TransactionRow> = { status: d.status, failure_reason: d.failureReason, pending_reason: null, refund: JSON.stringify(refund), updated_at: now.at };
    if (!(await updateTransactionStatus(trx, row.platform_id, row.id, 'PENDING', set))) throw new Error(`transaction ${row.id} left PENDING under its lock`);
    const done = await refreshed(trx, row);
    // The reference has no INCOMING_PAYMENT.REJECTED: a rejection is a FAILED event whose data says REJECTED.
    await emitTx(trx, done, 'FAILED', now.at);
    await emitTx(trx, done, 'REFUND_PENDING', now.at);
    const memo = `Refund of ${row.id}: ${d.memo}${decline.reason ? ` (reason: ${decline.reason})` : ''}`;
    await schedule(trx, deps, done, 'REFUND', now.ms + REFUND_DELAY_MS, now.at, memo);
    return done;
  },

  async moreInformation(trx, deps, row, requiredFields, now) {
    const profile = senderProfileNamed(row.outcome);
    const source = JSON.parse(row.source) as { umaAddress?: string };
    const before = row.counterparty_information === null ? {} : (JSON.parse(row.counterparty_information) as Record<string, unknown>);
    const info = senderCounterpartyInformation(profile, source.umaAddress ?? '', requiredFields, before);
    await updateTransaction(trx, row.platform_id, row.id, { counterparty_information: JSON.stringify(info), updated_at: now.at });
    const asked = await extendDeadline(trx, deps, await refreshed(trx, row), now);
    await emitTx(trx, asked, 'PENDING', now.at);
    return asked;
  },
};

registerApprovalFlow(UMA_INCOMING_FLOW, umaIncoming);

/**
 * An approved payment whose receiver has a default UMA deposit account in the received
 * currency is deposited there: an onward payout (its own OUTGOING transaction, flow
 * UMA_DEPOSIT, with the incoming payment's reconciliation reference) from the internal
 * account it was just credited to, started in the same database transaction. The account's
 * sandbox suffix decides the payout as for a transfer-out; a failed payout is refunded into
 * the internal account, where the payment then stays. An account that may not receive it
 * (UNVERIFIED, or pending ownership verification at or above the threshold) is skipped: the
 * money stays in the internal account, as without a default.
 */
async function payOnToDefaultDepositAccount(trx: Trx, deps: IncomingDeps, row: TransactionRow, now: Now): Promise<TransactionRow | undefined> {
  const currency = row.received_currency!;
  const account = await findDefaultUmaDepositAccount(trx, row.platform_id, row.customer_id, currency);
  if (!account) return undefined;
  const amount = Number(row.received_amount);
  if (requiresOwnershipVerification(account, usdCents(amount, currency))) return undefined;
  const reference = (JSON.parse(row.reconciliation ?? '{}') as { reference?: string }).reference ?? reconciliationReference(row.id);
  return startOnwardPayout(
    trx,
    deps,
    {
      id: newId('Transaction'),
      platformId: row.platform_id,
      customerId: row.customer_id,
      platformCustomerId: row.platform_customer_id,
      fromAccountId: row.destination_account_id!,
      to: { id: account.id, accountInfo: accountInfoOf(account) },
      currency,
      amount,
      description: `Deposit of incoming UMA payment ${row.id} to the default UMA deposit account`,
      reference,
    },
    now,
  );
}

/** The REFUND step: the money goes back to the sender (or, for a sender whose refunds fail, stays pending). */
async function completeRefund(trx: Trx, deps: IncomingDeps, row: TransactionRow, now: Now, memo: string | undefined): Promise<void> {
  const refund = row.refund === null ? null : (JSON.parse(row.refund) as Refund);
  if (!refund || refund.status !== 'PENDING') return;
  if (senderProfileNamed(row.outcome).refundFails) {
    await updateTransaction(trx, row.platform_id, row.id, { refund: JSON.stringify({ ...refund, status: 'FAILED' } satisfies Refund), updated_at: now.at });
    await emitTx(trx, await refreshed(trx, row), 'REFUND_FAILED', now.at);
    return;
  }
  const amount = Number(row.received_amount);
  const currency = row.received_currency!;
  const world = await ensureWorldAccount(trx, row.platform_id, currency, now.at, row.id);
  await post(trx, deps, row, 'UMA_REFUND', now.at, [
    { accountId: row.destination_account_id!, currency, amount: -amount, bucket: 'pending' },
    { accountId: world, currency, amount },
  ], { relatedEntryId: row.hold_entry_id, memo: memo ?? `Refund of ${row.id}` });
  await updateTransaction(trx, row.platform_id, row.id, { refund: JSON.stringify({ ...refund, status: 'COMPLETED', settledAt: now.at } satisfies Refund), updated_at: now.at });
  await emitTx(trx, await refreshed(trx, row), 'REFUND_COMPLETED', now.at);
}

/** Run one step (the job handler). */
export async function runIncomingStep(deps: IncomingDeps, ctx: JobContext): Promise<void> {
  const { trx, job } = ctx;
  if (job.platformId === null) return;
  const { transactionId, step, memo } = job.payload as { transactionId: string; step: IncomingStep; memo?: string };
  const row = await lockTransaction(trx, deps, job.platformId, transactionId);
  if (!row) return;
  const now = { ms: ctx.nowMs, at: iso(ctx.nowMs) };
  if (step === 'REFUND') return completeRefund(trx, deps, row, now, memo);
  // APPROVAL_TIMEOUT: only when still undecided and the (possibly moved) deadline has passed.
  if (!isPendingPlatformApproval(row) || now.ms < Number(row.approval_deadline_ms)) return;
  await flowOf(row).decline(trx, deps, row, { kind: 'TIMED_OUT' }, now);
}

// ---- POST /transactions/{id}/approve and /reject ----------------------------------------------

type Decision = ({ kind: 'approve'; info: Record<string, unknown> | undefined } | { kind: 'reject'; reason: string | undefined }) & { actor?: string | undefined };
type Decided = { done: TransactionRow } | { conflict: TransactionRow; timedOut: boolean };

async function decide(deps: IncomingDeps, platformId: string, id: string, decision: Decision, now: Now): Promise<AnyTransaction> {
  // A decision is answered with its transaction's view, stored under the Idempotency-Key with it.
  const result = await effectTransaction(deps.store.db, async (trx): Promise<Decided> => {
    const row = await requireTransaction(trx, platformId, id, deps.store.kind === 'postgres');
    if (!isPendingPlatformApproval(row)) return { conflict: row, timedOut: false };
    const flow = flowOf(row);
    if (now.ms >= Number(row.approval_deadline_ms)) {
      // The deadline passed before its job ran: the payment times out now, and the answer says so.
      return { conflict: await flow.decline(trx, deps, row, { kind: 'TIMED_OUT' }, now), timedOut: true };
    }
    if (decision.kind === 'reject') return { done: await flow.decline(trx, deps, row, { kind: 'REJECTED_BY_PLATFORM', reason: decision.reason, actor: decision.actor }, now) };
    try {
      return { done: await flow.approve(trx, deps, row, decision.info, now, decision.actor !== undefined ? { actor: decision.actor } : {}) };
    } catch (err) {
      if (!(err instanceof MissingPayeeDataError)) throw err;
      throw invalidInput(
        err.fields.map((f): FieldError => ({ field: `receiverCustomerInfo.${f}`, message: 'is required: the sender asked for it as mandatory (requestedReceiverCustomerInfoFields)' })),
      );
    }
  }, (decided) => ('done' in decided ? transactionView(decided.done) : undefined));
  if ('done' in result) return transactionView(result.done);
  const row = result.conflict;
  throw apiError(
    409,
    'TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL',
    result.timedOut
      ? `Transaction ${row.id} is no longer pending platform approval: its approval window ended (PAYMENT_APPROVAL_TIMED_OUT)`
      : `Transaction ${row.id} is not pending platform approval (status ${row.status})`,
    { transactionId: row.id, status: row.status, ...(row.failure_reason !== null ? { failureReason: row.failure_reason } : {}) },
  );
}

/** POST /transactions/{id}/approve: an incoming payment, or (agents area) an agent's pending payment, either type. */
export async function approvePendingPayment(deps: IncomingDeps, platformId: string, id: string, receiverCustomerInfo: Record<string, unknown> | undefined, now: Now, actor?: string): Promise<AnyTransaction> {
  return decide(deps, platformId, id, { kind: 'approve', info: receiverCustomerInfo, actor }, now);
}

export async function rejectPendingPayment(deps: IncomingDeps, platformId: string, id: string, reason: string | undefined, now: Now, actor?: string): Promise<AnyTransaction> {
  return decide(deps, platformId, id, { kind: 'reject', reason, actor }, now);
}

// ---- The platform's answer to the approval request ---------------------------------------------

function parseObject(text: string | null | undefined): Record<string, unknown> | undefined {
  if (!text) return undefined;
  try {
    const v: unknown = JSON.parse(text);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Answers that are decisions (or an acknowledgement): the delivery is DELIVERED. Anything else fails it for good. */
function isApprovalAnswer(status: number | null): boolean {
  return status !== null && ((status >= 200 && status < 300) || status === 403 || status === 409 || status === 422);
}

/**
 * The WebhookDeliverer's answer handler for approval requests (INCOMING_PAYMENT.PENDING).
 * Runs after each attempt, in its own transaction, with the transaction row locked:
 *
 * | Answer | Effect |
 * |---|---|
 * | 2xx but 202 | approved (`receiverCustomerInfo` of the JSON body stored); missing mandatory receiver data: FAILED, MISSING_MANDATORY_PAYEE_DATA |
 * | 202 | deferred: POST approve / reject within APPROVAL_WINDOW_MS of the answer |
 * | 403 | REJECTED, COMPLIANCE_REJECTED (`reason` of the body in the refund's ledger memo) |
 * | 409 | "already processed": no decision; POST approve / reject until the current deadline |
 * | 422 | first: the sender supplies `requiredFields` and a new INCOMING_PAYMENT.PENDING asks again; second: FAILED, PAY_REQUEST_FAILED |
 * | anything else, no answer | FAILED, PAYMENT_APPROVAL_WEBHOOK_ERROR; the delivery is FAILED (not retried) |
 *
 * An answer to a request that is no longer the transaction's current one, or that arrives
 * after the decision, changes nothing. Transactions that never needed approval (bank-rail
 * pulls, payments approved for want of an endpoint) keep the usual delivery rules.
 */
export async function handleApprovalAnswer(deps: IncomingDeps, answer: DeliveryAnswer): Promise<AnswerVerdict> {
  const { delivery, outcome } = answer;
  const status = outcome.statusCode;
  return deps.store.db.transaction().execute(async (trx): Promise<AnswerVerdict> => {
    const row = await lockTransaction(trx, deps, delivery.platform_id, delivery.resource_id);
    if (!row || row.approval_deadline_ms === null) return undefined;
    const verdict: AnswerVerdict = isApprovalAnswer(status) ? 'DELIVERED' : 'FAILED';
    if (!isPendingPlatformApproval(row)) return verdict;
    const requests = await listEvents(trx, row.platform_id, { type: delivery.type, resourceId: row.id });
    if (requests.at(-1)?.id !== delivery.event_id) return verdict;
    const platform = await findPlatform(trx, row.platform_id);
    const ms = deps.clock.nowMs() + Number(platform?.clock_offset_ms ?? 0);
    const now = { ms, at: iso(ms) };
    const flow = flowOf(row);
    if (answer.endpoint === null) {
      // The endpoint was removed before the request went out: nobody to ask, approved as without one.
      await flow.approve(trx, deps, row, undefined, now, { byDefault: true });
      return undefined;
    }
    if (now.ms >= Number(row.approval_deadline_ms)) {
      await flow.decline(trx, deps, row, { kind: 'TIMED_OUT' }, now);
      return verdict;
    }
    const body = parseObject(outcome.answerBody ?? outcome.responseBody);
    if (status === 202) {
      await extendDeadline(trx, deps, row, now);
    } else if (status !== null && status >= 200 && status < 300) {
      const info = body?.receiverCustomerInfo;
      await umaApproveOrDecline(trx, deps, flow, row, info !== null && typeof info === 'object' && !Array.isArray(info) ? (info as Record<string, unknown>) : undefined, now);
    } else if (status === 403) {
      const reason = typeof body?.reason === 'string' ? body.reason.slice(0, 256) : undefined;
      await flow.decline(trx, deps, row, { kind: 'REJECTED_BY_PLATFORM', reason }, now);
    } else if (status === 409) {
      // Already processed on the platform's side: its decision comes through approve / reject.
    } else if (status === 422 && flow.moreInformation) {
      const fields = Array.isArray(body?.requiredFields) ? (body.requiredFields as unknown[]).filter((f): f is string => typeof f === 'string' && f.length > 0 && f.length <= 64) : [];
      if (requests.length >= 2) await flow.decline(trx, deps, row, { kind: 'INFORMATION_NOT_SATISFIED' }, now);
      else await flow.moreInformation(trx, deps, row, [...new Set(fields)], now);
    } else {
      const reason = status === null ? (outcome.error ?? 'no answer') : `HTTP ${status}`;
      await flow.decline(trx, deps, row, { kind: 'WEBHOOK_ERROR', reason }, now);
    }
    return verdict;
  });
}

/** Approve, or decline for missing mandatory receiver data (the webhook path: nobody to answer a 400 to). */
async function umaApproveOrDecline(trx: Trx, deps: IncomingDeps, flow: ApprovalFlow, row: TransactionRow, info: Record<string, unknown> | undefined, now: Now): Promise<void> {
  try {
    await flow.approve(trx, deps, row, info, now);
  } catch (err) {
    if (!(err instanceof MissingPayeeDataError)) throw err;
    await flow.decline(trx, deps, row, { kind: 'MISSING_PAYEE_DATA', reason: `missing ${err.fields.join(', ')}` }, now);
  }
}

// ---- Registration -------------------------------------------------------------------------------

const registeredQueues = new WeakSet<JobQueue>();
const registeredDeliverers = new WeakSet<WebhookDeliverer>();

/**
 * Register the incoming-payment jobs on the app's queue and the approval answer handler on
 * its webhook deliverer (buildApp calls this; a second app on the same queue reuses them).
 */
export function registerIncomingPayments(deps: Pick<AppDeps, 'store' | 'clock' | 'jobs' | 'webhooks'>): void {
  const d: IncomingDeps = { store: deps.store, jobs: deps.jobs, clock: deps.clock };
  if (!registeredQueues.has(deps.jobs)) {
    registeredQueues.add(deps.jobs);
    deps.jobs.register(INCOMING_PAYMENT_JOB, (ctx) => runIncomingStep(d, ctx));
  }
  if (!registeredDeliverers.has(deps.webhooks)) {
    registeredDeliverers.add(deps.webhooks);
    deps.webhooks.onDeliveryAnswered(APPROVAL_REQUEST_EVENT, (answer) => handleApprovalAnswer(d, answer));
  }
}
