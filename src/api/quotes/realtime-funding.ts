import { effectTransaction } from '../../kernel/idempotency.js';
import { apiError } from '../../kernel/errors.js';
import { checkDailyVolume } from '../limits/service.js';
import type { PlatformRow } from '../../operator/platforms/store.js';
import { keepFailedRealtimeDeposit, type PaymentDeps, realtimeHoldAccount, startPayment } from '../transactions/payments.js';
import type { AnyTransaction } from '../transactions/schemas.js';
import { transactionView } from '../transactions/views.js';
import type { Quote } from './schemas.js';
import { updateQuoteStatus } from './store.js';
import { assertExecutable, assertNotExpired, limitSubject, paymentOf, planOf } from './execute.js';
import { requireReadySender } from './parties.js';
import { requireQuote } from './views.js';

// REALTIME_FUNDING quotes funded in the sandbox: POST /sandbox/send.

type Now = { ms: number; at: string };

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
    const payment = await paymentOf(trx, row, flow, hold, now.at);
    const mismatch = body.currencyAmount !== undefined && body.currencyAmount !== Number(row.total_sending);
    const tx = mismatch
      ? await startPayment(trx, deps, payment, { name: 'FUNDING_AMOUNT_MISMATCH', summary: 'Funded with another amount', failsAtStart: true, settleAfterMs: 0, result: 'FAIL', outgoingFailure: 'FUNDING_AMOUNT_MISMATCH' }, now)
      : await startPayment(trx, deps, payment, outcome, now);
    if (mismatch) await keepFailedRealtimeDeposit(trx, deps, tx, body.currencyAmount!, now);
    return transactionView(tx);
  });
}
