import type { Kysely, Transaction } from 'kysely';
import type { Store } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { iso } from '../../kernel/clock.js';
import { apiError, notFound } from '../../kernel/errors.js';
import { emitEvent } from '../../kernel/events.js';
import { effectTransaction } from '../../kernel/idempotency.js';
import type { JobContext, JobQueue } from '../../kernel/jobs.js';
import { customerUnderMandatingProvider } from '../../sandbox/rules/customer-authentication.js';
import { SCA_MAX_RESENDS, SCA_RELYING_PARTY_ID } from '../../sandbox/rules/sca.js';
import { findCustomer } from '../customers/store.js';
import { balancesOf } from '../ledger/service.js';
import type { PlatformRow } from '../../operator/platforms/store.js';
import type { PaymentDeps } from '../quotes/service.js';
import { releaseAuthorizedQuote } from '../quotes/execute.js';
import { quoteView, requireQuote } from '../quotes/views.js';
import type { Quote } from '../quotes/schemas.js';
import { findQuote, type QuoteRow, updateQuoteStatus } from '../quotes/store.js';
import { findTransaction, updateTransaction, updateTransactionStatus } from '../transactions/store.js';
import { transactionView } from '../transactions/views.js';
import type { ProofFields, ScaChallenge, ScaFactor } from './schemas.js';
import { activeSession, type ChallengeRow, countSend, type FactorRow, findChallenge, insertChallenge, isTrusted, listFactors, pendingChallenge, settleChallenge } from './store.js';
import { rateLimited } from './reset.js';
import { type Now, SCA_CHALLENGE_EXPIRY_JOB, active, assertInScope, assertNotLocked, clearFailures, newChallenge, proofIsValid, proofShape, sha256, wrongProof } from './service.js';

// Challenges on money movement: quotes held for authorization (the gate of quotes/authorization.ts),
// authorized with a proof, their codes resent, expired by a job.

type Db = Kysely<DB> | Transaction<DB>;

// ---- Challenges on money movement (quotes) ---------------------------------------------

export function challengeView(ch: ChallengeRow, factors: FactorRow[]): ScaChallenge {
  const v: ScaChallenge = {
    id: ch.id,
    expiresAt: ch.expires_at,
    factor: ch.factor as ScaFactor,
    availableFactors: JSON.parse(ch.available_factors) as ScaFactor[],
  };
  if (ch.purpose !== null) v.purpose = ch.purpose;
  const passkey = active(factors, 'PASSKEY');
  if (ch.factor === 'PASSKEY' && passkey) {
    v.passkeyAssertionOptions = { challenge: sha256(ch.id), rpId: SCA_RELYING_PARTY_ID, allowCredentials: [{ type: 'public-key', id: passkey.credential_id }] };
  }
  return v;
}

/** Per-payment challenges: SMS_OTP, and a passkey once enrolled (TOTP cannot carry dynamic linking). */
function paymentFactors(factors: FactorRow[]): ScaFactor[] {
  return ['SMS_OTP', ...(active(factors, 'PASSKEY') ? (['PASSKEY'] as const) : [])];
}

/** The authorization steps of a quote: the conversion (cross-currency), then the payout (or transfer). */
function purposesOf(row: QuoteRow): string[] {
  const last = row.destination_account_id?.startsWith('InternalAccount:') ? 'TRANSFER' : 'PAYOUT';
  return row.sending_currency !== row.receiving_currency ? ['CURRENCY_CONVERSION', last] : [last];
}

async function scheduleExpiry(trx: Transaction<DB>, jobs: JobQueue, ch: ChallengeRow, at: string): Promise<void> {
  await jobs.schedule(trx, { platformId: ch.platform_id, kind: SCA_CHALLENGE_EXPIRY_JOB, payload: { challengeId: ch.id }, runAtMs: Number(ch.expires_at_ms) + 1, at });
}

