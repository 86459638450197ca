import { type Kysely, type Selectable, sql, type Transaction, type Updateable } from 'kysely';
import type { DB } from '../../kernel/db/schema.js';

// The agents area's tables (migration 0022_agents), typed here and added to the store's
// tables with withTables: no other area reads them.

export interface AgentsTable {
  /** `Agent:<uuid v7>`. */
  id: string;
  platform_id: string;
  customer_id: string;
  name: string;
  is_paused: number;
  is_connected: number;
  is_deleted: number;
  /** JSON: the AgentPolicy. */
  policy: string;
  /** SHA-256 hex of the access token; NULL before redemption and after deletion. */
  token_hash: string | null;
  created_at: string;
  updated_at: string;
}

export interface AgentDeviceCodesTable {
  code: string;
  platform_id: string;
  agent_id: string;
  expires_at: string;
  expires_at_ms: number;
  redeemed_at: string | null;
  /** Set when a newer code replaced it before it was redeemed. */
  invalidated_at: string | null;
  created_at: string;
}

export interface AgentActionsTable {
  /** `AgentAction:<uuid v7>`. */
  id: string;
  platform_id: string;
  agent_id: string;
  customer_id: string;
  platform_customer_id: string;
  type: string;
  status: string;
  quote_id: string;
  transaction_id: string;
  /** 1 once the underlying payment started (its money moved). */
  executed: number;
  /** Sending amount, smallest unit of `currency`. */
  amount: number;
  currency: string;
  source_account_id: string | null;
  destination_account_id: string | null;
  /** The customer's internal account the action draws on or pays into (the policy's account). */
  internal_account_id: string | null;
  decision: string;
  /** JSON array of reasons. */
  decision_reasons: string;
  rejection_reason: string | null;
  failure_reason: string | null;
  decided_by: string | null;
  decided_at: string | null;
  expires_at: string | null;
  created_ms: number;
  created_at: string;
  updated_at: string;
}

export interface AgentQuotesTable {
  quote_id: string;
  platform_id: string;
  agent_id: string;
}

export interface AgentAuditTable {
  id: string;
  platform_id: string;
  agent_id: string;
  action_id: string | null;
  operation: string;
  decision: string;
  reason: string;
  actor: string;
  transaction_id: string | null;
  created_at: string;
}

export type AgentTables = {
  agents: AgentsTable;
  agent_device_codes: AgentDeviceCodesTable;
  agent_actions: AgentActionsTable;
  agent_quotes: AgentQuotesTable;
  agent_audit: AgentAuditTable;
};

export type AgentRow = Selectable<AgentsTable>;
export type DeviceCodeRow = Selectable<AgentDeviceCodesTable>;
export type ActionRow = Selectable<AgentActionsTable>;
export type AuditRow = Selectable<AgentAuditTable>;

type Db = Kysely<DB> | Transaction<DB>;

function t(db: Db): Kysely<DB & AgentTables> {
  return (db as Kysely<DB>).withTables<AgentTables>();
}

// ---- Agents ------------------------------------------------------------------------------

export async function insertAgent(db: Db, row: AgentRow): Promise<void> {
  await t(db).insertInto('agents').values(row).execute();
}

/** A live (not deleted) agent of the platform. */
export async function findAgent(db: Db, platformId: string, id: string, lock = false): Promise<AgentRow | undefined> {
  let q = t(db).selectFrom('agents').selectAll().where('platform_id', '=', platformId).where('id', '=', id).where('is_deleted', '=', sql.lit(0));
  if (lock) q = q.forUpdate();
  return q.executeTakeFirst();
}

export async function findAgentByTokenHash(db: Db, hash: string): Promise<AgentRow | undefined> {
  return t(db).selectFrom('agents').selectAll().where('token_hash', '=', hash).where('is_deleted', '=', sql.lit(0)).executeTakeFirst();
}

export async function updateAgent(db: Db, platformId: string, id: string, set: Updateable<AgentsTable>): Promise<void> {
  await t(db).updateTable('agents').set(set).where('platform_id', '=', platformId).where('id', '=', id).execute();
}

export interface AgentFilter {
  customerId?: string | undefined;
  isPaused?: boolean | undefined;
  isConnected?: boolean | undefined;
  createdAfter?: string | undefined;
  createdBefore?: string | undefined;
  updatedAfter?: string | undefined;
  updatedBefore?: string | undefined;
}

export function agentQuery(db: Kysely<DB>, platformId: string, f: AgentFilter) {
  let q = t(db).selectFrom('agents').where('platform_id', '=', platformId).where('is_deleted', '=', sql.lit(0));
  if (f.customerId !== undefined) q = q.where('customer_id', '=', f.customerId);
  if (f.isPaused !== undefined) q = q.where('is_paused', '=', f.isPaused ? 1 : 0);
  if (f.isConnected !== undefined) q = q.where('is_connected', '=', f.isConnected ? 1 : 0);
  if (f.createdAfter !== undefined) q = q.where('created_at', '>=', f.createdAfter);
  if (f.createdBefore !== undefined) q = q.where('created_at', '<=', f.createdBefore);
  if (f.updatedAfter !== undefined) q = q.where('updated_at', '>=', f.updatedAfter);
  if (f.updatedBefore !== undefined) q = q.where('updated_at', '<=', f.updatedBefore);
  return q;
}

