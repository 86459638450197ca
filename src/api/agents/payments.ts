import type { Kysely, Transaction } from 'kysely';
import type { AuthContext } from '../../kernel/auth.js';
import type { DB } from '../../kernel/db/schema.js';
import { apiError, invalidInput, notFound } from '../../kernel/errors.js';
import { missingReference, referencedBy } from '../../kernel/references.js';
import { emitEvent } from '../../kernel/events.js';
import { effectTransaction } from '../../kernel/idempotency.js';
import { isIdOf, newId } from '../../kernel/ids.js';
import { findCustomer } from '../customers/store.js';
import type { SignedRequestChallenge } from '../embedded-wallets/schemas.js';
import type { SignedHeaders } from '../embedded-wallets/service.js';
import { authorizeWalletExecuteIn } from '../embedded-wallets/wallet-quotes.js';
import type { ExternalAccount } from '../external-accounts/schemas.js';
import { INCOMING_PAYMENT_JOB } from '../incoming-payments/service.js';
import { requireInternalAccount } from '../internal-accounts/service.js';
import type { InternalAccount } from '../internal-accounts/schemas.js';
import { balancesOf } from '../ledger/service.js';
import type { Quote, QuoteRequest } from '../quotes/schemas.js';
import { createQuoteIn } from '../quotes/service.js';
import { executeQuoteIn } from '../quotes/execute.js';
import { prepareTransfer, type TransferQuoteRequest } from '../quotes/transfers.js';
import { quoteView, requireQuote } from '../quotes/views.js';
import { type QuoteRow, updateQuoteStatus } from '../quotes/store.js';
import { updateTransaction } from '../transactions/store.js';
import type { Evaluation, Subject } from './policy.js';
import type { AgentAction, AgentActionTypeName } from './schemas.js';
import { type ActionRow, type AgentRow, findAgentQuote, insertAction, insertAgentQuote } from './store.js';
import { audit, auditedCaller, auditingDenials, callerAgent, check, evaluateOrThrow, lockedAgent } from './agent-auth.js';
import { requireMyExternalAccount } from './operations.js';
import { AGENT_ACTION_EVENTS, AGENT_ACTION_FLOW, type AgentDeps, actionView } from './service.js';

// The agent's money-moving operations: quotes and transfers, executed at once (AUTO) or held
// for the platform's approval as AgentActions.

type Db = Kysely<DB> | Transaction<DB>;
type Trx = Transaction<DB>;
type Now = { ms: number; at: string };

// ---- Agent operations: quotes ------------------------------------------------------------------

/** Every account a quote request names must be the agent's customer's (else missing, as an unknown id: kernel/references.ts). */
async function bindQuoteRequest(db: Db, agent: AgentRow, body: QuoteRequest): Promise<{ body: QuoteRequest; internalAccountId: string | null }> {
  const src = body.source as { sourceType: string; accountId?: string; customerId?: string };
  if (src.sourceType === 'REALTIME_FUNDING') {
    // Paid by /sandbox/send (or a real deposit) rather than by an execute: no action the policy
    // could evaluate (permission, limits, approval) would ever stand between it and the payout.
    throw invalidInput([{ field: 'source.sourceType', message: 'REALTIME_FUNDING is not accepted from an agent: an agent pays from its customer\'s internal account (sourceType ACCOUNT), where its policy decides each execution' }]);
  }
  if (src.customerId !== undefined && src.customerId !== agent.customer_id) throw missingReference('USER_NOT_FOUND', 'Customer', src.customerId, 'source.customerId');
  let internalAccountId: string | null = null;
  const own = async (id: string, field: string) => {
    if (isIdOf('InternalAccount', id)) {
      const row = await referencedBy(field, requireInternalAccount(db, agent.platform_id, id));
      if (row.customer_id !== agent.customer_id) throw missingReference('REFERENCE_NOT_FOUND', 'Internal account', id, field);
      internalAccountId ??= id;
    } else if (isIdOf('ExternalAccount', id)) {
      await referencedBy(field, requireMyExternalAccount(db, agent, id));
    } else {
      throw missingReference('REFERENCE_NOT_FOUND', 'Account', id, field);
    }
  };
  if (src.sourceType === 'ACCOUNT' && src.accountId !== undefined) await own(src.accountId, 'source.accountId');
  const dst = body.destination as { destinationType: string; accountId?: string };
  if (dst.destinationType === 'ACCOUNT' && dst.accountId !== undefined) await own(dst.accountId, 'destination.accountId');
  return { body, internalAccountId };
}