/** Issue a quote's next challenge: the quote shows it, its transaction announces PENDING_AUTHORIZATION. */
async function issueQuoteChallenge(trx: Transaction<DB>, jobs: JobQueue, row: QuoteRow, purposes: string[], now: Now, fromStatus: 'PENDING' | 'PENDING_AUTHORIZATION'): Promise<void> {
  const factors = await listFactors(trx, row.platform_id, row.customer_id!);
  // A real-time funded quote must still be fundable once authorized: its steps end with the quote.
  const cap = row.source_type === 'REALTIME_FUNDING' ? Number(row.expires_at_ms) : Infinity;
  const ch = newChallenge(row.platform_id, row.customer_id!, 'QUOTE', row.id, 'SMS_OTP', paymentFactors(factors), purposes, now, cap);
  await insertChallenge(trx, ch);
  const moved = await updateQuoteStatus(trx, row.platform_id, row.id, fromStatus, { status: 'PENDING_AUTHORIZATION', sca_challenge: JSON.stringify(challengeView(ch, factors)), updated_at: now.at });
  if (!moved) throw apiError(409, 'INVALID_STATE_TRANSITION', `Quote ${row.id} changed concurrently`, { quoteId: row.id });
  const tx = await findTransaction(trx, row.platform_id, row.transaction_id!);
  if (tx) {
    await updateTransaction(trx, row.platform_id, tx.id, { status: 'PENDING_AUTHORIZATION', updated_at: now.at });
    const view = { ...tx, status: 'PENDING_AUTHORIZATION', updated_at: now.at };
    await emitEvent(trx, row.platform_id, now.at, { type: 'OUTGOING_PAYMENT.PENDING_AUTHORIZATION', resourceId: tx.id, data: transactionView(view) });
  }
  await scheduleExpiry(trx, jobs, ch, now.at);
}

/**
 * The quotes area's authorization gate (setAuthorizationGate): a quote of an in-scope customer
 * waits for authorization — at execute (prefunded), or at creation (REALTIME_FUNDING, whose
 * paymentInstructions are withheld until then). Not held: platform quotes, pulls, and payouts
 * to a trusted beneficiary. A prefunded source must hold the amount now (else 400 INVALID_AMOUNT).
 */
export async function holdForAuthorization(trx: Transaction<DB>, deps: PaymentDeps, _platform: PlatformRow, row: QuoteRow, now: Now, beforeHold?: () => Promise<void>): Promise<boolean> {
  if (row.customer_id === null || row.source_account_id?.startsWith('ExternalAccount:')) return false;
  const customer = await findCustomer(trx, row.platform_id, row.customer_id);
  if (!customer || !customerUnderMandatingProvider(customer)) return false;
  if (row.destination_account_id?.startsWith('ExternalAccount:') && (await isTrusted(trx, row.platform_id, row.destination_account_id))) return false;
  if (row.source_type !== 'REALTIME_FUNDING' && row.source_account_id !== null) {
    const available = (await balancesOf(trx, [row.source_account_id])).get(row.source_account_id)?.available ?? 0;
    const total = Number(row.total_sending);
    if (available < total) {
      throw apiError(400, 'INVALID_AMOUNT', `The source account has ${available} ${row.sending_currency} available; the payment needs ${total}`, {
        reason: 'INSUFFICIENT_BALANCE',
        accountId: row.source_account_id,
        currency: row.sending_currency,
        available,
        required: total,
        shortfall: total - available,
      });
    }
  }
  // The quote and its transaction in the store before the challenge moves them (quotes/authorization.ts).
  await beforeHold?.();
  await issueQuoteChallenge(trx, deps.jobs, row, purposesOf(row), now, 'PENDING');
  return true;
}

