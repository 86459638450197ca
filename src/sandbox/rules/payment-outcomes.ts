import { iso } from '../../kernel/clock.js';
import { INSTANT_RAILS, type PaymentRail } from './corridors.js';
import { type AccountInfoLike, sandboxSuffix } from './identifiers.js';
import type { UmaBehaviour } from './uma.js';

// The sandbox outcome tables of money movement (docs/sandbox.md, "Money movement"), as
// data: the ONE place the payment flows ask "what happens to this payment?". Each row says
// when the outcome applies (at once, or after the payment has been in flight a while on the
// platform's sandbox clock) and how it ends. The flows in src/api/transactions/payments.ts
// carry a row out step by step as durable jobs, so a restart or a clock advance replays it.

/** How long an ordinary payment stays in flight before its outcome applies (platform clock). */
export const PAYMENT_SETTLE_DELAY_MS = 1_000;
/** How long a refund stays PENDING before it completes (or fails). */
export const REFUND_DELAY_MS = 1_000;

export type RefundReason = 'TRANSACTION_FAILED' | 'USER_CANCELLATION';

export interface PaymentOutcome {
  /** Stable name, stored with the transaction (`transactions.outcome`). */
  name: string;
  /** What the table says, for docs and messages. */
  summary: string;
  /** Fails when the payment starts: nothing moves, the transaction is FAILED at once. */
  failsAtStart?: boolean;
  /** In flight this long (platform clock) before the outcome applies. */
  settleAfterMs: number;
  /** COMPLETE: delivered. FAIL: not delivered (money back to the payer, see `refund`). */
  result: 'COMPLETE' | 'FAIL';
  /** The failure reason of an outgoing payment that fails (or, with returnAfterMs, is returned). */
  outgoingFailure?: 'QUOTE_EXECUTION_FAILED' | 'PAYOUT_RETURNED' | 'ACCOUNT_CANNOT_RECEIVE' | 'ACCOUNT_INVALID' | 'COMPLIANCE_REJECTED' | 'FUNDING_AMOUNT_MISMATCH';
  /** The failure reason of an incoming pull that fails. */
  incomingFailure?: 'COLLECTION_FAILED';
  /** Completes, then this much later the receiving bank returns it (FAILED, PAYOUT_RETURNED, refunded). */
  returnAfterMs?: number;
  /** Why the money goes back, and whether that refund itself fails (the money stays held). */
  refund?: { reason: RefundReason; fails?: boolean };
  /** Shown while in flight. */
  pendingReason?: 'COMPLIANCE_REVIEW';
}

const SUCCEED: PaymentOutcome = { name: 'SUCCEED', summary: 'Completes', settleAfterMs: PAYMENT_SETTLE_DELAY_MS, result: 'COMPLETE' };

/** Quote with an external-account destination, after execution: by the account's last 3 digits. */
export const QUOTE_DESTINATION_OUTCOMES: Readonly<Record<string, PaymentOutcome>> = {
  '002': {
    name: 'QUOTE_EXECUTION_FAILED',
    summary: 'Quote execution failed; the debited amount is refunded',
    settleAfterMs: PAYMENT_SETTLE_DELAY_MS,
    result: 'FAIL',
    outgoingFailure: 'QUOTE_EXECUTION_FAILED',
    refund: { reason: 'TRANSACTION_FAILED' },
  },
  '003': { name: 'LONG_PAYMENT', summary: 'Long payment: completes after about 6 minutes', settleAfterMs: 6 * 60_000, result: 'COMPLETE' },
  '004': {
    name: 'COUNTERPARTY_DELIVERY_FAILED',
    summary: 'Counterparty delivery failed; refunded',
    settleAfterMs: PAYMENT_SETTLE_DELAY_MS,
    result: 'FAIL',
    outgoingFailure: 'ACCOUNT_CANNOT_RECEIVE',
    refund: { reason: 'TRANSACTION_FAILED' },
  },
  '005': {
    name: 'PAYOUT_RETURNED',
    summary: 'Completes, then the receiving bank returns it (FAILED, PAYOUT_RETURNED); refunded',
    settleAfterMs: PAYMENT_SETTLE_DELAY_MS,
    result: 'COMPLETE',
    returnAfterMs: 60_000,
    outgoingFailure: 'PAYOUT_RETURNED',
    refund: { reason: 'TRANSACTION_FAILED' },
  },
  '006': {
    name: 'USER_CANCELLATION',
    summary: 'Cancelled by the user; refunded',
    settleAfterMs: PAYMENT_SETTLE_DELAY_MS,
    result: 'FAIL',
    outgoingFailure: 'QUOTE_EXECUTION_FAILED',
    refund: { reason: 'USER_CANCELLATION' },
  },
  '007': {
    name: 'PAYOUT_AND_REFUND_FAILED',
    summary: 'The payout fails and so does its refund: the money stays held on the paying account',
    settleAfterMs: PAYMENT_SETTLE_DELAY_MS,
    result: 'FAIL',
    outgoingFailure: 'QUOTE_EXECUTION_FAILED',
    refund: { reason: 'TRANSACTION_FAILED', fails: true },
  },
};