/** POST /agents/me/quotes: CREATE_QUOTES; never executed at once (execution is an action of its own). */
export async function createMyQuote(deps: AgentDeps, auth: AuthContext, now: Now, body: QuoteRequest): Promise<Quote> {
  const agent = await auditedCaller(deps.store, auth, 'CREATE_QUOTE', now);
  if (body.immediatelyExecute === true) {
    throw invalidInput([{ field: 'immediatelyExecute', message: 'is not accepted from an agent: execute the quote with POST /agents/me/quotes/{quoteId}/execute, where the policy decides' }]);
  }
  const bound = await bindQuoteRequest(deps.store.db, agent, body);
  await check(deps.store, agent, 'CREATE_QUOTE', { permission: 'CREATE_QUOTES', internalAccountId: bound.internalAccountId }, now);
  return effectTransaction(deps.store.db, async (trx) => {
    const row = await createQuoteIn(trx, deps, auth.platform, now, bound.body, { agentId: agent.id });
    await insertAgentQuote(trx, { quote_id: row.id, platform_id: agent.platform_id, agent_id: agent.id });
    await audit(trx, agent, { operation: 'CREATE_QUOTE', decision: 'AUTO', reason: `created ${row.id}`, actor: agent.id, transactionId: row.transaction_id }, now.at);
    return quoteView(row, now.ms);
  });
}

async function requireMyQuote(db: Db, agent: AgentRow, id: string, lock = false): Promise<QuoteRow> {
  const mine = isIdOf('Quote', id) ? await findAgentQuote(db, agent.platform_id, id) : undefined;
  if (!mine || mine.agent_id !== agent.id) throw notFound('QUOTE_NOT_FOUND', 'Quote', id);
  return requireQuote(db, agent.platform_id, id, lock);
}

export async function getMyQuote(db: Kysely<DB>, auth: AuthContext, id: string, nowMs: number): Promise<Quote> {
  const agent = await callerAgent(db, auth);
  return quoteView(await requireMyQuote(db, agent, id), nowMs);
}

/** The customer's internal account a quote draws on (its source) or pays into (a pull's destination). */
function internalAccountOf(q: QuoteRow): string | null {
  if (q.source_account_id?.startsWith('InternalAccount:')) return q.source_account_id;
  if (q.destination_account_id?.startsWith('InternalAccount:')) return q.destination_account_id;
  return null;
}

/** A quote an agent asks to execute must still be executable (same answers as POST /quotes/{id}/execute). */
function assertQuoteOpen(q: QuoteRow, now: Now): void {
  const status = quoteView(q, now.ms).status;
  if (status === 'EXPIRED') {
    throw apiError(400, 'QUOTE_REQUEST_FAILED', `Quote ${q.id} expired at ${q.expires_at}; request a new quote`, { reason: 'QUOTE_EXPIRED', quoteId: q.id, expiresAt: q.expires_at });
  }
  if (status === 'PENDING_AUTHORIZATION') {
    throw apiError(409, 'CONFLICT', `Quote ${q.id} is already waiting for the platform's approval`, { quoteId: q.id, status });
  }
  if (status !== 'PENDING') {
    throw apiError(409, 'CONFLICT', `Quote ${q.id} was already executed (status ${status})`, { quoteId: q.id, status, transactionId: q.transaction_id });
  }
}

interface Submitted {
  type: AgentActionTypeName;
  quote: QuoteRow;
  amount: number;
  currency: string;
  sourceAccountId: string | null;
  destinationAccountId: string | null;
  internalAccountId: string | null;
  verdict: Extract<Evaluation, { allowed: true }>;
}

