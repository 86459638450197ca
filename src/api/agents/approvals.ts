import { type Kysely, sql, type Transaction } from 'kysely';
import type { DB } from '../../kernel/db/schema.js';
import { ApiError, apiError, notFound } from '../../kernel/errors.js';
import { emitEvent } from '../../kernel/events.js';
import { isIdOf, newId } from '../../kernel/ids.js';
import { type Page, paginate, timeRangeOf } from '../../kernel/pagination.js';
import { type ApprovalFlow, approvePendingPayment, type Decline, registerApprovalFlow, rejectPendingPayment } from '../incoming-payments/service.js';
import { findPlatform } from '../../operator/platforms/store.js';
import { executeQuoteIn } from '../quotes/execute.js';
import { updateQuoteStatus } from '../quotes/store.js';
import { findTransaction, type TransactionRow, updateTransaction } from '../transactions/store.js';
import { transactionView } from '../transactions/views.js';
import { evaluate, type Subject } from './policy.js';
import type { Agent, AgentAction, AgentApprovalsQuery, AgentAuditEntry } from './schemas.js';
import { type ActionRow, actionQuery, auditQuery, type AuditRow, findAction, findActionByTransaction, findAgent, insertAudit, updateAction } from './store.js';
import { requireAgent } from './management.js';
import { emitAction } from './payments.js';
import { AGENT_ACTION_FLOW, type AgentDeps, SYSTEM, actionView, policyOf, usageOf } from './service.js';

// The platform's approvals of agent actions (BasicAuth), the audit log, and the approval flow
// of agents' pending transactions (registered with the incoming-payments area below).

type Db = Kysely<DB> | Transaction<DB>;
type Trx = Transaction<DB>;
type Now = { ms: number; at: string };

// ---- Approvals (BasicAuth) ----------------------------------------------------------------------

export async function listApprovals(db: Kysely<DB>, platformId: string, q: AgentApprovalsQuery, nowMs: number): Promise<Page<AgentAction>> {
  const range = timeRangeOf({ createdAfter: q.startDate, createdBefore: q.endDate });
  const base = actionQuery(db, platformId, { agentId: q.agentId, customerId: q.customerId, status: 'PENDING_APPROVAL', ...range });
  const page = await paginate<ActionRow, ActionRow>(base as never, 'id', { limit: q.limit, cursor: q.cursor, order: q.sortOrder }, (r) => r);
  return { ...page, data: await Promise.all(page.data.map((r) => actionView(db, r, nowMs))) };
}

async function requireAgentAction(db: Db, platformId: string, agentId: string, actionId: string): Promise<ActionRow> {
  const row = isIdOf('AgentAction', actionId) ? await findAction(db, platformId, actionId) : undefined;
  if (!row || row.agent_id !== agentId) throw notFound('REFERENCE_NOT_FOUND', 'Agent action', actionId);
  return row;
}

/**
 * POST /agents/{agentId}/actions/{actionId}/approve|reject: the same decision as POST
 * /transactions/{id}/approve|reject on the action's transaction. Not pending: 409.
 */
export async function decideAction(deps: AgentDeps, platformId: string, agentId: string, actionId: string, decision: { approve: boolean; reason?: string | undefined }, now: Now, actor: string): Promise<AgentAction> {
  const db = deps.store.db;
  const action = await requireAgentAction(db, platformId, agentId, actionId);
  if (action.status !== 'PENDING_APPROVAL') {
    throw apiError(409, 'TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL', `Agent action ${action.id} is not pending approval (status ${action.status})`, { actionId: action.id, status: action.status });
  }
  try {
    if (decision.approve) await approvePendingPayment(deps, platformId, action.transaction_id, undefined, now, actor);
    else await rejectPendingPayment(deps, platformId, action.transaction_id, decision.reason, now, actor);
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 409) throw err;
    const after = (await findAction(db, platformId, actionId))!;
    throw apiError(409, 'TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL', `Agent action ${action.id} can no longer be decided (status ${after.status}${after.failure_reason ? `, ${after.failure_reason}` : ''})`, {
      actionId: action.id,
      status: after.status,
      ...(after.failure_reason ? { failureReason: after.failure_reason } : {}),
    });
  }
  return actionView(db, (await findAction(db, platformId, actionId))!, now.ms);
}