/** The quote, its in-scope customer and its pending challenge (404 / 409 otherwise). */
async function requireHeldQuote(db: Db, platformId: string, quoteId: string): Promise<{ row: QuoteRow; ch: ChallengeRow }> {
  const row = await requireQuote(db, platformId, quoteId);
  if (row.customer_id === null) {
    throw apiError(409, 'CONFLICT', `Quote ${row.id} is the platform's own: Strong Customer Authentication does not apply`, { quoteId: row.id, reason: 'SCA_NOT_REQUIRED' });
  }
  const customer = await findCustomer(db, platformId, row.customer_id);
  if (!customer) throw notFound('QUOTE_NOT_FOUND', 'Quote', quoteId);
  assertInScope(customer);
  const ch = row.status === 'PENDING_AUTHORIZATION' ? await pendingChallenge(db, platformId, ['QUOTE'], { subjectId: row.id }) : undefined;
  if (!ch) {
    throw apiError(409, 'CONFLICT', `Quote ${row.id} has no challenge to authorize (status ${row.status})`, { quoteId: row.id, status: row.status, reason: 'NO_PENDING_CHALLENGE' });
  }
  return { row, ch };
}

/**
 * POST /quotes/{quoteId}/authorize. Checks in order: the quote's challenge (409), not expired
 * (400), the login not locked (423), a live SCA session (409 SCA_SESSION_REQUIRED), the proof
 * (400, counted). Then, in one transaction: the next step's challenge, or the release — a
 * prefunded quote's payment starts (PROCESSING), a REALTIME_FUNDING quote goes back to
 * PENDING with its paymentInstructions.
 */
export async function authorizeQuote(deps: PaymentDeps, platform: PlatformRow, now: Now, quoteId: string, proof: ProofFields): Promise<Quote> {
  const { store } = deps;
  const { row, ch } = await requireHeldQuote(store.db, platform.id, quoteId);
  const customerId = row.customer_id!;
  if (now.ms > Number(ch.expires_at_ms)) {
    // Past its time: the payment fails now, as the expiry job would (its job then finds nothing to do).
    await store.db.transaction().execute((trx) => expireChallenge(trx, platform.id, ch, now.ms));
    throw apiError(400, 'INVALID_INPUT', `The challenge ${ch.id} expired at ${ch.expires_at}; the payment failed with SCA_NOT_COMPLETED`, {
      errors: [{ field: 'code', message: 'answers a challenge that expired' }],
      reason: 'SCA_CHALLENGE_EXPIRED',
      challengeId: ch.id,
    });
  }
  await assertNotLocked(store.db, platform.id, customerId, now);
  const session = await activeSession(store.db, platform.id, customerId, now.ms);
  if (!session) {
    throw apiError(409, 'SCA_SESSION_REQUIRED', `Customer ${customerId} has no live SCA login session: log in (POST /sca/login/start and /complete), then authorize again`, { customerId });
  }
  const kind = proofShape(proof);
  const factors = await listFactors(store.db, platform.id, customerId);
  if (!proofIsValid(proof, kind, JSON.parse(ch.available_factors) as string[], factors)) await wrongProof(store, platform.id, customerId, now, kind === 'CODE' ? 'code' : 'passkeyAssertion');
  return effectTransaction(store.db, async (trx) => {
    const locked = await requireQuote(trx, platform.id, row.id, store.kind === 'postgres');
    if (locked.status !== 'PENDING_AUTHORIZATION' || !(await settleChallenge(trx, ch.id, 'SATISFIED'))) {
      throw apiError(409, 'CONFLICT', `The challenge ${ch.id} was already answered`, { quoteId: row.id, reason: 'NO_PENDING_CHALLENGE' });
    }
    await clearFailures(trx, platform.id, customerId, now.at);
    const next = JSON.parse(ch.next_purposes) as string[];
    if (next.length > 0) {
      await issueQuoteChallenge(trx, deps.jobs, locked, next, now, 'PENDING_AUTHORIZATION');
    } else if (locked.source_type === 'REALTIME_FUNDING') {
      await updateQuoteStatus(trx, platform.id, locked.id, 'PENDING_AUTHORIZATION', { status: 'PENDING', sca_challenge: null, updated_at: now.at });
      const tx = await findTransaction(trx, platform.id, locked.transaction_id!);
      if (tx && (await updateTransactionStatus(trx, platform.id, tx.id, 'PENDING_AUTHORIZATION', { status: 'PENDING', updated_at: now.at }))) {
        await emitEvent(trx, platform.id, now.at, { type: 'OUTGOING_PAYMENT.PENDING', resourceId: tx.id, data: transactionView({ ...tx, status: 'PENDING', updated_at: now.at }) });
      }
    } else {
      await releaseAuthorizedQuote(trx, deps, platform, locked, now);
    }
    return quoteView((await findQuote(trx, platform.id, locked.id))!, now.ms);
  });
}