/** Write the action of an allowed submission (inside the effect's transaction) and audit it. */
async function recordAction(trx: Trx, agent: AgentRow, s: Submitted, now: Now, executed: boolean, transactionId: string): Promise<ActionRow> {
  const customer = await findCustomer(trx, agent.platform_id, agent.customer_id);
  const pending = s.verdict.mode === 'APPROVAL_REQUIRED';
  const row: ActionRow = {
    id: newId('AgentAction'),
    platform_id: agent.platform_id,
    agent_id: agent.id,
    customer_id: agent.customer_id,
    platform_customer_id: customer?.platform_customer_id ?? agent.customer_id,
    type: s.type,
    status: pending ? 'PENDING_APPROVAL' : 'APPROVED',
    quote_id: s.quote.id,
    transaction_id: transactionId,
    executed: executed ? 1 : 0,
    amount: s.amount,
    currency: s.currency,
    source_account_id: s.sourceAccountId,
    destination_account_id: s.destinationAccountId,
    internal_account_id: s.internalAccountId,
    decision: s.verdict.mode,
    decision_reasons: JSON.stringify(s.verdict.reasons),
    rejection_reason: null,
    failure_reason: null,
    decided_by: pending ? null : 'POLICY',
    decided_at: pending ? null : now.at,
    expires_at: pending ? s.quote.expires_at : null,
    created_ms: now.ms,
    created_at: now.at,
    updated_at: now.at,
  };
  await insertAction(trx, row);
  await audit(trx, agent, { actionId: row.id, operation: s.type, decision: s.verdict.mode, reason: s.verdict.reasons.join(','), actor: agent.id, transactionId }, now.at);
  return row;
}

/**
 * Hold a submission for approval: its quote waits (PENDING_AUTHORIZATION), its transaction
 * stays PENDING with the quote's expiry as approval deadline (the APPROVAL_TIMEOUT job of
 * incoming-payments declines it then), and AGENT_ACTION.PENDING_APPROVAL goes out.
 */
async function holdForApproval(trx: Trx, deps: AgentDeps, agent: AgentRow, s: Submitted, now: Now): Promise<ActionRow> {
  const deadline = Number(s.quote.expires_at_ms);
  await updateQuoteStatus(trx, agent.platform_id, s.quote.id, 'PENDING', { status: 'PENDING_AUTHORIZATION', updated_at: now.at });
  await updateTransaction(trx, agent.platform_id, s.quote.transaction_id!, { flow: AGENT_ACTION_FLOW, approval_deadline_ms: deadline, agent_id: agent.id, updated_at: now.at });
  const action = await recordAction(trx, agent, s, now, false, s.quote.transaction_id!);
  await deps.jobs.schedule(trx, {
    platformId: agent.platform_id,
    kind: INCOMING_PAYMENT_JOB,
    payload: { transactionId: s.quote.transaction_id, step: 'APPROVAL_TIMEOUT' },
    runAtMs: deadline,
    at: now.at,
  });
  await emitAction(trx, action, 'AGENT_ACTION.PENDING_APPROVAL', now);
  return action;
}

export async function emitAction(trx: Trx, row: ActionRow, type: (typeof AGENT_ACTION_EVENTS)[number], now: Now): Promise<void> {
  await emitEvent(trx, row.platform_id, now.at, { type, resourceId: row.id, data: await actionView(trx, row, now.ms) });
}

/**
 * POST /agents/me/quotes/{quoteId}/execute: EXECUTE_QUOTES, limits, then AUTO or pending
 * approval. From an EMBEDDED_WALLET source the wallet's signature is checked once the policy
 * allows the action and before its decision takes effect (the platform route's protocol: a
 * call without signature headers answers the 202 challenge and nothing else happens), so an
 * action held for approval was signed at submission and its approval executes it.
 */
export async function executeMyQuote(deps: AgentDeps, auth: AuthContext, now: Now, quoteId: string, h: SignedHeaders = {}): Promise<{ action: AgentAction } | { challenge: SignedRequestChallenge }> {
  const caller = await auditedCaller(deps.store, auth, 'EXECUTE_QUOTE', now);
  await requireMyQuote(deps.store.db, caller, quoteId);
  return auditingDenials(deps.store, now, () =>
    effectTransaction<{ action: AgentAction } | { challenge: SignedRequestChallenge }>(deps.store.db, async (trx) => {
      const agent = await lockedAgent(trx, deps.store, caller);
      const q = await requireMyQuote(trx, agent, quoteId, deps.store.kind === 'postgres');
      const internalAccountId = internalAccountOf(q);
      const subject: Subject = { permission: 'EXECUTE_QUOTES', internalAccountId, amount: Number(q.total_sending), currency: q.sending_currency };
      const verdict = await evaluateOrThrow(trx, agent, 'EXECUTE_QUOTE', subject, now, true);
      assertQuoteOpen(q, now);
      const s: Submitted = {
        type: 'EXECUTE_QUOTE',
        quote: q,
        amount: Number(q.total_sending),
        currency: q.sending_currency,
        sourceAccountId: q.source_account_id,
        destinationAccountId: q.destination_account_id,
        internalAccountId,
        verdict,
      };
      const challenge = await authorizeWalletExecuteIn(trx, auth.platform.id, now, q, h);
      if (challenge) return { challenge };
      if (verdict.mode === 'APPROVAL_REQUIRED') return { action: await actionView(trx, await holdForApproval(trx, deps, agent, s, now), now.ms) };
      const tx = await executeQuoteIn(trx, deps, auth.platform, now, q.id, { agentId: agent.id });
      return { action: await actionView(trx, await recordAction(trx, agent, s, now, true, tx.id), now.ms) };
    // A challenge is not the route's answer: the signed retry repeats the Idempotency-Key.
    }, (r) => ('action' in r ? r.action : undefined)),
  );
}

