import { iso } from '../../kernel/clock.js';
import { convertMinor, hasRate, sandboxRate } from '../../sandbox/rules/fx.js';
import type { AgentPermissionName, AgentPolicy } from './schemas.js';

// Policy evaluation (docs/agents.md "How each rule is evaluated"): a pure function of the
// agent, the policy, what is asked and the usage so far. Rules run in a fixed order and the
// first that fails denies the action; an allowed action then gets its execution mode.

export type DenialReason =
  | 'AGENT_PAUSED'
  | 'PERMISSION_DENIED'
  | 'ACCOUNT_NOT_ALLOWED'
  | 'PER_TRANSACTION_LIMIT_EXCEEDED'
  | 'DAILY_TRANSACTION_LIMIT_EXCEEDED'
  | 'DAILY_LIMIT_EXCEEDED'
  | 'MONTHLY_LIMIT_EXCEEDED';

export type ModeReason = 'WITHIN_POLICY' | 'EXECUTION_MODE' | 'ACCOUNT_EXECUTION_MODE' | 'APPROVAL_THRESHOLD_EXCEEDED';

export type Evaluation =
  | { allowed: false; reason: DenialReason; message: string; details: Record<string, unknown> }
  | { allowed: true; mode: 'AUTO' | 'APPROVAL_REQUIRED'; reasons: ModeReason[]; policyAmount?: number };

/** What an operation asks of the policy. */
export interface Subject {
  permission: AgentPermissionName;
  /** The customer's internal account the operation draws on or pays into (account rules). */
  internalAccountId?: string | null | undefined;
  /** For money-moving actions: the amount and its currency. */
  amount?: number | undefined;
  currency?: string | undefined;
}

/** Spending so far in the current periods, in the policy's currency. */
export interface Usage {
  dailyCount: number;
  dailySpend: number;
  monthlySpend: number;
}

/** The UTC day and month of a platform instant, and when each ends. */
export function periodsOf(nowMs: number): { dayStartMs: number; monthStartMs: number; nextDay: string; nextMonth: string } {
  const d = new Date(nowMs);
  const dayStartMs = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  const monthStartMs = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  const nextDay = iso(dayStartMs + 86_400_000).slice(0, 10);
  const nextMonth = iso(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)).slice(0, 7);
  return { dayStartMs, monthStartMs, nextDay, nextMonth };
}

/**
 * An amount in another currency, at the sandbox market's mid rate, rounded up (so a limit
 * is never passed by rounding). Same currency: unchanged.
 */
export function convertAmount(amount: number, from: string, to: string): number {
  if (from === to) return amount;
  if (!hasRate(from) || !hasRate(to)) return amount;
  return Number(convertMinor(amount, from, to, sandboxRate(from, to).mid, 'ceil'));
}

function deny(reason: DenialReason, message: string, details: Record<string, unknown> = {}): Evaluation {
  return { allowed: false, reason, message, details: { reason, ...details } };
}

/**
 * Evaluate one operation. Order: paused, permission, account restriction, then (for
 * money-moving actions) the per-transaction limit (an account rule's override first), the
 * daily count, the daily total, the monthly total; then the execution mode: the account
 * rule's mode or the default, and the approval threshold, which forces APPROVAL_REQUIRED
 * for an amount strictly above it.
 */
export function evaluate(agent: { isPaused: boolean }, policy: AgentPolicy, subject: Subject, usage?: Usage): Evaluation {
  if (agent.isPaused) return deny('AGENT_PAUSED', 'The agent is paused: it may not act until the platform resumes it');
  if (!policy.permissions.includes(subject.permission)) {
    return deny('PERMISSION_DENIED', `The agent's policy does not grant ${subject.permission}`, { requiredPermission: subject.permission, permissions: policy.permissions });
  }
  const account = subject.internalAccountId ?? null;
  const allowedIds = policy.accountRestrictions?.allowedAccountIds;
  if (account !== null && Array.isArray(allowedIds) && !allowedIds.includes(account)) {
    return deny('ACCOUNT_NOT_ALLOWED', `The agent's policy does not allow it to act on account ${account}`, { accountId: account, allowedAccountIds: allowedIds });
  }
  const rule = account === null ? undefined : policy.accountRestrictions?.accountRules?.find((r) => r.accountId === account);
  if (subject.amount === undefined || subject.currency === undefined) {
    return { allowed: true, mode: 'AUTO', reasons: ['WITHIN_POLICY'] };
  }

  const limits = policy.spendingLimits;
  const amount = convertAmount(subject.amount, subject.currency, limits.currency);
  const money = { amount, currency: limits.currency, ...(subject.currency !== limits.currency ? { originalAmount: subject.amount, originalCurrency: subject.currency } : {}) };
  const perTx = rule?.perTransactionLimit ?? limits.perTransactionLimit;
  if (amount > perTx) {
    return deny('PER_TRANSACTION_LIMIT_EXCEEDED', `${amount} ${limits.currency} is above the per-transaction limit of ${perTx}`, { ...money, limit: perTx, ...(rule?.perTransactionLimit != null ? { accountId: account } : {}) });
  }
  const u = usage ?? { dailyCount: 0, dailySpend: 0, monthlySpend: 0 };
  if (limits.dailyTransactionLimit !== undefined && u.dailyCount + 1 > limits.dailyTransactionLimit) {
    return deny('DAILY_TRANSACTION_LIMIT_EXCEEDED', `The agent already made ${u.dailyCount} of its ${limits.dailyTransactionLimit} actions today`, { limit: limits.dailyTransactionLimit, used: u.dailyCount });
  }
  if (limits.dailyLimit !== undefined && limits.dailyLimit !== null && u.dailySpend + amount > limits.dailyLimit) {
    return deny('DAILY_LIMIT_EXCEEDED', `${amount} ${limits.currency} would bring today's total to ${u.dailySpend + amount}, above the daily limit of ${limits.dailyLimit}`, { ...money, limit: limits.dailyLimit, used: u.dailySpend });
  }
  if (limits.monthlyLimit !== undefined && limits.monthlyLimit !== null && u.monthlySpend + amount > limits.monthlyLimit) {
    return deny('MONTHLY_LIMIT_EXCEEDED', `${amount} ${limits.currency} would bring this month's total to ${u.monthlySpend + amount}, above the monthly limit of ${limits.monthlyLimit}`, { ...money, limit: limits.monthlyLimit, used: u.monthlySpend });
  }

  const reasons: ModeReason[] = [];
  const mode = rule?.executionMode ?? policy.defaultExecutionMode;
  if (mode === 'APPROVAL_REQUIRED') reasons.push(rule?.executionMode !== undefined ? 'ACCOUNT_EXECUTION_MODE' : 'EXECUTION_MODE');
  const threshold = policy.approvalThresholds;
  if (threshold?.amount !== undefined && threshold.amount !== null) {
    const inThreshold = convertAmount(subject.amount, subject.currency, threshold.currency ?? limits.currency);
    if (inThreshold > threshold.amount) reasons.push('APPROVAL_THRESHOLD_EXCEEDED');
  }
  return reasons.length > 0 ? { allowed: true, mode: 'APPROVAL_REQUIRED', reasons, policyAmount: amount } : { allowed: true, mode: 'AUTO', reasons: ['WITHIN_POLICY'], policyAmount: amount };
}