/** POST /quotes/{quoteId}/authorize/resend: the same challenge's SMS code again (expiry unchanged). */
export async function resendQuoteCode(store: Store, platformId: string, now: Now, quoteId: string): Promise<void> {
  const { ch } = await requireHeldQuote(store.db, platformId, quoteId);
  if (ch.factor !== 'SMS_OTP') {
    throw apiError(409, 'CONFLICT', `The challenge ${ch.id} is a ${ch.factor} challenge: its code cannot be re-sent`, { quoteId, reason: 'NOT_RESENDABLE' });
  }
  if (now.ms > Number(ch.expires_at_ms)) {
    throw apiError(409, 'CONFLICT', `The challenge ${ch.id} expired at ${ch.expires_at}: there is no code to re-send`, { quoteId, reason: 'CHALLENGE_EXPIRED' });
  }
  if (ch.sends > SCA_MAX_RESENDS) {
    const wait = Math.max(1, Math.ceil((Number(ch.expires_at_ms) - now.ms) / 1000));
    throw rateLimited(`The code of challenge ${ch.id} was re-sent ${SCA_MAX_RESENDS} times already`, wait, { quoteId, challengeId: ch.id });
  }
  await countSend(store.db, ch.id);
}

/** The expiry job: a challenge still pending fails its quote's payment (SCA_NOT_COMPLETED); nothing moved. */
export async function runChallengeExpiry(ctx: JobContext): Promise<void> {
  const { trx, job } = ctx;
  if (job.platformId === null) return;
  const { challengeId } = job.payload as { challengeId: string };
  const ch = await findChallenge(trx, job.platformId, challengeId);
  if (!ch || ch.status !== 'PENDING' || ctx.nowMs <= Number(ch.expires_at_ms)) return;
  await expireChallenge(trx, job.platformId, ch, ctx.nowMs);
}

/** A pending challenge past its time: EXPIRED, and its quote's payment FAILED with SCA_NOT_COMPLETED (once; nothing moved). */
async function expireChallenge(trx: Transaction<DB>, platformId: string, ch: ChallengeRow, nowMs: number): Promise<void> {
  if (!(await settleChallenge(trx, ch.id, 'EXPIRED'))) return;
  if (ch.kind !== 'QUOTE' || ch.subject_id === null) return;
  const at = iso(nowMs);
  const quote = await findQuote(trx, platformId, ch.subject_id);
  if (!quote || !(await updateQuoteStatus(trx, platformId, quote.id, 'PENDING_AUTHORIZATION', { status: 'FAILED', sca_challenge: null, updated_at: at }))) return;
  const tx = await findTransaction(trx, platformId, quote.transaction_id!);
  if (tx && (await updateTransactionStatus(trx, platformId, tx.id, 'PENDING_AUTHORIZATION', { status: 'FAILED', failure_reason: 'SCA_NOT_COMPLETED', pending_reason: null, updated_at: at }))) {
    await emitEvent(trx, platformId, at, { type: 'OUTGOING_PAYMENT.FAILED', resourceId: tx.id, data: transactionView({ ...tx, status: 'FAILED', failure_reason: 'SCA_NOT_COMPLETED', pending_reason: null, updated_at: at }) });
  }
}

export function registerScaJobs(jobs: JobQueue): void {
  jobs.registerOnce(SCA_CHALLENGE_EXPIRY_JOB, runChallengeExpiry);
}