// ---- Agent operations: transfers ---------------------------------------------------------------

export interface AgentTransferBody {
  source: { accountId: string };
  destination: { accountId: string; paymentRail?: string };
  amount?: number;
  remittanceInformation?: string;
  purposeOfPayment?: string;
}

/** POST /agents/me/transfer-out and /transfer-in: CREATE_TRANSFERS, limits, then AUTO or pending approval. */
export async function createMyTransfer(deps: AgentDeps, auth: AuthContext, now: Now, b: AgentTransferBody, direction: 'IN' | 'OUT'): Promise<AgentAction> {
  const db = deps.store.db;
  const caller = await auditedCaller(deps.store, auth, direction === 'OUT' ? 'TRANSFER_OUT' : 'TRANSFER_IN', now);
  // The accounts first: another customer's (or an unknown) account is 404 whatever the policy.
  const internalId = direction === 'OUT' ? b.source.accountId : b.destination.accountId;
  const externalId = direction === 'OUT' ? b.destination.accountId : b.source.accountId;
  const internal = isIdOf('InternalAccount', internalId) ? await requireInternalAccount(db, caller.platform_id, internalId).catch(() => undefined) : undefined;
  if (!internal || internal.customer_id !== caller.customer_id) throw notFound('REFERENCE_NOT_FOUND', 'Internal account', internalId);
  if (!isIdOf('ExternalAccount', externalId)) throw notFound('REFERENCE_NOT_FOUND', 'External account', externalId);
  await requireMyExternalAccount(db, caller, externalId);
  let amount = b.amount;
  if (amount === undefined && direction === 'OUT') amount = (await balancesOf(db, [internal.id])).get(internal.id)?.available ?? 0;
  const type: AgentActionTypeName = direction === 'OUT' ? 'TRANSFER_OUT' : 'TRANSFER_IN';
  const request: TransferQuoteRequest = {
    source: { sourceType: 'ACCOUNT', accountId: b.source.accountId },
    destination: { destinationType: 'ACCOUNT', accountId: b.destination.accountId, ...(b.destination.paymentRail ? { paymentRail: b.destination.paymentRail } : {}) },
    lockedCurrencySide: 'SENDING',
    ...(amount !== undefined && amount > 0 ? { lockedCurrencyAmount: amount } : {}),
    ...(b.remittanceInformation !== undefined ? { remittanceInformation: b.remittanceInformation } : {}),
    ...(b.purposeOfPayment !== undefined ? { purposeOfPayment: b.purposeOfPayment } : {}),
  } as TransferQuoteRequest;
  const subject: Subject = { permission: 'CREATE_TRANSFERS', internalAccountId: internal.id, ...(amount !== undefined ? { amount, currency: internal.currency } : {}) };
  return auditingDenials(deps.store, now, () => effectTransaction(db, async (trx) => {
    const agent = await lockedAgent(trx, deps.store, caller);
    const verdict = await evaluateOrThrow(trx, agent, type, subject, now, true);
    const quote = await prepareTransfer(trx, deps, auth.platform, now, request, direction, agent.id);
    await insertAgentQuote(trx, { quote_id: quote.id, platform_id: agent.platform_id, agent_id: agent.id });
    const s: Submitted = {
      type,
      quote,
      amount: Number(quote.total_sending),
      currency: quote.sending_currency,
      sourceAccountId: b.source.accountId,
      destinationAccountId: b.destination.accountId,
      internalAccountId: internal.id,
      verdict,
    };
    if (verdict.mode === 'APPROVAL_REQUIRED') return actionView(trx, await holdForApproval(trx, deps, agent, s, now), now.ms);
    const tx = await executeQuoteIn(trx, deps, auth.platform, now, quote.id, { transfer: direction, agentId: agent.id });
    return actionView(trx, await recordAction(trx, agent, s, now, true, tx.id), now.ms);
  }));
}
