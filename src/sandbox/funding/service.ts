import type { Kysely } from 'kysely';
import { effectTransaction } from '../../kernel/idempotency.js';
import type { Store } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { emitEvent } from '../../kernel/events.js';
import { newId } from '../../kernel/ids.js';
import { findCustomer } from '../../api/customers/store.js';
import { emitBalanceUpdates, getInternalAccount, requireInternalAccount } from '../../api/internal-accounts/service.js';
import type { InternalAccount } from '../../api/internal-accounts/schemas.js';
import { ensureWorldAccount, postEntry } from '../../api/ledger/service.js';
import { insertTransaction, type TransactionRow } from '../../api/transactions/store.js';
import { transactionView } from '../../api/transactions/views.js';

// Sandbox funding: money arrives from the outside world into an internal account at once,
// as a deposit would (hosted docs, payouts quickstart). In one transaction:
//   - an INCOMING transaction, born COMPLETED (flow SANDBOX_FUNDING): source an external
//     funding source in the account's currency, destination the account, sent = received =
//     the amount, no fee, reconciliationInstructions.reference the account's deposit reference;
//   - one FUNDING ledger entry (WORLD.available −x, account.available +x) naming the
//     transaction (reference_id, idempotency key `funding:<transactionId>`);
//   - INCOMING_PAYMENT.COMPLETED with the transaction, then the account's
//     INTERNAL_ACCOUNT.BALANCE_UPDATED.
// The answer stays the InternalAccount (the reference's response of this operation).

export const SANDBOX_FUNDING_FLOW = 'SANDBOX_FUNDING';
const DESCRIPTION = 'Internal account funding (sandbox)';

export async function fundInternalAccount(store: Store, platformId: string, at: string, accountId: string, amount: number): Promise<InternalAccount> {
  const db: Kysely<DB> = store.db;
  return effectTransaction(db, async (trx) => {
    const account = await requireInternalAccount(trx, platformId, accountId);
    const customer = account.customer_id !== null ? await findCustomer(trx, platformId, account.customer_id) : undefined;
    const source: Record<string, unknown> = { sourceType: 'REALTIME_FUNDING', currency: account.currency };
    if (account.customer_id !== null) source.customerId = account.customer_id;
    const tx: TransactionRow = {
      id: newId('Transaction'),
      platform_id: platformId,
      customer_id: account.customer_id ?? platformId,
      platform_customer_id: account.customer_id === null ? platformId : (customer?.platform_customer_id ?? account.customer_id),
      type: 'INCOMING',
      direction: 'CREDIT',
      status: 'COMPLETED',
      quote_id: null,
      source: JSON.stringify(source),
      source_account_id: null,
      destination: JSON.stringify({ destinationType: 'ACCOUNT', accountId: account.id, currency: account.currency }),
      destination_account_id: account.id,
      sent_amount: amount,
      sent_currency: account.currency,
      received_amount: amount,
      received_currency: account.currency,
      fees: 0,
      platform_fees: 0,
      exchange_rate: null,
      rate_details: null,
      payment_rail: null,
      description: DESCRIPTION,
      hold_entry_id: null,
      failure_reason: null,
      settled_at: at,
      created_at: at,
      updated_at: at,
      pending_reason: null,
      refund: null,
      counterparty_information: null,
      reconciliation: JSON.stringify({ reference: account.funding_reference }),
      receipt_delivery_confirmed_at: null,
      rail_selection_mode: null,
      payment_instructions: null,
      outcome: null,
      requested_receiver_fields: null,
      receiver_customer_info: null,
      agent_id: null,
      hold_account_id: null,
      flow: SANDBOX_FUNDING_FLOW,
      approval_deadline_ms: null,
      expires_at_ms: null,
      expected_settlement_at: null,
      settlement_timeline_seconds: null,
    };
    // The transaction row first: the ledger entry references it.
    await insertTransaction(trx, tx);
    const world = await ensureWorldAccount(trx, platformId, account.currency, at, tx.id);
    const entry = await postEntry(trx, store, {
      platformId,
      kind: 'FUNDING',
      at,
      referenceId: tx.id,
      idempotencyKey: `funding:${tx.id}`,
      memo: 'sandbox fund',
      postings: [
        { accountId: world, currency: account.currency, amount: -amount },
        { accountId: account.id, currency: account.currency, amount },
      ],
    });
    await emitEvent(trx, platformId, at, { type: 'INCOMING_PAYMENT.COMPLETED', resourceId: tx.id, data: transactionView(tx) });
    await emitBalanceUpdates(trx, platformId, [account.id], at, entry.balances);
    return getInternalAccount(trx, platformId, account.id);
  });
}