/** An external account as the source of a pull or the destination of a transfer-out payout: by its last 3 digits. */
export const PULL_PAYOUT_OUTCOMES: Readonly<Record<string, PaymentOutcome>> = {
  '002': {
    name: 'INSUFFICIENT_FUNDS',
    summary: 'Insufficient funds: fails at once',
    failsAtStart: true,
    settleAfterMs: 0,
    result: 'FAIL',
    outgoingFailure: 'QUOTE_EXECUTION_FAILED',
    incomingFailure: 'COLLECTION_FAILED',
  },
  '003': {
    name: 'ACCOUNT_CLOSED_OR_INVALID',
    summary: 'Account closed or invalid: fails at once',
    failsAtStart: true,
    settleAfterMs: 0,
    result: 'FAIL',
    outgoingFailure: 'ACCOUNT_INVALID',
    incomingFailure: 'COLLECTION_FAILED',
  },
  '004': {
    name: 'BANK_REJECTED',
    summary: 'The bank rejects the transfer',
    settleAfterMs: PAYMENT_SETTLE_DELAY_MS,
    result: 'FAIL',
    outgoingFailure: 'ACCOUNT_CANNOT_RECEIVE',
    incomingFailure: 'COLLECTION_FAILED',
    refund: { reason: 'TRANSACTION_FAILED' },
  },
  '005': {
    name: 'DELAYED_FAILURE',
    summary: 'Pending about 30 seconds, then fails',
    settleAfterMs: 30_000,
    result: 'FAIL',
    outgoingFailure: 'QUOTE_EXECUTION_FAILED',
    incomingFailure: 'COLLECTION_FAILED',
    refund: { reason: 'TRANSACTION_FAILED' },
  },
};

/** UMA destinations at the sandbox domain, by the receiver's behaviour (src/sandbox/rules/uma.ts). */
export const UMA_DESTINATION_OUTCOMES: Readonly<Record<UmaBehaviour, PaymentOutcome>> = {
  SUCCESS: { ...SUCCEED, name: 'UMA_SUCCESS', summary: 'Succeeds in the receiver’s currency' },
  PENDING_LONG: {
    name: 'UMA_PENDING_LONG',
    summary: 'Stays pending (compliance review) for an hour, then completes',
    settleAfterMs: 60 * 60_000,
    result: 'COMPLETE',
    pendingReason: 'COMPLIANCE_REVIEW',
  },
  FAIL_COMPLIANCE: {
    name: 'UMA_COMPLIANCE_REJECTED',
    summary: 'Compliance check fails (COMPLIANCE_REJECTED); refunded',
    settleAfterMs: PAYMENT_SETTLE_DELAY_MS,
    result: 'FAIL',
    outgoingFailure: 'COMPLIANCE_REJECTED',
    refund: { reason: 'TRANSACTION_FAILED' },
  },
};

/** Transfers that leave no sandbox counterparty to ask (internal account to internal account). */
export const INTERNAL_OUTCOME: PaymentOutcome = { ...SUCCEED, name: 'INTERNAL', summary: 'Completes' };

export function quoteDestinationOutcome(destination: AccountInfoLike): PaymentOutcome {
  return QUOTE_DESTINATION_OUTCOMES[sandboxSuffix(destination)] ?? SUCCEED;
}

export function pullPayoutOutcome(account: AccountInfoLike): PaymentOutcome {
  return PULL_PAYOUT_OUTCOMES[sandboxSuffix(account)] ?? SUCCEED;
}

export function umaDestinationOutcome(behaviour: UmaBehaviour): PaymentOutcome {
  return UMA_DESTINATION_OUTCOMES[behaviour];
}

const BY_NAME = new Map<string, PaymentOutcome>(
  [SUCCEED, INTERNAL_OUTCOME, ...Object.values(QUOTE_DESTINATION_OUTCOMES), ...Object.values(PULL_PAYOUT_OUTCOMES), ...Object.values(UMA_DESTINATION_OUTCOMES)].map((o) => [o.name, o]),
);

/** The outcome a transaction stored when it started (unknown names read as SUCCEED). */
export function outcomeNamed(name: string | null | undefined): PaymentOutcome {
  return (name ? BY_NAME.get(name) : undefined) ?? SUCCEED;
}

/** When an outgoing payment is expected to settle, as it starts (see settlementExpectation). */
export interface SettlementExpectation {
  /** ISO on the platform clock; null when it settles at once on an instant rail (or with no rail). */
  expectedSettlementAt: string | null;
  /** Seconds from the quote's creation to the expected settlement (rounded up). */
  settlementTimelineSeconds: number;
}

/**
 * The expected settlement of an outgoing payment starting at `startMs` (platform clock) whose
 * quote was created at `createdMs`: the sandbox outcome's own timing, the step that ends its
 * flight (completion, or the failure that replaces it) `settleAfterMs` after the start.
 * `expectedSettlementAt` is null, as the reference says of instant rails, when the payment
 * settles at the ordinary step on an instant rail or with no external rail (UMA, internal
 * accounts); a deferred rail, or an outcome that holds the payment longer (003: 6 minutes,
 * 005 pull/payout: 30 s, `$pending.long`: 1 hour), gives the time.
 */
export function settlementExpectation(outcome: PaymentOutcome, rail: string | null, startMs: number, createdMs: number): SettlementExpectation {
  const atMs = startMs + outcome.settleAfterMs;
  const immediate = (rail === null || INSTANT_RAILS.has(rail as PaymentRail)) && outcome.settleAfterMs <= PAYMENT_SETTLE_DELAY_MS;
  return {
    expectedSettlementAt: immediate ? null : iso(atMs),
    settlementTimelineSeconds: Math.max(0, Math.ceil((atMs - createdMs) / 1000)),
  };
}
