import { createHash, randomInt } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import type { Clock } from '../../kernel/clock.js';
import { findCurrency } from '../../kernel/currencies.js';
import type { Store } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import type { FieldError } from '../../kernel/errors.js';
import { isIdOf } from '../../kernel/ids.js';
import type { JobQueue } from '../../kernel/jobs.js';
import { hasRate } from '../../sandbox/rules/fx.js';
import { requireInternalAccount } from '../internal-accounts/service.js';
import type { InternalAccount } from '../internal-accounts/schemas.js';
import { quoteView } from '../quotes/views.js';
import { findQuote } from '../quotes/store.js';
import { findTransaction } from '../transactions/store.js';
import { transactionView } from '../transactions/views.js';
import { convertAmount, periodsOf, type Usage } from './policy.js';
import type { Agent, AgentAction, AgentActionStatusName, AgentActionTypeName, AgentPolicy } from './schemas.js';
import { type ActionRow, type AgentRow, countedActionsSince, type DeviceCodeRow } from './store.js';

type Db = Kysely<DB> | Transaction<DB>;

// Agents (docs/agents.md): the platform's management of its customers' agents, the
// device-code installation, AgentAuth, and the agent's own operations, each evaluated
// against its policy. Money-moving actions become AgentActions: executed at once (AUTO),
// or held as a PENDING transaction (flow AGENT_ACTION, with an approval deadline) that the
// platform approves or rejects — through /agents/{id}/actions/{actionId}/approve|reject or
// POST /transactions/{id}/approve|reject, which both reach the approval flow registered
// below. The quotes, transfers, transactions and accounts are those areas' services.

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
export const SYSTEM = 'SYSTEM';

const CODE_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';

export function newDeviceCode(): string {
  const group = () => Array.from({ length: 4 }, () => CODE_ALPHABET[randomInt(CODE_ALPHABET.length)]).join('');
  return `AGENT-${group()}-${group()}-${group()}`;
}

/** SHA-256 hex: the token is 256 random bits, so its hash can be its lookup key. */
export function tokenHash(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

export function policyOf(row: AgentRow): AgentPolicy {
  return JSON.parse(row.policy) as AgentPolicy;
}

// ---- Views ------------------------------------------------------------------------------------

export async function usageOf(db: Db, row: AgentRow, policy: AgentPolicy, nowMs: number, exceptActionId?: string): Promise<Usage> {
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

export function deviceCodeView(row: DeviceCodeRow) {
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
export async function policyErrors(db: Db, platformId: string, customerId: string, policy: Partial<AgentPolicy>, base: string): Promise<FieldError[]> {
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
