import { createHash, randomBytes, randomInt } from 'node:crypto';
import { type Kysely, sql, type Transaction } from 'kysely';
import type { AuthContext } from '../../kernel/auth.js';
import { type Clock, iso, platformNowMs } from '../../kernel/clock.js';
import { findCurrency } from '../../kernel/currencies.js';
import type { Store } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { ApiError, apiError, type FieldError, invalidInput, notFound } from '../../kernel/errors.js';
import { missingReference, referencedBy } from '../../kernel/references.js';
import { emitEvent } from '../../kernel/events.js';
import { effectTransaction } from '../../kernel/idempotency.js';
import { isIdOf, newId } from '../../kernel/ids.js';
import type { JobQueue } from '../../kernel/jobs.js';
import { type Page, paginate, timeRangeOf } from '../../kernel/pagination.js';
import { safeEqual } from '../../kernel/secrets.js';
import { checkSchema } from '../../kernel/validation.js';
import { hasRate } from '../../sandbox/fx.js';
import { findCustomer } from '../customers/store.js';
import type { SignedRequestChallenge } from '../embedded-wallets/schemas.js';
import { authorizeWalletExecuteIn, type SignedHeaders } from '../embedded-wallets/service.js';
import { createExternalAccount, deleteExternalAccount, getExternalAccount, listExternalAccounts, rejectCreateBody, requireExternalAccount } from '../external-accounts/service.js';
import { type ExternalAccount, ExternalAccountCreateRequest } from '../external-accounts/schemas.js';
import { INCOMING_PAYMENT_JOB, type ApprovalFlow, approvePendingPayment, type Decline, registerApprovalFlow, rejectPendingPayment } from '../incoming-payments/service.js';
import { listCustomerAccounts, requireInternalAccount } from '../internal-accounts/service.js';
import type { InternalAccount } from '../internal-accounts/schemas.js';
import { balancesOf } from '../ledger/service.js';
import { findPlatform, type PlatformRow } from '../platforms/store.js';
import type { Quote, QuoteRequest } from '../quotes/schemas.js';
import { createQuoteIn } from '../quotes/service.js';
import { executeQuoteIn } from '../quotes/execute.js';
import { prepareTransfer, transferIn, type TransferQuoteRequest } from '../quotes/transfers.js';
import { quoteView, requireQuote } from '../quotes/views.js';
import { findQuote, type QuoteRow, updateQuoteStatus } from '../quotes/store.js';
import type { AnyTransaction, ListedTransaction, TransactionListQuery } from '../transactions/schemas.js';
import { listTransactions, requireTransaction } from '../transactions/service.js';
import { findTransaction, type TransactionRow, updateTransaction } from '../transactions/store.js';
import { transactionView } from '../transactions/views.js';
import { convertAmount, type Evaluation, evaluate, periodsOf, type Subject, type Usage } from './policy.js';
import type {
  Agent,
  AgentAction,
  AgentActionStatusName,
  AgentActionTypeName,
  AgentApprovalsQuery,
  AgentAuditEntry,
  AgentCreateRequest,
  AgentListQuery,
  AgentPermissionName,
  AgentPolicy,
  AgentPolicyUpdateRequest,
} from './schemas.js';
import {
  type ActionRow,
  actionQuery,
  type AgentRow,
  agentQuery,
  auditQuery,
  type AuditRow,
  countedActionsSince,
  type DeviceCodeRow,
  findAction,
  findActionByTransaction,
  findAgent,
  findAgentByTokenHash,
  findAgentQuote,
  findDeviceCode,
  insertAction,
  insertAgent,
  insertAgentQuote,
  insertAudit,
  insertDeviceCode,
  invalidateDeviceCodes,
  markRedeemed,
  updateAction,
  updateAgent,
} from './store.js';

