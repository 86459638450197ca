import { currencyAmount } from '../../kernel/money.js';
import { unpackRateDetails } from '../quotes/rate-details.js';
import type { AnyTransaction, IncomingTransaction, OutgoingTransaction, Refund } from './schemas.js';
import type { TransactionRow } from './store.js';

// A stored transaction as the API shows it: IncomingTransaction or OutgoingTransaction,
// told apart by `type` (the reference's TransactionOneOf).

function parse<T>(text: string | null): T | undefined {
  return text === null ? undefined : (JSON.parse(text) as T);
}

/**
 * The API view. With `nowMs` (a read): a quote's transaction that was never started and whose
 * quote has expired shows EXPIRED even before its EXPIRE step has run (as the quote does).
 */
export function transactionView(row: TransactionRow, nowMs?: number): AnyTransaction {
  if (nowMs !== undefined && row.status === 'PENDING' && row.outcome === null && row.expires_at_ms !== null && nowMs > Number(row.expires_at_ms)) {
    row = { ...row, status: 'EXPIRED' };
  }
  // Built by assignment, in the order the answer and the events show the keys: an object
  // spread of the optional fields (`{ ...base, ...opt, … }`) cost V8 about 40 µs per view,
  // most of it garbage collection (issue 35), three views per payment flow.
  const v: Record<string, unknown> = {
    id: row.id,
    direction: row.direction as 'CREDIT' | 'DEBIT',
    source: JSON.parse(row.source) as OutgoingTransaction['source'],
    destination: JSON.parse(row.destination) as OutgoingTransaction['destination'],
    customerId: row.customer_id,
    platformCustomerId: row.platform_customer_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
  if (row.pending_reason !== null) v.pendingReason = row.pending_reason as OutgoingTransaction['pendingReason'];
  if (row.exchange_rate !== null) v.exchangeRate = Number(row.exchange_rate);
  if (row.quote_id !== null) v.quoteId = row.quote_id;
  if (row.description !== null) v.description = row.description;
  if (row.refund !== null) v.refund = parse<Refund>(row.refund);
  if (row.counterparty_information !== null) v.counterpartyInformation = parse<Record<string, unknown>>(row.counterparty_information);
  if (row.reconciliation !== null) v.reconciliationInstructions = parse<{ reference?: string; transactionHash?: string }>(row.reconciliation);
  if (row.receipt_delivery_confirmed_at !== null) v.receiptDeliveryConfirmedAt = row.receipt_delivery_confirmed_at;
  if (row.agent_id !== null) v.agentId = row.agent_id;
  if (row.settled_at !== null) v.settledAt = row.settled_at;
  const sent = currencyAmount(Number(row.sent_amount), row.sent_currency);
  const received = row.received_amount !== null && row.received_currency !== null ? currencyAmount(Number(row.received_amount), row.received_currency) : undefined;

  if (row.type === 'INCOMING') {
    v.status = row.status as IncomingTransaction['status'];
    v.type = 'INCOMING';
    v.sentAmount = sent;
    v.receivedAmount = received ?? sent;
    v.fees = Number(row.fees);
    if (row.failure_reason !== null) v.failureReason = row.failure_reason as IncomingTransaction['failureReason'];
    if (row.requested_receiver_fields !== null) v.requestedReceiverCustomerInfoFields = parse(row.requested_receiver_fields)!;
    return v as unknown as IncomingTransaction;
  }
  v.status = row.status as OutgoingTransaction['status'];
  v.type = 'OUTGOING';
  v.sentAmount = sent;
  v.fees = Number(row.fees);
  v.platformFees = Number(row.platform_fees);
  v.paymentRail = (row.payment_rail ?? null) as OutgoingTransaction['paymentRail'];
  if (received) v.receivedAmount = received;
  if (row.rate_details !== null) v.rateDetails = unpackRateDetails(row.rate_details);
  if (row.payment_instructions !== null) v.paymentInstructions = parse(row.payment_instructions)!;
  if (row.failure_reason !== null) v.failureReason = row.failure_reason as OutgoingTransaction['failureReason'];
  if (row.rail_selection_mode !== null) v.railSelectionMode = row.rail_selection_mode as 'AUTO' | 'MANUAL';
  v.expectedSettlementAt = row.expected_settlement_at ?? null;
  v.settlementTimelineSeconds = row.settlement_timeline_seconds === null || row.settlement_timeline_seconds === undefined ? null : Number(row.settlement_timeline_seconds);
  return v as unknown as OutgoingTransaction;
}
