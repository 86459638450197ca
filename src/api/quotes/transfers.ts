import type { Transaction } from 'kysely';
import { effectTransaction } from '../../kernel/idempotency.js';
import type { DB } from '../../kernel/db/schema.js';
import { apiError, invalidInput } from '../../kernel/errors.js';
import { balancesOf } from '../ledger/service.js';
import type { PlatformRow } from '../../operator/platforms/store.js';
import type { PaymentDeps } from '../transactions/payments.js';
import type { AnyTransaction } from '../transactions/schemas.js';
import { findTransaction } from '../transactions/store.js';
import { transactionView } from '../transactions/views.js';
import type { QuoteRequest } from './schemas.js';
import type { QuoteRow } from './store.js';
import { executeRow } from './execute.js';
import { type CreateOptions, resolvePayer } from './parties.js';
import { buildQuote } from './service.js';

// Transfers: same-currency transfers in and out as quotes executed at once.

type Now = { ms: number; at: string };

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