// Agents (docs/agents.md): the platform's management of its customers' agents, the
// device-code installation, AgentAuth, and the agent's own operations, each evaluated
// against its policy. Money-moving actions become AgentActions: executed at once (AUTO),
// or held as a PENDING transaction (flow AGENT_ACTION, with an approval deadline) that the
// platform approves or rejects — through /agents/{id}/actions/{actionId}/approve|reject or
// POST /transactions/{id}/approve|reject, which both reach the approval flow registered
// below. The quotes, transfers, transactions and accounts are those areas' services.

type Db = Kysely<DB> | Transaction<DB>;
type Trx = Transaction<DB>;
type Now = { ms: number; at: string };

export interface AgentDeps {
  store: Store;
  jobs: JobQueue;
  clock: Clock;
}

/** How long a device code can be redeemed (sandbox clock). */
export const DEVICE_CODE_TTL_MS = 24 * 60 * 60_000;
/** The approval flow of agents' pending transactions (incoming-payments' registry). */
export const AGENT_ACTION_FLOW = 'AGENT_ACTION';
export const AGENT_ACTION_EVENTS = ['AGENT_ACTION.PENDING_APPROVAL', 'AGENT_ACTION.APPROVED', 'AGENT_ACTION.REJECTED', 'AGENT_ACTION.FAILED'] as const;
/** Who decided when nobody did: the approval window ended. */
const SYSTEM = 'SYSTEM';

const CODE_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';

function newDeviceCode(): string {
  const group = () => Array.from({ length: 4 }, () => CODE_ALPHABET[randomInt(CODE_ALPHABET.length)]).join('');
  return `AGENT-${group()}-${group()}-${group()}`;
}

