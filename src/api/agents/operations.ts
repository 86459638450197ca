import type { Kysely, Transaction } from 'kysely';
import type { AuthContext } from '../../kernel/auth.js';
import type { Store } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { notFound } from '../../kernel/errors.js';
import { missingReference } from '../../kernel/references.js';
import { isIdOf } from '../../kernel/ids.js';
import { type Page, paginate } from '../../kernel/pagination.js';
import { checkSchema } from '../../kernel/validation.js';
import { createExternalAccount, deleteExternalAccount, getExternalAccount, listExternalAccounts, rejectCreateBody, requireExternalAccount } from '../external-accounts/service.js';
import { type ExternalAccount, ExternalAccountCreateRequest } from '../external-accounts/schemas.js';
import { listCustomerAccounts } from '../internal-accounts/service.js';
import type { InternalAccount } from '../internal-accounts/schemas.js';
import type { AnyTransaction, ListedTransaction, TransactionListQuery } from '../transactions/schemas.js';
import { listTransactions, requireTransaction } from '../transactions/service.js';
import { transactionView } from '../transactions/views.js';
import type { Agent, AgentAction } from './schemas.js';
import { type ActionRow, actionQuery, type AgentRow, findAction } from './store.js';
import { audit, auditedCaller, callerAgent, check, requirePermission } from './agent-auth.js';
import { actionView, agentView, policyOf } from './service.js';

// The agent's own operations that read (itself, its customer's transactions and accounts,
// its actions) and its customer's external accounts.

type Db = Kysely<DB> | Transaction<DB>;
type Now = { ms: number; at: string };

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

export async function requireMyExternalAccount(db: Db, agent: AgentRow, id: string) {
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