// ---- Device codes -----------------------------------------------------------------------

export async function insertDeviceCode(db: Db, row: DeviceCodeRow): Promise<void> {
  await t(db).insertInto('agent_device_codes').values(row).execute();
}

export async function findDeviceCode(db: Db, code: string, lock = false): Promise<DeviceCodeRow | undefined> {
  let q = t(db).selectFrom('agent_device_codes').selectAll().where('code', '=', code);
  if (lock) q = q.forUpdate();
  return q.executeTakeFirst();
}

/** Replace the agent's unredeemed codes (regeneration). */
export async function invalidateDeviceCodes(db: Db, platformId: string, agentId: string, at: string): Promise<void> {
  await t(db)
    .updateTable('agent_device_codes')
    .set({ invalidated_at: at })
    .where('platform_id', '=', platformId)
    .where('agent_id', '=', agentId)
    .where('redeemed_at', 'is', null)
    .where('invalidated_at', 'is', null)
    .execute();
}

/** Mark a code redeemed, only if it still is redeemable: false when another request won. */
export async function markRedeemed(db: Db, code: string, at: string): Promise<boolean> {
  const r = await t(db)
    .updateTable('agent_device_codes')
    .set({ redeemed_at: at })
    .where('code', '=', code)
    .where('redeemed_at', 'is', null)
    .where('invalidated_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

// ---- Actions ------------------------------------------------------------------------------

export async function insertAction(db: Db, row: ActionRow): Promise<void> {
  await t(db).insertInto('agent_actions').values(row).execute();
}

export async function findAction(db: Db, platformId: string, id: string, lock = false): Promise<ActionRow | undefined> {
  let q = t(db).selectFrom('agent_actions').selectAll().where('platform_id', '=', platformId).where('id', '=', id);
  if (lock) q = q.forUpdate();
  return q.executeTakeFirst();
}

export async function findActionByTransaction(db: Db, platformId: string, transactionId: string): Promise<ActionRow | undefined> {
  return t(db)
    .selectFrom('agent_actions')
    .selectAll()
    .where('platform_id', '=', platformId)
    .where('transaction_id', '=', transactionId)
    .orderBy('id', 'desc')
    .executeTakeFirst();
}

export async function updateAction(db: Db, platformId: string, id: string, set: Updateable<AgentActionsTable>): Promise<void> {
  await t(db).updateTable('agent_actions').set(set).where('platform_id', '=', platformId).where('id', '=', id).execute();
}

/** The agent's actions that count against its limits (pending or approved) since `sinceMs`. */
export async function countedActionsSince(db: Db, platformId: string, agentId: string, sinceMs: number, exceptId?: string): Promise<Array<Pick<ActionRow, 'amount' | 'currency' | 'created_ms'>>> {
  let q = t(db)
    .selectFrom('agent_actions')
    .select(['amount', 'currency', 'created_ms'])
    .where('platform_id', '=', platformId)
    .where('agent_id', '=', agentId)
    .where('status', 'in', ['PENDING_APPROVAL', 'APPROVED'])
    .where('created_ms', '>=', sinceMs);
  if (exceptId !== undefined) q = q.where('id', '!=', exceptId);
  return q.execute();
}

export interface ActionFilter {
  agentId?: string | undefined;
  customerId?: string | undefined;
  status?: string | undefined;
  createdAfter?: string | undefined;
  createdBefore?: string | undefined;
}

export function actionQuery(db: Kysely<DB>, platformId: string, f: ActionFilter) {
  let q = t(db).selectFrom('agent_actions').where('platform_id', '=', platformId);
  if (f.agentId !== undefined) q = q.where('agent_id', '=', f.agentId);
  if (f.customerId !== undefined) q = q.where('customer_id', '=', f.customerId);
  if (f.status !== undefined) q = q.where('status', '=', f.status);
  if (f.createdAfter !== undefined) q = q.where('created_at', '>=', f.createdAfter);
  if (f.createdBefore !== undefined) q = q.where('created_at', '<=', f.createdBefore);
  return q;
}

// ---- Quotes of agents and the audit trail ------------------------------------------------

export async function insertAgentQuote(db: Db, row: Selectable<AgentQuotesTable>): Promise<void> {
  await t(db).insertInto('agent_quotes').values(row).execute();
}

export async function findAgentQuote(db: Db, platformId: string, quoteId: string): Promise<Selectable<AgentQuotesTable> | undefined> {
  return t(db).selectFrom('agent_quotes').selectAll().where('platform_id', '=', platformId).where('quote_id', '=', quoteId).executeTakeFirst();
}

export async function insertAudit(db: Db, row: AuditRow): Promise<void> {
  await t(db).insertInto('agent_audit').values(row).execute();
}

export function auditQuery(db: Kysely<DB>, platformId: string, agentId: string) {
  return t(db).selectFrom('agent_audit').where('platform_id', '=', platformId).where('agent_id', '=', agentId);
}
