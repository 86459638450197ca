import { randomBytes } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import { type Clock, iso, platformNowMs } from '../../kernel/clock.js';
import type { Store } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { apiError, invalidInput, notFound } from '../../kernel/errors.js';
import { missingReference } from '../../kernel/references.js';
import { isIdOf, newId } from '../../kernel/ids.js';
import { type Page, paginate, timeRangeOf } from '../../kernel/pagination.js';
import { findCustomer } from '../customers/store.js';
import { findPlatform, type PlatformRow } from '../../operator/platforms/store.js';
import type { Agent, AgentCreateRequest, AgentListQuery, AgentPolicy, AgentPolicyUpdateRequest } from './schemas.js';
import { type AgentRow, agentQuery, type DeviceCodeRow, findAgent, findDeviceCode, insertAgent, insertDeviceCode, invalidateDeviceCodes, markRedeemed, updateAgent } from './store.js';
import { DEVICE_CODE_TTL_MS, agentView, deviceCodeView, newDeviceCode, policyErrors, policyOf, tokenHash } from './service.js';

// The platform's management of its agents (BasicAuth): create, list, change, delete, their
// policy, and the device codes an agent is installed with (redeemed for its access token).

type Db = Kysely<DB> | Transaction<DB>;
type Now = { ms: number; at: string };

// ---- Management (BasicAuth) -------------------------------------------------------------------

export async function requireAgent(db: Db, platformId: string, id: string, lock = false): Promise<AgentRow> {
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