export async function listAudit(db: Kysely<DB>, platformId: string, agentId: string, q: { limit?: number | undefined; cursor?: string | undefined }) {
  await requireAgent(db, platformId, agentId);
  return paginate<AuditRow, AgentAuditEntry>(auditQuery(db, platformId, agentId) as never, 'id', { limit: q.limit, cursor: q.cursor }, (r) => ({
    id: r.id,
    agentId: r.agent_id,
    ...(r.action_id !== null ? { actionId: r.action_id } : {}),
    operation: r.operation,
    decision: r.decision as AgentAuditEntry['decision'],
    reason: r.reason,
    actor: r.actor,
    ...(r.transaction_id !== null ? { transactionId: r.transaction_id } : {}),
    createdAt: r.created_at,
  }));
}

// ---- The approval flow of agents' pending transactions ------------------------------------------

async function lockedAction(trx: Trx, row: TransactionRow): Promise<ActionRow> {
  const action = await findActionByTransaction(trx, row.platform_id, row.id);
  if (!action) throw new Error(`transaction ${row.id} is an agent action's but no action names it`);
  return action;
}

/** Nothing moved: the transaction ends without starting (declined, expired, or refused at approval). */
async function endUnstarted(trx: Trx, row: TransactionRow, how: 'REJECTED' | 'EXPIRED' | 'FAILED', now: Now): Promise<TransactionRow> {
  const outgoing = row.type === 'OUTGOING';
  const status = how === 'EXPIRED' ? 'EXPIRED' : outgoing || how === 'FAILED' ? 'FAILED' : 'REJECTED';
  const failure = how === 'EXPIRED' ? (outgoing ? null : 'QUOTE_EXPIRED') : how === 'REJECTED' ? 'COMPLIANCE_REJECTED' : 'QUOTE_EXECUTION_FAILED';
  await updateTransaction(trx, row.platform_id, row.id, { status, failure_reason: failure, updated_at: now.at });
  if (row.quote_id) {
    await updateQuoteStatus(trx, row.platform_id, row.quote_id, 'PENDING_AUTHORIZATION', { status: how === 'EXPIRED' ? 'EXPIRED' : 'FAILED', updated_at: now.at });
    await updateQuoteStatus(trx, row.platform_id, row.quote_id, 'PENDING', { status: how === 'EXPIRED' ? 'EXPIRED' : 'FAILED', updated_at: now.at });
  }
  const after = (await findTransaction(trx, row.platform_id, row.id))!;
  // An outgoing payment announced itself PENDING: its end is announced too.
  if (outgoing) await emitEvent(trx, row.platform_id, now.at, { type: `OUTGOING_PAYMENT.${status}`, resourceId: row.id, data: transactionView(after) });
  return after;
}

async function auditDecision(trx: Trx, action: ActionRow, decision: string, reason: string, actor: string, transactionId: string | null, at: string): Promise<void> {
  await insertAudit(trx, {
    id: newId('AgentAudit'),
    platform_id: action.platform_id,
    agent_id: action.agent_id,
    action_id: action.id,
    operation: `DECIDE_${action.type}`,
    decision,
    reason,
    actor,
    transaction_id: transactionId,
    created_at: at,
  });
}

async function failAction(trx: Trx, row: TransactionRow, action: ActionRow, failure: string, detail: string, actor: string, now: Now, executed = false): Promise<TransactionRow> {
  const tx = executed ? (await findTransaction(trx, row.platform_id, row.id))! : await endUnstarted(trx, row, 'FAILED', now);
  const set = { status: 'FAILED', failure_reason: failure, decided_by: actor, decided_at: now.at, updated_at: now.at, executed: executed ? 1 : 0 };
  await updateAction(trx, action.platform_id, action.id, set);
  await auditDecision(trx, action, 'FAILED', `${failure}: ${detail}`, actor, row.id, now.at);
  await emitAction(trx, { ...action, ...set }, 'AGENT_ACTION.FAILED', now);
  return tx;
}

