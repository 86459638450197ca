import type { Kysely, Transaction } from 'kysely';
import type { AuthContext } from '../../kernel/auth.js';
import type { Store } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { apiError } from '../../kernel/errors.js';
import { newId } from '../../kernel/ids.js';
import { safeEqual } from '../../kernel/secrets.js';
import { findPlatform } from '../../operator/platforms/store.js';
import { type Evaluation, evaluate, type Subject } from './policy.js';
import type { AgentPermissionName } from './schemas.js';
import { type AgentRow, type AuditRow, findAgent, findAgentByTokenHash, insertAudit } from './store.js';
import { policyOf, tokenHash, usageOf } from './service.js';

// AgentAuth: the agent behind an access token, and the policy check, audit and locking every
// agent operation goes through.

type Db = Kysely<DB> | Transaction<DB>;
type Trx = Transaction<DB>;
type Now = { ms: number; at: string };

// ---- AgentAuth ------------------------------------------------------------------------------

/**
 * The AgentAuth resolver (kernel/auth.ts): the live agent whose token hashes to the stored
 * hash (compared in constant time), its platform and customer. An agent context holds no
 * platform permission beyond what the /agents/me routes ask (VIEW, TRANSACT): agent tokens
 * are refused on every other route by the auth mode.
 */
export async function resolveAgentToken(store: Store, accessToken: string): Promise<AuthContext | undefined> {
  if (!accessToken.startsWith('agt_') || accessToken.length > 200) return undefined;
  const hash = tokenHash(accessToken);
  const agent = await findAgentByTokenHash(store.db, hash);
  if (!agent || agent.token_hash === null || !safeEqual(agent.token_hash, hash)) return undefined;
  const platform = await findPlatform(store.db, agent.platform_id);
  if (!platform) return undefined;
  return { scheme: 'agent', platform, tokenId: agent.id, permissions: new Set(['VIEW', 'TRANSACT']), customerId: agent.customer_id };
}

/** The calling agent, read again (its policy and pause count from this request). Paused: 403 unless `evenPaused`. */
/** The caller of an operation the audit trail records: a paused agent's attempt is recorded as DENIED (AGENT_PAUSED). */
export async function auditedCaller(store: Store, auth: AuthContext, operation: string, now: Now): Promise<AgentRow> {
  const row = await callerAgent(store.db, auth, true);
  if (row.is_paused === 1) {
    await audit(store.db, row, { operation, decision: 'DENIED', reason: 'AGENT_PAUSED', actor: row.id }, now.at);
    return callerAgent(store.db, auth);
  }
  return row;
}

export async function callerAgent(db: Db, auth: AuthContext, evenPaused = false): Promise<AgentRow> {
  const row = auth.scheme === 'agent' ? await findAgent(db, auth.platform.id, auth.tokenId) : undefined;
  if (!row) throw apiError(401, 'UNAUTHORIZED', 'Authentication failed', { reason: 'Unknown or revoked agent access token' });
  if (!evenPaused && row.is_paused === 1) {
    throw apiError(403, 'FORBIDDEN', 'The agent is paused: it may not act until the platform resumes it', { reason: 'AGENT_PAUSED', agentId: row.id });
  }
  return row;
}

export async function audit(db: Db, agent: AgentRow, e: { actionId?: string | null; operation: string; decision: string; reason: string; actor: string; transactionId?: string | null }, at: string): Promise<void> {
  const row: AuditRow = {
    id: newId('AgentAudit'),
    platform_id: agent.platform_id,
    agent_id: agent.id,
    action_id: e.actionId ?? null,
    operation: e.operation,
    decision: e.decision,
    reason: e.reason,
    actor: e.actor,
    transaction_id: e.transactionId ?? null,
    created_at: at,
  };
  await insertAudit(db, row);
}

/** A policy denial, thrown inside an effect's transaction (rolled back), audited and answered 403 outside it. */
class PolicyDenied extends Error {
  constructor(readonly agent: AgentRow, readonly operation: string, readonly verdict: Extract<Evaluation, { allowed: false }>) {
    super(verdict.message);
  }
}

/** Evaluate an operation with the agent's current policy and usage (read through `db`); a denial throws PolicyDenied. */
export async function evaluateOrThrow(db: Db, agent: AgentRow, operation: string, subject: Subject, now: Now, moneyMoving: boolean): Promise<Extract<Evaluation, { allowed: true }>> {
  const policy = policyOf(agent);
  const usage = moneyMoving ? await usageOf(db, agent, policy, now.ms) : undefined;
  const verdict = evaluate({ isPaused: agent.is_paused === 1 }, policy, subject, usage);
  if (!verdict.allowed) throw new PolicyDenied(agent, operation, verdict);
  return verdict;
}

/**
 * Run `fn`; a PolicyDenied it throws is recorded in the audit trail (in its own
 * transaction: the refused request wrote nothing else) and answered 403 FORBIDDEN with the
 * rule in details.reason.
 */
export async function auditingDenials<T>(store: Store, now: Now, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (!(err instanceof PolicyDenied)) throw err;
    await audit(store.db, err.agent, { operation: err.operation, decision: 'DENIED', reason: err.verdict.reason, actor: err.agent.id }, now.at);
    throw apiError(403, 'FORBIDDEN', err.verdict.message, { ...err.verdict.details, agentId: err.agent.id });
  }
}

/** A non-money check (quote creation, external accounts): evaluated, a denial audited and answered 403. */
export async function check(store: Store, agent: AgentRow, operation: string, subject: Subject, now: Now): Promise<void> {
  await auditingDenials(store, now, () => evaluateOrThrow(store.db, agent, operation, subject, now, false));
}

/**
 * The agent row locked for a money-moving action (PostgreSQL: FOR UPDATE), so two actions
 * of one agent are evaluated one after the other against the limits; SQLite writes one
 * transaction at a time anyway.
 */
export async function lockedAgent(trx: Trx, store: Store, agent: AgentRow): Promise<AgentRow> {
  const row = await findAgent(trx, agent.platform_id, agent.id, store.kind === 'postgres');
  if (!row) throw apiError(401, 'UNAUTHORIZED', 'Authentication failed', { reason: 'Unknown or revoked agent access token' });
  if (row.is_paused === 1) throw apiError(403, 'FORBIDDEN', 'The agent is paused: it may not act until the platform resumes it', { reason: 'AGENT_PAUSED', agentId: row.id });
  return row;
}

/** A permission-only check of a read (not audited: reads move nothing). */
export function requirePermission(agent: AgentRow, permission: AgentPermissionName): void {
  const verdict = evaluate({ isPaused: agent.is_paused === 1 }, policyOf(agent), { permission });
  if (!verdict.allowed) throw apiError(403, 'FORBIDDEN', verdict.message, { ...verdict.details, agentId: agent.id });
}