/** SHA-256 hex: the token is 256 random bits, so its hash can be its lookup key. */
function tokenHash(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

function policyOf(row: AgentRow): AgentPolicy {
  return JSON.parse(row.policy) as AgentPolicy;
}

// ---- Views ------------------------------------------------------------------------------------

async function usageOf(db: Db, row: AgentRow, policy: AgentPolicy, nowMs: number, exceptActionId?: string): Promise<Usage> {
  const p = periodsOf(nowMs);
  const rows = await actionsSince(db, row, p.monthStartMs, exceptActionId);
  let dailyCount = 0;
  let dailySpend = 0;
  let monthlySpend = 0;
  for (const r of rows) {
    const amount = convertAmount(Number(r.amount), r.currency, policy.spendingLimits.currency);
    monthlySpend += amount;
    if (Number(r.created_ms) >= p.dayStartMs) {
      dailyCount += 1;
      dailySpend += amount;
    }
  }
  return { dailyCount, dailySpend, monthlySpend };
}

async function actionsSince(db: Db, row: AgentRow, sinceMs: number, exceptId?: string) {
  return countedActionsSince(db, row.platform_id, row.id, sinceMs, exceptId);
}

export async function agentView(db: Db, row: AgentRow, nowMs: number): Promise<Agent> {
  const policy = policyOf(row);
  const u = await usageOf(db, row, policy, nowMs);
  const p = periodsOf(nowMs);
  return {
    id: row.id,
    name: row.name,
    customerId: row.customer_id,
    isPaused: row.is_paused === 1,
    isConnected: row.is_connected === 1,
    policy,
    usage: { dailyTransactionCount: u.dailyCount, dailySpend: u.dailySpend, dailyResetDate: p.nextDay, monthlySpend: u.monthlySpend, monthlyResetMonth: p.nextMonth },
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function deviceCodeView(row: DeviceCodeRow) {
  return { code: row.code, agentId: row.agent_id, expiresAt: row.expires_at, redeemed: row.redeemed_at !== null };
}

export async function actionView(db: Db, row: ActionRow, nowMs: number): Promise<AgentAction> {
  const v: AgentAction = {
    id: row.id,
    agentId: row.agent_id,
    customerId: row.customer_id,
    platformCustomerId: row.platform_customer_id,
    status: row.status as AgentActionStatusName,
    type: row.type as AgentActionTypeName,
    policyDecision: { executionMode: row.decision as 'AUTO' | 'APPROVAL_REQUIRED', reasons: JSON.parse(row.decision_reasons) as string[] },
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
  if (row.type === 'EXECUTE_QUOTE') {
    const quote = await findQuote(db, row.platform_id, row.quote_id);
    if (quote) v.quote = quoteView(quote, nowMs);
  } else {
    v.transferDetails = { amount: Number(row.amount), currency: row.currency, sourceAccountId: row.source_account_id ?? '', destinationAccountId: row.destination_account_id ?? '' };
  }
  if (row.executed === 1) {
    const tx = await findTransaction(db, row.platform_id, row.transaction_id);
    if (tx) v.transaction = transactionView(tx, nowMs);
  }
  if (row.rejection_reason !== null) v.rejectionReason = row.rejection_reason;
  if (row.failure_reason !== null) v.failureReason = row.failure_reason;
  if (row.decided_by !== null) v.decidedBy = row.decided_by;
  if (row.decided_at !== null) v.decidedAt = row.decided_at;
  if (row.expires_at !== null) v.expiresAt = row.expires_at;
  return v;
}

// ---- Policy input checks ---------------------------------------------------------------------

/** What the schema cannot check: known currencies, and accounts that are the customer's internal accounts. */
async function policyErrors(db: Db, platformId: string, customerId: string, policy: Partial<AgentPolicy>, base: string): Promise<FieldError[]> {
  const errors: FieldError[] = [];
  const currency = (field: string, code: string | undefined) => {
    if (code !== undefined && (!findCurrency(code) || !hasRate(code))) errors.push({ field, constraint: { format: 'iso4217' }, message: 'must be a currency code the service prices' });
  };
  currency(`${base}spendingLimits.currency`, policy.spendingLimits?.currency);
  currency(`${base}approvalThresholds.currency`, policy.approvalThresholds?.currency);
  const ids: Array<[string, string]> = [];
  (policy.accountRestrictions?.allowedAccountIds ?? []).forEach((id, i) => ids.push([`${base}accountRestrictions.allowedAccountIds.${i}`, id]));
  (policy.accountRestrictions?.accountRules ?? []).forEach((r, i) => ids.push([`${base}accountRestrictions.accountRules.${i}.accountId`, r.accountId]));
  for (const [field, id] of ids) {
    const row = isIdOf('InternalAccount', id) ? await requireInternalAccount(db, platformId, id).catch(() => undefined) : undefined;
    if (!row || row.customer_id !== customerId) errors.push({ field, message: 'must be an internal account of the agent’s customer' });
  }
  return errors;
}

// ---- Management (BasicAuth) -------------------------------------------------------------------

async function requireAgent(db: Db, platformId: string, id: string, lock = false): Promise<AgentRow> {
  const row = isIdOf('Agent', id) ? await findAgent(db, platformId, id, lock) : undefined;
  if (!row) throw notFound('REFERENCE_NOT_FOUND', 'Agent', id);
  return row;
}

async function issueDeviceCode(trx: Db, agent: AgentRow, now: Now): Promise<DeviceCodeRow> {
  const expiresMs = now.ms + DEVICE_CODE_TTL_MS;
  const row: DeviceCodeRow = {
    code: newDeviceCode(),
    platform_id: agent.platform_id,
    agent_id: agent.id,
    expires_at: iso(expiresMs),
    expires_at_ms: expiresMs,
    redeemed_at: null,
    invalidated_at: null,
    created_at: now.at,
  };
  await insertDeviceCode(trx, row);
  return row;
}

/** POST /agents: the agent and its first device code. */
export async function createAgent(store: Store, platform: PlatformRow, now: Now, body: AgentCreateRequest) {
  const customer = isIdOf('Customer', body.customerId) ? await findCustomer(store.db, platform.id, body.customerId) : undefined;
  if (!customer || customer.is_deleted === 1) throw missingReference('USER_NOT_FOUND', 'Customer', body.customerId, 'customerId', customer?.is_deleted === 1);
  const errors = await policyErrors(store.db, platform.id, customer.id, body.policy, 'policy.');
  if (errors.length > 0) throw invalidInput(errors);
  return store.db.transaction().execute(async (trx) => {
    const row: AgentRow = {
      id: newId('Agent'),
      platform_id: platform.id,
      customer_id: customer.id,
      name: body.name,
      is_paused: 0,
      is_connected: 0,
      is_deleted: 0,
      policy: JSON.stringify(body.policy),
      token_hash: null,
      created_at: now.at,
      updated_at: now.at,
    };
    await insertAgent(trx, row);
    const code = await issueDeviceCode(trx, row, now);
    return { agent: await agentView(trx, row, now.ms), deviceCode: deviceCodeView(code) };
  });
}

export async function listAgents(db: Kysely<DB>, platformId: string, q: AgentListQuery, nowMs: number): Promise<Page<Agent>> {
  const range = timeRangeOf(q);
  const page = await paginate<AgentRow, AgentRow>(agentQuery(db, platformId, { ...q, ...range }) as never, 'id', { limit: q.limit, cursor: q.cursor }, (r) => r);
  return { ...page, data: await Promise.all(page.data.map((r) => agentView(db, r, nowMs))) };
}

export async function getAgent(db: Kysely<DB>, platformId: string, id: string, nowMs: number): Promise<Agent> {
  return agentView(db, await requireAgent(db, platformId, id), nowMs);
}

/** PATCH /agents/{id}: name, pause and resume (pausing refuses the agent's next request). */
export async function patchAgent(store: Store, platformId: string, id: string, now: Now, body: { name?: string | undefined; isPaused?: boolean | undefined }): Promise<Agent> {
  return store.db.transaction().execute(async (trx) => {
    const row = await requireAgent(trx, platformId, id, store.kind === 'postgres');
    const set = { updated_at: now.at, ...(body.name !== undefined ? { name: body.name } : {}), ...(body.isPaused !== undefined ? { is_paused: body.isPaused ? 1 : 0 } : {}) };
    await updateAgent(trx, platformId, id, set);
    return agentView(trx, { ...row, ...set }, now.ms);
  });
}

/** DELETE /agents/{id}: its token stops working at once; its pending actions can no longer be approved (they fail). */
export async function deleteAgent(store: Store, platformId: string, id: string, now: Now): Promise<void> {
  await store.db.transaction().execute(async (trx) => {
    await requireAgent(trx, platformId, id, store.kind === 'postgres');
    await updateAgent(trx, platformId, id, { is_deleted: 1, token_hash: null, updated_at: now.at });
    await invalidateDeviceCodes(trx, platformId, id, now.at);
  });
}

/** PATCH /agents/{id}/policy: only the fields given change; spendingLimits merge field by field. */
export async function patchPolicy(store: Store, platformId: string, id: string, now: Now, body: AgentPolicyUpdateRequest): Promise<Agent> {
  const row = await requireAgent(store.db, platformId, id);
  const errors = await policyErrors(store.db, platformId, row.customer_id, body as Partial<AgentPolicy>, '');
  if (errors.length > 0) throw invalidInput(errors);
  return store.db.transaction().execute(async (trx) => {
    const locked = await requireAgent(trx, platformId, id, store.kind === 'postgres');
    const current = policyOf(locked);
    const next: AgentPolicy = {
      ...current,
      ...(body.permissions !== undefined ? { permissions: body.permissions } : {}),
      ...(body.defaultExecutionMode !== undefined ? { defaultExecutionMode: body.defaultExecutionMode } : {}),
      ...(body.accountRestrictions !== undefined ? { accountRestrictions: body.accountRestrictions } : {}),
      ...(body.approvalThresholds !== undefined ? { approvalThresholds: body.approvalThresholds } : {}),
    };
    if (body.spendingLimits !== undefined) {
      const limits = { ...current.spendingLimits };
      for (const [k, v] of Object.entries(body.spendingLimits)) if (v !== undefined) (limits as Record<string, unknown>)[k] = v;
      next.spendingLimits = limits;
    }
    const set = { policy: JSON.stringify(next), updated_at: now.at };
    await updateAgent(trx, platformId, id, set);
    return agentView(trx, { ...locked, ...set }, now.ms);
  });
}

/** POST /agents/{id}/device-codes: a new code; the unredeemed ones before it stop working. A connected agent: 409. */
export async function regenerateDeviceCode(store: Store, platformId: string, id: string, now: Now) {
  return store.db.transaction().execute(async (trx) => {
    const row = await requireAgent(trx, platformId, id, store.kind === 'postgres');
    if (row.is_connected === 1) {
      throw apiError(409, 'CONFLICT', `Agent ${row.id} is already connected; delete it and create a new one to install again`, { agentId: row.id });
    }
    await invalidateDeviceCodes(trx, platformId, id, now.at);
    return deviceCodeView(await issueDeviceCode(trx, row, now));
  });
}

function normalCode(code: string): string {
  return code.trim().toUpperCase();
}

function codeStatus(row: DeviceCodeRow, nowMs: number): 'PENDING' | 'REDEEMED' | 'EXPIRED' {
  if (row.redeemed_at !== null) return 'REDEEMED';
  if (row.invalidated_at !== null || nowMs >= Number(row.expires_at_ms)) return 'EXPIRED';
  return 'PENDING';
}

/** GET /agents/device-codes/{code}/status: the platform polls for the installation. */
export async function deviceCodeStatus(db: Kysely<DB>, platformId: string, code: string, nowMs: number) {
  const row = await findDeviceCode(db, normalCode(code));
  if (!row || row.platform_id !== platformId || !(await findAgent(db, platformId, row.agent_id))) throw notFound('REFERENCE_NOT_FOUND', 'Device code', code);
  return { code: row.code, redeemed: row.redeemed_at !== null, status: codeStatus(row, nowMs), agentId: row.agent_id, expiresAt: row.expires_at };
}

/**
 * POST /agents/device-codes/{code}/redeem (no credentials: the code is the proof). Returns
 * the access token once; only its hash is kept. Redeemed, expired or replaced: 400.
 */
export async function redeemDeviceCode(store: Store, clock: Clock, code: string) {
  return store.db.transaction().execute(async (trx) => {
    const row = await findDeviceCode(trx, normalCode(code), store.kind === 'postgres');
    const platform = row ? await findPlatform(trx, row.platform_id) : undefined;
    const agent = row && platform ? await findAgent(trx, platform.id, row.agent_id, store.kind === 'postgres') : undefined;
    if (!row || !platform || !agent) throw notFound('REFERENCE_NOT_FOUND', 'Device code', code);
    const ms = platformNowMs(clock, Number(platform.clock_offset_ms));
    const status = codeStatus(row, ms);
    if (status === 'REDEEMED') throw apiError(400, 'INVALID_INPUT', `Device code ${row.code} was already redeemed`, { reason: 'DEVICE_CODE_ALREADY_REDEEMED', code: row.code });
    if (status === 'EXPIRED') {
      throw apiError(400, 'INVALID_INPUT', `Device code ${row.code} expired${row.invalidated_at !== null ? ' (a newer code replaced it)' : ` at ${row.expires_at}`}`, {
        reason: 'DEVICE_CODE_EXPIRED',
        code: row.code,
        expiresAt: row.expires_at,
      });
    }
    if (!(await markRedeemed(trx, row.code, iso(ms)))) throw apiError(400, 'INVALID_INPUT', `Device code ${row.code} was already redeemed`, { reason: 'DEVICE_CODE_ALREADY_REDEEMED', code: row.code });
    const accessToken = `agt_${randomBytes(32).toString('base64url')}`;
    await updateAgent(trx, platform.id, agent.id, { token_hash: tokenHash(accessToken), is_connected: 1, updated_at: iso(ms) });
    return { agentId: agent.id, agentName: agent.name, accessToken, policy: policyOf(agent) };
  });
}

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
async function auditedCaller(store: Store, auth: AuthContext, operation: string, now: Now): Promise<AgentRow> {
  const row = await callerAgent(store.db, auth, true);
  if (row.is_paused === 1) {
    await audit(store.db, row, { operation, decision: 'DENIED', reason: 'AGENT_PAUSED', actor: row.id }, now.at);
    return callerAgent(store.db, auth);
  }
  return row;
}

async function callerAgent(db: Db, auth: AuthContext, evenPaused = false): Promise<AgentRow> {
  const row = auth.scheme === 'agent' ? await findAgent(db, auth.platform.id, auth.tokenId) : undefined;
  if (!row) throw apiError(401, 'UNAUTHORIZED', 'Authentication failed', { reason: 'Unknown or revoked agent access token' });
  if (!evenPaused && row.is_paused === 1) {
    throw apiError(403, 'FORBIDDEN', 'The agent is paused: it may not act until the platform resumes it', { reason: 'AGENT_PAUSED', agentId: row.id });
  }
  return row;
}

async function audit(db: Db, agent: AgentRow, e: { actionId?: string | null; operation: string; decision: string; reason: string; actor: string; transactionId?: string | null }, at: string): Promise<void> {
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
async function evaluateOrThrow(db: Db, agent: AgentRow, operation: string, subject: Subject, now: Now, moneyMoving: boolean): Promise<Extract<Evaluation, { allowed: true }>> {
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
async function auditingDenials<T>(store: Store, now: Now, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (!(err instanceof PolicyDenied)) throw err;
    await audit(store.db, err.agent, { operation: err.operation, decision: 'DENIED', reason: err.verdict.reason, actor: err.agent.id }, now.at);
    throw apiError(403, 'FORBIDDEN', err.verdict.message, { ...err.verdict.details, agentId: err.agent.id });
  }
}

/** A non-money check (quote creation, external accounts): evaluated, a denial audited and answered 403. */
async function check(store: Store, agent: AgentRow, operation: string, subject: Subject, now: Now): Promise<void> {
  await auditingDenials(store, now, () => evaluateOrThrow(store.db, agent, operation, subject, now, false));
}

/**
 * The agent row locked for a money-moving action (PostgreSQL: FOR UPDATE), so two actions
 * of one agent are evaluated one after the other against the limits; SQLite writes one
 * transaction at a time anyway.
 */
async function lockedAgent(trx: Trx, store: Store, agent: AgentRow): Promise<AgentRow> {
  const row = await findAgent(trx, agent.platform_id, agent.id, store.kind === 'postgres');
  if (!row) throw apiError(401, 'UNAUTHORIZED', 'Authentication failed', { reason: 'Unknown or revoked agent access token' });
  if (row.is_paused === 1) throw apiError(403, 'FORBIDDEN', 'The agent is paused: it may not act until the platform resumes it', { reason: 'AGENT_PAUSED', agentId: row.id });
  return row;
}

/** A permission-only check of a read (not audited: reads move nothing). */
function requirePermission(agent: AgentRow, permission: AgentPermissionName): void {
  const verdict = evaluate({ isPaused: agent.is_paused === 1 }, policyOf(agent), { permission });
  if (!verdict.allowed) throw apiError(403, 'FORBIDDEN', verdict.message, { ...verdict.details, agentId: agent.id });
}

// ---- Agent operations: reads -------------------------------------------------------------------

export async function getMe(db: Kysely<DB>, auth: AuthContext, nowMs: number): Promise<Agent> {
  return agentView(db, await callerAgent(db, auth, true), nowMs);
}

export type AgentTransactionQuery = Omit<TransactionListQuery, 'customerId' | 'platformCustomerId' | 'createdAfter' | 'createdBefore'>;

export async function listMyTransactions(db: Kysely<DB>, auth: AuthContext, q: AgentTransactionQuery, nowMs: number): Promise<Page<ListedTransaction>> {
  const agent = await callerAgent(db, auth);
  requirePermission(agent, 'VIEW_TRANSACTIONS');
  return listTransactions(db, agent.platform_id, { ...q, customerId: agent.customer_id }, nowMs);
}

export async function getMyTransaction(db: Kysely<DB>, auth: AuthContext, id: string, nowMs: number): Promise<AnyTransaction> {
  const agent = await callerAgent(db, auth);
  requirePermission(agent, 'VIEW_TRANSACTIONS');
  const row = await requireTransaction(db, agent.platform_id, id);
  if (row.customer_id !== agent.customer_id) throw notFound('TRANSACTION_NOT_FOUND', 'Transaction', id);
  return transactionView(row, nowMs);
}

/** The customer's internal accounts the agent may act on (allowedAccountIds, when set). */
export async function listMyInternalAccounts(
  db: Kysely<DB>,
  auth: AuthContext,
  q: { currency?: string | undefined; type?: string | undefined; limit?: number | undefined; cursor?: string | undefined },
): Promise<Page<InternalAccount>> {
  const agent = await callerAgent(db, auth);
  requirePermission(agent, 'VIEW_TRANSACTIONS');
  const page = await listCustomerAccounts(db, agent.platform_id, { customerId: agent.customer_id, currency: q.currency, type: q.type }, { limit: 100, cursor: undefined });
  const allowed = policyOf(agent).accountRestrictions?.allowedAccountIds;
  let data = Array.isArray(allowed) ? page.data.filter((a) => allowed.includes(a.id)) : page.data;
  // A customer holds a handful of accounts: one page, filtered, then cut to the limit.
  if (q.cursor !== undefined) data = data.filter((a) => a.id < Buffer.from(q.cursor!, 'base64url').toString('utf8'));
  const limit = q.limit ?? 20;
  const out: Page<InternalAccount> = { data: data.slice(0, limit), hasMore: data.length > limit, totalCount: data.length };
  if (out.hasMore) out.nextCursor = Buffer.from(out.data[out.data.length - 1]!.id, 'utf8').toString('base64url');
  return out;
}

async function requireMyExternalAccount(db: Db, agent: AgentRow, id: string) {
  const row = await requireExternalAccount(db, agent.platform_id, id, 'customer');
  if (row.customer_id !== agent.customer_id) throw notFound('REFERENCE_NOT_FOUND', 'External account', id);
  return row;
}

export async function listMyExternalAccounts(db: Kysely<DB>, auth: AuthContext, q: { currency?: string | undefined; limit?: number | undefined; cursor?: string | undefined }): Promise<Page<ExternalAccount>> {
  const agent = await callerAgent(db, auth);
  requirePermission(agent, 'MANAGE_EXTERNAL_ACCOUNTS');
  return listExternalAccounts(db, agent.platform_id, { owner: 'customer', customerId: agent.customer_id, currency: q.currency }, { limit: q.limit, cursor: q.cursor });
}

export async function getMyExternalAccount(db: Kysely<DB>, auth: AuthContext, id: string): Promise<ExternalAccount> {
  const agent = await callerAgent(db, auth);
  requirePermission(agent, 'MANAGE_EXTERNAL_ACCOUNTS');
  await requireMyExternalAccount(db, agent, id);
  return getExternalAccount(db, agent.platform_id, id, 'customer');
}

export async function deleteMyExternalAccount(store: Store, auth: AuthContext, id: string, now: Now): Promise<void> {
  const agent = await auditedCaller(store, auth, 'DELETE_EXTERNAL_ACCOUNT', now);
  await check(store, agent, 'DELETE_EXTERNAL_ACCOUNT', { permission: 'MANAGE_EXTERNAL_ACCOUNTS' }, now);
  await requireMyExternalAccount(store.db, agent, id);
  await deleteExternalAccount(store.db, agent.platform_id, now.at, 'customer', id);
  await audit(store.db, agent, { operation: 'DELETE_EXTERNAL_ACCOUNT', decision: 'AUTO', reason: `deleted ${id}`, actor: agent.id }, now.at);
}

/**
 * Before POST /agents/me/external-accounts' body is validated: the agent's permission, and
 * its customer as the body's customerId (given: it must be that customer, else 404).
 */
export async function prepareExternalAccountBody(store: Store, auth: AuthContext, body: unknown, now: Now): Promise<AgentRow> {
  const agent = await auditedCaller(store, auth, 'CREATE_EXTERNAL_ACCOUNT', now);
  await check(store, agent, 'CREATE_EXTERNAL_ACCOUNT', { permission: 'MANAGE_EXTERNAL_ACCOUNTS' }, now);
  if (body !== null && typeof body === 'object' && !Array.isArray(body)) {
    const b = body as Record<string, unknown>;
    if (b.customerId === undefined) b.customerId = agent.customer_id;
    else if (b.customerId !== agent.customer_id) throw missingReference('USER_NOT_FOUND', 'Customer', String(b.customerId), 'customerId');
  }
  return agent;
}

export async function auditExternalAccountCreated(store: Store, auth: AuthContext, account: ExternalAccount, now: Now): Promise<void> {
  const agent = await callerAgent(store.db, auth, true);
  await audit(store.db, agent, { operation: 'CREATE_EXTERNAL_ACCOUNT', decision: 'AUTO', reason: `created ${account.id}`, actor: agent.id }, now.at);
}

/**
 * POST /agents/me/external-accounts before its handler: the agent's permission and customer
 * first, then the body's checks as for the platform (one 400 with the schema's and the rails'
 * errors, through the external-accounts area).
 */
export async function checkAgentExternalAccountBody(store: Store, auth: AuthContext, body: unknown, now: Now): Promise<void> {
  await prepareExternalAccountBody(store, auth, body, now);
  const errors = checkSchema(ExternalAccountCreateRequest, body ?? null);
  if (errors.length > 0) await rejectCreateBody({ store }, auth.platform, 'customer', body, errors);
}

/** POST /agents/me/external-accounts: the external account (the external-accounts area's create), audited. */
export async function createAgentExternalAccount(store: Store, auth: AuthContext, body: unknown, now: Now): Promise<ExternalAccount> {
  const account = await createExternalAccount({ store }, auth.platform, now.at, 'customer', body as never);
  await auditExternalAccountCreated(store, auth, account, now);
  return account;
}

export async function listMyActions(db: Kysely<DB>, auth: AuthContext, q: { status?: string | undefined; limit?: number | undefined; cursor?: string | undefined }, nowMs: number): Promise<Page<AgentAction>> {
  const agent = await callerAgent(db, auth);
  const page = await paginate<ActionRow, ActionRow>(actionQuery(db, agent.platform_id, { agentId: agent.id, status: q.status }) as never, 'id', { limit: q.limit, cursor: q.cursor }, (r) => r);
  return { ...page, data: await Promise.all(page.data.map((r) => actionView(db, r, nowMs))) };
}

export async function getMyAction(db: Kysely<DB>, auth: AuthContext, id: string, nowMs: number): Promise<AgentAction> {
  const agent = await callerAgent(db, auth);
  const row = isIdOf('AgentAction', id) ? await findAction(db, agent.platform_id, id) : undefined;
  if (!row || row.agent_id !== agent.id) throw notFound('REFERENCE_NOT_FOUND', 'Agent action', id);
  return actionView(db, row, nowMs);
}

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

async function emitAction(trx: Trx, row: ActionRow, type: (typeof AGENT_ACTION_EVENTS)[number], now: Now): Promise<void> {
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
