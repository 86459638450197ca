import { type AccountInfoLike, sandboxSuffix } from './identifiers.js';

// The sandbox outcome of a quote executed to an external-account destination, read from the
// last three characters of the account's primary identifier (docs/sandbox.md, "Money
// movement"). The single place the payment flow asks "what happens to this payment?".
//
// Today every suffix succeeds. The specification's table (002 execution failed, 003 long
// payment ~6 minutes, 004 counterparty delivery failed, 005 returned after completing,
// 006 user cancellation, 007 payout and refund failed) is the next step: add the outcomes
// to PaymentOutcome and map the suffixes here; the transactions service switches on it.

export type PaymentOutcome = 'SUCCEED';

/** How long a payment stays PROCESSING before its outcome applies (platform clock). */
export const PAYMENT_SETTLE_DELAY_MS = 1_000;

export function quotePaymentOutcome(destination: AccountInfoLike): PaymentOutcome {
  void sandboxSuffix(destination);
  return 'SUCCEED';
}