const agentActionFlow: ApprovalFlow = {
  async approve(trx, deps, row, _info, now, opts) {
    const actor = opts?.actor ?? 'PLATFORM';
    const action = await lockedAction(trx, row);
    const platform = await findPlatform(trx, row.platform_id);
    const agent = await findAgent(trx, row.platform_id, action.agent_id);
    if (!platform || !agent) return failAction(trx, row, action, 'POLICY_DENIED', 'the agent was deleted', actor, now);
    // The latest policy and usage decide (this action's own reservation aside).
    const policy = policyOf(agent);
    const subject: Subject = {
      permission: action.type === 'EXECUTE_QUOTE' ? 'EXECUTE_QUOTES' : 'CREATE_TRANSFERS',
      internalAccountId: action.internal_account_id,
      amount: Number(action.amount),
      currency: action.currency,
    };
    const verdict = evaluate({ isPaused: agent.is_paused === 1 }, policy, subject, await usageOf(trx, agent, policy, now.ms, action.id));
    if (!verdict.allowed) return failAction(trx, row, action, 'POLICY_DENIED', verdict.reason, actor, now);
    // No wallet signature here: an action whose source is an embedded wallet was held only
    // after its signature verified at submission (executeMyQuote); the approval is the
    // platform's decision on that signed request.
    await updateQuoteStatus(trx, row.platform_id, action.quote_id, 'PENDING_AUTHORIZATION', { status: 'PENDING', updated_at: now.at });
    const transfer = action.type === 'TRANSFER_OUT' ? 'OUT' : action.type === 'TRANSFER_IN' ? 'IN' : undefined;
    await sql`savepoint agent_execute`.execute(trx);
    let tx: TransactionRow;
    try {
      tx = await executeQuoteIn(trx, { store: deps.store, jobs: deps.jobs }, platform, now, action.quote_id, { agentId: agent.id, ...(transfer ? { transfer } : {}) });
      await sql`release savepoint agent_execute`.execute(trx);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      await sql`rollback to savepoint agent_execute`.execute(trx);
      const reason = (err.details as { reason?: string } | undefined)?.reason === 'QUOTE_EXPIRED' ? 'QUOTE_EXPIRED' : 'EXECUTION_FAILED';
      return failAction(trx, row, action, reason, `${err.code}: ${err.message}`, actor, now);
    }
    const set = { status: 'APPROVED', executed: 1, decided_by: actor, decided_at: now.at, updated_at: now.at };
    await updateAction(trx, action.platform_id, action.id, set);
    await auditDecision(trx, action, 'APPROVED', `approved; transaction ${tx.status}`, actor, tx.id, now.at);
    await emitAction(trx, { ...action, ...set }, 'AGENT_ACTION.APPROVED', now);
    return (await findTransaction(trx, row.platform_id, row.id)) ?? tx;
  },

  async decline(trx, _deps, row, decline: Decline, now) {
    const action = await lockedAction(trx, row);
    if (decline.kind === 'TIMED_OUT') {
      const tx = await endUnstarted(trx, row, 'EXPIRED', now);
      const set = { status: 'FAILED', failure_reason: 'APPROVAL_EXPIRED', decided_by: SYSTEM, decided_at: now.at, updated_at: now.at };
      await updateAction(trx, action.platform_id, action.id, set);
      await auditDecision(trx, action, 'EXPIRED', 'no decision before the approval deadline', SYSTEM, row.id, now.at);
      await emitAction(trx, { ...action, ...set }, 'AGENT_ACTION.FAILED', now);
      return tx;
    }
    const actor = decline.actor ?? 'PLATFORM';
    const tx = await endUnstarted(trx, row, 'REJECTED', now);
    const set = { status: 'REJECTED', rejection_reason: decline.reason ?? null, decided_by: actor, decided_at: now.at, updated_at: now.at };
    await updateAction(trx, action.platform_id, action.id, set);
    await auditDecision(trx, action, 'REJECTED', decline.reason ?? 'rejected', actor, row.id, now.at);
    await emitAction(trx, { ...action, ...set }, 'AGENT_ACTION.REJECTED', now);
    return tx;
  },
};

registerApprovalFlow(AGENT_ACTION_FLOW, agentActionFlow);
